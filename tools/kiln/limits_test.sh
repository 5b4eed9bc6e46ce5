#!/usr/bin/env bash
# What a model or a command line may ask for, through the kiln tool: sizes
# beyond int64 or the one-tensor limit, inputs that are not inputs, Loops
# that never end. Each is a clean error (exit 1, never a signal) naming the
# tensor or node and the limit, on every backend.
# Usage: limits_test.sh KILN_BINARY TEST_DATA_DIR
set -u
kiln=$1
data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/check_lib.sh"
py=/usr/bin/python3

backends="reference"
"$kiln" info 2>/dev/null | grep -q "^device 0" && backends="reference vulkan"

m=$data/add_relu.onnx  # x [n,3] -> Add(x, b) -> s -> Relu -> y
for backend in $backends; do
  # 13 TB of float32: refused before anything is allocated (this crashed).
  check "$backend: huge --shape" 1 "input 'x' \[1099511627776,3\]: .*needs 12.0 TiB.*KILN_MAX_TENSOR_BYTES" \
    -- "$kiln" run "$m" --backend "$backend" --shape x=1099511627776x3
  check "$backend: over the tensor limit" 1 "input 'x' \[100,3\]: .*\(1200 bytes\), over the limit of 1.0 KiB \(1024 bytes\)" \
    -- env KILN_MAX_TENSOR_BYTES=1024 "$kiln" run "$m" --backend "$backend" --shape x=100x3
  check "$backend: within the tensor limit" 0 "output 'y': f32\[2,3\]" \
    -- env KILN_MAX_TENSOR_BYTES=1024 "$kiln" run "$m" --backend "$backend" --shape x=2x3
done
check "malformed KILN_MAX_TENSOR_BYTES" 1 "KILN_MAX_TENSOR_BYTES='lots' is not a positive integer" \
  -- env KILN_MAX_TENSOR_BYTES=lots "$kiln" run "$m" --backend reference --shape x=2x3
check "dim beyond int64" 1 "dim 99999999999999999999 does not fit in int64" \
  -- "$kiln" run "$m" --shape x=99999999999999999999x3

# --input/--shape naming a weight or an intermediate value: the error lists
# the model's actual inputs.
"$py" -c "import numpy as np; np.save('$tmp/b.npy', np.zeros(3, dtype=np.float32))"
check "--input naming a weight" 1 "--input: the model has no input named 'b'; its inputs are 'x'" \
  -- "$kiln" run "$m" --input b="$tmp/b.npy" --shape x=2x3
check "--input naming an intermediate" 1 "no input named 's'; its inputs are 'x'" \
  -- "$kiln" run "$m" --input s="$tmp/b.npy" --shape x=2x3
check "--shape naming no input" 1 "--shape: the model has no input named 'b'; its inputs are 'x'" \
  -- "$kiln" run "$m" --shape b=3 --shape x=2x3

# A Loop with no trip count whose condition stays true (v < 1e9 while the
# scalar v grows by 1 per iteration): stopped at KILN_MAX_LOOP_ITERATIONS, with the
# node named; the same Loop ending sooner runs.
if "$py" -c "import onnx" 2>/dev/null; then
  "$py" -c "
from onnx import helper, TensorProto, save
body = helper.make_graph(
    [helper.make_node('Add', ['v_in', 'one'], ['v_out']),
     helper.make_node('Less', ['v_out', 'stop'], ['cond_out'])],
    'body',
    [helper.make_tensor_value_info('i', TensorProto.INT64, []),
     helper.make_tensor_value_info('cond_in', TensorProto.BOOL, []),
     helper.make_tensor_value_info('v_in', TensorProto.FLOAT, [])],
    [helper.make_tensor_value_info('cond_out', TensorProto.BOOL, []),
     helper.make_tensor_value_info('v_out', TensorProto.FLOAT, [])],
    [helper.make_tensor('one', TensorProto.FLOAT, [], [1.0])])
graph = helper.make_graph(
    [helper.make_node('Loop', ['', 'go', 'v0'], ['v'], name='spin', body=body)],
    'spin', [helper.make_tensor_value_info('v0', TensorProto.FLOAT, []),
             helper.make_tensor_value_info('stop', TensorProto.FLOAT, [])],
    [helper.make_tensor_value_info('v', TensorProto.FLOAT, [])],
    [helper.make_tensor('go', TensorProto.BOOL, [], [True])])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]), '$tmp/spin.onnx')
import numpy as np
np.save('$tmp/v0.npy', np.zeros((), dtype=np.float32))
np.save('$tmp/far.npy', np.full((), 1e9, dtype=np.float32))
np.save('$tmp/near.npy', np.full((), 20, dtype=np.float32))
"
  for backend in $backends; do
    check "$backend: runaway Loop" 1 "node 'spin' \(Loop\): did not end within 50 iterations.*KILN_MAX_LOOP_ITERATIONS" \
      -- env KILN_MAX_LOOP_ITERATIONS=50 "$kiln" run "$tmp/spin.onnx" --backend "$backend" \
         --input v0="$tmp/v0.npy" --input stop="$tmp/far.npy"
    check "$backend: Loop within the limit" 0 "output 'v'" \
      -- env KILN_MAX_LOOP_ITERATIONS=50 "$kiln" run "$tmp/spin.onnx" --backend "$backend" \
         --input v0="$tmp/v0.npy" --input stop="$tmp/near.npy"
  done
fi
check_summary

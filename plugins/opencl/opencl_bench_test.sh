#!/usr/bin/env bash
# `kiln bench --backend opencl` and `kiln run --backend opencl --profile`
# end to end on a tiny model: the kiln-bench-cli-v1 document (validated by
# bench/check_bench_json.py) with wall times and the per-kernel times of
# OpenCL profiling events, the clear error for what the backend does not
# offer (fp16 without cl_khr_fp16), image storage, and the program cache
# across processes (hits, corrupted files rebuilt). Exit 77 (skipped)
# without an OpenCL platform.
# Usage: opencl_bench_test.sh KILN_BINARY TEST_DATA_DIR CHECK_BENCH_JSON_PY
set -u
kiln=$1
data=$2
checker=$3
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../../tools/kiln/check_lib.sh"
export KILN_CACHE_DIR=$tmp/cache  # the plugin's program cache stays in the test's directory

m=$data/add_relu.onnx
fast=(--iters 3 --warmup 1 --shape x=2x3)

out=$("$kiln" bench "$m" --backend opencl "${fast[@]}" --json "$tmp/cl.json" --csv "$tmp/cl.csv" 2>&1)
if grep -q "no OpenCL platform\|no loaded plugin offers a backend named 'opencl'" <<<"$out"; then
  # Required in CI (cl_test_requirement.h): a lost PoCL must not pass by skipping.
  if [ "${KILN_REQUIRE_OPENCL:-0}" != 0 ] || [ "${CI:-}" = true ]; then
    echo "FAIL no OpenCL platform, and KILN_REQUIRE_OPENCL=1 or CI=true require one (set KILN_REQUIRE_OPENCL=0 to skip): $out" | head -5
    exit 1
  fi
  echo "skipped: $out" | head -5
  exit 77
fi
check "opencl bench" 0 "^add_relu +ok" -- echo "$out"
check "opencl JSON+CSV valid" 0 "^ok$" -- "$py" "$checker" "$tmp/cl.json" --csv "$tmp/cl.csv" --models 1 --ok 1
check "opencl record" 0 "^ok$" -- "$py" -c "
import json
d = json.load(open('$tmp/cl.json'))
e, m = d['environment'], d['models'][0]
assert e['backend'] == 'opencl' and e['precision'] == 'fp32' and e['storage'] == 'auto' and e['coopmat'] is None, e
assert m['wall']['count'] == 3 and m['gpu'] is None, m
assert m['dispatches'] > 0 and m['fallbacks'] == 0, m
cs = m['cold_start']
assert cs['compile_cold']['wall_ms'] > 0 and cs['compile_warm']['wall_ms'] > 0 and cs['first_run_ms'] > 0, cs
# The program cache: the cold compile builds every program, the warm one
# (a new process as far as the plugin can tell) loads them all from disk.
cold, warm = cs['compile_cold'], cs['compile_warm']
assert cold['shader_compiles'] > 0 and cold['shader_disk_hits'] == 0, cold
assert warm['shader_compiles'] == 0 and warm['shader_disk_hits'] == cold['shader_compiles'], warm
# The profile: one row per dispatch, named, timed by the device's events.
ks = m['kernels']
assert len(ks) == m['dispatches'], (len(ks), m['dispatches'])
assert all(k['kernel'] and k['node'] and k['gpu_ms'] >= 0 and k['bytes_read'] > 0 and k['bytes_written'] > 0
           for k in ks), ks
assert m['bytes_read'] == sum(k['bytes_read'] for k in ks) and m['bytes_written'] == sum(k['bytes_written'] for k in ks), m
assert abs(m['kernels_gpu_ms'] - sum(k['gpu_ms'] for k in ks)) < 1e-3, m['kernels_gpu_ms']
print('ok')"

# kiln run --profile: the per-kernel times in --stats, the run's device time.
check "opencl run --profile" 0 "opencl backend" -- "$kiln" run "$m" --backend opencl --profile --shape x=2x3 \
  --stats "$tmp/run.json"
check "opencl run stats" 0 "^ok$" -- "$py" -c "
import json
r = json.load(open('$tmp/run.json'))['runs'][0]
assert r['dispatches'] > 0 and len(r['kernels']) == r['dispatches'], r
assert r['gpu_ms'] >= sum(k['gpu_ms'] for k in r['kernels']) - 1e-3, r
print('ok')"
check "opencl run unprofiled: no kernels" 0 "^ok$" -- bash -c "'$kiln' run '$m' --backend opencl --shape x=2x3 \
  --stats '$tmp/plain.json' >/dev/null && $py -c \"
import json
r = json.load(open('$tmp/plain.json'))['runs'][0]
assert 'kernels' not in r and r['gpu_ms'] == -1 and r['dispatches'] > 0 and r['fused_dispatches'] == 1, r
print('ok')\""
check "opencl program cache written" 0 "clbin" -- ls "$KILN_CACHE_DIR/opencl"
# Another process loads the programs; a corrupted file is rejected and rebuilt, never trusted.
check "opencl programs from the disk cache" 0 "kernels: 0 compiled, [1-9][0-9]* from the disk cache" -- \
  "$kiln" run "$m" --backend opencl --shape x=2x3
for f in "$KILN_CACHE_DIR"/opencl/*.clbin; do printf 'garbage' >"$f"; done
check "opencl corrupt cache files rebuilt" 0 \
  "kernels: [1-9][0-9]* compiled, 0 from the disk cache, 0 in memory, [1-9][0-9]* cache files rejected" -- \
  "$kiln" run "$m" --backend opencl --shape x=2x3
check "opencl rebuilt files load again" 0 "kernels: 0 compiled, [1-9][0-9]* from the disk cache, 0 in memory, 0 cache" -- \
  "$kiln" run "$m" --backend opencl --shape x=2x3

# What the backend cannot honour is an error naming it, not a silent fp32 or buffer model.
check "opencl fp16 names the extension" 1 "cl_khr_fp16" -- "$kiln" run "$m" --backend opencl --precision fp16 \
  --shape x=2x3
check "opencl bench fp16 recorded as an error" 1 "cl_khr_fp16" -- "$kiln" bench "$m" --backend opencl \
  --precision fp16 "${fast[@]}"

# Image storage: the activations in image2d_t objects, the outputs those of
# buffer storage; the bench records the storage.
check "opencl run --storage buffer" 0 "opencl backend" -- "$kiln" run "$m" --backend opencl --shape x=2x3 \
  --output "y=$tmp/buffer.npy"
check "opencl run --storage image" 0 "opencl backend" -- "$kiln" run "$m" --backend opencl --storage image \
  --shape x=2x3 --output "y=$tmp/image.npy"
check "opencl image output = buffer output" 0 "^ok$" -- "$py" -c "
import numpy as np
b, i = np.load('$tmp/buffer.npy'), np.load('$tmp/image.npy')
assert b.shape == i.shape and b.size > 0 and np.array_equal(b, i), (b, i)
print('ok')"
check "opencl bench --storage image" 0 "^ok$" -- bash -c "'$kiln' bench '$m' --backend opencl --storage image \
  --iters 3 --warmup 1 --shape x=2x3 --json '$tmp/image.json' >/dev/null && $py -c \"
import json
d = json.load(open('$tmp/image.json'))
assert d['environment']['storage'] == 'image' and d['models'][0]['status'] == 'ok', d
print('ok')\""
# --storage auto: the layout pass chooses per tensor for the OpenCL device
# (ABI 1.6 target_info). On a CPU device (PoCL) a 4-D feature map inside the
# network is an image, the graph's input and output buffers: a small
# Conv -> Relu -> Conv net, written here, mixes both in one run.
"$py" -c "
import numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
rng = np.random.default_rng(0)
w1 = numpy_helper.from_array(rng.standard_normal((6, 3, 3, 3)).astype(np.float32), 'w1')
w2 = numpy_helper.from_array(rng.standard_normal((5, 6, 3, 3)).astype(np.float32), 'w2')
nodes = [helper.make_node('Conv', ['x', 'w1'], ['a'], pads=[1, 1, 1, 1]), helper.make_node('Relu', ['a'], ['r']),
         helper.make_node('Conv', ['r', 'w2'], ['y'], pads=[1, 1, 1, 1])]
g = helper.make_graph(nodes, 'convs', [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 3, 9, 7])],
                      [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 5, 9, 7])], [w1, w2])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), '$tmp/convs.onnx')
np.save('$tmp/convs_x.npy', rng.standard_normal((1, 3, 9, 7)).astype(np.float32))"
for storage in buffer image auto; do
  check "opencl convs --storage $storage" 0 "opencl backend" -- "$kiln" run "$tmp/convs.onnx" --backend opencl \
    --storage $storage --input "x=$tmp/convs_x.npy" --output "y=$tmp/convs_$storage.npy" --stats "$tmp/convs_$storage.json"
done
check "opencl convs: auto mixes images and buffers, outputs agree" 0 "^ok$" -- "$py" -c "
import json, numpy as np
def layout(storage):
    return [p for p in json.load(open('$tmp/convs_' + storage + '.json'))['passes'] if p['name'] == 'layout'][0]['statistics']
auto = layout('auto')
assert auto.get('tensors-image', 0) >= 1 and auto.get('graph-io-buffers', 0) >= 1, auto
b = np.load('$tmp/convs_buffer.npy')
for s in ('image', 'auto'):
    o = np.load('$tmp/convs_' + s + '.npy')
    assert o.shape == b.shape and np.allclose(o, b, rtol=1e-5, atol=1e-5), (s, np.abs(o - b).max())
print('ok')"
check_summary

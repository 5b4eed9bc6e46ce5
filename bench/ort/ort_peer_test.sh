#!/usr/bin/env bash
# The ONNX Runtime peer (ort_peer.mjs) writes a kiln-bench-cli-v1 document
# that check_bench_json.py accepts and `kiln bench compare` puts beside a
# `kiln bench` run of the same model. Skipped (exit 77) when onnxruntime-node
# is not installed (`cd bench/ort && npm ci`; CI does not fetch from npm).
# Usage: ort_peer_test.sh KILN_BINARY TEST_DATA_DIR
set -u
kiln=$1
data=$2
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
if ! command -v node >/dev/null || [ ! -d "$here/node_modules/onnxruntime-node" ]; then
  echo "SKIP: onnxruntime-node is not installed (cd bench/ort && npm ci)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$here/../../tools/kiln/check_lib.sh"

make_tiny_zoo "$tmp/zoo" "$data"

check "ort peer runs" 0 "^tiny: median" -- node "$here/ort_peer.mjs" "$tmp/zoo/tiny/model.onnx" --iters 5 \
  --warmup 1 --json "$tmp/ort.json"
check "ort JSON valid" 0 "^ok$" -- "$py" "$here/../check_bench_json.py" "$tmp/ort.json" --models 1 --ok 1
check "ort record" 0 "^ok$" -- "$py" -c "
import json
d = json.load(open('$tmp/ort.json'))
m = d['models'][0]
assert d['tool'] == 'bench/ort/ort_peer.mjs' and d['environment']['backend'] == 'onnxruntime-cpu', d['environment']
assert d['environment']['engine']['name'] == 'onnxruntime-node', d['environment']['engine']
assert m['wall']['count'] == 5 and m['input_shapes'] == {'x': '[2,3]'}, m
assert m['reference_max_abs_diff'] == 0, m['reference_max_abs_diff']
print('ok')"
check "dynamic input without --shape" 1 "dynamic shape" -- node "$here/ort_peer.mjs" "$data/add_relu.onnx" \
  --iters 1 --json "$tmp/bad.json"
check "missing model recorded" 1 "nope.onnx" -- node "$here/ort_peer.mjs" "$tmp/nope.onnx" --iters 1
check "kiln bench beside it" 0 "^tiny +ok" -- "$kiln" bench "$tmp/zoo/tiny/model.onnx" --backend reference \
  --iters 3 --warmup 0 --json "$tmp/kiln.json"
check "compare kiln with ort" 0 "onnxruntime-cpu fp32" -- "$kiln" bench compare "$tmp/kiln.json" "$tmp/ort.json" \
  --out "$tmp/cmp"
check "compare wrote the chart" 0 "onnxruntime-cpu" -- cat "$tmp/cmp/compare.svg"

check_summary

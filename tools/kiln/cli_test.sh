#!/usr/bin/env bash
# End-to-end tests of the kiln tool: runs, --then with new shapes, outputs,
# stats, graph export, and clean errors (exit 1 or 2, never a signal) for bad
# input. Usage: cli_test.sh KILN_BINARY TEST_DATA_DIR
set -u
kiln=$1
data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/check_lib.sh"

m=$data/add_relu.onnx
check "run with --shape" 0 "output 'y': f32\[2,3\]" -- "$kiln" run "$m" --shape x=2x3
check "dynamic dims need a shape" 1 "dynamic shape \[n,3\].*--shape x=" -- "$kiln" run "$m"
check "wrong rank is named" 1 "input 'x'.*rank" -- "$kiln" run "$m" --shape x=2x3x4
check "--then with new shapes" 0 "run 3:" -- "$kiln" run "$m" --shape x=1x3 --then --shape x=7x3 --then --shape x=2x3
check "--backend reference runs on the CPU" 0 "run 1: .*reference backend" -- "$kiln" run "$m" --backend reference --shape x=2x3
check "bad --storage" 1 "--storage must be auto, buffer or image" -- "$kiln" run "$m" --backend vulkan --storage texture --shape x=1x3
check "bad --precision" 1 "--precision must be fp32 or fp16" -- "$kiln" run "$m" --backend vulkan --precision int8 --shape x=1x3
check "bad --coopmat" 1 "--coopmat must be on or off" -- "$kiln" run "$m" --backend vulkan --coopmat maybe --shape x=1x3
check "bad --inplace" 1 "--inplace must be on or off" -- "$kiln" run "$m" --backend vulkan --inplace maybe --shape x=1x3
# The Vulkan backend (lavapipe in CI): same outputs as the reference, new
# shapes after --then compile no shader.
if have_vulkan "$kiln"; then
  check "vulkan run" 0 "run 2: .*vulkan backend" -- "$kiln" run "$m" --backend vulkan --validate --shape x=2x3 --then --shape x=5x3
  for storage in auto buffer image; do
    "$kiln" run "$m" --backend reference --seed 3 --shape x=4x3 --output "y=$tmp/ref.npy" >/dev/null 2>&1
    check "vulkan $storage output" 0 "" -- "$kiln" run "$m" --backend vulkan --storage $storage --seed 3 --shape x=4x3 --output "y=$tmp/vk_$storage.npy"
    check "vulkan $storage matches reference" 0 "" -- cmp "$tmp/ref.npy" "$tmp/vk_$storage.npy"
  done
  check "vulkan stats" 0 "" -- "$kiln" run "$m" --backend vulkan --stats "$tmp/vk.json" --shape x=2x3 --then --shape x=9x3
  check "no compile after the first run" 0 '"shader_compiles": 0.*"shader_compiles": 0' -- tr -d '\n' < "$tmp/vk.json"
  # What the dispatches moved. With kiln.fusion add+relu is one kernel: it
  # reads x (24 B) and the bias (12 B) and writes 24 B. Without it, add
  # reads 36 B and writes 24 B, relu reads and writes 24 B.
  check "vulkan run traffic" 0 "run 1: .*vulkan backend\); dispatches 1 \(fused 1\), bytes moved 60 B \(read 36 B, written 24 B\)" \
    -- "$kiln" run "$m" --backend vulkan --shape x=2x3
  check "vulkan stats traffic" 0 '"fused_dispatches": 1, *"bytes_read": 36, *"bytes_written": 24' -- tr -d '\n' < "$tmp/vk.json"
  check "compile summary counts fused kernels" 0 "dispatches 1 \(fused 1\)" -- "$kiln" run "$m" --backend vulkan --shape x=2x3
  check "unfused traffic" 0 "run 1: .*vulkan backend\); dispatches 2 \(fused 0\), bytes moved 108 B \(read 60 B, written 48 B\)" \
    -- "$kiln" run "$m" --backend vulkan --shape x=2x3 --disable-pass fusion
fi
check "unknown backend" 1 "unknown backend 'cuda'" -- "$kiln" run "$m" --backend cuda --shape x=1x3
check "missing model file" 1 "NOT_FOUND.*/no/such/model.onnx" -- "$kiln" run /no/such/model.onnx
head -c 300 /dev/urandom > "$tmp/garbage.onnx"
check "garbage model" 1 "kiln: " -- "$kiln" run "$tmp/garbage.onnx"
check "unknown option" 1 "unknown option --frobnicate" -- "$kiln" run "$m" --frobnicate 1
check "unknown command" 2 "unknown command" -- "$kiln" frobnicate
check "unknown input name" 1 "no input named 'nope'" -- "$kiln" run "$m" --input nope=/dev/null

# Outputs and stats: y = relu(x + [1,-2,0.5]) on a known input.
/usr/bin/python3 -c "import numpy as np; np.save('$tmp/x.npy', np.array([[-2,-1,0],[1,2,3]], dtype=np.float32))"
check "--input/--output/--stats" 0 "" -- "$kiln" run "$m" --input x="$tmp/x.npy" --output y="$tmp/y.npy" --stats "$tmp/stats.json"
check "output values" 0 "ok" -- /usr/bin/python3 -c "
import json, numpy as np
y = np.load('$tmp/y.npy')
assert np.allclose(y, [[0,0,0.5],[2,0,3.5]]), y
s = json.load(open('$tmp/stats.json'))
assert s['runs'][0]['outputs']['y'] == '[2,3]' and s['nodes'] == 2, s
print('ok')"
check "bad .npy input" 1 "input x" -- "$kiln" run "$m" --input x="$tmp/stats.json"

check "graph --dot" 0 "" -- "$kiln" graph "$m" --dot "$tmp/g.dot"
check "dot content" 0 "n0 -> n1" -- cat "$tmp/g.dot"
check "graph --text" 0 "Relu\(%s\)" -- "$kiln" graph "$m" --text -
check "passes lists canonicalize, loaded from its .so" 0 "kiln.canonicalize.* from /.*/libkiln_canonicalize_plugin.so" -- "$kiln" passes
check "default pipeline listed" 0 "default pipeline: .*dce" -- "$kiln" passes
check "--passes none" 0 "run 1:" -- "$kiln" run "$m" --shape x=1x3 --passes none
check "unknown pass" 1 "frobnicate" -- "$kiln" run "$m" --shape x=1x3 --passes frobnicate
check "missing --plugin file" 1 "/no/such/plugin.so" -- "$kiln" run "$m" --shape x=1x3 --plugin /no/such/plugin.so
check "pass stats" 0 "ok" -- sh -c "'$kiln' run '$m' --shape x=1x3 --stats '$tmp/p.json' >/dev/null && /usr/bin/python3 -c 'import json; s=json.load(open(\"$tmp/p.json\")); names = [p[\"name\"] for p in s[\"passes\"]]; assert \"dce\" in names and \"rdp\" in names, s; print(\"ok\")'"
check "info" 0 "device" -- "$kiln" info
check "info --json parses" 0 "ok" -- sh -c "'$kiln' info --json | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); assert isinstance(d[\"devices\"], list); print(\"ok\")'"

check_summary

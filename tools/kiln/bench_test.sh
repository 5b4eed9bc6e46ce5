#!/usr/bin/env bash
# End-to-end tests of `kiln bench`: the kiln-bench-cli-v1 JSON and the CSV
# validated by bench/check_bench_json.py (the schema bench/README.md
# documents), cold vs warm kernel-cache compiles on Vulkan (lavapipe in CI),
# per-kernel bytes/FLOPs/roofline, --ablation (one row per pass-pipeline
# prefix), a failing model recorded while the others run, and clean errors.
# Usage: bench_test.sh KILN_BINARY TEST_DATA_DIR CHECK_BENCH_JSON_PY
set -u
kiln=$1
data=$2
checker=$3
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/check_lib.sh"

m=$data/add_relu.onnx
fast=(--iters 3 --warmup 1 --shape x=2x3)

# Reference backend: two models, JSON + CSV valid, table line per model.
check "reference bench" 0 "^add_relu +ok" -- "$kiln" bench "$m" "$m" --backend reference "${fast[@]}" \
  --json "$tmp/ref.json" --csv "$tmp/ref.csv"
check "reference JSON+CSV valid" 0 "^ok$" -- "$py" "$checker" "$tmp/ref.json" --csv "$tmp/ref.csv" --models 2 --ok 2
check "reference record" 0 "^ok$" -- "$py" -c "
import json, hashlib
d = json.load(open('$tmp/ref.json'))
m = d['models'][0]
assert d['environment']['backend'] == 'reference' and d['environment']['iters'] == 3, d['environment']
assert all(m['memory'] is None for m in d['models']), d['models']
assert m['wall']['count'] == 3 and m['gpu'] is None and m['input_shapes'] == {'x': '[2,3]'}, m
assert m['sha256'] == hashlib.sha256(open('$m', 'rb').read()).hexdigest(), m['sha256']
assert d['command'][:3] == ['kiln', 'bench', '$m'], d['command']
print('ok')"

# --ablation on the reference backend: passes + 1 rows, the table on stdout.
check "reference ablation" 0 "^  none +[0-9.e-]+ +- +1x" -- "$kiln" bench "$m" --backend reference "${fast[@]}" \
  --ablation --json "$tmp/abl.json"
check "reference ablation JSON" 0 "^ok$" -- "$py" "$checker" "$tmp/abl.json" --models 1 --ok 1
check "reference ablation rows" 0 "^ok$" -- "$py" -c "
import json
d = json.load(open('$tmp/abl.json'))
m = d['models'][0]
assert d['environment']['ablation'] is True, d['environment']
rows, passes = m['ablation'], [p['name'] for p in m['passes']]
assert passes and len(rows) == len(passes) + 1, (len(rows), passes)
assert [r['added'] for r in rows] == [None] + passes, rows
assert all(r['status'] == 'ok' and r['wall']['count'] == 3 and r['gpu'] is None for r in rows), rows
assert rows[0]['speedup'] is None and rows[0]['speedup_vs_none'] == 1, rows[0]
print('ok')"
check "no --ablation: null" 0 "^ok$" -- "$py" -c "
import json
d = json.load(open('$tmp/ref.json'))
assert d['environment']['ablation'] is False and all(m['ablation'] is None for m in d['models'])
assert d['environment']['peak_gbps'] is None and d['environment']['peak_gflops'] is None
print('ok')"

# --min-time: runs until the time has passed; iters is then null.
check "--min-time" 0 "" -- "$kiln" bench "$m" --backend reference --shape x=2x3 --warmup 0 --min-time 0.05 \
  --json "$tmp/mt.json"
check "--min-time JSON" 0 "^ok$" -- "$py" -c "
import json
d = json.load(open('$tmp/mt.json'))
assert d['environment']['iters'] is None and d['environment']['min_time_s'] == 0.05, d['environment']
assert d['models'][0]['wall']['count'] >= 1
print('ok')"

# One failing model among several: recorded as an error naming it, the others run, exit 1.
head -c 300 /dev/urandom > "$tmp/garbage.onnx"
check "failing models recorded" 1 "NOT_FOUND.*/no/such/model.onnx" -- "$kiln" bench "$m" /no/such/model.onnx \
  "$tmp/garbage.onnx" --backend reference "${fast[@]}" --json "$tmp/err.json" --csv "$tmp/err.csv"
check "error records valid" 0 "^ok$" -- "$py" "$checker" "$tmp/err.json" --csv "$tmp/err.csv" --models 3 --ok 1
check "error record names the file" 0 "^ok$" -- "$py" -c "
import json
ms = json.load(open('$tmp/err.json'))['models']
assert [m['status'] for m in ms] == ['ok', 'error', 'error'], ms
assert '/no/such/model.onnx' in ms[1]['error'] and 'garbage.onnx' in ms[2]['error'], ms
print('ok')"

# Zoo layouts (NAME/model.onnx) are named by their directory.
mkdir -p "$tmp/relu_zoo" && cp "$m" "$tmp/relu_zoo/model.onnx"
check "zoo model named by its directory" 0 "^relu_zoo +ok" -- "$kiln" bench "$tmp/relu_zoo/model.onnx" \
  --backend reference "${fast[@]}"

# The checker itself rejects a document missing a required field or with a wrong schema.
"$py" -c "
import json
d = json.load(open('$tmp/ref.json'))
del d['models'][0]['wall']['p90_ms']
d['schema'] = 'kiln-bench-cli-v0'
json.dump(d, open('$tmp/bad.json', 'w'))"
check "checker rejects a bad document" 1 "models\[0\]\.wall\.p90_ms: missing" -- "$py" "$checker" "$tmp/bad.json"
"$py" -c "
import json
d = json.load(open('$tmp/abl.json'))
d['models'][0]['ablation'].pop()
json.dump(d, open('$tmp/bad_abl.json', 'w'))"
check "checker rejects a short ablation" 1 "ablation: expected [0-9]+ rows \(passes \+ 1\)" -- "$py" "$checker" \
  "$tmp/bad_abl.json"
check "checker rejects another schema" 1 "schema: expected 'kiln-bench-cli-v1'" -- "$py" "$checker" "$tmp/bad.json"

# Usage errors.
check "no model" 2 "no MODEL given" -- "$kiln" bench --iters 3
check "unknown option" 1 "unknown option --frobnicate" -- "$kiln" bench "$m" --frobnicate 1
check "bad --iters" 1 "--iters expects an integer >= 1, got '0'" -- "$kiln" bench "$m" --iters 0
check "bad --min-time" 1 "--min-time expects seconds" -- "$kiln" bench "$m" --min-time fast
check "--iters with --min-time" 1 "--iters or --min-time, not both" -- "$kiln" bench "$m" --iters 2 --min-time 1
check "bad --seed" 1 "--seed expects an integer" -- "$kiln" bench "$m" --seed x --backend reference
check "bad --precision" 1 "--precision must be fp32 or fp16" -- "$kiln" bench "$m" --precision int8
check "bad --peak-gbps" 1 "--peak-gbps expects a positive number, got '-3'" -- "$kiln" bench "$m" --peak-gbps -3
check "bad --peak-gflops" 1 "--peak-gflops expects a positive number, got 'lots'" -- "$kiln" bench "$m" \
  --peak-gflops lots
check "unknown backend" 1 "unknown backend 'cuda'" -- "$kiln" bench "$m" --backend cuda
check "unwritable --json" 1 "--json: cannot write '/no/such/dir/b.json'" -- "$kiln" bench "$m" --backend reference \
  "${fast[@]}" --json /no/such/dir/b.json
check "dynamic dims need a shape" 1 "dynamic shape.*--shape x=" -- "$kiln" bench "$m" --backend reference --iters 1

# Vulkan (lavapipe in CI): device info, cold compile compiles shaders, the
# warm one reads them from the cache it filled, GPU times and a per-kernel profile.
if have_vulkan "$kiln"; then
  check "vulkan bench" 0 "^add_relu +ok" -- "$kiln" bench "$m" --backend vulkan --validate "${fast[@]}" \
    --json "$tmp/vk.json" --csv "$tmp/vk.csv" --peak-gbps 50 --peak-gflops 400
  check "vulkan JSON+CSV valid" 0 "^ok$" -- "$py" "$checker" "$tmp/vk.json" --csv "$tmp/vk.csv" --models 1 --ok 1
  check "vulkan bytes moved" 0 "dispatches 1 \(fused 1\), bytes moved [0-9.]+ [KMG]?i?B per run" -- "$kiln" bench "$m" \
    --backend vulkan "${fast[@]}"
  check "vulkan record" 0 "^ok$" -- "$py" -c "
import json
d = json.load(open('$tmp/vk.json'))
env, m = d['environment'], d['models'][0]
assert env['device']['name'] and env['precision'] == 'fp32' and env['storage'] == 'auto', env
assert env['coopmat'] == 'on' and env['inplace'] == 'on', env
mem = m['memory']
assert 0 < mem['live_lower_bound'] <= mem['arena_bytes'] <= mem['activation_bytes'] < mem['device_bytes'], mem
cold, warm = m['cold_start']['compile_cold'], m['cold_start']['compile_warm']
assert cold['shader_compiles'] > 0 and cold['shader_disk_hits'] == 0, cold
assert warm['shader_compiles'] == 0 and warm['shader_disk_hits'] > 0, warm
# The batches ran on at least one thread and are parts of kernels_ms.
for c in (cold, warm):
    assert c['compile_threads'] >= 1 and c['shaders_ms'] + c['pipelines_ms'] <= c['kernels_ms'], c
assert m['gpu'] is not None and m['gpu']['count'] == 3, m['gpu']
assert m['kernels'] and all(k['gpu_ms'] >= 0 for k in m['kernels']), m['kernels']
# Every kernel moves bytes; kiln.fusion makes add+relu one kernel, which
# reads x=2x3 and the 3-element bias and writes 6 fp32 elements.
assert all(k['bytes'] > 0 for k in m['kernels']), m['kernels']
assert [k['bytes'] for k in m['kernels'] if k['kernel'] == 'fused_add_relu'] == [60], m['kernels']
assert [(k['bytes_read'], k['bytes_written']) for k in m['kernels'] if k['kernel'] == 'fused_add_relu'] == [(36, 24)], m['kernels']
# The run's totals are its kernels' sums; its one kernel is the fused one.
assert m['bytes_read'] == sum(k['bytes_read'] for k in m['kernels']), m
assert m['bytes_written'] == sum(k['bytes_written'] for k in m['kernels']), m
assert m['fused_dispatches'] == 1 and m['dispatches'] == len(m['kernels']), m
assert env['peak_gbps'] == 50 and env['peak_gflops'] == 400, env
for k in m['kernels']:
    if k['gpu_ms'] > 0:
        assert abs(k['gbps'] - k['bytes'] / (k['gpu_ms'] * 1e6)) <= 1e-3 * k['gbps'] + 1e-9, k
        assert k['roofline'] is not None and abs(k['roofline'] - k['gbps'] / 50) <= 1e-3 * k['roofline'] + 1e-9, k
print('ok')"
  # The fields added to v1 are optional: a document from before them still validates.
  "$py" -c "
import json
d = json.load(open('$tmp/vk.json'))
for key in ('peak_gbps', 'peak_gflops', 'ablation'):
    del d['environment'][key]
for m in d['models']:
    del m['ablation']
    for k in m['kernels']:
        for key in ('bytes', 'flops', 'gbps', 'gflops', 'roofline'):
            del k[key]
json.dump(d, open('$tmp/old_v1.json', 'w'))"
  check "checker accepts v1 without the added fields" 0 "^ok$" -- "$py" "$checker" "$tmp/old_v1.json"
  check "vulkan ablation" 0 "ablation of add_relu \(gpu median ms\)" -- "$kiln" bench "$m" --backend vulkan \
    --validate "${fast[@]}" --ablation --json "$tmp/vkabl.json"
  check "vulkan ablation JSON" 0 "^ok$" -- "$py" "$checker" "$tmp/vkabl.json" --models 1 --ok 1
  check "vulkan ablation rows" 0 "^ok$" -- "$py" -c "
import json
m = json.load(open('$tmp/vkabl.json'))['models'][0]
rows = m['ablation']
assert len(rows) == len(m['passes']) + 1, rows
assert all(r['status'] == 'ok' and r['gpu']['count'] == 3 and r['dispatches'] > 0 for r in rows), rows
assert all(r['median_ms'] == r['gpu']['median_ms'] for r in rows), rows
print('ok')"
  # A GEMM kernel counts its FLOPs: y = x @ W with x 4x8, W 8x16 -> 2*4*8*16.
  if "$py" -c "import onnx" 2>/dev/null; then
    "$py" -c "
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
w = numpy_helper.from_array(np.ones((8, 16), np.float32), 'w')
g = helper.make_graph([helper.make_node('MatMul', ['x', 'w'], ['y'])], 'mm',
                      [helper.make_tensor_value_info('x', TensorProto.FLOAT, [4, 8])],
                      [helper.make_tensor_value_info('y', TensorProto.FLOAT, [4, 16])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), '$tmp/matmul.onnx')"
    check "vulkan GEMM flops" 0 "^matmul +ok" -- "$kiln" bench "$tmp/matmul.onnx" --backend vulkan --validate \
      --iters 2 --warmup 0 --json "$tmp/mm.json" --peak-gflops 100
    check "vulkan GEMM flops JSON" 0 "^ok$" -- "$py" -c "
import json
d = json.load(open('$tmp/mm.json'))
ks = d['models'][0]['kernels']
assert any(k['flops'] == 2 * 4 * 8 * 16 for k in ks), ks
for k in ks:
    if k['flops'] and k['gpu_ms'] > 0:
        assert k['gflops'] > 0 and k['roofline'] is not None, k
print('ok')" 
    check "vulkan GEMM JSON valid" 0 "^ok$" -- "$py" "$checker" "$tmp/mm.json" --models 1 --ok 1
    # kiln run --stats reports the same per-kernel bytes and FLOPs.
    check "run --stats bytes/flops" 0 "" -- "$kiln" run "$tmp/matmul.onnx" --backend vulkan --profile \
      --stats "$tmp/mm_stats.json"
    check "run --stats kernels" 0 "^ok$" -- "$py" -c "
import json
bench = {k['kernel']: (k['bytes'], k['flops']) for k in json.load(open('$tmp/mm.json'))['models'][0]['kernels']}
def kernels(o):  # every 'kernels' list, wherever the stats nest it
    if isinstance(o, dict):
        if 'kernels' in o and isinstance(o['kernels'], list):
            yield from o['kernels']
        for v in o.values():
            yield from kernels(v)
    elif isinstance(o, list):
        for v in o:
            yield from kernels(v)
ks = list(kernels(json.load(open('$tmp/mm_stats.json'))))
assert ks and all((k['bytes'], k['flops'] or None) == bench[k['kernel']] for k in ks), (ks, bench)
print('ok')"
  fi
  check "vulkan image fp16" 0 "^add_relu +ok" -- "$kiln" bench "$m" --backend vulkan --storage image \
    --precision fp16 "${fast[@]}"
  # --concurrent: three threads on one session with three run slots, each
  # output checked against a single run; every run's device interval lies
  # in the phase's wall bracket. The overlap is reported, not asserted
  # (lavapipe has one queue), but it must be a fraction computed from
  # the intervals.
  check "vulkan --concurrent" 0 "device overlap: >=2 runs in flight [0-9.]+% of" -- "$kiln" bench "$m" \
    --backend vulkan --validate --iters 4 --warmup 1 --shape x=2x3 --concurrent 3 --json "$tmp/conc.json"
  check "--concurrent JSON valid" 0 "^ok$" -- "$py" "$checker" "$tmp/conc.json" --models 1 --ok 1
  check "--concurrent record" 0 "^ok$" -- "$py" -c "
import json
c = json.load(open('$tmp/conc.json'))['models'][0]['concurrent']
assert c['threads'] == 3 and c['runs_per_thread'] == 4 and len(c['runs']) == 12, c
assert c['mismatches'] == 0 and c['timestamps'] and c['within_wall'], c
assert sorted({r['thread'] for r in c['runs']}) == [0, 1, 2], c['runs']
assert all(0 <= r['gpu_begin_ms'] <= r['gpu_end_ms'] <= c['concurrent']['wall_ms'] + 0.05 for r in c['runs']), c['runs']
o = c['concurrent']['overlap']
assert 0 <= o['fraction'] <= 1 and o['overlapped_ms'] <= o['busy_ms'] and o['max_in_flight'] >= 1, o
assert abs(o['summed_ms'] - sum(r['gpu_end_ms'] - r['gpu_begin_ms'] for r in c['runs'])) < 1e-3, o
assert c['sequential']['overlap']['fraction'] == 0, c['sequential']
print('ok')"
  check "no --concurrent: null" 0 "^ok$" -- "$py" -c "
import json
assert json.load(open('$tmp/vk.json'))['models'][0]['concurrent'] is None
print('ok')"
fi
check "--concurrent needs Vulkan" 1 "--concurrent needs the Vulkan backend" -- "$kiln" bench "$m" \
  --backend reference --iters 1 --warmup 0 --shape x=2x3 --concurrent 2
check "--concurrent range" 1 "--concurrent expects 1 to 64" -- "$kiln" bench "$m" --backend reference \
  --iters 1 --shape x=2x3 --concurrent 65

# A zoo directory (bench/zoo): NAME/model.onnx with input.npy and output.npy.
# Without --shape the model's own input.npy is fed, the record is named by
# the directory, and the first run is checked against output.npy.
make_tiny_zoo "$tmp/zoo" "$data"
check "zoo directory" 0 "^tiny +ok" -- "$kiln" bench "$tmp/zoo/tiny/model.onnx" --backend reference --iters 2 \
  --warmup 0 --json "$tmp/zoo.json"
check "zoo input and reference check" 0 "^ok$" -- "$py" -c "
import json
m = json.load(open('$tmp/zoo.json'))['models'][0]
assert m['model'] == 'tiny' and m['input_shapes'] == {'x': '[2,3]'}, m
assert m['reference_max_abs_diff'] == 0, m['reference_max_abs_diff']
print('ok')"
"$py" -c "import numpy as np; np.save('$tmp/zoo/tiny/output.npy', np.ones((2, 3), np.float32))"
check "zoo reference mismatch shows" 0 "max.d. vs output.npy [1-9]" -- "$kiln" bench "$tmp/zoo/tiny/model.onnx" \
  --backend reference --iters 1 --warmup 0

check_summary

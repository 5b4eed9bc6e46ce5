#!/usr/bin/env bash
# End-to-end tests of `kiln bench compare`: two `kiln bench` documents (the
# reference backend, and Vulkan when a device exists) side by side — ratio
# table, compare.md, compare.svg (well-formed XML, one bar per model and
# series); the Python peer documents (kiln-bench-v1) as series; clean errors.
# Usage: bench_compare_test.sh KILN_BINARY TEST_DATA_DIR PEER_RESULTS_DIR
set -u
kiln=$1
data=$2
peers=$3
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/check_lib.sh"

# svg_check FILE BARS: well-formed XML, exactly BARS bars, a legend entry per series, a title.
svg_check() {
  "$py" -c "
import sys, xml.dom.minidom
d = xml.dom.minidom.parse('$1')
rects = d.getElementsByTagName('rect')
bars = [r for r in rects if r.getAttribute('class') == 'bar']
legend = [r for r in rects if r.getAttribute('class') == 'legend']
assert d.documentElement.tagName == 'svg', d.documentElement.tagName
assert len(bars) == $2, len(bars)
assert all(float(b.getAttribute('height')) > 0 for b in bars)
assert len(legend) == $3, len(legend)
texts = ' '.join(t.firstChild.data for t in d.getElementsByTagName('text') if t.firstChild)
assert 'Median latency' in texts and 'median latency (ms)' in texts, texts
print('ok')"
}

m1=$data/add_relu.onnx
mkdir -p "$tmp/models"
cp "$m1" "$tmp/models/second.onnx"  # a second model name: the same graph under another file name
m2=$tmp/models/second.onnx
fast=(--iters 3 --warmup 1 --shape x=2x3)

check "bench A" 0 "" -- "$kiln" bench "$m1" "$m2" --backend reference "${fast[@]}" --json "$tmp/a.json"
if have_vulkan "$kiln"; then
  check "bench B (vulkan)" 0 "" -- "$kiln" bench "$m1" "$m2" --backend vulkan "${fast[@]}" --json "$tmp/b.json"
  blabel="fp32 auto"  # the default storage
else
  check "bench B (reference)" 0 "" -- "$kiln" bench "$m1" "$m2" --backend reference "${fast[@]}" --json "$tmp/b.json"
  blabel="b.json"
fi

# Two series, two models: the table has both, the baseline at 1.00x, and the files land next to the first JSON.
check "compare table" 0 "^add_relu +\[1\] .* 1\.00x" -- "$kiln" bench compare "$tmp/a.json" "$tmp/b.json"
check "compare series lines" 0 "\[2\] .*$blabel" -- "$kiln" bench compare "$tmp/a.json" "$tmp/b.json"
check "second model row" 0 "^second +\[1\]" -- "$kiln" bench compare "$tmp/a.json" "$tmp/b.json"
check "ratio matches the medians" 0 "^ok$" -- "$py" -c "
import json, re, subprocess
a, b = (json.load(open('$tmp/' + f))['models'][0]['wall']['median_ms'] for f in ('a.json', 'b.json'))
out = subprocess.run(['$kiln', 'bench', 'compare', '$tmp/a.json', '$tmp/b.json'], capture_output=True, text=True).stdout
lines = out.splitlines()
table = lines[[i for i, l in enumerate(lines) if l.startswith('model ')][0] + 1:]
row = [l for l in table if l.split()[0] == '[2]'][0]  # add_relu, series 2
got = float(re.search(r'([0-9.]+)x', row).group(1))
assert abs(got - b / a) <= 0.01 + 0.01 * b / a, (got, b / a, row)
print('ok')"
check "svg valid, 4 bars" 0 "^ok$" -- svg_check "$tmp/compare.svg" 4 2
check "markdown report" 0 "^ok$" -- "$py" -c "
md = open('$tmp/compare.md').read()
assert '| add_relu | [1]' in md and '| second | [2]' in md, md
assert '1.00×' in md and '## Environments' in md and '## Commands' in md and 'compare.svg' in md, md
assert 'kiln bench $m1' in md, md
print('ok')"

# --baseline and --out.
# The same configuration measured twice: a run-to-run agreement table (p10-p90
# overlap per model); a doctored second run whose models are slower by more
# than any model's p10-p90 spread (at least 10x: a loaded machine can spread
# three microsecond-scale iterations that far) disagrees.
"$py" -c "
import json
d = json.load(open('$tmp/a.json'))
f = 10 * max(max(1.0, m['wall']['p90_ms'] / max(m['wall']['p10_ms'], 1e-9)) for m in d['models'])
for m in d['models']:
    for k in ('median_ms', 'p10_ms', 'p90_ms', 'min_ms', 'max_ms', 'mean_ms'):
        m['wall'][k] *= f
json.dump(d, open('$tmp/a_slow.json', 'w'))"
check "run to run" 0 "^ok$" -- "$py" -c "
import subprocess
subprocess.run(['$kiln', 'bench', 'compare', '$tmp/a.json', '$tmp/a.json', '--out', '$tmp/rr'], check=True,
               capture_output=True)
md = open('$tmp/rr/compare.md').read()
assert 'Run to run: [1] vs [2]' in md and '**2 of 2** do' in md, md
subprocess.run(['$kiln', 'bench', 'compare', '$tmp/a.json', '$tmp/a_slow.json', '--out', '$tmp/rr2'], check=True,
               capture_output=True)
md = open('$tmp/rr2/compare.md').read()
assert '**0 of 2** do' in md and '| **no** |' in md, md
print('ok')"
check "--baseline 2" 0 "\[2\] .*baseline" -- "$kiln" bench compare "$tmp/a.json" "$tmp/b.json" --baseline 2 \
  --out "$tmp/out"
check "--out files" 0 "^ok$" -- svg_check "$tmp/out/compare.svg" 4 2

# The H100 peer documents: one series per (engine, precision[, storage]), Kiln next to PyTorch.
if [ -f "$peers/kiln.json" ] && [ -f "$peers/torch.json" ]; then
  check "peer documents" 0 "torch-eager fp32" -- "$kiln" bench compare "$peers/kiln.json" "$peers/torch.json" \
    --out "$tmp/peers"
  n_bars=$("$py" -c "
import json
n = 0
for f in ('kiln.json', 'torch.json'):
    n += sum(1 for r in json.load(open('$peers/' + f))['records'] if r['status'] == 'ok')
print(n)")
  n_series=$("$py" -c "
import json
s = set()
for f in ('kiln.json', 'torch.json'):
    for r in json.load(open('$peers/' + f))['records']:
        s.add((r['engine'], r['precision'], r.get('storage')))
print(len(s))")
  check "peer svg" 0 "^ok$" -- svg_check "$tmp/peers/compare.svg" "$n_bars" "$n_series"
  check "peer markdown" 0 "NVIDIA H100" -- cat "$tmp/peers/compare.md"
fi

# Errors name the file.
echo "not json {" > "$tmp/bad.json"
echo '{"schema": "something-else"}' > "$tmp/other.json"
echo '{"schema": "kiln-bench-cli-v1", "environment": {}, "models": [' > "$tmp/trunc.json"
"$py" -c "
import json
d = json.load(open('$tmp/a.json'))
for m in d['models']: m['model'] = 'other_' + m['model']
json.dump(d, open('$tmp/disjoint.json', 'w'))
for m in d['models']: m['status'], m['error'], m['wall'] = 'error', 'it broke', None
json.dump(d, open('$tmp/failed.json', 'w'))"
check "no file" 2 "no FILE given" -- "$kiln" bench compare
check "missing file" 1 "/no/such/file.json: cannot open" -- "$kiln" bench compare "$tmp/a.json" /no/such/file.json
check "not JSON" 1 "bad.json: not valid JSON: .*line 1, column 1" -- "$kiln" bench compare "$tmp/bad.json"
check "truncated JSON" 1 "trunc.json: not valid JSON: line 2" -- "$kiln" bench compare "$tmp/trunc.json"
check "unknown schema" 1 "other.json: unknown schema 'something-else'" -- "$kiln" bench compare "$tmp/other.json"
check "nothing measured" 1 "no model was measured successfully in .*failed.json" -- "$kiln" bench compare \
  "$tmp/failed.json"
check "no common models" 1 "no common models" -- "$kiln" bench compare "$tmp/a.json" "$tmp/disjoint.json"
check "bad --baseline" 1 "--baseline expects a series number from 1 to 2, got '3'" -- "$kiln" bench compare \
  "$tmp/a.json" "$tmp/b.json" --baseline 3
check "unknown option" 1 "unknown option --frob" -- "$kiln" bench compare "$tmp/a.json" --frob 1

check_summary

#!/usr/bin/env bash
# kiln-tune --short on the CI device under the validation layer, then
# check_profile.py (standard library only, any python3) on the profile it
# wrote; with KILN, `kiln info --model` on it: the text report, and an SVG
# chart holding one point per measurement and one line per predicted curve.
# Usage: tune_short_test.sh KILN_TUNE CHECK_PY [KILN]
set -eu
tune=$1 check=$2 kiln=${3:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The cache goes to the temporary directory too: the test leaves nothing behind.
KILN_CACHE_DIR="$dir/cache" "$tune" --short --validation --out "$dir/profile.json"
ls "$dir"/cache/tmmodel/*.json >/dev/null || { echo "FAIL: no cached profile under $dir/cache/tmmodel"; exit 1; }
python3 "$check" "$dir/profile.json"
# Bad arguments are errors that say what was wrong.
if "$tune" --seed x 2>"$dir/err"; then echo "FAIL: --seed x accepted"; exit 1; fi
grep -q "takes a number" "$dir/err" || { echo "FAIL: unclear --seed error:"; cat "$dir/err"; exit 1; }

[ -n "$kiln" ] || exit 0
KILN_CACHE_DIR="$dir/cache" "$kiln" info --model --svg "$dir/model.svg" > "$dir/report.txt"
grep -q "held-out Spearman: thread" "$dir/report.txt" || { echo "FAIL: no fit in the report:"; cat "$dir/report.txt"; exit 1; }
python3 - "$dir/profile.json" "$dir/model.svg" <<'PY'
import json, sys
import xml.etree.ElementTree as ET
profile = json.load(open(sys.argv[1]))
root = ET.parse(sys.argv[2]).getroot()
ns = "{http://www.w3.org/2000/svg}"
m = profile["measurements"]
stream = m["stream"]
first_pattern = stream[0]["pattern"]
single = [r for r in stream if r["work_groups"] == 1]
waves = [r for r in stream if r["pattern"] == first_pattern]
want_points = len(m["chase_image"]) + len(m["chase_buffer"]) + len(single) + len(waves)
want_lines = len({(r["storage"], r["pattern"]) for r in single}) + len({(r["storage"], r["group_size"]) for r in waves})
points = len(root.findall(f".//{ns}circle"))
lines = len(root.findall(f".//{ns}polyline"))
width, height = float(root.get("width")), float(root.get("height"))
inside = all(0 <= float(c.get("cx")) <= width and 0 <= float(c.get("cy")) <= height for c in root.iter(f"{ns}circle"))
print(f"model.svg: {points} points (want {want_points}), {lines} predicted lines (want {want_lines}), inside: {inside}")
sys.exit(0 if (points, lines, inside) == (want_points, want_lines, True) else 1)
PY
# A profile without measurements, and no profile at all, are named errors.
python3 -c "import json,sys; p=json.load(open(sys.argv[1])); p.pop('measurements'); json.dump(p, open(sys.argv[2],'w'))" \
  "$dir/profile.json" "$dir/bare.json"
if "$kiln" info --model "$dir/bare.json" --svg "$dir/bare.svg" 2>"$dir/err"; then echo "FAIL: a chart without measurements"; exit 1; fi
grep -q "no measurements to chart" "$dir/err" || { echo "FAIL: unclear error:"; cat "$dir/err"; exit 1; }
if KILN_CACHE_DIR="$dir/empty" "$kiln" info --model 2>"$dir/err"; then echo "FAIL: a report without a profile"; exit 1; fi
grep -q "run .kiln tune. first" "$dir/err" || { echo "FAIL: unclear error:"; cat "$dir/err"; exit 1; }
echo PASS

#!/usr/bin/env bash
# The tmmodel pass through the kiln tool: with the fixture profile it
# annotates the three tiled GEMMs (not the depthwise Conv or the GEMV), the
# outputs match the run without it in every storage and precision, a
# missing profile changes nothing and says so, a bad KILN_TMMODEL_PROFILE
# fails the (optional) pass with an error naming the file, and --disable-pass tmmodel is the ablation.
# Usage: tmmodel_cli_test.sh KILN PYTHON TESTDATA_DIR
set -u
kiln=$1 python=$2 data=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export KILN_CACHE_DIR="$tmp/cache"  # no cached profile unless a case makes one
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
passes=remove-noops,fold-shapes,fold-constants,fuse-conv-batchnorm,cse,dce,rdp,fusion,memplan-order
model=$tmp/gemms.onnx
"$python" "$data/make_gemm_model.py" "$model" || { echo "FAIL: cannot write the model"; exit 1; }
stat() {  # stat STATS.json NAME -> the tmmodel pass's statistic NAME (0 if absent, "none" without the pass)
  "$python" -c "
import json, sys
d = json.load(open(sys.argv[1]))
p = [p for p in d['passes'] if p['name'] == 'tmmodel']
print(p[0]['statistics'].get(sys.argv[2], 0) if p and not p[0].get('skipped') else 'none')" "$1" "$2"
}
outs() { echo --output D="$1/D.npy" --output G="$1/G.npy" --output Y="$1/Y.npy"; }

for storage in buffer image; do
  for precision in fp32 fp16; do
    base=$tmp/base_${storage}_$precision tuned=$tmp/tuned_${storage}_$precision
    mkdir -p "$base" "$tuned"
    common=(--storage "$storage" --precision "$precision" --seed 3 --validate)
    "$kiln" run "$model" "${common[@]}" --passes "$passes" $(outs "$base") >"$tmp/log" 2>&1 ||
      { fail "$storage/$precision: run without tmmodel"; cat "$tmp/log"; continue; }
    KILN_TMMODEL_PROFILE="$data/profile.json" "$kiln" run "$model" "${common[@]}" --passes "$passes,tmmodel" \
      --stats "$tuned/stats.json" $(outs "$tuned") >"$tmp/log" 2>&1 ||
      { fail "$storage/$precision: run with tmmodel"; cat "$tmp/log"; continue; }
    [ "$(stat "$tuned/stats.json" annotated)" = 3 ] || fail "$storage/$precision: annotated $(stat "$tuned/stats.json" annotated), want 3"
    [ "$(stat "$tuned/stats.json" gemm-nodes)" = 4 ] || fail "$storage/$precision: gemm-nodes $(stat "$tuned/stats.json" gemm-nodes), want 4"
    tol=1e-5; [ "$precision" = fp16 ] && tol=2e-2
    for o in D G Y; do
      "$python" -c "
import numpy as np, sys
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(0 if a.shape == b.shape and np.allclose(a, b, rtol=float(sys.argv[3]), atol=float(sys.argv[3])) else 1)" \
        "$base/$o.npy" "$tuned/$o.npy" "$tol" || fail "$storage/$precision: output $o differs with tmmodel's tiles"
    done
  done
done

# The choices are in the graph: one fixture device, one group at a time, so
# the fewest waves win (gemm_choice.h) — the largest tiles that fit.
KILN_TMMODEL_PROFILE="$data/profile.json" "$kiln" graph "$model" --passes "$passes,tmmodel" --text - >"$tmp/graph.kir" 2>&1
grep -q 'kiln.kernel' "$tmp/graph.kir" || fail "no kiln.kernel annotation in the graph"
[ "$(grep -c 'kiln.kernel' "$tmp/graph.kir")" = 3 ] || fail "want 3 kiln.kernel annotations: $(grep 'kiln.kernel' "$tmp/graph.kir")"

# No profile: nothing changes, and the statistics say why.
"$kiln" run "$model" --passes "$passes,tmmodel" --stats "$tmp/none.json" >/dev/null 2>&1 || fail "run without a profile"
[ "$(stat "$tmp/none.json" profile-missing)" = 1 ] || fail "no profile-missing statistic"
[ "$(stat "$tmp/none.json" annotated)" = 0 ] || fail "annotated without a profile"

# A cached profile for this device (kiln tune's file name) is found without the variable.
device=$("$kiln" run "$model" --stats "$tmp/dev.json" >/dev/null 2>&1 && "$python" -c "import json,sys; print(json.load(open(sys.argv[1]))['device'])" "$tmp/dev.json")
dev_file=$("$python" -c "
import re, sys
s = re.sub(r'[^A-Za-z0-9.]+', '_', sys.argv[1]).strip('_') or 'device'
print(s + '-drvx-kiln0.json')" "$device")
mkdir -p "$tmp/cache/tmmodel" && cp "$data/profile.json" "$tmp/cache/tmmodel/$dev_file"
"$kiln" run "$model" --passes "$passes,tmmodel" --stats "$tmp/cached.json" >/dev/null 2>&1 || fail "run with a cached profile"
[ "$(stat "$tmp/cached.json" annotated)" = 3 ] || fail "the cached profile $dev_file was not used"

# A bad explicit profile fails the pass with an error naming the file and
# what is wrong; the pass is optional, so the host reports it, skips it and
# runs the model with the planner's own tiles.
echo '{"model": {"beta_image_ns": [1]}}' >"$tmp/bad.json"
KILN_TMMODEL_PROFILE="$tmp/bad.json" "$kiln" run "$model" --passes "$passes,tmmodel" --stats "$tmp/bad_stats.json" \
  >"$tmp/log" 2>&1 || fail "a bad profile stopped the run"
grep -q "pass 'tmmodel' failed: .*bad.json.*beta_image_ns" "$tmp/log" || { fail "unclear error for a bad profile:"; cat "$tmp/log"; }
[ "$(stat "$tmp/bad_stats.json" annotated)" = none ] || fail "a bad profile still annotated"

# The ablation.
KILN_TMMODEL_PROFILE="$data/profile.json" "$kiln" run "$model" --passes "$passes,tmmodel" --disable-pass tmmodel \
  --stats "$tmp/off.json" >/dev/null 2>&1 || fail "run with --disable-pass tmmodel"
[ "$(stat "$tmp/off.json" annotated)" = none ] || fail "--disable-pass tmmodel still ran the pass"

[ "$fails" -eq 0 ] && echo "ok: tmmodel through the kiln tool"
exit "$fails"

#!/usr/bin/env bash
# End-to-end test of example.no-residual-fusion, a third-party pass that
# changes how Kiln's fusion pass grouped a graph: install this build to a
# temporary prefix, build the example out of tree against it
# (find_package(kiln)), then run the *installed* kiln on a small residual
# model with and without the plugin: the pass takes the residual Adds out of
# their groups (pass statistics, graph text), the plan has more dispatches,
# and the outputs are byte-identical. --disable-pass fusion leaves nothing
# for the plugin to change.
#
# Usage: example_test.sh KILN_BUILD_DIR EXAMPLE_SOURCE_DIR CMAKE CXX
set -u
build=$1
src=$2
cmake=$3
cxx=$4
python=/usr/bin/python3
tmp=$(cd "$(mktemp -d)" && pwd -P)
trap 'rm -rf "$tmp"' EXIT
unset KILN_PLUGIN_PATH
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
. "$(dirname "$0")/../../../../tools/kiln/check_lib.sh"
finish() {
  check_summary
  exit $?
}

# --- install Kiln, build the example against it -----------------------------
prefix=$tmp/prefix
check "cmake --install" 0 "" -- "$cmake" --install "$build" --prefix "$prefix"
kiln=$prefix/bin/kiln
check "installed fusion plugin" 0 "/kiln/plugins/libkiln_fusion_plugin.so" -- find "$prefix" -name libkiln_fusion_plugin.so
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
check "example configures" 0 "" -- "$cmake" -S "$src" -B "$tmp/build" "${gen[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release \
  -DNO_RESIDUAL_FUSION_WERROR=ON
check "example builds" 0 "" -- "$cmake" --build "$tmp/build"
plugin=$tmp/build/libno_residual_fusion.so
[ "$failures" -eq 0 ] || finish

# --- the graph ----------------------------------------------------------------
model=$tmp/residual.onnx
check "make the model" 0 "" -- "$python" "$src/make_model.py" "$model"
"$python" -c "import numpy as np; np.save('$tmp/x.npy', np.random.default_rng(3).uniform(-3, 3, (1, 8, 6, 6)).astype(np.float32))"
"$kiln" graph "$model" --text "$tmp/plain.kir" 2>/dev/null
"$kiln" graph "$model" --text "$tmp/split.kir" --plugin "$plugin" 2>"$tmp/split.err"
check "fusion groups the residual Adds" 0 "^2$" -- bash -c \
  "grep -E '= Add\(%r[12], ' '$tmp/plain.kir' | grep -c 'kiln.fusion_group'"
check "the plugin takes them out" 0 "^0$" -- bash -c \
  "grep -E '= Add\(%r[12], ' '$tmp/split.kir' | grep -c 'kiln.fusion_group' || true"
check "bias Adds stay grouped" 0 "^2$" -- bash -c \
  "grep -E '= Add\(%t[12], ' '$tmp/split.kir' | grep -c 'kiln.fusion_group'"
check "no warnings" 1 "" -- grep -q . "$tmp/split.err"

# --- run: more dispatches, the same bytes ------------------------------------
check "run without the plugin" 0 "" -- "$kiln" run "$model" --input x="$tmp/x.npy" --output y2="$tmp/plain.npy" \
  --stats "$tmp/plain.json"
check "run with the plugin" 0 "" -- "$kiln" run "$model" --input x="$tmp/x.npy" --output y2="$tmp/split.npy" \
  --plugin "$plugin" --stats "$tmp/split.json"
check "run without fusion" 0 "" -- "$kiln" run "$model" --input x="$tmp/x.npy" --output y2="$tmp/nofusion.npy" \
  --plugin "$plugin" --disable-pass fusion --stats "$tmp/nofusion.json"
check "dispatches change, outputs byte-identical" 0 "^ok " -- "$python" -c "
import json, numpy as np
a, b, c = (np.load('$tmp/%s.npy' % n) for n in ('plain', 'split', 'nofusion'))
assert a.shape == (1, 8, 6, 6) and a.tobytes() == b.tobytes() == c.tobytes()
stats = {n: json.load(open('$tmp/%s.json' % n)) for n in ('plain', 'split', 'nofusion')}
d = {n: s['compile']['dispatches'] for n, s in stats.items()}
assert d['split'] > d['plain'], d
runs = [p for p in stats['split']['passes'] if p['name'] == 'example.no-residual-fusion']
assert runs and runs[-1]['committed'] and runs[-1]['statistics']['residual-adds-split'] == 2, runs
off = [p for p in stats['nofusion']['passes'] if p['name'] == 'example.no-residual-fusion']
assert off and off[-1]['statistics']['residual-adds-split'] == 0, off
assert not any(p['name'] == 'fusion' for p in stats['nofusion']['passes'])
print('ok', d)"

finish

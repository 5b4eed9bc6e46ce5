#!/usr/bin/env bash
# End-to-end test of the third-party plugin story (issue 4): install this
# build to a temporary prefix, build plugins/examples/silu_fusion out of tree
# against it twice (find_package(kiln), and a plain compiler line with
# pkg-config), check that kiln::kiln and kiln.pc link a C program against
# libkiln, then run the *installed* kiln with the plugin and check that the
# graph changes (Sigmoid*x -> kiln::Silu), the stats show the pass, the
# outputs stay bit-identical, and a plugin dropped into the installed plugin
# directory loads without --plugin.
#
# Usage: example_test.sh KILN_BUILD_DIR EXAMPLE_SOURCE_DIR CMAKE CXX
set -u
build=$1
src=$2
cmake=$3
cxx=$4
python=/usr/bin/python3
tmp=$(cd "$(mktemp -d)" && pwd -P)  # physical: kiln prints resolved plugin paths
trap 'rm -rf "$tmp"' EXIT
unset KILN_PLUGIN_PATH
# Under a KILN_SANITIZE build libkiln needs the ASan runtime, which the
# uninstrumented test programs below do not load first.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
# check / check_summary, shared with the kiln tool's shell tests.
. "$(dirname "$0")/../../../../tools/kiln/check_lib.sh"
check_absent() {  # check_absent NAME PATTERN -- CMD...: CMD succeeds and prints nothing matching
  local name=$1 pattern=$2
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ] || grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL $name: rc=$rc, output:"
    echo "$out" | tail -30
    failures=$((failures + 1))
  else
    passed=$((passed + 1))
  fi
}
count() {  # count PATTERN FILE: matching lines
  grep -cE -- "$1" "$2" || true
}
finish() {
  check_summary
  exit $?
}

# --- install -------------------------------------------------------------------
prefix=$tmp/prefix
check "cmake --install" 0 "" -- "$cmake" --install "$build" --prefix "$prefix"
config=$(find "$prefix" -name kilnConfig.cmake | head -1)
pcdir=$(dirname "$(find "$prefix" -name kiln.pc | head -1)")
kiln=$prefix/bin/kiln
for f in "$prefix/include/kiln/kiln_plugin.h" "$prefix/include/kiln/kiln_plugin.hpp" "$prefix/include/kiln/kiln.h" \
         "$kiln" "$config" "$pcdir/kiln.pc" "$pcdir/kiln-plugin.pc"; do
  check "installed $(basename "$f")" 0 "" -- test -f "$f"
done
libdir=$(dirname "$pcdir")
plugindir=$libdir/kiln/plugins
check "installed libkiln.so" 0 "" -- test -e "$libdir/libkiln.so"
check "installed canonicalize plugin" 0 "" -- test -f "$plugindir/libkiln_canonicalize_plugin.so"
# No source- or build-tree path may leak into what was installed.
srcroot=$(cd "$src/../../.." && pwd)
check "no build paths in the package files" 1 "" -- grep -rlF -e "$build" -e "$srcroot" "$(dirname "$config")" "$pcdir"
[ "$failures" -eq 0 ] || finish

# --- build the example with find_package(kiln) -----------------------------------
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
check "example configures" 0 "" -- "$cmake" -S "$src" -B "$tmp/build-cmake" "${gen[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release -DSILU_FUSION_WERROR=ON
check "example found the installed kiln" 0 "kiln_DIR:PATH=$prefix/" -- grep "^kiln_DIR" "$tmp/build-cmake/CMakeCache.txt"
check "example builds" 0 "" -- "$cmake" --build "$tmp/build-cmake"
plugin=$tmp/build-cmake/libsilu_fusion.so
check "plugin exports only kiln_plugin_query" 0 "^kiln_plugin_query$" -- \
  bash -c "nm -D --defined-only '$plugin' | awk '\$2 ~ /^[TDB]$/ {print \$3}' | grep -v '^_' | sort -u"
check_absent "plugin needs no kiln library" "libkiln" -- readelf -d "$plugin"

# --- build it again with only pkg-config and a compiler line -----------------------
export PKG_CONFIG_PATH=$pcdir
mkdir -p "$tmp/pc"
check "pkg-config build" 0 "" -- bash -c "'$cxx' -std=c++17 -O2 -fPIC -shared -fvisibility=hidden -Wall -Wextra -Werror \
  \$(pkg-config --cflags kiln-plugin) '$src/silu_fusion.cc' -o '$tmp/pc/libsilu_fusion.so'"
check "kiln.pc cflags" 0 "^-I$prefix/" -- pkg-config --cflags kiln
# kiln.pc and kiln::kiln link a C program against the installed libkiln.
cat >"$tmp/version.c" <<'C'
#include <stdio.h>
#include <kiln/kiln.h>
int main(void) { printf("kiln %s\n", kiln_version_string()); return 0; }
C
check "kiln.pc links libkiln" 0 "" -- bash -c "cc -Wall -Werror '$tmp/version.c' \$(pkg-config --cflags --libs kiln) \
  -Wl,-rpath,\$(pkg-config --variable=libdir kiln) -o '$tmp/version_pc'"
check "program from kiln.pc runs" 0 "^kiln [0-9]" -- "$tmp/version_pc"
mkdir -p "$tmp/consumer"
cp "$tmp/version.c" "$tmp/consumer/"
cat >"$tmp/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.22)
project(consumer C)
find_package(kiln REQUIRED)
add_executable(version version.c)
target_link_libraries(version PRIVATE kiln::kiln)
CM
check "kiln::kiln consumer configures" 0 "" -- "$cmake" -S "$tmp/consumer" -B "$tmp/consumer/build" "${gen[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
check "kiln::kiln consumer builds" 0 "" -- "$cmake" --build "$tmp/consumer/build"
check "kiln::kiln consumer runs" 0 "^kiln [0-9]" -- "$tmp/consumer/build/version"
[ "$failures" -eq 0 ] || finish

# --- run the installed kiln with the plugin ------------------------------------
model=$tmp/silu.onnx
check "make the model" 0 "" -- "$python" "$src/make_model.py" "$model"
"$python" -c "import numpy as np; np.save('$tmp/x.npy', np.random.default_rng(3).uniform(-9, 9, (3, 8)).astype(np.float32))"

"$kiln" graph "$model" --text "$tmp/plain.kir" 2>"$tmp/plain.err"
check "graph without the plugin" 0 "" -- test -s "$tmp/plain.kir"
check "unfused: 4 Sigmoid" 0 "^4$" -- count "= Sigmoid\(" "$tmp/plain.kir"
check "unfused: no Silu" 0 "^0$" -- count "Silu\(" "$tmp/plain.kir"
for so in "$plugin" "$tmp/pc/libsilu_fusion.so"; do
  which=$(basename "$(dirname "$so")")
  "$kiln" graph "$model" --text "$tmp/fused.kir" --plugin "$so" 2>"$tmp/fused.err"
  check "graph with the plugin ($which)" 0 "" -- test -s "$tmp/fused.kir"
  check "fused: 2 kiln::Silu ($which)" 0 "^2$" -- count '= "kiln"::Silu\(' "$tmp/fused.kir"
  check "fused: the x*Sigmoid(x) Sigmoids are gone ($which)" 0 "^2$" -- count "= Sigmoid\(" "$tmp/fused.kir"
  check "fused: first match reads the input ($which)" 0 "" -- grep -qE '"kiln"::Silu\(%x\)' "$tmp/fused.kir"
  check "no warnings ($which)" 1 "" -- grep -q . "$tmp/fused.err"
done
"$kiln" graph "$model" --text "$tmp/disabled.kir" --plugin "$plugin" --disable-pass example.fuse-silu
check "disable-pass leaves it unfused" 0 "^0$" -- count "Silu\(" "$tmp/disabled.kir"

check "run without the plugin" 0 "" -- "$kiln" run "$model" --input x="$tmp/x.npy" --output d="$tmp/plain.npy"
check "run with the plugin" 0 "" -- "$kiln" run "$model" --input x="$tmp/x.npy" --output d="$tmp/fused.npy" \
  --plugin "$plugin" --stats "$tmp/stats.json"
check "outputs identical, stats show the pass" 0 "^ok$" -- "$python" -c "
import json, numpy as np
a, b = np.load('$tmp/plain.npy'), np.load('$tmp/fused.npy')
assert a.shape == (3, 8) and np.array_equal(a, b), (a, b)
s = json.load(open('$tmp/stats.json'))
runs = [p for p in s['passes'] if p['name'] == 'example.fuse-silu']
assert runs and all(p['committed'] for p in runs), s['passes']
assert sum(p['statistics'].get('silu-fused', 0) for p in runs) == 2, runs
assert s['nodes'] == 7, s['nodes']
print('ok')"

# --- the same through the C API alone: a C99 host built against the installed
# headers and library loads the plugin through kiln_session_options_t; its
# session runs the default pipeline plus the plugin's pass, says so through
# the pass records, and its output equals `kiln run`'s byte for byte.
host_src=$srcroot/api/testdata/pipeline_host.c
check "C host builds against kiln.pc" 0 "" -- bash -c "cc -std=c99 -Wall -Wextra -Werror '$host_src' \
  \$(pkg-config --cflags --libs kiln) -Wl,-rpath,\$(pkg-config --variable=libdir kiln) -o '$tmp/pipeline_host'"
"$python" -c "import numpy as np; np.load('$tmp/x.npy').astype('<f4').tofile('$tmp/x.f32')"
"$tmp/pipeline_host" "$model" "$tmp/x.f32" "$tmp/host.f32" 3x8 --plugin "$plugin" >"$tmp/host.out" 2>"$tmp/host.err"
check "C host runs" 0 "^backend " -- cat "$tmp/host.out"
check "C host: the default pipeline ran (in-tree passes)" 0 "^pass fold-constants committed=1" -- cat "$tmp/host.out"
check "C host: the plugin's pass fused 2 (pass statistics)" 0 "^2$" -- bash -c \
  "grep '^pass example.fuse-silu committed=1' '$tmp/host.out' | grep -o 'silu-fused=[0-9]*' | cut -d= -f2 | awk '{s+=\$1} END {print s}'"
check "C host: 7 nodes after the pipeline" 0 "^nodes 7$" -- cat "$tmp/host.out"
check_absent "C host: no messages" "." -- cat "$tmp/host.err"
check "C host output equals kiln run's" 0 "^ok$" -- "$python" -c "
import numpy as np
a = np.load('$tmp/fused.npy'); b = np.fromfile('$tmp/host.f32', dtype='<f4').reshape(a.shape)
assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), (a, b)
print('ok')"
"$tmp/pipeline_host" "$model" "$tmp/x.f32" "$tmp/none.f32" 3x8 --plugin "$plugin" --passes none >"$tmp/none.out" 2>&1
check "C host: --passes none runs no pass" 1 "" -- grep -q "^pass " "$tmp/none.out"
check "C host: a missing plugin is an error naming it" 1 "missing-plugin.so" -- \
  "$tmp/pipeline_host" "$model" "$tmp/x.f32" "$tmp/none.f32" 3x8 --plugin "$tmp/missing-plugin.so"

# A model that needs the default pipeline to run wholly on the device: a
# dead NonZero (no device lowering) is a host fallback until dce removes it.
"$python" - "$tmp/dead.onnx" <<'PY'
import sys
from onnx import TensorProto, helper, save
nodes = [helper.make_node("NonZero", ["x"], ["unused"], name="dead_nonzero"),
         helper.make_node("Relu", ["x"], ["y"], name="relu")]
graph = helper.make_graph(nodes, "dead", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 8])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
save(model, sys.argv[1])
PY
"$tmp/pipeline_host" "$tmp/dead.onnx" "$tmp/x.f32" "$tmp/dead_none.f32" 3x8 --passes none >"$tmp/dead_none.out" 2>&1
"$tmp/pipeline_host" "$tmp/dead.onnx" "$tmp/x.f32" "$tmp/dead.f32" 3x8 >"$tmp/dead.out" 2>&1
check "C host: without the pipeline the dead NonZero runs on the host" 0 "^dispatches 1 fallbacks 1$" -- cat "$tmp/dead_none.out"
check "C host: with the default pipeline everything runs on the device" 0 "^dispatches 1 fallbacks 0$" -- cat "$tmp/dead.out"
check "C host: dce removed it" 0 "^pass dce committed=1" -- cat "$tmp/dead.out"
check "C host on the device" 0 "^backend vulkan$" -- cat "$tmp/dead.out"
check "kiln run on the same model" 0 "" -- "$kiln" run "$tmp/dead.onnx" --input x="$tmp/x.npy" --output y="$tmp/dead_run.npy"
check "C host output equals kiln run's (default pipeline)" 0 "^ok$" -- "$python" -c "
import numpy as np
a = np.load('$tmp/dead_run.npy'); b = np.fromfile('$tmp/dead.f32', dtype='<f4').reshape(a.shape)
assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), (a, b)
print('ok')"

check "kiln passes lists the plugin" 0 "plugin example.silu 1.0.0 .*libsilu_fusion.so" -- "$kiln" passes --plugin "$plugin"
check "default pipeline includes it" 0 "default pipeline: .* example.fuse-silu" -- "$kiln" passes --plugin "$plugin"

# --- the installed plugin directory ------------------------------------------------
# The installed kiln loads Kiln's own plugins from the installed plugin
# directory, once; a third-party plugin dropped next to them loads without
# --plugin.
check "installed dir: canonicalize loaded once" 0 "^1$" -- bash -c "'$kiln' passes 2>&1 | grep -c '^plugin kiln.canonicalize'"
check "installed dir: in-tree plugins from their .so files" 0 \
  "plugin kiln.canonicalize .* from $plugindir/libkiln_canonicalize_plugin.so" -- "$kiln" passes
check "example installs into the plugin directory" 0 "" -- "$cmake" --install "$tmp/build-cmake" --prefix "$prefix"
check "installed as $plugindir/libsilu_fusion.so" 0 "" -- test -f "$plugindir/libsilu_fusion.so"
check "installed dir: plugin found" 0 "plugin example.silu .* from $plugindir/libsilu_fusion.so" -- "$kiln" passes
check_absent "installed dir: no warnings" "^kiln: " -- "$kiln" passes
check "installed dir: graph fused" 0 '"kiln"::Silu\(%x\)' -- "$kiln" graph "$model" --text -
# --plugin with the same plugin again is refused by name (duplicate).
check "duplicate plugin refused" 1 "example.silu.*already loaded" -- "$kiln" passes --plugin "$tmp/pc/libsilu_fusion.so"

finish

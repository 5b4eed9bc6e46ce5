#!/usr/bin/env bash
# Stages a kiln build for the GPU machine: the kiln binary (and kiln-tune,
# kiln_kernel_bench and game_frame when built) and the shared
# libraries it needs that a bare machine lacks (libkiln, protobuf, onnx_proto,
# and whatever else ldd resolves outside glibc, libstdc++ and the Vulkan
# loader), stripped, into DEST/bin and DEST/lib, and Kiln's own plugins into
# DEST/lib/kiln/plugins. A debug build is ~80 MB and the
# working tree that travels is capped at 64 MiB; stripped it is a few MB.
#
# usage: bench/stage_kiln.sh BUILD_DIR [DEST]   (DEST default: build-bench-carry,
#        ignored by git as /build*/). Then carry DEST and run, on the machine:
#        KILN_BIN=DEST/bin/kiln KILN_LIB_DIR=DEST/lib bench/run_h100.sh "$OUT"
# A fault there prints the stack as lib(+0xOFFSET) lines (the kiln tool's
# crash report); the offsets resolve against this build's unstripped files:
#   addr2line -Cfe BUILD_DIR/lib/kiln/plugins/libkiln_opencl_backend.so 0xOFFSET
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: stage_kiln.sh BUILD_DIR [DEST]}
dest=${2:-$root/build-bench-carry}
kiln=$build/tools/kiln/kiln
[ -x "$kiln" ] || { echo "stage_kiln: $kiln is not an executable (build the kiln target first)" >&2; exit 2; }

rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib"
# The tool, and the per-op micro-benchmarks (bench/kernels) when built.
binaries=("$kiln")
[ -x "$build/bench/kernels/kiln_kernel_bench" ] && binaries+=("$build/bench/kernels/kiln_kernel_bench")
# `kiln tune`'s characterization program (found beside the tool).
[ -x "$build/tools/tune/kiln-tune" ] && binaries+=("$build/tools/tune/kiln-tune")
# The game-frame example (examples/game_frame), when built.
[ -x "$build/examples/game_frame/game_frame" ] && binaries+=("$build/examples/game_frame/game_frame")
# Libraries every Linux machine has (or that must come from the machine
# itself, like the Vulkan loader and the driver) stay behind.
system='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libz|libvulkan)\.'
# What each binary and plugin links that the bare machine lacks goes to lib/
# (the OpenCL plugin's ICD loader, libOpenCL.so.1, too; the run sets
# LD_LIBRARY_PATH to it, since a plugin's own lookups ignore the tool's rpath).
stage_libraries() {
  local bin=$1
  missing=$(ldd "$bin" | awk '/not found/ {print $1}')
  if [ -n "$missing" ]; then echo "stage_kiln: unresolved here: $missing" >&2; exit 2; fi
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    if [[ "$name" =~ $system ]]; then continue; fi
    strip -o "$dest/lib/$name" "$path"
  done
}
for bin in "${binaries[@]}"; do
  strip -o "$dest/bin/$(basename "$bin")" "$bin"
  stage_libraries "$bin"
done
# Kiln's own plugins load from lib/kiln/plugins beside the library directory
# (<bindir>/../lib/kiln/plugins for the tool).
mkdir -p "$dest/lib/kiln/plugins"
for so in "$build"/lib/kiln/plugins/*.so; do
  [ -e "$so" ] || { echo "stage_kiln: no plugins in $build/lib/kiln/plugins (build the plugin targets)" >&2; exit 2; }
  strip -o "$dest/lib/kiln/plugins/$(basename "$so")" "$so"
  stage_libraries "$so"
done
# STAGE_OPENCL_TESTS=1: the OpenCL node-test program and the node-test data
# too (bench/opencl_check.sh runs them on the GPU machine's OpenCL platform;
# ~6 MB compressed).
if [ "${STAGE_OPENCL_TESTS:-0}" = 1 ]; then
  test_bin=$build/plugins/opencl/kiln_opencl_node_test
  [ -x "$test_bin" ] || { echo "stage_kiln: $test_bin is not built" >&2; exit 2; }
  strip -o "$dest/bin/kiln_opencl_node_test" "$test_bin"
  stage_libraries "$test_bin"
  [ -d "$build/onnx_node_data/node" ] || { echo "stage_kiln: no node-test data in $build/onnx_node_data" >&2; exit 2; }
  tar -cJf "$dest/onnx_node_data.txz" -C "$build" onnx_node_data
fi
# `kiln tune --exhaustive` finds its script at <bindir>/../share/kiln.
mkdir -p "$dest/share/kiln"
cp "$root/plugins/tmmodel/exhaustive.py" "$dest/share/kiln/tmmodel_exhaustive.py"
du -sh "$dest"
ls -l "$dest/bin" "$dest/lib"
bytes=$(du -sb "$dest" | cut -f1)
if [ "$bytes" -gt $((48 * 1024 * 1024)) ]; then
  echo "stage_kiln: warning: $bytes bytes staged; the whole carried tree must stay under 64 MiB" >&2
fi

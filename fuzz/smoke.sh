#!/usr/bin/env bash
# The fuzz targets' short CI run (the `fuzz_smoke` ctest): configures and
# builds the clang fuzz build (only the libraries the targets link), writes
# the seed corpora and runs each target for SECONDS from them with a fixed
# seed. A crash, sanitizer report, timeout or runaway memory fails the run;
# the input that did it is left in BUILD_DIR/findings/. See fuzz/README.md.
#
# Usage: fuzz/smoke.sh BUILD_DIR [SECONDS_PER_TARGET (default 12)]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$1
secs=${2:-12}
for tool in clang clang++; do
  command -v "$tool" >/dev/null || { echo "fuzz smoke: $tool not found (scripts/setup.sh installs clang)" >&2; exit 1; }
done

t0=$(date +%s)
mkdir -p "$build"
# -O1 and line tables only: the fuzz build compiles in half the time of
# -O2 -g, and asserts stay on (a failed assert is a finding).
CC=clang CXX=clang++ cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Fuzz \
  -DCMAKE_C_FLAGS_FUZZ="-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS_FUZZ="-O1 -gline-tables-only" \
  -DKILN_BUILD_FUZZERS=ON -DKILN_STATIC_PLUGINS=ON -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_TOOLS=OFF >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" --target kiln_fuzzers -j "$(nproc)"
t1=$(date +%s)
echo "fuzz smoke: build took $((t1 - t0)) s"

rm -rf "$build/corpus" "$build/work"
/usr/bin/python3 "$src/fuzz/make_corpus.py" "$build/corpus"
mkdir -p "$build/findings"
for target in fuzz_npy:npy fuzz_text_parser:kir fuzz_onnx_import:onnx fuzz_rewriter:rewriter fuzz_pipeline_plan:onnx; do
  name=${target%%:*}
  seeds=$build/corpus/${target##*:}
  mkdir -p "$build/work/$name"
  echo "fuzz smoke: $name for ${secs} s"
  # New inputs go to work/ (first directory); the seeds stay as generated.
  if ! "$build/fuzz/$name" -seed=1 -max_total_time="$secs" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
      -artifact_prefix="$build/findings/$name-" "$build/work/$name" "$seeds" >"$build/work/$name.log" 2>&1; then
    tail -n 60 "$build/work/$name.log" >&2
    echo "fuzz smoke: $name found a problem; reproduce with $build/fuzz/$name $build/findings/$name-*" >&2
    exit 1
  fi
  grep -E "^(Done|stat::number_of_executed_units)" "$build/work/$name.log" || true
done
echo "fuzz smoke: fuzzing took $(($(date +%s) - t1)) s"

#!/usr/bin/env bash
# The `tsan` ctest (tests/tsan/README.md): configures and builds a
# ThreadSanitizer build of the runtime libraries and of the tests that run
# Kiln from several threads (only those: no tools, plugins linked in), then
# runs them on lavapipe. Any race report fails the run (halt_on_error=1);
# the only suppressions are for reports inside the Vulkan driver, loader and
# validation layers (suppressions.txt says why each is not Kiln's).
#
# Usage: tests/tsan/run.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$1

t0=$(date +%s)
mkdir -p "$build"
# -O1 and minimal debug info (line tables, for the reports' stacks) keep
# the build short; asserts stay on. The in-tree plugins are
# linked into libkiln, so their loadable copies need not be built.
# gcc: its TSan runtime links into libkiln.so too (libkiln links with
# --no-undefined; clang leaves the runtime to the executable).
CC=gcc CXX=g++ cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Tsan \
  -DCMAKE_C_FLAGS_TSAN="-O1 -g1" -DCMAKE_CXX_FLAGS_TSAN="-O1 -g1" \
  -DKILN_TSAN=ON -DKILN_STATIC_PLUGINS=ON >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }

# binary (relative to BUILD_DIR) and the gtest filter of what it runs.
tests=(
  "api/kiln_c_api_stress_test:*"                                  # threads x shapes x sessions, both backends
  "api/kiln_c_api_frame_test:*Submit*:*HostMemory*"                # kiln_session_submit / wait
  "api/kiln_c_api_concurrent_test:*"                               # runs of one model in several run slots
  "engine/runtime/vulkan/kiln_runtime_vulkan_test:*"               # incl. runs of one compiled model at once
  "engine/runtime/vulkan/kiln_vulkan_run_slots_test:*"             # submissions of two run slots in flight at once
  "engine/session/kiln_session_test:*"                             # sessions compiling on several threads
  "engine/runtime/vulkan/kiln_vulkan_parallel_compile_test:*"      # kernels compiled on several threads
  "platform/vulkan/kiln_vulkan_test:KernelCache*:ParallelJobs*"    # the kernel cache and its job pool
)
targets=()
for t in "${tests[@]}"; do targets+=("$(basename "${t%%:*}")"); done
cmake --build "$build" --target "${targets[@]}" -j "$(nproc)"
t1=$(date +%s)
echo "tsan: build took $((t1 - t0)) s"

# Compile kernels on several threads even on a 2-core machine.
export KILN_COMPILE_THREADS=4
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$src/tests/tsan/suppressions.txt ${TSAN_OPTIONS:-}"
status=0
for t in "${tests[@]}"; do
  binary=${t%%:*}
  filter=${t#*:}
  log=$build/$(basename "$binary").log
  echo "tsan: $binary --gtest_filter=$filter"
  if ! "$build/$binary" --gtest_filter="$filter" >"$log" 2>&1; then
    tail -n 120 "$log" >&2
    echo "tsan: $binary failed (whole log: $log)" >&2
    status=1
  fi
  grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$log" || true
done
echo "tsan: tests took $(($(date +%s) - t1)) s"
exit $status

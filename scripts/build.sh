#!/usr/bin/env bash
# Configures and builds Kiln into build/ (override with KILN_BUILD_DIR).
# Warnings are errors when CI=true.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KILN_BUILD_DIR:-$root/build}
werror=OFF
if [ "${CI:-}" = "true" ]; then werror=ON; fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_WERROR=$werror ${KILN_CMAKE_ARGS:-}
cmake --build "$build" -j "$(nproc)"

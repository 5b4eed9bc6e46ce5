#!/usr/bin/env bash
# The kiln tool is a client of libkiln (issue 13): its dynamic section needs
# libkiln.so, and the binary defines none of the engine's code (importer,
# passes, planner, runtime, Vulkan platform), which lives in libkiln alone.
# Usage: engine_free_test.sh KILN_BINARY
set -u
kiln=$1
fails=0
if ! readelf -d "$kiln" | grep -q 'NEEDED.*\[libkiln\.so'; then
  echo "FAIL: $kiln does not link libkiln.so:"; readelf -d "$kiln" | grep NEEDED
  fails=$((fails + 1))
fi
# Defined (text/data) symbols of engine namespaces; the tool may use only
# kiln::api (kiln.hpp, inline), kiln::cli, kiln::tools, the JSON writer and
# the Status type.
engine=$(nm -C --defined-only "$kiln" | grep -E ' [TtDdBbRrWw] ' |
  grep -E 'kiln::(runtime|planner|registry|session|onnx|ir|ops|vk|capi)::|kiln::Tensor::|volk|shaderc' | head -20)
if [ -n "$engine" ]; then
  echo "FAIL: $kiln defines engine symbols:"; echo "$engine"
  fails=$((fails + 1))
fi
if [ "$fails" -eq 0 ]; then echo "ok: $kiln links libkiln.so and holds no engine code"; fi
exit "$fails"

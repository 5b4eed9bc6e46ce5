# Shared by the kiln tool's shell tests (source it): `check` runs a command,
# expects an exit code and an output pattern, and counts; `check_summary`
# prints the counts and fails when anything failed. CHECK_VERBOSE=1 also
# prints the output of checks that pass.
failures=0
passed=0

check() {  # check NAME EXPECTED_RC PATTERN -- CMD...
  local name=$1 want=$2 pattern=$3
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL $name: rc=$rc (want $want), output:"
    echo "$out" | tail -30
    failures=$((failures + 1))
  else
    passed=$((passed + 1))
    [ -n "${CHECK_VERBOSE:-}" ] && echo "$out" | tail -30  # e.g. device runs that keep the numbers
  fi
}

# have_vulkan KILN: true when `kiln info` finds a device. Without one the
# caller's Vulkan checks are skipped -- or, when KILN_REQUIRE_VULKAN=1 or
# CI=true (scripts/test.sh), counted as a failure, so a machine without
# lavapipe cannot pass them by skipping (platform/vulkan/vk_test_requirement.h).
have_vulkan() {
  "$1" info 2>/dev/null | grep -q "^device 0" && return 0
  if [ "${KILN_REQUIRE_VULKAN:-0}" != 0 ] || [ "${CI:-}" = true ]; then
    echo "FAIL no Vulkan device, and KILN_REQUIRE_VULKAN=1 or CI=true require one (set KILN_REQUIRE_VULKAN=0 to skip)"
    failures=$((failures + 1))
  else
    echo "note: no Vulkan device; the Vulkan checks are skipped"
  fi
  return 1
}

check_summary() {
  echo "$passed passed, $failures failed"
  [ "$failures" -eq 0 ]
}

# make_tiny_zoo DIR DATA_DIR: a bench/zoo-style directory DIR/tiny holding
# tests/data/add_relu.onnx as model.onnx with a [2,3] input.npy and the
# matching output.npy (y = relu(x + [1, -2, 0.5])).
make_tiny_zoo() {
  mkdir -p "$1/tiny"
  cp "$2/add_relu.onnx" "$1/tiny/model.onnx"
  /usr/bin/python3 -c "
import numpy as np
x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
np.save('$1/tiny/input.npy', x)
np.save('$1/tiny/output.npy', np.maximum(x + np.array([1, -2, 0.5], np.float32), 0))"
}

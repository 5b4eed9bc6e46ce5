# Shared by the kiln tool's shell tests (source it): `check` runs a command,
# expects an exit code and an output pattern, and counts; `check_summary`
# prints the counts and fails when anything failed.
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
  fi
}

check_summary() {
  echo "$passed passed, $failures failed"
  [ "$failures" -eq 0 ]
}

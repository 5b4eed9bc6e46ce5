#!/usr/bin/env bash
# kiln-tune --short on the CI device under the validation layer, then
# check_profile.py (standard library only, any python3) on the profile it
# wrote. Usage: tune_short_test.sh KILN_TUNE CHECK_PY
set -eu
tune=$1 check=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The cache goes to the temporary directory too: the test leaves nothing behind.
KILN_CACHE_DIR="$dir/cache" "$tune" --short --validation --out "$dir/profile.json"
ls "$dir"/cache/tmmodel/*.json >/dev/null || { echo "FAIL: no cached profile under $dir/cache/tmmodel"; exit 1; }
python3 "$check" "$dir/profile.json"
# Bad arguments are errors that say what was wrong.
if "$tune" --seed x 2>"$dir/err"; then echo "FAIL: --seed x accepted"; exit 1; fi
grep -q "takes a number" "$dir/err" || { echo "FAIL: unclear --seed error:"; cat "$dir/err"; exit 1; }

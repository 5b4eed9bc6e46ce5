#!/usr/bin/env bash
# The tool's fault report (crash_report.cc): a kiln process that receives
# SIGSEGV mid-benchmark names the signal, prints a stack and dies of the
# signal (exit status 139), as a driver or plugin fault would end it.
# Usage: crash_report_test.sh KILN_BINARY TEST_DATA_DIR
set -u
kiln=$1
m=$2/add_relu.onnx
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$kiln" bench "$m" --shape x=64x3 --backend reference --warmup 1 --min-time 60 > /dev/null 2> "$dir/err" &
pid=$!
# Until it is timing (its first progress line), so the handler is installed.
for _ in $(seq 1 100); do
  grep -q "benchmarking" "$dir/err" 2> /dev/null && break
  sleep 0.1
done
kill -SEGV "$pid"
wait "$pid"
rc=$?
fail() { echo "FAIL: $1"; echo "--- stderr:"; cat "$dir/err"; exit 1; }
[ "$rc" -eq 139 ] || fail "exit status $rc, not 139 (128 + SIGSEGV)"
grep -q "^kiln: fatal signal SIGSEGV (invalid memory access); the stack" "$dir/err" || fail "no report naming the signal"
frames=$(sed -n '/the stack, innermost first/,/please report/p' "$dir/err" | grep -c "(")
[ "$frames" -ge 2 ] || fail "the report lists $frames stack frames"
grep -q "^kiln: please report this" "$dir/err" || fail "no closing line"
echo "PASS: SIGSEGV reported with $frames frames, exit status 139"

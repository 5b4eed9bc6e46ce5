#!/usr/bin/env python3
"""Runs the malformed-model corpus (generate.py) through the kiln CLI and
fails on a crash, a hang, runaway memory or an outcome other than the one
each case must give.

Every case runs as `kiln graph MODEL`, `kiln run MODEL --backend reference`
and `kiln run MODEL --backend vulkan` (lavapipe in CI), each under a time
limit and an address-space cap (setrlimit RLIMIT_AS, i.e. ulimit -v), in
parallel. A run passes when it exits 0 for a "runs" case, or exits with an
error (not a signal) whose output contains the expected substring. A killed
run (a signal: SIGSEGV, SIGABRT from bad_alloc, ...) or one that runs out
of time always fails; a "clean" case (random bit flips) needs nothing more.

Cases marked xfail for a tool are known to break their expectation today
(the reason names the fix, e.g. "Loop trip cap"); they are reported
but do not fail the run, and one that starts to pass fails the run
("XPASS: remove its xfail") so the expectation gets flipped with the fix.

Usage: run_corpus.py --kiln PATH --cases DIR/cases.json [--jobs N]
                     [--timeout S] [--memory-mb MB] [--filter SUBSTRING]
"""
import argparse
import concurrent.futures
import json
import os
import resource
import signal
import subprocess
import sys
import time

COMMANDS = {
    "graph": lambda kiln, model: [kiln, "graph", model, "--text", "/dev/null"],
    "reference": lambda kiln, model: [kiln, "run", model, "--backend", "reference"],
    "vulkan": lambda kiln, model: [kiln, "run", model, "--backend", "vulkan"],
}


# Runaway Loops stop at KILN_MAX_LOOP_ITERATIONS; its default (2^20) takes
# longer than the per-run timeout on a CPU device, so the corpus lowers it.
LIMITS_ENV = dict(os.environ, KILN_MAX_LOOP_ITERATIONS=os.environ.get("KILN_MAX_LOOP_ITERATIONS", "10000"))


def run_one(args, case, tool):
    cmd = COMMANDS[tool](args.kiln, case["model"])
    if tool != "graph":
        cmd += case["args"]
    limit = args.memory_mb << 20

    def cap_memory():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    start = time.monotonic()
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=args.timeout,
                           preexec_fn=cap_memory, env=LIMITS_ENV)
    except subprocess.TimeoutExpired:
        return "HANG", f"no result after {args.timeout} s", time.monotonic() - start
    out = (p.stdout + p.stderr).decode(errors="replace")
    seconds = time.monotonic() - start
    expect = case["expect"][tool]
    if p.returncode < 0:
        return "CRASH", f"killed by {signal.Signals(-p.returncode).name}: {tail(out)}", seconds
    if expect == "clean":
        return "OK", "", seconds
    if expect == "runs":
        if p.returncode == 0:
            return "OK", "", seconds
        return "MISMATCH", f"expected it to run, exit {p.returncode}: {tail(out)}", seconds
    if p.returncode == 0:
        return "MISMATCH", f"accepted; expected an error containing {expect!r}", seconds
    if expect not in out:
        return "MISMATCH", f"error does not contain {expect!r}: {tail(out)}", seconds
    return "OK", "", seconds


def vulkan_required():
    """As platform/vulkan/vk_test_requirement.h: a missing device fails, not skips."""
    require = os.environ.get("KILN_REQUIRE_VULKAN", "")
    return (require not in ("", "0")) or os.environ.get("CI") == "true"


def vulkan_device(kiln):
    p = subprocess.run([kiln, "info"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    return p.returncode == 0 and b"device 0:" in p.stdout


def tail(text, n=400):
    text = " ".join(text.split())
    return text if len(text) <= n else "..." + text[-n:]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    # Generous: a run on lavapipe takes under 2 s alone, but CI's two cores
    # also build the fuzz and TSan trees meanwhile (8 s once made a case a
    # "hang" under that load); a real hang still fails.
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--memory-mb", type=int, default=4096)
    ap.add_argument("--filter", default="")
    args = ap.parse_args()
    with open(args.cases) as f:
        cases = [c for c in json.load(f) if args.filter in c["name"]]

    tools = list(COMMANDS)
    if not vulkan_device(args.kiln):
        if vulkan_required():
            print("FAIL: no Vulkan device (kiln info found none), and KILN_REQUIRE_VULKAN=1 or CI=true require one")
            return 1
        print("note: no Vulkan device; the vulkan runs are skipped (KILN_REQUIRE_VULKAN=1 makes this a failure)")
        tools.remove("vulkan")
    jobs = [(c, t) for c in cases for t in tools]
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda job: run_one(args, *job), jobs))

    failures, xfails = [], []
    for (case, tool), (verdict, detail, seconds) in zip(jobs, results):
        label = f"{case['name']} [{tool}] ({case['class']})"
        reason = case["xfail"].get(tool)
        if reason and verdict != "OK":
            xfails.append(f"XFAIL {label}: {verdict} {detail} -- known, fixed by: {reason}")
        elif reason:
            failures.append(f"XPASS {label}: passes now -- remove its xfail ({reason}) in generate.py")
        elif verdict != "OK":
            failures.append(f"{verdict} {label}: {detail}")
        shown = "ok" if verdict == "OK" else ("xfail" if reason else verdict)
        print(f"{shown:8} {seconds:5.1f}s {label}")
    for line in xfails + failures:
        print(line)
    print(f"malformed corpus: {len(cases)} cases x {len(tools)} tools = {len(jobs)} runs, {len(failures)} failed, "
          f"{len(xfails)} known failures (xfail), {time.monotonic() - start:.1f} s")
    return 1 if failures or not jobs else 0


if __name__ == "__main__":
    sys.exit(main())

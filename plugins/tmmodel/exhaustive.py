#!/usr/bin/env python3
"""The exhaustive-search baseline for the tmmodel pass.

For MODEL, times every GEMM node of the model with every tile of the menu
(KILN_TMMODEL_TILE forces one tile on all of them, through `kiln bench`'s
per-kernel GPU times), and compares, per node, the tile the model picks
(KILN_TMMODEL_PROFILE) and the planner's own tile with the best one.

Usage: exhaustive.py KILN MODEL --profile PROFILE.json [--passes LIST]
                     [--repeat N] [--json OUT.json] [-- extra kiln bench args]

Prints a table per node (best tile and time, the model's pick and its time,
the planner's) and a summary: the share of nodes where the model's pick is
within 5 % of the best, and the tuning-time ratio: the profile's tuning time
plus the pass's time, over the search's wall time.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

TILES = ["16x16", "16x32", "16x64", "32x16", "32x32", "32x64", "64x16", "64x32", "64x64", "128x64"]
DEFAULT_PASSES = "remove-noops,fold-shapes,fold-constants,fuse-conv-batchnorm,cse,dce,rdp,fusion,memplan-order"


def bench(kiln, model, passes, env_extra, extra, tmp):
    out = os.path.join(tmp, "bench.json")
    env = dict(os.environ)
    env.pop("KILN_TMMODEL_TILE", None)
    env.pop("KILN_TMMODEL_PROFILE", None)
    env.update(env_extra)
    start = time.monotonic()
    r = subprocess.run([kiln, "bench", model, "--passes", passes, "--warmup", "1", "--iters", "1", "--json", out] + extra,
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    if r.returncode != 0:
        sys.exit("kiln bench failed (%s): %s" % (env_extra, r.stderr))
    doc = json.load(open(out))
    m = doc["models"][0] if "models" in doc else doc
    if m.get("status") not in (None, "ok"):
        sys.exit("kiln bench: %s" % m.get("error"))
    per_node, tiles = {}, {}
    for k in m["kernels"]:
        per_node[k["node"]] = per_node.get(k["node"], 0.0) + k["gpu_ms"]
        t = re.search(r"tile(\d+x\d+)", k["kernel"])
        if t:
            tiles[k["node"]] = t.group(1)
    pass_ms = sum(p.get("ms", 0) for p in m.get("passes", []) if isinstance(p, dict) and p.get("name") == "tmmodel")
    return per_node, tiles, wall, pass_ms


def best_of(runs):
    """Per node, the least time over repeated runs (the other results from the first)."""
    per_node = {}
    for r in runs:
        for n, ms in r[0].items():
            per_node[n] = min(ms, per_node.get(n, ms))
    return per_node, runs[0][1], sum(r[2] for r in runs), runs[0][3]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kiln")
    ap.add_argument("model")
    ap.add_argument("--profile", required=True)
    ap.add_argument("--passes", default=DEFAULT_PASSES)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json")
    # What follows `--` goes to kiln bench untouched (argparse would take
    # `--coopmat off` for its own options, or refuse `--` after the positionals).
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    a = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    a.extra = extra
    profile = json.load(open(a.profile))
    with tempfile.TemporaryDirectory() as tmp:
        run = lambda env, passes: best_of([bench(a.kiln, a.model, passes, env, a.extra, tmp) for _ in range(a.repeat)])
        planner = run({}, a.passes)
        model = run({"KILN_TMMODEL_PROFILE": a.profile}, a.passes + ",tmmodel")
        search_wall = 0.0
        by_tile = {}
        for t in TILES:
            by_tile[t] = run({"KILN_TMMODEL_TILE": t}, a.passes + ",tmmodel")
            search_wall += by_tile[t][2]
    rows = []
    for node, pick in sorted(model[1].items()):
        times = {t: by_tile[t][0][node] for t in TILES if by_tile[t][1].get(node) == t}
        if not times or pick not in times:
            continue
        best = min(times, key=times.get)
        rows.append({"node": node, "best": best, "best_ms": times[best], "model": pick, "model_ms": times[pick],
                     "planner": planner[1].get(node), "planner_ms": planner[0].get(node)})
    print("%-40s %8s %9s %8s %9s %8s %9s" % ("node", "best", "ms", "model", "ms", "planner", "ms"))
    for r in rows:
        print("%-40s %8s %9.3f %8s %9.3f %8s %9.3f" % (r["node"][:40], r["best"], r["best_ms"], r["model"], r["model_ms"],
                                                     r["planner"] or "-", r["planner_ms"] or 0))
    within = sum(1 for r in rows if r["model_ms"] <= 1.05 * r["best_ms"])
    planner_within = sum(1 for r in rows if r["planner_ms"] and r["planner_ms"] <= 1.05 * r["best_ms"])
    tuning = profile.get("tuning_seconds", 0) + model[3] / 1000
    ratio = tuning / search_wall if search_wall else float("nan")
    total = lambda key: sum(r[key] or 0 for r in rows)
    summary = {"model": a.model, "nodes": len(rows), "model_within_5pct": within, "planner_within_5pct": planner_within,
               "best_ms": total("best_ms"), "model_ms": total("model_ms"), "planner_ms": total("planner_ms"),
               "tuning_seconds": tuning, "search_seconds": search_wall, "tuning_ratio": ratio}
    print("%d GEMM nodes: model's pick within 5%% of the best for %d (planner: %d); summed GPU ms best %.3f, model %.3f, "
          "planner %.3f; tuning %.2f s vs exhaustive search %.1f s (ratio %.4f)" %
          (len(rows), within, planner_within, summary["best_ms"], summary["model_ms"], summary["planner_ms"], tuning,
           search_wall, ratio))
    if a.json:
        json.dump({"summary": summary, "nodes": rows}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()

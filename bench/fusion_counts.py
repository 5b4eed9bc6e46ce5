#!/usr/bin/env python3
"""Dispatch counts from `kiln bench --json` documents (kiln-bench-cli-v1), as
a Markdown table: per model and document, ONNX nodes, dispatches, fused
kernels (a kernel name with '+' or starting with "fused"), host fallbacks,
the GPU median and the worst output difference against the reference output.

With --partition FUSED.json UNFUSED.json: one row per model with the
fusion pass's own statistics (its last round in the pipeline): groups by
kind, complex ops per group, the weight balance, views and DW/PW refusals,
next to the dispatches with and without the pass.

usage: bench/fusion_counts.py kiln_fp32.json kiln_fp32_nofusion.json ...
       bench/fusion_counts.py --partition kiln_fp32.json kiln_fp32_nofusion.json
"""
import json
import os
import sys


def is_fused(name):
    return "+" in name or name.startswith("fused")


def rows(path):
    with open(path) as f:
        doc = json.load(f)
    label = os.path.splitext(os.path.basename(path))[0]
    for m in doc.get("models", []):
        kernels = m.get("kernels") or []
        gpu = (m.get("gpu") or {}).get("median_ms")
        yield {
            "doc": label,
            "model": m.get("model"),
            "status": m.get("status"),
            "nodes": m.get("nodes"),
            "dispatches": m.get("dispatches"),
            "fused": sum(1 for k in kernels if is_fused(k.get("kernel", ""))),
            "fallbacks": m.get("fallbacks"),
            "gpu_ms": gpu,
            "max_diff": m.get("reference_max_abs_diff"),
            "error": m.get("error"),
        }


def fusion_statistics(model):
    """The statistics of the last `fusion` pass run recorded for `model`."""
    last = {}
    for p in model.get("passes") or []:
        if p.get("name") == "fusion" and p.get("committed"):
            last = p.get("statistics") or {}
    return last


def partition_table(fused_path, unfused_path):
    with open(fused_path) as f:
        fused = {m["model"]: m for m in json.load(f).get("models", [])}
    with open(unfused_path) as f:
        unfused = {m["model"]: m for m in json.load(f).get("models", [])}
    print("| model | ONNX nodes | dispatches without fusion | with | groups (anchor / elementwise / attention / "
          "store-view / DW-PW) | complex ops per group, max | Jain balance | view nodes | DW/PW refused |")
    print("|---|---:|---:|---:|---|---:|---:|---|---:|")
    for name, m in fused.items():
        s = fusion_statistics(m)
        u = unfused.get(name, {})
        kinds = " / ".join(str(s.get(k, 0)) for k in
                           ("groups-anchor", "groups-elementwise", "attention-groups", "groups-store-view", "groups-dwpw"))
        views = s.get("view-prologue-nodes", 0)
        print(f"| {name} | {m.get('nodes')} | {u.get('dispatches', '-')} | {m.get('dispatches')} | "
              f"{s.get('groups', 0)}: {kinds} | {s.get('complex-ops-per-group-max', 0)} | "
              f"{s.get('weight-balance-jain-x1000', 0) / 1000:.2f} | {views} | {s.get('dwpw-refused', 0)} |")


def main(argv):
    if len(argv) == 4 and argv[1] == "--partition":
        partition_table(argv[2], argv[3])
        return 0
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    table = [r for path in argv[1:] for r in rows(path)]
    print("| model | run | nodes | dispatches | fused kernels | fallbacks | GPU median ms | max abs diff |")
    print("|---|---|---|---|---|---|---|---|")
    for r in sorted(table, key=lambda r: (r["model"] or "", r["doc"])):
        if r["status"] != "ok":
            print(f"| {r['model']} | {r['doc']} | error: {r['error']} | | | | | |")
            continue
        gpu = f"{r['gpu_ms']:.3f}" if isinstance(r["gpu_ms"], (int, float)) else "-"
        diff = f"{r['max_diff']:.2e}" if isinstance(r["max_diff"], (int, float)) else "-"
        print(f"| {r['model']} | {r['doc']} | {r['nodes']} | {r['dispatches']} | {r['fused']} | {r['fallbacks']} "
              f"| {gpu} | {diff} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

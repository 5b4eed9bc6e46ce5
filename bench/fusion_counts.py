#!/usr/bin/env python3
"""Dispatch counts from `kiln bench --json` documents (kiln-bench-cli-v1), as
a Markdown table: per model and document, ONNX nodes, dispatches, fused
kernels (a kernel name with '+' or starting with "fused"), host fallbacks,
the GPU median and the worst output difference against the reference output.

usage: bench/fusion_counts.py kiln_fp32.json kiln_fp32_nofusion.json ...
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


def main(argv):
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

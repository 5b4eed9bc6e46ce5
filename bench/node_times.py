#!/usr/bin/env python3
"""Per-node GPU times of two or more `kiln bench --json` documents
(kiln-bench-cli-v1) of the same models, side by side: which kernels each
plan ran for a graph node and how long they took in the profiled run. This
is how a routing rule is found — e.g. fp16 on the tensor cores against fp16
with `--coopmat off` against fp32 (bench/results/h100-2026-11-28-session21).

A node's time is the sum of the kernels the profile attributes to it (a
split GEMM's tile and reduce passes; a fused kernel counts for the node the
profile names, its last). Per model: one line per node where the documents'
times differ by more than --threshold (relative to the first document), and
a total line with what choosing the fastest document per node would save
against the first.

usage: bench/node_times.py A.json B.json [C.json ...] [--model NAME] [--threshold 0.05] [--all]
"""
import argparse
import json
import os
import sys
from collections import OrderedDict


def node_times(model):
    """OrderedDict node -> (total GPU us, kernel names joined by ' + ')."""
    times = OrderedDict()
    for k in model.get("kernels") or []:
        node = k.get("node") or k.get("kernel", "?")
        us, names = times.get(node, (0.0, []))
        times[node] = (us + 1000.0 * (k.get("gpu_ms") or 0.0), names + [k.get("kernel", "?")])
    return OrderedDict((n, (us, " + ".join(names))) for n, (us, names) in times.items())


def load(path):
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or "models" not in doc:
        raise ValueError(f"{path}: not a kiln bench --json document (no 'models')")
    return OrderedDict((m.get("model"), m) for m in doc["models"] if m.get("status") == "ok")


def compare(models, threshold=0.05, show_all=False):
    """Rows for one model across documents: (node, [(us, kernels) or None])
    for the nodes that differ by more than `threshold`, and the summary
    (first document's total, best-per-node total)."""
    tables = [node_times(m) for m in models]
    rows = []
    first_total = best_total = 0.0
    for node, (us0, _) in tables[0].items():
        cells = [t.get(node) for t in tables]
        present = [c[0] for c in cells if c is not None]
        first_total += us0
        best_total += min(present)
        spread = (max(present) - min(present)) / us0 if us0 > 0 else 0.0
        if show_all or spread > threshold:
            rows.append((node, cells))
    return rows, first_total, best_total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("documents", nargs="+", help="kiln bench --json documents (two or more)")
    ap.add_argument("--model", help="only this model")
    ap.add_argument("--threshold", type=float, default=0.05, help="relative difference worth a line (0.05)")
    ap.add_argument("--all", action="store_true", help="every node, not only those that differ")
    a = ap.parse_args(argv)
    if len(a.documents) < 2:
        ap.error("name two or more documents")
    try:
        docs = [load(p) for p in a.documents]
    except (OSError, ValueError) as e:
        print(f"node_times: {e}", file=sys.stderr)
        return 2
    labels = [os.path.splitext(os.path.basename(p))[0] for p in a.documents]
    shared = [m for m in docs[0] if all(m in d for d in docs[1:]) and (not a.model or m == a.model)]
    if not shared:
        print("node_times: no model is in every document" + (f" as '{a.model}'" if a.model else ""), file=sys.stderr)
        return 1
    for name in shared:
        rows, first, best = compare([d[name] for d in docs], a.threshold, a.all)
        print(f"## {name}\n")
        print("| node | " + " | ".join(labels) + " |")
        print("|---|" + "---:|" * len(labels))
        for node, cells in rows:
            text = [f"{c[0]:.2f} ({c[1]})" if c else "-" for c in cells]
            print(f"| {node} | " + " | ".join(text) + " |")
        saved = first - best
        print(f"\n{labels[0]}: {first:.1f} us of kernels; the fastest per node: {best:.1f} us "
              f"({saved:.1f} us, {100.0 * saved / first if first else 0.0:.1f} % less)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

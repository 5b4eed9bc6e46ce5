#!/usr/bin/env python3
"""FusePlanner's DW/PW choices against a timed both-ways run (issue 14's FCM
line), from three `kiln bench --json` documents of the same models and
machine: the default pipeline (FusePlanner decides), every DW/PW pair fused
(KILN_FUSION_DWPW=fuse) and none fused (KILN_FUSION_DWPW=split).

  bench/dwpw_timing.py AUTO.json FUSE.json SPLIT.json

A pair is a `dwpw_*` group of FUSE (its kernels share the node: the group's
last node, the pointwise conv or the residual add after it). Its split time
is SPLIT's kernels with that node plus the depthwise kernel just before
them; FusePlanner fused it when AUTO has a `dwpw_*` kernel with that node.
The choice agrees when it fused exactly the pairs that ran faster fused.
Prints a Markdown table per model and the agreement over all pairs.
"""
import json
import sys


def models(path):
    with open(path) as f:
        return {m["model"]: m.get("kernels") or [] for m in json.load(f).get("models", []) if m.get("status") == "ok"}


def pairs(auto, fused, split):
    by_node = {}
    for k in fused:
        if k["kernel"].startswith("dwpw"):
            by_node.setdefault(k["node"], 0.0)
            by_node[k["node"]] += k["gpu_ms"]
    for node, fused_ms in by_node.items():
        idx = [i for i, k in enumerate(split) if k["node"] == node]
        if not idx:
            continue
        dw = next((split[i] for i in range(idx[0] - 1, -1, -1) if "conv_depthwise" in split[i]["kernel"]), None)
        if dw is None:
            continue
        split_ms = dw["gpu_ms"] + sum(split[i]["gpu_ms"] for i in idx)
        planner_fused = any(k["node"] == node and k["kernel"].startswith("dwpw") for k in auto)
        yield node, fused_ms, split_ms, planner_fused


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    auto, fused, split = (models(p) for p in argv[1:])
    agree = total = 0
    for name in fused:
        rows = list(pairs(auto.get(name, []), fused[name], split.get(name, [])))
        if not rows:
            continue
        print(f"\n### {name}\n")
        print("| pair (last node) | fused ms | split ms | faster | FusePlanner | agrees |")
        print("|---|---:|---:|---|---|---|")
        for node, f_ms, s_ms, planned in rows:
            faster_fused = f_ms < s_ms
            ok = faster_fused == planned
            agree += ok
            total += 1
            print(f"| {node} | {f_ms:.4f} | {s_ms:.4f} | {'fused' if faster_fused else 'split'} | "
                  f"{'fuse' if planned else 'split'} | {'yes' if ok else 'no'} |")
    if total:
        print(f"\nFusePlanner agrees with the timed run on {agree} of {total} pairs ({100.0 * agree / total:.0f} %).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

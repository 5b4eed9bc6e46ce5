#!/usr/bin/env python3
"""Global-memory bytes of FCM's fused depthwise/pointwise kernels against the
same nodes unfused (issue 14's FCM line), from Kiln's own per-kernel byte
counts (`kiln run --profile --stats`, runs[0].kernels[].bytes).

  kiln graph MODEL --text GROUPS.kir                            # the default pipeline's fusion groups
  kiln run MODEL --profile --stats FUSED.json                    # default pipeline
  kiln run MODEL --profile --stats UNFUSED.json --disable-pass fusion
  bench/dwpw_bytes.py GROUPS.kir FUSED.json UNFUSED.json

For every group of FUSED with a `dwpw_*` kernel (a kernel's node is its
group's last node; a split-K group has two kernels), the group's members
come from GROUPS.kir (kiln.fusion_group annotations, node names from
loc(...)); the unfused bytes are those of the UNFUSED kernels whose node is
a member (the depthwise conv, its activation, the pointwise conv, a
residual add, split-K passes). Prints a Markdown table and the total.
"""
import json
import re
import sys

NODE = re.compile(r'kiln\.fusion_group = "([^"]+)".*loc\("([^"]+)"\)')


def groups_of(kir_path):
    group_of = {}
    with open(kir_path) as f:
        for line in f:
            m = NODE.search(line)
            if m:
                group_of[m.group(2)] = m.group(1)
    return group_of


def kernels(stats_path):
    with open(stats_path) as f:
        return json.load(f)["runs"][0]["kernels"]


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    group_of = groups_of(argv[1])
    unfused = kernels(argv[3])
    # A group's kernels (a split-K DW/PW GEMM is two) by group id, in order.
    fused = {}
    for k in kernels(argv[2]):
        group = group_of.get(k["node"])
        if group is not None:
            fused.setdefault(group, []).append(k)
    rows, total_fused, total_unfused = [], 0, 0
    for group, ks in fused.items():
        if not any(k["kernel"].startswith("dwpw") for k in ks):
            continue
        members = {n for n, g in group_of.items() if g == group}
        parts = [u for u in unfused if u["node"] in members]
        after = sum(k["bytes"] for k in ks)
        before = sum(u["bytes"] for u in parts)
        rows.append((ks[-1]["node"], " + ".join(k["kernel"] for k in ks), after, before, len(parts)))
        total_fused += after
        total_unfused += before
    print("| group's last node | fused kernel | fused bytes | unfused bytes (kernels) | fused / unfused |")
    print("|---|---|---:|---:|---:|")
    for node, name, after, before, n in rows:
        ratio = f"{after / before:.2f}" if before else "-"
        print(f"| {node} | {name} | {after} | {before} ({n}) | {ratio} |")
    if total_unfused:
        print(f"\n{len(rows)} DW/PW groups: {total_fused} bytes against {total_unfused} unfused "
              f"({total_fused / total_unfused:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

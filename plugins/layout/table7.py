#!/usr/bin/python3
"""SmartMem's Table 7 next to Kiln's counts (README.md, "Table 7").

For each model: the paper's operator counts (unoptimized, DNNFusion,
SmartMem) beside Kiln's — the ONNX nodes of the torch export, the nodes
after one round of canonicalization, and the dispatches of the full
default pipeline on the device (`kiln run --backend vulkan --profile`),
split into the split-K reduce passes (a GEMM split along K runs its
partial sums in one dispatch and adds them in another: no operator of the
graph), the standalone layout-transform kernels left (copies of Transpose,
Reshape, Slice, Concat, Pad, DepthToSpace, ...) and the rest.

usage: plugins/layout/table7.py KILN_BINARY ZOO_DIR [--storage auto|buffer|image] [MODEL ...]
ZOO_DIR as tests/models/export_zoo.py writes it (ZOO_DIR/<model>/model.onnx);
the default models are swin_t, vit_b_16, convnext_tiny and resnext50_32x4d.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_table import CANONICALIZE, TRANSFORM_KERNELS, graph_nodes, onnx_nodes, run_stats  # noqa: E402

# SmartMem (ASPLOS'24) Table 7: #operators unoptimized, DNNF, Ours.
PAPER = {
    "swin_t": ("Swin", 765, 207, 158),
    "vit_b_16": ("ViT", 444, 168, 112),
    "convnext_tiny": ("ConvNext", 292, 96, 81),
    "resnext50_32x4d": ("ResNext", 122, 55, 55),
}


def is_reduce_pass(kernel):
    return "splitk_reduce" in kernel


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    kiln, zoo, rest = argv[1], argv[2], argv[3:]
    storage = "auto"
    if rest[:1] == ["--storage"] and len(rest) > 1:
        storage, rest = rest[1], rest[2:]
    models = rest or list(PAPER)
    print("| model | paper: operators / DNNF / SmartMem | Kiln: ONNX nodes | after canonicalize "
          f"| dispatches ({storage}) | of which split-K reduce passes | layout-transform kernels left "
          "| dispatches without the reduce passes |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in models:
            path = os.path.join(zoo, name, "model.onnx")
            s = run_stats(kiln, path, storage, tmp)
            dispatches = s["compile"]["dispatches"]
            kernels = [k["kernel"] for k in (s.get("runs") or [{}])[0].get("kernels") or []]
            reduces = sum(1 for k in kernels if is_reduce_pass(k))
            transforms = [k for k in kernels if TRANSFORM_KERNELS.match(k)]
            kinds = sorted({k.split("_")[0] for k in transforms})
            paper = PAPER.get(name)
            paper_text = f"{paper[0]}: {paper[1]} / {paper[2]} / {paper[3]}" if paper else "-"
            print(f"| {name} | {paper_text} | {onnx_nodes(path)} | {graph_nodes(kiln, path, CANONICALIZE)} "
                  f"| {dispatches} | {reduces} | {len(transforms)}{' (' + ', '.join(kinds) + ')' if kinds else ''} "
                  f"| {dispatches - reduces} |", flush=True)


if __name__ == "__main__":
    main(sys.argv)

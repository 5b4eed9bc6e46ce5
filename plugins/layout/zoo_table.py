#!/usr/bin/python3
"""The layout plugin's Table-7-style counts for the local model zoo
(README.md): per model the ONNX nodes, the nodes after canonicalization
(`kiln graph --passes` with the canonicalization passes, one round), the
kernels after the full default pipeline (fusion, layout), the standalone
layout-transform kernels left (copy kernels of Transpose, Reshape, Slice,
Concat, DepthToSpace, SpaceToDepth), and the per-tensor storage mix that
`--storage auto` gives on the device (the plan's image and buffer float
activations, and the layout pass's statistics).

usage: plugins/layout/zoo_table.py KILN_BINARY ZOO_DIR [--storage auto|image] [MODEL ...]
(--storage image: the packed axes the pass picks when every tensor is an image)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

CANONICALIZE = "remove-noops,fold-shapes,fold-constants,fuse-conv-batchnorm,cse,dce"
# Kernels that only move elements: what SmartMem's elimination removes.
TRANSFORM_KERNELS = re.compile(r"^(transpose|reshape|copy|slice|concat|depth_to_space|space_to_depth|pad|split)")


def onnx_nodes(path):
    import onnx
    return len(onnx.load(path, load_external_data=False).graph.node)


def graph_nodes(kiln, path, passes):
    out = subprocess.run([kiln, "graph", path, "--passes", passes, "--text", "-"], check=True,
                         capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if re.match(r"^\s+%[^=]*= \S", line))


def run_stats(kiln, path, storage, tmp):
    stats = os.path.join(tmp, "stats.json")
    # The zoo's own input (its shape fixes a dynamic model's dims).
    given = os.path.join(os.path.dirname(path), "input.npy")
    inputs = ["--input", "input=" + given] if os.path.exists(given) else []
    subprocess.run([kiln, "run", path, "--backend", "vulkan", "--storage", storage, "--profile", "--stats", stats]
                   + inputs, check=True, capture_output=True, text=True)
    with open(stats) as f:
        return json.load(f)


def layout_statistics(session):
    last = {}
    for p in session.get("passes") or []:
        if p.get("name") == "layout" and p.get("committed"):
            last = p.get("statistics") or {}
    return last


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    kiln, zoo, rest = argv[1], argv[2], argv[3:]
    storage = "auto"
    if rest[:1] == ["--storage"] and len(rest) > 1:
        storage, rest = rest[1], rest[2:]
    models = rest or [m.strip() for m in open(os.path.join(zoo, "manifest.txt")) if m.strip()]
    print("| model | ONNX nodes | after canonicalize | kernels (fusion + layout) | layout-transform kernels left "
          f"| {storage}: image / buffer activations | packed by reduction / producer / default | conflicts "
          "| too large for an image |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in models:
            path = os.path.join(zoo, name, "model.onnx")
            s = run_stats(kiln, path, storage, tmp)
            session = s.get("session", s)
            compile_ = session.get("compile", {})
            kernels = (s.get("runs") or [{}])[0].get("kernels") or []
            transforms = sorted({k["kernel"] for k in kernels if TRANSFORM_KERNELS.match(k["kernel"])})
            left = sum(1 for k in kernels if TRANSFORM_KERNELS.match(k["kernel"]))
            st = layout_statistics(session)
            print(f"| {name} | {onnx_nodes(path)} | {graph_nodes(kiln, path, CANONICALIZE)} "
                  f"| {compile_.get('dispatches')} | {left}{' (' + ', '.join(transforms) + ')' if transforms else ''} "
                  f"| {compile_.get('image_tensors')} / {compile_.get('buffer_tensors')} "
                  f"| {st.get('packed-by-reduction', 0)} / {st.get('packed-by-producer', 0)} / "
                  f"{st.get('packed-default', 0)} | {st.get('reduction-conflicts', 0)} "
                  f"| {st.get('too-large-for-image', 0)} |", flush=True)


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/python3
"""Pixel shuffles as index views, end to end: `kiln run` on generate_pixel_shuffle.py's network.

Runs the super-resolution network through `kiln run --backend vulkan`
(default pass pipeline, --storage auto) and again with `--disable-pass
fusion`, where every SpaceToDepth/DepthToSpace is a copy kernel of its own.
Requires, from the profiled kernels: three shuffle copy kernels without
fusion and none with it — every dispatch of the default plan is a conv
kernel (the shuffles read as a conv's prologue or written by a conv's
store view, the Relus and the Sigmoid in the convs' epilogues) — and both
outputs within 1e-4 of torch's; no host fallback. Prints both dispatch
counts.
Usage: check_pixel_shuffle_cli.py KILN WORKDIR NODE_DIR   (exit 77: no Vulkan device)
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from vulkan_gate import vulkan_gate

CASE = "pixel_shuffle_sr_net"
SHUFFLE_KERNEL = re.compile(r"^(depth_to_space|space_to_depth)")


def run(kiln, model, x_file, work, tag, extra):
    out = os.path.join(work, f"{tag}_y.npy")
    stats = os.path.join(work, f"{tag}_stats.json")
    cmd = [kiln, "run", model, "--backend", "vulkan", "--input", f"x={x_file}", "--output", f"y={out}",
           "--profile", "--stats", stats] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    with open(stats) as f:
        s = json.load(f)
    if s["compile"]["fallbacks"] != 0:
        raise AssertionError(f"{tag}: host fallbacks: {s['compile']['fallback_reasons']}")
    kernels = [k["kernel"] for k in s["runs"][0]["kernels"]]
    return np.load(out), s["compile"]["dispatches"], kernels


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    kiln, work, node_dir = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    gate = vulkan_gate(kiln)
    if gate is not None:
        return gate
    case = os.path.join(node_dir, CASE)
    data = os.path.join(case, "test_data_set_0")
    x_file = os.path.join(work, "x.npy")
    np.save(x_file, numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "input_0.pb"))))
    want = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "output_0.pb")))
    model = os.path.join(case, "model.onnx")
    views, n_views, k_views = run(kiln, model, x_file, work, "views", [])
    copies, n_copies, k_copies = run(kiln, model, x_file, work, "copies", ["--disable-pass", "fusion"])
    for tag, got in (("default", views), ("--disable-pass fusion", copies)):
        err = float(np.max(np.abs(got - want)))
        if got.shape != want.shape or err > 1e-4:
            raise AssertionError(f"{tag}: output differs from torch's by {err} (shape {got.shape})")
    shuffles = [k for k in k_copies if SHUFFLE_KERNEL.match(k)]
    if len(shuffles) != 3:
        raise AssertionError(f"without fusion expected 3 shuffle copy kernels, got {k_copies}")
    others = [k for k in k_views if "conv" not in k]
    if others:
        raise AssertionError(f"the default plan runs kernels other than the convs' ({others}): {k_views}")
    print(f"{CASE}: {n_copies} dispatches with the shuffles as copy kernels (fusion off), {n_views} with them as "
          f"index views; outputs within 1e-4 of torch's")
    return 0


if __name__ == "__main__":
    sys.exit(main())

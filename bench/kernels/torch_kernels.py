#!/usr/bin/env python3
"""The per-op micro-benchmark cases (kiln_kernel_bench --list-cases) in
PyTorch on CUDA, side by side with Kiln on the same GPU: each op alone,
timed with CUDA events over enough back-to-back launches to fill ~0.2 s, in
PyTorch's default settings (TF32 convolutions, fp32 matmuls).

usage: torch_kernels.py CASES_JSON OUT_JSON [--precisions fp32,fp16]
Writes [{"name", "precision", "ms", "tflops"?}] (ms per launch)."""
import argparse
import json
import sys

import torch
import torch.nn.functional as F


def make_op(case, dtype):
    dev = "cuda"
    gen = torch.Generator(device="cpu").manual_seed(7)

    def rand(shape, scale):
        return ((torch.rand(shape, generator=gen) * 2 - 1) * scale).to(dev, dtype)

    xs = [rand(s, 1.0) for s in case["inputs"]]
    ws = [rand(s, 0.05) for s in case["weights"]]
    attrs, op = case["attrs"], case["op"]
    if op == "MatMul":
        return lambda: torch.matmul(xs[0], ws[0])
    if op == "Conv":
        stride, pads, group = attrs["strides"], attrs["pads"], attrs["group"][0]
        return lambda: F.conv2d(xs[0], ws[0], ws[1], stride=stride, padding=pads[:2], groups=group)
    if op == "Softmax":
        return lambda: torch.softmax(xs[0], dim=-1)
    if op == "LayerNormalization":
        return lambda: F.layer_norm(xs[0], (xs[0].shape[-1],), ws[0], ws[1])
    if op == "Attention":
        return lambda: F.scaled_dot_product_attention(xs[0], xs[1], xs[2])
    if op == "Add":
        return lambda: torch.add(xs[0], xs[1])
    if op == "Relu":
        return lambda: torch.relu(xs[0])
    raise ValueError(f"no PyTorch form for op {op}")


def time_ms(fn):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    iters = max(10, min(5000, int(200.0 / max(start.elapsed_time(end), 1e-3))))
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases")
    ap.add_argument("out")
    ap.add_argument("--precisions", default="fp32,fp16")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_kernels.py: no CUDA device")
    cases = json.load(open(args.cases))
    rows = []
    with torch.no_grad():
        for p in args.precisions.split(","):
            dtype = torch.float16 if p == "fp16" else torch.float32
            for case in cases:
                ms = time_ms(make_op(case, dtype))
                row = {"name": case["name"], "precision": p, "ms": ms}
                if case["flops"]:
                    row["tflops"] = case["flops"] / (ms / 1e3) / 1e12
                rows.append(row)
                print(f"{case['name']}/{p}: {ms * 1e3:.1f} us", flush=True)
    json.dump(rows, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()

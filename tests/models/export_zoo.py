#!/usr/bin/python3
"""Exports the torchvision model zoo to ONNX with PyTorch reference outputs.

The whole-model tests compare Kiln with PyTorch on real networks. For each
model this writes OUT/<name>/model.onnx (opset 17, batch 1), input.npy (a
seeded random input) and output.npy (PyTorch's output for it), and finally
OUT/manifest.txt listing the models of this run, which the comparison reads.
Weights are random (weights=None, torch.manual_seed(0)): no download, and the
numbers still exercise every op. Models already exported by an identical
configuration are kept (a stamp per model records it), so re-runs are cheap.

Run with Debian's interpreter (/usr/bin/python3: python3-torch 1.13,
python3-torchvision 0.14). Large models (vgg, vit, swin, convnext, resnet50;
100-500 MB each) belong in a build directory, never in the repository.

Usage: export_zoo.py OUT [MODEL ...]  or  export_zoo.py --out OUT [MODEL ...]
       (no MODEL: --set ci|all, default $KILN_ZOO, else ci)
"""
import argparse
import hashlib
import os
import sys
import time
import warnings

# The CI subset: small, fast to export and to run on the reference executor.
CI_MODELS = ["mobilenet_v2", "resnet18", "squeezenet1_0", "shufflenet_v2_x1_0", "efficientnet_b0",
             "transformer_encoder"]
ALL_MODELS = ["mobilenet_v2", "mobilenet_v3_small", "resnet18", "resnet50", "resnext50_32x4d", "regnet_y_400mf",
              "efficientnet_b0", "convnext_tiny", "swin_t", "vit_b_16", "squeezenet1_0", "shufflenet_v2_x1_0",
              "mnasnet1_0", "googlenet", "densenet121", "alexnet", "vgg11", "transformer_encoder"]
OPSET = 17


def build(name):
    """Returns (module, example input, export kwargs)."""
    import torch
    import torchvision

    torch.manual_seed(0)
    if name == "transformer_encoder":
        # A BERT-like encoder stack with a dynamic sequence axis.
        layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                                 batch_first=True)
        model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        # Traced at 16 tokens and checked at 11 (reference_input), so the
        # dynamic axis is exercised. torch 2's TorchScript exporter folds the
        # attention's sequence length into Reshape constants (torch 2.11 on
        # the GPU machine: a Reshape to [16, 4, 16]), which no runtime can run
        # at another length: there the encoder is traced at the checked length.
        traced = 16 if int(torch.__version__.split(".")[0]) < 2 else 11
        example = torch.randn(1, traced, 64)
        kwargs = {"dynamic_axes": {"input": {1: "seq"}, "output": {1: "seq"}}}
        return model, example, kwargs
    if name == "bert_base":
        # BERT-base's encoder (12 post-norm layers, d=768, 12 heads, GELU
        # feed-forward of 3072) over token embeddings: the benchmark zoo's
        # transformer, with a dynamic sequence axis.
        layer = torch.nn.TransformerEncoderLayer(d_model=768, nhead=12, dim_feedforward=3072, dropout=0.0,
                                                 activation="gelu", batch_first=True)
        model = torch.nn.TransformerEncoder(layer, num_layers=12, enable_nested_tensor=False)
        # TransformerEncoder deep-copies one layer, and the exporter merges
        # identical initializers: without fresh weights per layer the ONNX
        # file would hold one layer's weights (28 MB, cache-resident on a big
        # GPU) instead of BERT-base's 340 MB.
        for pname, p in model.named_parameters():
            if "norm" in pname:
                continue  # LayerNorm keeps weight 1, bias 0
            if p.dim() > 1:
                torch.nn.init.xavier_uniform_(p)
            else:
                torch.nn.init.normal_(p, std=0.02)
        kwargs = {"dynamic_axes": {"input": {1: "seq"}, "output": {1: "seq"}}}
        return model, torch.randn(1, 16, 768), kwargs
    ctor = getattr(torchvision.models, name, None)
    if ctor is None:
        raise ValueError(f"torchvision {torchvision.__version__} has no model '{name}'")
    if name == "googlenet":
        model = ctor(weights=None, aux_logits=False, init_weights=True)
    elif name == "inception_v3":
        model = ctor(weights=None, aux_logits=False, init_weights=True)
    else:
        model = ctor(weights=None)
    side = 299 if name == "inception_v3" else 224  # inception_v3's pooling needs 299x299
    return model, torch.randn(1, 3, side, side), {}


def initialize_zero_heads(model):
    """Gives zero-initialized Linear layers (vit_b_16's classifier head)
    random weights: a zero head makes the output exactly its bias, and the
    comparison would test nothing upstream of it."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.Linear) and not torch.any(module.weight):
            torch.nn.init.normal_(module.weight, std=0.02)


def calibrate_batchnorm(model, example):
    """Gives BatchNorm layers running statistics of real activations.

    Freshly initialized BN layers have mean 0 / var 1, so in eval mode they
    do not normalize; through a deep random network the activations then
    vanish (mobilenet_v2's logits come out around 1e-9) and any comparison
    passes. A few training-mode passes over random batches (cumulative
    averages, no gradients) make the outputs O(1) and the test meaningful."""
    import torch

    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    gen = torch.Generator().manual_seed(2)
    model.train()
    with torch.no_grad():
        for _ in range(2):
            model(torch.randn(4, *example.shape[1:], generator=gen))


def reference_input(name, example):
    """The input saved for the comparison; for the encoder a sequence length
    other than the traced one, so the dynamic axis really is exercised."""
    import torch

    gen = torch.Generator().manual_seed(1)
    if name == "transformer_encoder":
        return torch.randn(1, 11, 64, generator=gen)
    return torch.randn(*example.shape, generator=gen)


def encoder_input(length, width):
    """The benchmark zoo's seeded input of one sequence length for the
    encoder (bench/zoo/export.py writes it, bench/torch_peer.py feeds it)."""
    import torch

    return torch.randn(1, length, width, generator=torch.Generator().manual_seed(1000 + length))


def split_length(name):
    """"bert_base_s64" -> ("bert_base", 64): a benchmark zoo directory holding
    the encoder at one sequence length; other names -> (name, None)."""
    base, sep, tail = name.rpartition("_s")
    if sep and base == "bert_base" and tail.isdigit() and int(tail) > 0:
        return base, int(tail)
    return name, None


def config_stamp(name):
    import torch
    import torchvision

    with open(__file__, "rb") as f:
        script = hashlib.sha256(f.read()).hexdigest()[:16]
    return f"{name} torch={torch.__version__} torchvision={torchvision.__version__} opset={OPSET} script={script}"


def export_one(name, out_dir):
    import numpy as np
    import torch

    model_dir = os.path.join(out_dir, name)
    stamp_path = os.path.join(model_dir, "STAMP")
    stamp = config_stamp(name)
    files = [os.path.join(model_dir, f) for f in ("model.onnx", "input.npy", "output.npy")]
    if os.path.exists(stamp_path) and all(os.path.exists(f) for f in files):
        with open(stamp_path) as f:
            if f.read().strip() == stamp:
                return "cached", 0.0
    os.makedirs(model_dir, exist_ok=True)
    if os.path.exists(stamp_path):
        os.remove(stamp_path)

    start = time.monotonic()
    model, example, kwargs = build(name)
    initialize_zero_heads(model)
    calibrate_batchnorm(model, example)
    model.eval()
    # Export and reference both run with autograd enabled: under no_grad,
    # PyTorch 1.13 swaps TransformerEncoderLayer for a fused kernel
    # (_transformer_encoder_layer_fwd) that has no ONNX export.
    torch.onnx.export(model, (example,), files[0], opset_version=OPSET, input_names=["input"],
                      output_names=["output"], do_constant_folding=True, **kwargs)
    x = reference_input(name, example)
    y = model(x).detach()
    np.save(files[1], x.numpy().astype(np.float32))
    np.save(files[2], y.numpy().astype(np.float32))
    with open(stamp_path, "w") as f:
        f.write(stamp + "\n")
    return "exported", time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("args", nargs="*", metavar="[OUT] MODEL",
                        help="output directory (unless --out is given), then model names "
                             "(default: the set chosen by --set)")
    parser.add_argument("--out", default=None, help="output directory (a build directory)")
    parser.add_argument("--set", choices=["ci", "all"], default=None,
                        help="model set when no names are given (default: $KILN_ZOO, else ci)")
    parser.add_argument("--list", action="store_true", help="print the known models and exit")
    args = parser.parse_args()
    if args.list:
        print("\n".join(ALL_MODELS))
        return 0
    positional = list(args.args)
    out_dir = args.out or (positional.pop(0) if positional else None)
    if not out_dir:
        parser.error("no output directory given")
    args.models = positional
    chosen = args.set or os.environ.get("KILN_ZOO", "ci") or "ci"
    if chosen not in ("ci", "all"):
        print(f"KILN_ZOO must be 'ci' or 'all', not '{chosen}'", file=sys.stderr)
        return 2
    models = args.models or (ALL_MODELS if chosen == "all" else CI_MODELS)
    unknown = [m for m in models if m not in ALL_MODELS]
    if unknown:
        print(f"unknown models: {', '.join(unknown)} (known: {', '.join(ALL_MODELS)})", file=sys.stderr)
        return 2

    warnings.simplefilter("ignore")
    import torch

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    out = os.path.abspath(out_dir)
    os.makedirs(out, exist_ok=True)
    total = time.monotonic()
    for name in models:
        state, seconds = export_one(name, out)
        size = os.path.getsize(os.path.join(out, name, "model.onnx")) / 1e6
        print(f"{name}: {state}" + (f" in {seconds:.1f} s" if state == "exported" else "") + f" ({size:.1f} MB)",
              flush=True)
    # The manifest names exactly this run's models, in order.
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        for name in models:
            f.write(name + "\n")
    print(f"{len(models)} models ready in {out} ({time.monotonic() - total:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Exports the benchmark zoo: torchvision's classification models and a
BERT-like encoder at several sequence lengths, with reference outputs.

Everything is built locally with Debian's python3-torch/torchvision (or the
GPU machine's PyTorch): random weights with a fixed seed (latency does not
depend on weight values), BatchNorm calibrated, batch 1, opset 17, input
`input`, output `output` — the networks of tests/models/export_zoo.py, whose
build/export code this reuses. Nothing is downloaded.

Layout (what `kiln bench` and bench/ort/ort_peer.mjs read):
  OUT/<model>/model.onnx, input.npy (seeded), output.npy (PyTorch's output)
  OUT/bert_base/model.onnx      one export with a dynamic `seq` axis
  OUT/bert_base_s<L>/           per sequence length L: model.onnx (a link to
                                the shared export), input.npy [1,L,768], output.npy
  OUT/zoo.json                  the models of this run: paths, input shapes,
                                parameters, sizes, SHA-256, torch versions,
                                and the models that failed to export, with why
`kiln bench OUT/*/model.onnx` then benchmarks each directory under its name,
feeding its input.npy and checking its output.npy.

Sets: `bench` (default: the models bench/RESULTS.md reports plus the
transformer lengths), `torchvision` (every classification model of the
installed torchvision: 80 in 0.14; the largest are several GB), `all`
(torchvision + the encoder lengths). Models already exported by the same
configuration are kept.

Usage: export.py OUT [--set bench|torchvision|all] [--models a,b,...] [--seq-lengths 16,64,128,384] [--list]
"""
import argparse
import json
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))
sys.path.insert(0, os.path.join(HERE, ".."))
import export_zoo  # noqa: E402
from export_models import sha256_of, torchscript_exporter  # noqa: E402

BENCH_SET = ["mobilenet_v2", "mobilenet_v3_large", "resnet18", "resnet50", "efficientnet_b0", "regnet_y_800mf",
             "convnext_tiny", "swin_t", "vit_b_16", "densenet121", "squeezenet1_1", "shufflenet_v2_x1_0"]
ENCODER = "bert_base"
DEFAULT_SEQ_LENGTHS = [16, 64, 128, 384]


def torchvision_models():
    import torchvision
    import torchvision.models as models

    if hasattr(models, "list_models"):  # torchvision >= 0.14
        return sorted(models.list_models(module=models))
    raise RuntimeError(f"torchvision {torchvision.__version__} cannot list its models; name them with --models")


def describe(out, name, extra=None):
    import numpy as np

    d = os.path.join(out, name)
    model = os.path.join(d, "model.onnx")
    rec = {"name": name, "path": os.path.relpath(model, out), "bytes": os.path.getsize(model), "sha256": sha256_of(model),
           "input_shape": list(np.load(os.path.join(d, "input.npy"), mmap_mode="r").shape),
           "output_shape": list(np.load(os.path.join(d, "output.npy"), mmap_mode="r").shape)}
    rec.update(extra or {})
    return rec


def parameter_count(name):
    model, _, _ = export_zoo.build(name)
    return sum(p.numel() for p in model.parameters())


def encoder_lengths(out, lengths, static):
    """Per length: a directory whose model.onnx links the one dynamic-axis
    export (or, with `static`, is its own export at that length), with a
    seeded input of that length and PyTorch's output for it."""
    import numpy as np
    import torch

    model, example, _ = export_zoo.build(ENCODER)
    export_zoo.initialize_zero_heads(model)
    model.eval()
    records = []
    for length in lengths:
        name = f"{ENCODER}_s{length}"
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        link = os.path.join(d, "model.onnx")
        x = export_zoo.encoder_input(length, example.shape[2])
        if static:
            if os.path.lexists(link):
                os.remove(link)
            torch.onnx.export(model, (x,), link, opset_version=export_zoo.OPSET, input_names=["input"],
                              output_names=["output"], do_constant_folding=True)
        elif not os.path.lexists(link):
            os.symlink(os.path.join("..", ENCODER, "model.onnx"), link)
        # Autograd on, as in export_zoo: under no_grad PyTorch swaps in a fused
        # encoder kernel whose numerics differ from the exported graph's ops.
        y = model(x).detach()
        np.save(os.path.join(d, "input.npy"), x.numpy().astype(np.float32))
        np.save(os.path.join(d, "output.npy"), y.numpy().astype(np.float32))
        records.append(describe(out, name, {"shares": ENCODER, "seq": length}))
        print(f"{name}: input [1,{length},{example.shape[2]}]", flush=True)
    return records


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", help="output directory (a build or scratch directory, never the repository)")
    ap.add_argument("--set", choices=["bench", "torchvision", "all"], default="bench")
    ap.add_argument("--models", help="comma-separated model names instead of a set (the encoder: bert_base)")
    ap.add_argument("--seq-lengths", default=",".join(map(str, DEFAULT_SEQ_LENGTHS)),
                    help="the encoder's sequence lengths (empty: no encoder)")
    ap.add_argument("--static-lengths", action="store_true",
                    help="export the encoder once per length without a dynamic axis (for exporters that bake the "
                         "traced length into a Reshape, as torch 2.11's TorchScript exporter does here)")
    ap.add_argument("--list", action="store_true", help="print the models of --set and exit")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    lengths = [int(x) for x in a.seq_lengths.split(",") if x.strip()]
    if a.models:
        models = [m.strip() for m in a.models.split(",") if m.strip()]
    elif a.set == "bench":
        models = list(BENCH_SET)
    else:
        models = torchvision_models()
    with_encoder = (ENCODER in models) or (not a.models and a.set in ("bench", "all") and lengths)
    models = [m for m in models if m != ENCODER]
    if a.list:
        print("\n".join(models + ([f"{ENCODER}_s{n}" for n in lengths] if with_encoder else [])))
        return 0
    if not a.out:
        ap.error("no output directory given")
    if any(bad < 1 for bad in lengths):
        ap.error("--seq-lengths must be positive")

    import torch
    import torchvision

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    records, failures = [], []
    start = time.monotonic()
    for i, name in enumerate(models + ([ENCODER] if with_encoder else [])):
        print(f"[{i + 1}/{len(models) + with_encoder}] {name}...", flush=True)
        try:
            with torchscript_exporter():  # torch >= 2.9 defaults to the dynamo exporter
                state, seconds = export_zoo.export_one(name, out)
            rec = describe(out, name, {"parameters": parameter_count(name)})
            records.append(rec)
            print(f"{name}: {state}" + (f" in {seconds:.1f} s" if state == "exported" else "") +
                  f" ({rec['bytes'] / 1e6:.1f} MB)", flush=True)
        except Exception as e:  # one model's failure (too large, unsupported op) must not stop the zoo
            failures.append({"name": name, "error": f"{type(e).__name__}: {e}"})
            print(f"{name}: FAILED: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
    if with_encoder and any(r["name"] == ENCODER for r in records):
        with torchscript_exporter():
            records += encoder_lengths(out, lengths, a.static_lengths)
    manifest = {"schema": "kiln-zoo-v1", "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "torch": torch.__version__, "torchvision": torchvision.__version__, "opset": export_zoo.OPSET,
                "models": records, "failed": failures}
    with open(os.path.join(out, "zoo.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"{len(records)} models in {out} ({time.monotonic() - start:.1f} s); {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

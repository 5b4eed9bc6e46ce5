#!/usr/bin/python3
"""Exports the benchmark models to ONNX for kiln_runner.py.

A thin layer over tests/models/export_zoo.py, so the benchmark runs exactly
the models the whole-model tests check: random weights (weights=None,
torch.manual_seed(0)), BatchNorm calibrated, batch 1, 3x224x224, input
`input`, output `output`, opset 17. For each model it writes
OUT/<model>/model.onnx, input.npy (the fixed, seeded input every run feeds),
output.npy (PyTorch's output, for kiln_runner.py's correctness check) and
finally OUT/bench_models.json naming the files, their sizes and hashes and
the exporting torch version. Models already exported by the same
configuration are kept.

Here: Debian's /usr/bin/python3 (torch 1.13). On the GPU machine the models
are too large to carry (the working tree that travels is capped at 64 MiB),
so run_h100.sh exports them there with that machine's torch; torch >= 2.9
defaults to the dynamo exporter, so the TorchScript exporter the zoo was
validated with is asked for explicitly wherever the keyword exists.

Usage: export_models.py --out DIR [--models mobilenet_v2,resnet50,...]
"""
import argparse
import contextlib
import hashlib
import inspect
import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402


@contextlib.contextmanager
def torchscript_exporter():
    """Makes torch.onnx.export default to dynamo=False while the zoo exports."""
    import torch

    original = torch.onnx.export
    try:
        has_dynamo = "dynamo" in inspect.signature(original).parameters
    except (TypeError, ValueError):
        has_dynamo = False
    if not has_dynamo:  # torch < 2.5: only the TorchScript exporter exists
        yield
        return

    def export(*args, **kwargs):
        kwargs.setdefault("dynamo", False)
        return original(*args, **kwargs)

    torch.onnx.export = export
    try:
        yield
    finally:
        torch.onnx.export = original


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output directory (a build or scratch directory)")
    parser.add_argument("--models", default=",".join(bench_common.BENCH_MODELS),
                        help="comma-separated models (default: %(default)s)")
    args = parser.parse_args()

    zoo = bench_common.export_zoo()
    try:
        models = bench_common.split_list(args.models, zoo.ALL_MODELS, "model")
    except ValueError as e:
        parser.error(str(e))

    warnings.simplefilter("ignore")
    import torch

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    manifest = {"schema": bench_common.SCHEMA + "-models", "torch_version": torch.__version__, "models": {}}
    start = time.monotonic()
    failed = []
    for name in models:
        try:
            with torchscript_exporter():
                state, seconds = zoo.export_one(name, out)
        except Exception as e:  # one model failing to export must not stop the others
            print(f"{name}: export FAILED: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            failed.append(name)
            continue
        model_dir = os.path.join(out, name)
        onnx_path = os.path.join(model_dir, "model.onnx")
        manifest["models"][name] = {
            "onnx": onnx_path,
            "input": os.path.join(model_dir, "input.npy"),
            "output": os.path.join(model_dir, "output.npy"),
            "onnx_bytes": os.path.getsize(onnx_path),
            "onnx_sha256": sha256_of(onnx_path),
        }
        size_mb = os.path.getsize(onnx_path) / 1e6
        print(f"{name}: {state}" + (f" in {seconds:.1f} s" if state == "exported" else "") + f" ({size_mb:.1f} MB)",
              flush=True)
    with open(os.path.join(out, "bench_models.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"{len(models) - len(failed)}/{len(models)} models ready in {out} ({time.monotonic() - start:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

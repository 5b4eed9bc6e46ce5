#!/usr/bin/python3
"""Exports the dynamic-shape acceptance models of issue 5 with PyTorch's
outputs at every shape the test feeds.

  * transformer_encoder (export_zoo.py's BERT-like 2-layer encoder, dynamic
    `seq`) at sequence lengths 8, 64, 200 and 8 again;
  * resnet18 with dynamic `h` and `w` at 160x320, 256x192 and 97x131.

For each model OUT/<model>_dyn/ holds model.onnx, in_<k>.npy and out_<k>.npy
(k = the run index) and shapes.txt (one input shape per line). Random
seeded weights and inputs, nothing downloaded; cached by a stamp like
export_zoo.py. dynamic_shapes_test.sh runs each in one `kiln run ... --then`.

Usage: export_dynamic.py OUT
"""
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_zoo  # noqa: E402

CASES = {
    "transformer_encoder": ({"input": {1: "seq"}, "output": {1: "seq"}},
                            [(1, 8, 64), (1, 64, 64), (1, 200, 64), (1, 8, 64)]),
    "resnet18": ({"input": {2: "h", 3: "w"}},
                 [(1, 3, 160, 320), (1, 3, 256, 192), (1, 3, 97, 131)]),
}


def export_case(name, out):
    import numpy as np
    import torch

    axes, shapes = CASES[name]
    d = os.path.join(out, name + "_dyn")
    stamp_path = os.path.join(d, "STAMP")
    stamp = export_zoo.config_stamp(name) + f" dynamic={axes} shapes={shapes}"
    if os.path.exists(stamp_path) and open(stamp_path).read().strip() == stamp:
        return "cached"
    os.makedirs(d, exist_ok=True)
    model, example, _ = export_zoo.build(name)
    export_zoo.initialize_zero_heads(model)
    export_zoo.calibrate_batchnorm(model, example)
    model.eval()
    # Autograd stays on (see export_zoo.export_one: no fused encoder kernel).
    torch.onnx.export(model, (example,), os.path.join(d, "model.onnx"), opset_version=export_zoo.OPSET,
                      input_names=["input"], output_names=["output"], do_constant_folding=True, dynamic_axes=axes)
    gen = torch.Generator().manual_seed(7)
    for k, shape in enumerate(shapes):
        x = torch.randn(*shape, generator=gen)
        np.save(os.path.join(d, f"in_{k}.npy"), x.numpy().astype(np.float32))
        np.save(os.path.join(d, f"out_{k}.npy"), model(x).detach().numpy().astype(np.float32))
    with open(os.path.join(d, "shapes.txt"), "w") as f:
        f.write("".join("x".join(map(str, s)) + "\n" for s in shapes))
    with open(stamp_path, "w") as f:
        f.write(stamp + "\n")
    return "exported"


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    warnings.simplefilter("ignore")
    for name in CASES:
        print(f"{name}_dyn: {export_case(name, os.path.abspath(sys.argv[1]))}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

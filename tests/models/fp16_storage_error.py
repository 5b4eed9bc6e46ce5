#!/usr/bin/python3
"""How far fp16 *storage* alone moves a zoo model's output from PyTorch fp32.

Kiln's fp16 mode stores weights and activations as fp16 and computes in fp32.
This rebuilds a model exactly as export_zoo.py did (same seed, head init and
BatchNorm calibration), rounds every parameter, buffer, the input and every
leaf module's output to fp16 (arithmetic stays fp32), and prints max|Δ|
against the exported output.npy next to the fp16 bound 2e-2 * max(1, max|ref|).
When Kiln's fp16 error is about this large, a failure is the format's, not a
kernel's.

Usage: fp16_storage_error.py ZOO_DIR MODEL [MODEL ...]
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_zoo  # noqa: E402


def simulate(zoo, name):
    import torch

    model, example, _ = export_zoo.build(name)
    export_zoo.initialize_zero_heads(model)
    export_zoo.calibrate_batchnorm(model, example)
    model.eval()
    x = torch.from_numpy(np.load(os.path.join(zoo, name, "input.npy")))
    ref = np.load(os.path.join(zoo, name, "output.npy"))

    def to_f16(t):
        return t.half().float()

    with torch.no_grad():
        fp32_error = float(np.abs(model(x).numpy() - ref).max())
        for p in model.parameters():
            p.copy_(to_f16(p))
        for b in model.buffers():
            if b.dtype == torch.float32:
                b.copy_(to_f16(b))
        for m in model.modules():
            if not list(m.children()):
                m.register_forward_hook(lambda _m, _i, o: to_f16(o) if isinstance(o, torch.Tensor) else o)
        y = model(to_f16(x)).numpy()
    scale = max(1.0, float(np.abs(ref).max()))
    err = float(np.abs(y - ref).max())
    print(f"{name}: fp16 storage max|delta| {err:.4g}, bound {0.02 * scale:.4g} "
          f"({'within' if err <= 0.02 * scale else 'OVER'}); rebuilt fp32 vs export {fp32_error:.2g}")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    for name in sys.argv[2:]:
        simulate(sys.argv[1], name)
    return 0


if __name__ == "__main__":
    sys.exit(main())

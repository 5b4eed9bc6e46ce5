#!/usr/bin/python3
"""Writes the 4-block static-QDQ convnet of the int8 measurements.

ONNX Runtime's static-quantizer form (calibrated uint8 activations per
tensor, per-channel int8 weights, float biases), built with
tests/built_models/check_qdq_rewrite.py's Builder: four 3x3 Conv+Relu blocks
3 -> 32 -> 32 -> 64 -> 64 channels on a 64x64 input (the second and fourth
with stride 2), GlobalAveragePool, a Gemm head of 10. `kiln bench` it with
and without kiln.canonicalize's fuse-qdq pass (planner/README.md, "Integer
GEMMs on int8 dot products"); the measurements are in
plugins/canonicalize/README.md.

Usage: qdq_convnet.py OUT.onnx
"""
import os
import sys

import onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "built_models"))
from check_qdq_rewrite import U8, Builder, calibrate  # noqa: E402


def qdq_convnet4():
    b = Builder(41)
    x = b.qdq("x", *calibrate(-2.0, 2.0, U8))
    for i, (cin, cout, stride) in enumerate(((3, 32, 1), (32, 32, 2), (32, 64, 1), (64, 64, 2))):
        c = b.node("Conv", [x, b.weight((cout, cin, 3, 3), 0), b.bias(cout)], pads=[1, 1, 1, 1],
                   strides=[stride, stride])
        x = b.qdq(b.node("Relu", [c]), *calibrate(0.0, 3.0 + i, U8))
    f = b.qdq(b.node("Flatten", [b.node("GlobalAveragePool", [x])]), *calibrate(0.0, 3.0, U8))
    y = b.qdq(b.node("Gemm", [f, b.weight((10, 64), 0), b.bias(10)], transB=1), *calibrate(-4.0, 4.0, U8))
    return b.model("qdq_convnet4", [1, 3, 64, 64], [y])


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    onnx.save(qdq_convnet4(), sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())

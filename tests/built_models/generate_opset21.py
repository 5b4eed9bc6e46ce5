#!/usr/bin/python3
"""Writes opset 19–21 test cases in the ONNX node-test layout (see generate_recurrent.py).

One model per case, built with onnx.helper and declaring default-domain
opset 21, using the forms that changed in 19–21 for ops Kiln implements:
AveragePool-19 with dilations, GroupNormalization-21 with per-channel
scale/bias, Pad-19 in wrap mode, Cast-19 with saturate, Shape-15 start/end
and Gelu-20. Expected outputs come from numpy. Usage: generate_opset21.py OUTPUT_DIR
"""
import math
import os
import sys

import numpy as np
from onnx import TensorProto, helper

from generate_recurrent import write_case


def expected(x, scale, bias):
    n, c, hh, ww = x.shape
    a = np.zeros((n, c, hh - 2, ww - 2), np.float64)
    for i in range(hh - 2):
        for j in range(ww - 2):
            a[:, :, i, j] = x[:, :, i:i + 3:2, j:j + 3:2].astype(np.float64).mean(axis=(2, 3))
    groups = 2
    g = a.reshape(n, groups, -1)
    g = (g - g.mean(axis=2, keepdims=True)) / np.sqrt(g.var(axis=2, keepdims=True) + 1e-5)
    g = g.reshape(a.shape) * scale.reshape(1, c, 1, 1) + bias.reshape(1, c, 1, 1)
    p = np.pad(g, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="wrap")
    h = p.astype(np.float32).astype(np.float64)
    erf = np.vectorize(math.erf)
    out = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
    return out.astype(np.float32), np.array(x.shape[1:3], dtype=np.int64)


def opset21_case(root):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 6, 6)).astype(np.float32)
    scale = rng.standard_normal(4).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    nodes = [
        helper.make_node("AveragePool", ["x"], ["a"], kernel_shape=[2, 2], dilations=[2, 2]),
        helper.make_node("GroupNormalization", ["a", "scale", "bias"], ["g"], num_groups=2, epsilon=1e-5),
        helper.make_node("Constant", [], ["pads"], value=helper.make_tensor("pads", TensorProto.INT64, [8],
                                                                           [0, 0, 1, 1, 0, 0, 1, 1])),
        helper.make_node("Pad", ["g", "pads"], ["p"], mode="wrap"),
        helper.make_node("Cast", ["p"], ["h"], to=TensorProto.DOUBLE, saturate=1),
        helper.make_node("Cast", ["h"], ["h32"], to=TensorProto.FLOAT),
        helper.make_node("Gelu", ["h32"], ["y"]),
        helper.make_node("Shape", ["x"], ["s"], start=1, end=3),
    ]
    graph = helper.make_graph(
        nodes, "opset21",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
         helper.make_tensor_value_info("scale", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("bias", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("s", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    write_case(root, "opset21_pool_groupnorm_pad_cast_gelu_shape", model, [([x, scale, bias], list(expected(x, scale, bias)))])


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    os.makedirs(sys.argv[1], exist_ok=True)
    opset21_case(sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())

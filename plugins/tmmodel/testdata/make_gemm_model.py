#!/usr/bin/env python3
"""Writes a small ONNX model with one node of each GEMM family the tmmodel
pass chooses tiles for (Conv lowered as a GEMM, MatMul, Gemm), plus a
depthwise Conv and a GEMV MatMul it must leave alone.

Usage: make_gemm_model.py OUT.onnx"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)


def const(name, shape):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.1, name)


nodes = [
    helper.make_node("Conv", ["X", "Wc"], ["C"], pads=[1, 1, 1, 1], name="conv3x3"),
    helper.make_node("Conv", ["C", "Wd"], ["D"], pads=[1, 1, 1, 1], group=16, name="depthwise"),
    helper.make_node("MatMul", ["A", "Bm"], ["M"], name="matmul"),
    helper.make_node("Gemm", ["M", "Bg"], ["G"], transB=1, name="gemm"),
    helper.make_node("MatMul", ["V", "Bm"], ["Y"], name="gemv"),
]
graph = helper.make_graph(
    nodes, "tmmodel_gemms",
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 3, 24, 24]),
     helper.make_tensor_value_info("A", TensorProto.FLOAT, [96, 128]),
     helper.make_tensor_value_info("V", TensorProto.FLOAT, [1, 128])],
    [helper.make_tensor_value_info("D", TensorProto.FLOAT, [1, 16, 24, 24]),
     helper.make_tensor_value_info("G", TensorProto.FLOAT, [96, 40]),
     helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 80])],
    [const("Wc", [16, 3, 3, 3]), const("Wd", [16, 1, 3, 3]), const("Bm", [128, 80]), const("Bg", [40, 80])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])

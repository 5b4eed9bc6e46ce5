#!/usr/bin/python3
"""Writes silu.onnx: a tiny model with the patterns example.fuse-silu handles
and two it must leave alone.

    y1 = x * Sigmoid(x)            fused (Sigmoid second)
    y2 = Sigmoid(y1) * y1          fused (Sigmoid first)
    s3 = Sigmoid(y2)
    b  = s3 + y2 * s3              not fused: s3 has another user
    d  = x * Sigmoid(b)            not fused: the Sigmoid reads b, not x

Unfused: 4 Sigmoid, 4 Mul, 1 Add. Fused: 2 kiln::Silu, 2 Sigmoid, 2 Mul, 1 Add.
Usage: make_model.py OUT.onnx
"""
import sys

from onnx import TensorProto, checker, helper, save


def main() -> None:
    nodes = [
        helper.make_node("Sigmoid", ["x"], ["s1"], name="sig1"),
        helper.make_node("Mul", ["x", "s1"], ["y1"], name="mul1"),
        helper.make_node("Sigmoid", ["y1"], ["s2"], name="sig2"),
        helper.make_node("Mul", ["s2", "y1"], ["y2"], name="mul2"),
        helper.make_node("Sigmoid", ["y2"], ["s3"], name="sig3"),
        helper.make_node("Mul", ["y2", "s3"], ["a"], name="mul3"),
        helper.make_node("Add", ["s3", "a"], ["b"], name="add"),
        helper.make_node("Sigmoid", ["b"], ["s4"], name="sig4"),
        helper.make_node("Mul", ["x", "s4"], ["d"], name="mul4"),
    ]
    graph = helper.make_graph(
        nodes, "silu_example",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8])],
        [helper.make_tensor_value_info("d", TensorProto.FLOAT, ["n", 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="make_model.py")
    model.ir_version = 8
    checker.check_model(model)
    save(model, sys.argv[1])


if __name__ == "__main__":
    main()

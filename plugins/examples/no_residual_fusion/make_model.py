#!/usr/bin/python3
"""Writes residual.onnx: two elementwise residual blocks for
example.no-residual-fusion.

    block(x) = Sigmoid(Relu(Tanh(x) + bias) + x)     the second Add is residual
    y        = block2(block1(x))

Kiln's fusion pass groups each block's nodes; the plugin takes the residual
Adds (both inputs activations) and what follows them out of their groups,
the bias Adds (a constant input) stay. No Mul precedes an Add, so no
compiler can contract a multiply-add differently fused and unfused.
Usage: make_model.py OUT.onnx
"""
import sys

from onnx import TensorProto, checker, helper, numpy_helper, save
import numpy as np


def block(nodes, x, k):
    nodes += [
        helper.make_node("Tanh", [x], [f"t{k}"], name=f"tanh{k}"),
        helper.make_node("Add", [f"t{k}", f"bias{k}"], [f"b{k}"], name=f"bias_add{k}"),
        helper.make_node("Relu", [f"b{k}"], [f"r{k}"], name=f"relu{k}"),
        helper.make_node("Add", [f"r{k}", x], [f"a{k}"], name=f"residual_add{k}"),
        helper.make_node("Sigmoid", [f"a{k}"], [f"y{k}"], name=f"sigmoid{k}"),
    ]
    return f"y{k}"


def main() -> None:
    nodes = []
    y = block(nodes, block(nodes, "x", 1), 2)
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.uniform(-0.5, 0.5, (8, 1, 1)).astype(np.float32), f"bias{k}") for k in (1, 2)]
    graph = helper.make_graph(
        nodes, "residual_example",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 6, 6])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 8, 6, 6])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="make_model.py")
    model.ir_version = 8
    checker.check_model(model)
    save(model, sys.argv[1])


if __name__ == "__main__":
    main()

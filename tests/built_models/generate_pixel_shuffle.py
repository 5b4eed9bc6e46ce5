#!/usr/bin/python3
"""Writes a super-resolution network with pixel shuffles in the ONNX node-test layout.

`pixel_shuffle_sr_net`, built with onnx.helper (opset 17), expected output
from torch: SpaceToDepth (blocksize 2) into a conv, Relu, a conv,
DepthToSpace (DCR, the ONNX default) into a conv, Relu, a conv,
DepthToSpace (CRD, what torch's nn.PixelShuffle exports) into a Sigmoid.
kiln_onnx_node_test runs it as it is (each shuffle its own copy kernel);
check_pixel_shuffle_cli.py runs it through `kiln run`'s pass pipeline,
where the shuffles are index views of their neighbours (a conv's prologue,
a conv's store view) and cost no dispatch.
Usage: generate_pixel_shuffle.py DIR
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

from generate_recurrent import write_case

NAME = "pixel_shuffle_sr_net"


def space_to_depth(x, b):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h // b, w // b)


def depth_to_space_dcr(x, b):
    n, c, h, w = x.shape
    return x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2).reshape(n, c // (b * b), h * b, w * b)


def sr_case(root):
    rng = np.random.default_rng(15)
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    # (name, out channels, in channels): 3x3 convs with a bias, padding 1.
    shapes = [("w1", 16, 12), ("w2", 32, 16), ("w3", 16, 8), ("w4", 12, 16)]
    weights = {n: (rng.standard_normal((o, i, 3, 3)) * (1.0 / np.sqrt(9 * i))).astype(np.float32) for n, o, i in shapes}
    biases = {n: (rng.standard_normal(o) * 0.1).astype(np.float32) for n, o, _ in shapes}

    def conv(node_in, w, out):
        return helper.make_node("Conv", [node_in, w, w + "_b"], [out], kernel_shape=[3, 3], pads=[1, 1, 1, 1])

    nodes = [
        helper.make_node("SpaceToDepth", ["x"], ["s"], blocksize=2),
        conv("s", "w1", "c1"), helper.make_node("Relu", ["c1"], ["r1"]),
        conv("r1", "w2", "c2"),
        helper.make_node("DepthToSpace", ["c2"], ["d1"], blocksize=2),
        conv("d1", "w3", "c3"), helper.make_node("Relu", ["c3"], ["r3"]),
        conv("r3", "w4", "c4"),
        helper.make_node("DepthToSpace", ["c4"], ["d2"], blocksize=2, mode="CRD"),
        helper.make_node("Sigmoid", ["d2"], ["y"]),
    ]
    inits = [numpy_helper.from_array(a, n) for n, a in weights.items()]
    inits += [numpy_helper.from_array(a, n + "_b") for n, a in biases.items()]
    graph = helper.make_graph(nodes, NAME, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 3, 32, 32))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8

    t = {n: torch.from_numpy(a) for n, a in weights.items()}
    tb = {n: torch.from_numpy(a) for n, a in biases.items()}
    with torch.no_grad():
        h = space_to_depth(torch.from_numpy(x), 2)
        h = F.conv2d(F.relu(F.conv2d(h, t["w1"], tb["w1"], padding=1)), t["w2"], tb["w2"], padding=1)
        h = depth_to_space_dcr(h, 2)
        h = F.conv2d(F.relu(F.conv2d(h, t["w3"], tb["w3"], padding=1)), t["w4"], tb["w4"], padding=1)
        y = torch.sigmoid(F.pixel_shuffle(h, 2)).numpy()  # pixel_shuffle is DepthToSpace in CRD order
    write_case(root, NAME, model, [([x], [y])])


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    os.makedirs(sys.argv[1], exist_ok=True)
    sr_case(sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())

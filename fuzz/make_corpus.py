#!/usr/bin/python3
"""Writes the fuzzers' seed corpora (fuzz/README.md), generated rather than
committed: small ONNX models built with onnx.helper plus the repository's
test model, the graphs of every golden .kir file, .npy files of every dtype
and header version np.save writes (and a few it may not), and fixed-seed
byte strings for the rewriter's edit scripts.

Usage: make_corpus.py OUTPUT_DIR [--onnx-node-data DIR]
Writes OUTPUT_DIR/{onnx,kir,npy,rewriter}/. With --onnx-node-data (the
directory tests/onnx_node/generate_data.py fills), its small models join
the ONNX seeds.
"""
import argparse
import glob
import io
import os
import random
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def onnx_seeds(out, node_data):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def model(name, nodes, inputs, outputs, inits=(), opset=17):
        g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        write(os.path.join(out, name + ".onnx"), m.SerializeToString())

    f32 = TensorProto.FLOAT
    vi = helper.make_tensor_value_info
    w = numpy_helper.from_array(np.arange(8, dtype=np.float32).reshape(2, 1, 2, 2) / 8, "w")
    model("conv_relu", [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[2, 2], pads=[0, 0, 1, 1]),
                        helper.make_node("Relu", ["c"], ["y"])],
          [vi("x", f32, [1, 1, 4, 4])], [vi("y", f32, None)], [w])
    shape = numpy_helper.from_array(np.array([0, -1], dtype=np.int64), "shape")
    model("reshape_softmax", [helper.make_node("Reshape", ["x", "shape"], ["r"]),
                              helper.make_node("Softmax", ["r"], ["y"], axis=-1)],
          [vi("x", f32, ["n", 3, 4])], [vi("y", f32, None)], [shape])
    model("gemm", [helper.make_node("Gemm", ["a", "b"], ["y"], transB=1, alpha=0.5)],
          [vi("a", f32, [2, 3]), vi("b", f32, [4, 3])], [vi("y", f32, None)])
    model("dynamic_shape", [helper.make_node("Shape", ["x"], ["s"]),
                            helper.make_node("ConstantOfShape", ["s"], ["z"]),
                            helper.make_node("Add", ["x", "z"], ["y"])],
          [vi("x", f32, ["b", "t"])], [vi("y", f32, None)])
    idx = numpy_helper.from_array(np.array([2, 0], dtype=np.int64), "idx")
    model("gather_concat", [helper.make_node("Gather", ["x", "idx"], ["g"], axis=1),
                            helper.make_node("Concat", ["g", "x"], ["y"], axis=1)],
          [vi("x", f32, [2, 3])], [vi("y", f32, None)], [idx])
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [vi("t", f32, [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e", f32, [2])])
    model("if", [helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
          [vi("c", TensorProto.BOOL, []), vi("x", f32, [2])], [vi("y", f32, None)])
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Add", ["acc_in", "x"], ["acc_out"])], "body",
                             [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("acc_in", f32, [2])],
                             [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", f32, [2])])
    trip = numpy_helper.from_array(np.array(3, dtype=np.int64), "trip")
    cond = numpy_helper.from_array(np.array(True), "cond")
    model("loop", [helper.make_node("Loop", ["trip", "cond", "x"], ["y"], body=body)],
          [vi("x", f32, [2])], [vi("y", f32, None)], [trip, cond])
    model("pool_resize_opset11", [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                                  helper.make_node("Upsample", ["p", "scales"], ["y"], mode="nearest")],
          [vi("x", f32, [1, 1, 4, 4])], [vi("y", f32, None)],
          [numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), "scales")], opset=9)
    model("slice_transpose", [helper.make_node("Slice", ["x", "st", "en"], ["s"]),
                              helper.make_node("Transpose", ["s"], ["y"], perm=[1, 0])],
          [vi("x", f32, [4, 6])], [vi("y", f32, None)],
          [numpy_helper.from_array(np.array([1, 0], dtype=np.int64), "st"),
           numpy_helper.from_array(np.array([3, 5], dtype=np.int64), "en")])
    write(os.path.join(out, "add_relu.onnx"), open(os.path.join(ROOT, "tests/data/add_relu.onnx"), "rb").read())
    n = 0
    if node_data and os.path.isdir(node_data):
        for path in sorted(glob.glob(os.path.join(node_data, "node", "*", "model.onnx"))):
            if os.path.getsize(path) <= 4096:
                write(os.path.join(out, "node_" + os.path.basename(os.path.dirname(path)) + ".onnx"),
                      open(path, "rb").read())
                n += 1
    return 10 + n


def kir_seeds(out):
    n = 0
    files = sorted(glob.glob(os.path.join(ROOT, "plugins", "*", "testdata", "*.kir")) +
                   glob.glob(os.path.join(ROOT, "engine", "**", "testdata", "*.kir"), recursive=True))
    for path in files:
        text = open(path).read()
        for i, case in enumerate(text.split("// -----")):
            body = "\n".join(l for l in case.splitlines() if not l.lstrip().startswith("//")).strip()
            if body.startswith("graph"):
                name = os.path.basename(path)[:-4]
                write(os.path.join(out, "%s_%d.kir" % (name, i)), (body + "\n").encode())
                n += 1
    return n


def npy_seeds(out):
    import numpy as np
    arrays = {
        "f4_2x3": np.arange(6, dtype="<f4").reshape(2, 3), "f2": np.array([1.5, -2], dtype="<f2"),
        "f8_scalar": np.array(3.25), "i8": np.array([1, -2, 3], dtype="<i8"), "i4_empty": np.zeros((0, 4), "<i4"),
        "i2": np.array([7], "<i2"), "u1": np.array([[1, 2]], np.uint8), "i1": np.array([-1], np.int8),
        "b1": np.array([True, False]), "u2": np.array([9], "<u2"), "u4": np.array([9], "<u4"),
        "u8_3d": np.ones((2, 1, 2), "<u8"),
        # Refused: Fortran order, big-endian, complex.
        "fortran": np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)), "big_endian": np.array([1.0], ">f4"),
        "complex": np.array([1 + 2j], np.complex64),
    }
    for name, a in arrays.items():
        for version in ((1, 0), (2, 0)):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, a, version=version)
            write(os.path.join(out, "%s_v%d.npy" % (name, version[0])), buf.getvalue())
    return 2 * len(arrays)


def rewriter_seeds(out):
    rng = random.Random(21)
    for i in range(32):
        write(os.path.join(out, "script_%02d" % i), bytes(rng.randrange(256) for _ in range(rng.randrange(16, 512))))
    return 32


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("output")
    p.add_argument("--onnx-node-data", default=None)
    args = p.parse_args()
    counts = {}
    for kind, fn in (("onnx", lambda d: onnx_seeds(d, args.onnx_node_data)), ("kir", kir_seeds), ("npy", npy_seeds),
                     ("rewriter", rewriter_seeds)):
        d = os.path.join(args.output, kind)
        os.makedirs(d, exist_ok=True)
        fn(d)
        counts[kind] = len(os.listdir(d))
    print("seeds: " + ", ".join("%s %d" % kv for kv in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

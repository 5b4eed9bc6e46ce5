#!/usr/bin/python3
"""Writes GEMM models for steady-state kernel timing with `kiln bench`.

kiln_kernel_bench uploads every input and downloads every output through the
host API on each iteration; for large operands the GPU idles through that
host work and lowers its clocks, so its GEMM times are upper bounds
(bench/kernels/README.md). These models keep the operands on the device:

    y = ReduceSum(MatMul(A + x, B))      x: the only input, shape [1]

A and B are ConstantOfShape (a few bytes in the file, materialized when the
model compiles), x is one float, y one float: a run uploads and downloads 4
bytes, so `kiln bench` runs them back to back at full clocks. The per-kernel
GPU times in its JSON (`kernels`) then give the MatMul kernel alone: the
Add of x (an elementwise pass over A, or folded into the GEMM's loads) and
the reduction are separate entries.

    steady_models.py OUT_DIR [--shapes 4096x4096x4096,197x2304x768,...]

writes OUT_DIR/gemm_m<M>_n<N>_k<K>/model.onnx for each MxNxK (the GEMM
cases of kernel_cases.cc by default). Needs the onnx Python package.
"""
import argparse
import os
import sys

DEFAULT_SHAPES = ("4096x4096x4096,197x2304x768,197x768x768,197x3072x768,197x768x3072,"
                  "128x2304x768,128x768x768,128x3072x768,128x768x3072")


def gemm_model(m, n, k):
    import onnx
    from onnx import TensorProto, helper

    def const_of_shape(name, dims, value):
        shape = helper.make_node("Constant", [], [name + "_shape"],
                                 value=helper.make_tensor(name + "_shape_v", TensorProto.INT64, [len(dims)], dims))
        fill = helper.make_node("ConstantOfShape", [name + "_shape"], [name],
                                value=helper.make_tensor(name + "_v", TensorProto.FLOAT, [1], [value]))
        return [shape, fill]

    nodes = const_of_shape("a", [m, k], 0.01) + const_of_shape("b", [k, n], 0.02)
    nodes.append(helper.make_node("Add", ["a", "x"], ["a_x"]))
    nodes.append(helper.make_node("MatMul", ["a_x", "b"], ["c"]))
    nodes.append(helper.make_node("ReduceSum", ["c"], ["y"], keepdims=0))
    graph = helper.make_graph(nodes, "gemm_m%d_n%d_k%d" % (m, n, k),
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return model


def parse_shapes(text):
    shapes = []
    for item in text.split(","):
        parts = item.strip().split("x")
        if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise ValueError("shape '%s' is not MxNxK with positive sizes" % item)
        shapes.append(tuple(int(p) for p in parts))
    return shapes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help="comma-separated MxNxK (default: %(default)s)")
    args = ap.parse_args()
    try:
        shapes = parse_shapes(args.shapes)
        import onnx
    except (ValueError, ImportError) as e:
        print("steady_models.py: %s" % e, file=sys.stderr)
        return 2
    for m, n, k in shapes:
        d = os.path.join(args.out, "gemm_m%d_n%d_k%d" % (m, n, k))
        os.makedirs(d, exist_ok=True)
        onnx.save(gemm_model(m, n, k), os.path.join(d, "model.onnx"))
        print(os.path.join(d, "model.onnx"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

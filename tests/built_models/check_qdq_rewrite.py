#!/usr/bin/python3
"""Checks kiln.canonicalize's fuse-qdq pass on static QDQ models with real scales.

Builds two tiny models the way ONNX Runtime's static quantizer writes them
(scales from calibration ranges, so not powers of two; per-tensor uint8
activations, per-channel int8 weights, float biases):
  * qdq_convnet: Conv+Relu, strided Conv with a non-zero output zero point
    and an int32 bias (DequantizeLinear(int32, sx*sw), ORT's QDQ form),
    1x1 Conv+Clip(0, 6), GlobalAveragePool, Gemm (transB) with a bias;
  * qdq_matmul: a 3-D activation times per-column int8 weights, one MatMul
    with a bias Add, one without.
For each, with KILN the CLI and BACKEND reference or vulkan:
  * the pass fires: `kiln graph --text -` has no float Conv/MatMul/Gemm left
    and the expected QLinear nodes, also with `--int8-dot on` (the default
    pipeline with fuse-qdq); without it (the default pipeline for no device,
    --int8-dot off) nothing is rewritten;
  * the outputs of the rewritten graph and of the float graph
    (--int8-dot off) differ by at most one quantization step
    (QDQ graphs are defined by their float semantics; the integer kernels
    round once where the float graph rounds its fp32 sums, and the float
    bias becomes int32 as ONNX Runtime rounds it).
Given NODE_DIR (generate_quantized.py's output), also runs its exact QDQ
cases (quant_qdq_convnet, quant_qdq_matmul_gemm: power-of-two scales)
through the CLI's default pipeline, where the rewrite must fire and match
the expected outputs bit for bit (kiln_onnx_node_test runs them without the
pipeline).
On Vulkan every rewritten run is made twice, with the integer GEMMs on
packed int8 dot products (--int8-dot on, where the device has them) and on
the scalar int32 kernel (--int8-dot off): the two must agree bit for bit.
Usage: check_qdq_rewrite.py KILN BACKEND WORKDIR [NODE_DIR]   (exit 77: no Vulkan device)
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from vulkan_gate import vulkan_gate

U8, I8 = (0, 255), (-128, 127)


def calibrate(lo, hi, qrange):
    """Asymmetric uint8 parameters for a float range, as a min/max calibrator picks them."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = np.float32((hi - lo) / (qrange[1] - qrange[0]))
    zp = int(np.clip(np.rint(qrange[0] - lo / scale), *qrange))
    return scale, zp


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, name, a):
        self.inits.append(numpy_helper.from_array(np.asarray(a), name))
        return name

    def node(self, op, ins, **attrs):
        self.count += 1
        out = f"{op.lower()}{self.count}"
        self.nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def qdq(self, x, scale, zp):
        """QuantizeLinear then DequantizeLinear of an activation (uint8, per tensor)."""
        s = self.const(f"s{self.count}", np.float32(scale))
        z = self.const(f"z{self.count}", np.array(zp, np.uint8))
        return self.node("DequantizeLinear", [self.node("QuantizeLinear", [x, s, z]), s, z])

    def weight(self, shape, axis):
        """A per-channel symmetric int8 weight along `axis`, dequantized."""
        w = self.rng.standard_normal(shape).astype(np.float32) * 0.3
        red = tuple(i for i in range(len(shape)) if i != axis)
        scale = (np.abs(w).max(axis=red) / 127).astype(np.float32)
        q = np.clip(np.rint(w / np.expand_dims(scale, red)), -127, 127).astype(np.int8)
        n = self.count
        self.last_weight_scale = scale
        ins = [self.const(f"w{n}", q), self.const(f"ws{n}", scale), self.const(f"wz{n}", np.zeros(scale.size, np.int8))]
        return self.node("DequantizeLinear", ins, axis=axis)

    def bias(self, n):
        return self.const(f"b{self.count}", (self.rng.standard_normal(n) * 0.2).astype(np.float32))

    def int32_bias(self, n, x_scale):
        """ONNX Runtime's QDQ bias: DequantizeLinear(int32, x_scale * w_scale) of the last weight."""
        scale = (np.float32(x_scale) * self.last_weight_scale).astype(np.float32)
        q = np.rint((self.rng.standard_normal(n) * 0.2).astype(np.float32) / scale).astype(np.int32)
        k = self.count
        return self.node("DequantizeLinear", [self.const(f"bq{k}", q), self.const(f"bs{k}", scale)], axis=0)

    def model(self, name, x_shape, outputs):
        g = helper.make_graph(self.nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        return m


def qdq_convnet():
    b = Builder(31)
    x = b.qdq("x", *calibrate(-2.0, 2.0, U8))
    c = b.node("Conv", [x, b.weight((8, 3, 3, 3), 0), b.bias(8)], pads=[1, 1, 1, 1])
    s1 = calibrate(0.0, 3.1, U8)
    c1 = b.qdq(b.node("Relu", [c]), *s1)
    w2 = b.weight((8, 8, 3, 3), 0)
    c2 = b.qdq(b.node("Conv", [c1, w2, b.int32_bias(8, s1[0])], pads=[1, 1, 1, 1], strides=[2, 2]),
               *calibrate(-4.3, 3.7, U8))
    c = b.node("Conv", [c2, b.weight((6, 8, 1, 1), 0), b.bias(6)])
    c3 = b.qdq(b.node("Clip", [c, b.const("lo", np.float32(0)), b.const("hi", np.float32(6))]), 6.0 / 255, 0)
    f = b.qdq(b.node("Flatten", [b.node("GlobalAveragePool", [c3])]), *calibrate(0.0, 3.0, U8))
    y = b.qdq(b.node("Gemm", [f, b.weight((5, 6), 0), b.bias(5)], transB=1), *calibrate(-2.5, 2.5, U8))
    outs = [c1, c2, c3, y]  # every layer's quantized result, so each is compared
    return b.model("qdq_convnet", [1, 3, 16, 16], outs), {"QLinearConv": 4}, outs


def qdq_matmul():
    b = Builder(32)
    x = b.qdq("x", *calibrate(-2.0, 2.0, U8))
    m1 = b.node("MatMul", [x, b.weight((16, 12), 1)])
    y1 = b.qdq(m1, *calibrate(-5.0, 5.0, U8))
    m2 = b.node("Add", [b.node("MatMul", [x, b.weight((16, 12), 1)]), b.bias(12)])
    y2 = b.qdq(m2, *calibrate(-5.5, 5.0, U8))
    return b.model("qdq_matmul", [2, 5, 16], [y1, y2]), {"QLinearMatMul": 1, "QLinearConv": 1}, [y1, y2]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return p.stdout


def with_fuse_qdq(kiln, path):
    """--passes for the default pipeline with fuse-qdq placed before
    fold-constants, spelled out (without a device the default pipeline leaves
    fuse-qdq out; --int8-dot on puts it in the same place)."""
    stats = path + ".stats.json"
    run([kiln, "run", path, "--backend", "reference", "--stats", stats])
    with open(stats) as f:
        names = [p["name"] for p in json.load(f)["passes"]]
    if "fuse-qdq" in names:
        raise AssertionError(f"fuse-qdq is in the default pipeline: {names}")
    names.insert(names.index("fold-constants"), "fuse-qdq")
    return ["--passes", ",".join(names)]


def op_counts(kiln, path, extra):
    text = run([kiln, "graph", path, "--text", "-"] + extra)
    counts = {}
    for op in re.findall(r"= ([A-Za-z]+)\(", text):
        counts[op] = counts.get(op, 0) + 1
    return counts


def output_step(model, name):
    """The scale of the QuantizeLinear whose DequantizeLinear produces `name`."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for n in model.graph.node:
        if n.output[0] == name:
            return float(inits[n.input[1]])
    raise KeyError(name)


def runs(backend, opt_in):
    """(label, extra flags) of each run: the rewritten graph (on Vulkan with
    and without the int8 dot products) and the float graph."""
    if backend != "vulkan":
        return [("int", opt_in), ("float", ["--int8-dot", "off"])]
    return [("int", opt_in + ["--int8-dot", "on"]), ("int_scalar", opt_in + ["--int8-dot", "off"]),
            ("float", ["--int8-dot", "off"])]


def same_int_bits(name, outputs, results):
    """The dot-product and the scalar integer GEMM give the same bits."""
    for o, a, b in zip(outputs, results["int"], results.get("int_scalar", results["int"])):
        if a.dtype != b.dtype or not np.array_equal(a, b):
            raise AssertionError(f"{name}: output {o} differs between --int8-dot on and off")


def check(kiln, backend, work, name, model, want_ops, outputs):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    opt_in = with_fuse_qdq(kiln, path)
    rewritten, floats = op_counts(kiln, path, opt_in), op_counts(kiln, path, [])
    # --int8-dot on: the default pipeline with fuse-qdq.
    chosen = op_counts(kiln, path, ["--int8-dot", "on"])
    if chosen != rewritten:
        raise AssertionError(f"{name}: --int8-dot on gives {chosen}, the spelled-out pipeline {rewritten}")
    for op, n in want_ops.items():
        if rewritten.get(op, 0) != n:
            raise AssertionError(f"{name}: expected {n} {op} after fuse-qdq, got {rewritten}")
    for op in ("Conv", "MatMul", "Gemm"):
        if rewritten.get(op, 0):
            raise AssertionError(f"{name}: {op} left after fuse-qdq: {rewritten}")
    if any(op.startswith("QLinear") for op in floats):
        raise AssertionError(f"{name}: rewritten with fuse-qdq disabled: {floats}")
    print(f"{name}: nodes {sum(floats.values())} -> {sum(rewritten.values())}; {floats} -> {rewritten}")

    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(5).uniform(-2.2, 2.2, shape).astype(np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    results = {}
    for label, extra in runs(backend, opt_in):
        files = [f"{o}={os.path.join(d, f'{label}_{o}.npy')}" for o in outputs]
        cmd = [kiln, "run", path, "--backend", backend, "--input", f"x={os.path.join(d, 'x.npy')}"] + extra
        for f in files:
            cmd += ["--output", f]
        run(cmd)
        results[label] = [np.load(f.split("=", 1)[1]) for f in files]
    same_int_bits(name, outputs, results)
    for o, a, f in zip(outputs, results["int"], results["float"]):
        step = output_step(model, o)
        diff = np.abs(a.astype(np.float64) - f.astype(np.float64)).max() / step
        print(f"{name} [{backend}] {o}: max |int - float| = {diff:.3g} steps over {a.size} values, "
              f"{int(np.count_nonzero(a != f))} differ")
        if diff > 1.0 + 1e-3:
            raise AssertionError(f"{name}: output {o} differs by {diff} quantization steps (> 1)")


def check_exact_case(kiln, backend, work, case_dir):
    name = os.path.basename(case_dir)
    path = os.path.join(case_dir, "model.onnx")
    model = onnx.load(path)
    opt_in = with_fuse_qdq(kiln, path)
    if not any(op.startswith("QLinear") for op in op_counts(kiln, path, opt_in)):
        raise AssertionError(f"{name}: fuse-qdq did not fire")
    data = os.path.join(case_dir, "test_data_set_0")
    x = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "input_0.pb")))
    x_file = os.path.join(work, f"{name}_x.npy")
    np.save(x_file, x)
    outs = [o.name for o in model.graph.output]
    for label, extra in runs(backend, opt_in):
        if label == "float":
            continue
        cmd = [kiln, "run", path, "--backend", backend, "--input", f"{model.graph.input[0].name}={x_file}"] + extra
        for o in outs:
            cmd += ["--output", f"{o}={os.path.join(work, f'{name}_{label}_{o}.npy')}"]
        run(cmd)
        for k, o in enumerate(outs):
            want = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f"output_{k}.pb")))
            got = np.load(os.path.join(work, f"{name}_{label}_{o}.npy"))
            if got.dtype != want.dtype or not np.array_equal(got, want):
                raise AssertionError(f"{name} [{backend}, {' '.join(extra[-2:])}]: output {o} differs from the "
                                     f"ONNX semantics: {got} vs {want}")
    print(f"{name} [{backend}]: rewritten, outputs exact" + (" with --int8-dot on and off" if backend == "vulkan" else ""))


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[2] not in ("reference", "vulkan"):
        print(__doc__)
        return 2
    kiln, backend, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    if backend == "vulkan":
        gate = vulkan_gate(kiln)
        if gate is not None:
            return gate
    for name, (model, ops, outs) in (("qdq_convnet", qdq_convnet()), ("qdq_matmul", qdq_matmul())):
        check(kiln, backend, work, name, model, ops, outs)
    if len(sys.argv) == 5:
        for case in ("quant_qdq_convnet", "quant_qdq_matmul_gemm"):
            check_exact_case(kiln, backend, work, os.path.join(sys.argv[4], case))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Writes test cases of ONNX Runtime's com.microsoft quantized ops in the ONNX node-test layout.

Models built with onnx.helper (onnxruntime is not a dependency), expected
outputs from the numpy implementation below of the semantics ORT documents
for each op (dequantize, float32 op, quantize; rint half to even, then
saturation; the GEMMs as QLinearMatMul requantizes):
  * one case per op the Vulkan backend lowers: QLinearAdd (uint8,
    broadcast), QLinearMul (int8, no input zero points), QLinearLeakyRelu,
    QLinearConcat (three inputs, each with its own parameters),
    QLinearGlobalAveragePool and QLinearAveragePool (strides, pads,
    ceil_mode; power-of-two input scales: the sums are exact in any order),
    QGemm (transB, per-column b_scale and b_zero_point, int32 C; a uint8 and
    a float output), MatMulIntegerToFloat (batched, bias),
    DynamicQuantizeMatMul, com.microsoft QuantizeLinear/DequantizeLinear
    (per axis);
  * quant_ort_qoperator_convnet: a convnet as ORT's quantizer writes it in
    QOperator form — com.microsoft QuantizeLinear, QLinearConv,
    QLinearLeakyRelu, QLinearConv, a QLinearAdd residual, QLinearMul,
    QLinearConcat, QLinearGlobalAveragePool, Flatten, QGemm (transB) and
    com.microsoft DequantizeLinear;
  * quant_ort_qdq_convnet: the same network in QDQ form with com.microsoft
    QuantizeLinear/DequantizeLinear around float Conv, LeakyRelu, Add, Mul,
    Concat, GlobalAveragePool and Gemm;
  * quant_ort_transformer_block: ORT's optimized form of a dynamically
    quantized attention block — DynamicQuantizeMatMul projections,
    QuantizeLinear to int8 (exact), a MatMulIntegerToFloat QK^T, float
    Softmax, PV, residual and LayerNormalization (float tolerance).
  The two convnets use power-of-two scales, so every float value is exact
  in any summation order: both forms must give the same, exact, outputs
  (checked here before writing). QLinearSigmoid and QLinearSoftmax, whose
  exp is not exact on a GPU, are checked by engine/ops/qlinear_contrib_test.cc
  and planner/lower_qlinear_contrib_test.cc instead.
Deterministic (fixed seeds). Usage: generate_quantized_contrib.py OUTPUT_DIR
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, mapping

from generate_quantized import RANGE, dequantize, dynamic_quantize, init, quantize, requantize
from generate_recurrent import write_case

MS = "com.microsoft"
F32 = np.float32


def ms_node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, domain=MS, **attrs)


def ms_model(nodes, name, inputs, outputs, inits):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)])
    m.ir_version = 7
    return m


def vi(name, a):
    return helper.make_tensor_value_info(name, mapping.NP_TYPE_TO_TENSOR_TYPE[np.asarray(a).dtype], np.shape(a))


def out(name, elem):
    return helper.make_tensor_value_info(name, elem, None)


# --------------------------------------------------------------- numpy ORT

def dq(q, scale, zp):
    """(float32(q) - float32(zp)) * scale, per tensor."""
    return dequantize(q, F32(scale), np.asarray(zp))


def q(x, scale, zp):
    """saturate(rint(float32(x / scale)) + zp) in zp's type, per tensor."""
    return quantize(np.asarray(x, F32), F32(scale), np.asarray(zp))


def qgemm(a, sa, za, b, sb, zb, c, alpha=1.0, trans_b=False, sy=None, zy=None):
    """QGemm: int32 (A - za)(B - zb) + C, requantized, or scaled to float32."""
    bt = b.T if trans_b else b
    acc = ((a.astype(np.int64) - int(za)) @ (bt.astype(np.int64) - np.asarray(zb, np.int64))).astype(np.int32)
    acc = (acc + c).astype(np.int32)
    scale = (F32(F32(alpha) * F32(sa)) * np.asarray(sb, F32)).astype(F32)
    if sy is None:
        return (acc.astype(F32) * scale).astype(F32)
    mult = (scale / F32(sy)).astype(F32)
    d = acc.astype(np.float64) * mult.astype(np.float64) + np.float64(zy)
    lo, hi = RANGE[np.asarray(zy).dtype.type]
    return np.clip(np.rint(d), lo, hi).astype(np.asarray(zy).dtype)


def conv_int(x, zx, w, b, pad):
    """int64 direct 2-D convolution of (x - zx) and w, plus the int32 bias."""
    xs = x.astype(np.int64) - int(zx)
    n, c, h, wd = xs.shape
    m, _, kh, kw = w.shape
    xp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad), np.int64)
    xp[:, :, pad:pad + h, pad:pad + wd] = xs
    y = np.zeros((n, m, h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1), np.int64)
    for i in range(y.shape[2]):
        for j in range(y.shape[3]):
            y[:, :, i, j] = np.einsum("nckl,mckl->nm", xp[:, :, i:i + kh, j:j + kw], w.astype(np.int64))
    return y + b.reshape(1, -1, 1, 1)


def average_pool(x, kernel, strides, pads):
    """2-D AveragePool with ceil_mode, padding not counted (count_include_pad 0), in float64."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (pt, pl, pb, pr) = kernel, strides, pads
    oh = -(-(h + pt + pb - kh) // sh) + 1
    ow = -(-(w + pl + pr - kw) // sw) + 1
    oh -= 1 if (oh - 1) * sh >= h + pt else 0  # no window may start in the end padding
    ow -= 1 if (ow - 1) * sw >= w + pl else 0
    y = np.zeros((n, c, oh, ow), F32)
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * sh - pt, j * sw - pl
            win = x[:, :, max(r0, 0):min(r0 + kh, h), max(c0, 0):min(c0 + kw, w)].astype(np.float64)
            y[:, :, i, j] = (win.sum(axis=(2, 3)) / (win.shape[2] * win.shape[3])).astype(F32)
    return y


def rand_u8(rng, shape):
    return rng.integers(0, 256, shape).astype(np.uint8)


# --------------------------------------------------------------- one op each

def op_cases(root):
    rng = np.random.default_rng(40)

    a, b = rand_u8(rng, (2, 3, 4, 5)), rand_u8(rng, (3, 1, 5))
    p = [F32(0.0375), np.uint8(121), F32(0.021), np.uint8(140), F32(0.06), np.uint8(118)]
    node = ms_node("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["y"])
    names = ["sa", "za", "sb", "zb", "sc", "zc"]
    m = ms_model([node], "qlinear_add", [vi("a", a), vi("b", b)], [out("y", TensorProto.UINT8)],
                 [init(n, v) for n, v in zip(names, p)])
    y = q(dq(a, p[0], p[1]) + dq(b, p[2], p[3]), p[4], p[5])
    write_case(root, "contrib_qlinear_add", m, [([a, b], [y])])

    a8 = rng.integers(-128, 128, (4, 33)).astype(np.int8)
    b8 = rng.integers(-128, 128, (1, 33)).astype(np.int8)
    node = ms_node("QLinearMul", ["a", "sa", "", "b", "sb", "", "sc", "zc"], ["y"])
    m = ms_model([node], "qlinear_mul", [vi("a", a8), vi("b", b8)], [out("y", TensorProto.INT8)],
                 [init("sa", F32(0.043)), init("sb", F32(0.017)), init("sc", F32(0.29)), init("zc", np.int8(-3))])
    y = q(dq(a8, 0.043, np.int8(0)) * dq(b8, 0.017, np.int8(0)), 0.29, np.int8(-3))
    write_case(root, "contrib_qlinear_mul", m, [([a8, b8], [y])])

    x = rng.integers(-128, 128, (2, 4, 6, 6)).astype(np.int8)
    node = ms_node("QLinearLeakyRelu", ["x", "sx", "zx", "sy", "zy"], ["y"], alpha=0.1)
    m = ms_model([node], "qlinear_leaky_relu", [vi("x", x)], [out("y", TensorProto.INT8)],
                 [init("sx", F32(0.04)), init("zx", np.int8(3)), init("sy", F32(0.03)), init("zy", np.int8(-10))])
    f = dq(x, 0.04, np.int8(3))
    y = q(np.where(f < 0, F32(0.1) * f, f).astype(F32), 0.03, np.int8(-10))
    write_case(root, "contrib_qlinear_leaky_relu", m, [([x], [y])])

    xs = [rand_u8(rng, (2, 3, 12)), rand_u8(rng, (2, 5, 12)), rand_u8(rng, (2, 1, 12))]
    params = [(F32(0.03), np.uint8(100)), (F32(0.08), np.uint8(131)), (F32(0.05), np.uint8(120))]
    ins, inits = ["sy", "zy"], [init("sy", F32(0.05)), init("zy", np.uint8(120))]
    for k, (s, z) in enumerate(params):
        ins += [f"x{k}", f"s{k}", f"z{k}"]
        inits += [init(f"s{k}", s), init(f"z{k}", z)]
    m = ms_model([ms_node("QLinearConcat", ins, ["y"], axis=-2)], "qlinear_concat",
                 [vi(f"x{k}", v) for k, v in enumerate(xs)], [out("y", TensorProto.UINT8)], inits)
    y = q(np.concatenate([dq(v, s, z) for v, (s, z) in zip(xs, params)], axis=1), 0.05, np.uint8(120))
    write_case(root, "contrib_qlinear_concat", m, [(xs, [y])])

    x = rand_u8(rng, (2, 5, 4, 4))
    node = ms_node("QLinearGlobalAveragePool", ["x", "sx", "zx", "sy", "zy"], ["y"], channels_last=0)
    m = ms_model([node], "qlinear_global_average_pool", [vi("x", x)], [out("y", TensorProto.UINT8)],
                 [init("sx", F32(0.125)), init("zx", np.uint8(127)), init("sy", F32(0.011)), init("zy", np.uint8(128))])
    y = q(dq(x, 0.125, np.uint8(127)).mean(axis=(2, 3), keepdims=True, dtype=np.float64).astype(F32), 0.011,
          np.uint8(128))
    write_case(root, "contrib_qlinear_global_average_pool", m, [([x], [y])])

    a = rand_u8(rng, (7, 40))
    w = rng.integers(-127, 128, (9, 40)).astype(np.int8)
    sb = rng.uniform(0.002, 0.01, 9).astype(F32)
    zb = rng.integers(-4, 5, 9).astype(np.int8)
    c = rng.integers(-2000, 2000, 9).astype(np.int32)
    gemm_ins = ["a", "sa", "za", "w", "sb", "zb", "c"]
    nodes = [ms_node("QGemm", gemm_ins + ["sy", "zy"], ["yq"], transB=1, alpha=0.75),
             ms_node("QGemm", gemm_ins, ["yf"], transB=1)]
    inits = [init("sa", F32(0.02)), init("za", np.uint8(131)), init("w", w), init("sb", sb), init("zb", zb),
             init("c", c), init("sy", F32(0.05)), init("zy", np.uint8(128))]
    m = ms_model(nodes, "qgemm", [vi("a", a)], [out("yq", TensorProto.UINT8), out("yf", TensorProto.FLOAT)], inits)
    yq = qgemm(a, 0.02, 131, w, sb, zb, c, alpha=0.75, trans_b=True, sy=0.05, zy=np.uint8(128))
    yf = qgemm(a, 0.02, 131, w, sb, zb, c, trans_b=True)
    write_case(root, "contrib_qgemm", m, [([a], [yq, yf])])

    a = rand_u8(rng, (2, 5, 24))
    b = rng.integers(-127, 128, (24, 6)).astype(np.int8)
    sb = rng.uniform(0.002, 0.008, 6).astype(F32)
    zb = rng.integers(-2, 3, 6).astype(np.int8)
    bias = rng.standard_normal(6).astype(F32)
    node = ms_node("MatMulIntegerToFloat", ["a", "b", "sa", "sb", "za", "zb", "bias"], ["y"])
    m = ms_model([node], "matmul_integer_to_float", [vi("a", a)], [out("y", TensorProto.FLOAT)],
                 [init("b", b), init("sa", F32(0.013)), init("sb", sb), init("za", np.uint8(127)), init("zb", zb),
                  init("bias", bias)])
    acc = ((a.astype(np.int64) - 127) @ (b.astype(np.int64) - zb.astype(np.int64))).astype(np.int32)
    y = (acc.astype(F32) * (F32(0.013) * sb) + bias).astype(F32)
    write_case(root, "contrib_matmul_integer_to_float", m, [([a], [y])])

    x = rand_u8(rng, (2, 3, 9, 8))
    node = ms_node("QLinearAveragePool", ["x", "sx", "zx", "sy", "zy"], ["y"], kernel_shape=[3, 2], strides=[2, 2],
                   pads=[1, 0, 1, 1], ceil_mode=1, count_include_pad=0)
    m = ms_model([node], "qlinear_average_pool", [vi("x", x)], [out("y", TensorProto.UINT8)],
                 [init("sx", F32(0.125)), init("zx", np.uint8(127)), init("sy", F32(0.017)), init("zy", np.uint8(120))])
    y = q(average_pool(dq(x, 0.125, np.uint8(127)), (3, 2), (2, 2), (1, 0, 1, 1)), 0.017, np.uint8(120))
    write_case(root, "contrib_qlinear_average_pool", m, [([x], [y])])

    a = rng.uniform(-1.5, 4.0, (3, 7, 24)).astype(F32)
    b = rng.integers(-127, 128, (24, 6)).astype(np.int8)
    sb = rng.uniform(0.002, 0.008, 6).astype(F32)
    zb = rng.integers(-2, 3, 6).astype(np.int8)
    bias = rng.standard_normal(6).astype(F32)
    node = ms_node("DynamicQuantizeMatMul", ["a", "b", "sb", "zb", "bias"], ["y"])
    m = ms_model([node], "dynamic_quantize_matmul", [vi("a", a)], [out("y", TensorProto.FLOAT)],
                 [init("b", b), init("sb", sb), init("zb", zb), init("bias", bias)])
    aq, sa, za = dynamic_quantize(a)
    acc = ((aq.astype(np.int64) - int(za)) @ (b.astype(np.int64) - zb.astype(np.int64))).astype(np.int32)
    y = (acc.astype(F32) * (sa * sb) + bias).astype(F32)
    write_case(root, "contrib_dynamic_quantize_matmul", m, [([a], [y])])

    x = rng.uniform(-3, 3, (3, 4, 5)).astype(F32)
    s = np.array([0.013, 0.027, 0.0091, 0.02], F32)
    z = np.array([0, -5, 7, 1], np.int8)
    nodes = [ms_node("QuantizeLinear", ["x", "s", "z"], ["xq"], axis=1),
             ms_node("DequantizeLinear", ["xq", "s", "z"], ["y"], axis=1)]
    m = ms_model(nodes, "ms_quantize_dequantize", [vi("x", x)],
                 [out("y", TensorProto.FLOAT), out("xq", TensorProto.INT8)], [init("s", s), init("z", z)])
    xq = quantize(x, s, z, axis=1)
    write_case(root, "contrib_ms_quantize_dequantize", m, [([x], [dequantize(xq, s, z, axis=1), xq])])


# --------------------------------------------------------------- the convnet, twice

class Net:
    """One small network's weights and quantization parameters (powers of two)."""

    def __init__(self):
        rng = np.random.default_rng(41)
        self.x = (rng.integers(-64, 64, (1, 3, 8, 8)) / 16.0).astype(F32)  # on the 2^-4 grid
        self.w1 = rng.integers(-127, 128, (8, 3, 3, 3)).astype(np.int8)
        self.sw1 = (2.0 ** -rng.integers(6, 9, 8)).astype(F32)
        self.b1 = rng.integers(-512, 512, 8).astype(np.int32)
        self.w2 = rng.integers(-127, 128, (8, 8, 3, 3)).astype(np.int8)
        self.sw2 = (2.0 ** -rng.integers(9, 12, 8)).astype(F32)
        self.b2 = rng.integers(-512, 512, 8).astype(np.int32)
        self.w3 = rng.integers(-127, 128, (5, 16)).astype(np.int8)
        self.sw3 = (2.0 ** -rng.integers(9, 12, 5)).astype(F32)
        self.b3 = rng.integers(-256, 256, 5).astype(np.int32)
        self.u = np.uint8(128)
        # Activation scales: input, conv outputs, the product, the concat, the pool, the head.
        self.sx, self.sa, self.sm = F32(2 ** -4), F32(2 ** -3), F32(2 ** -1)
        self.sc, self.sp, self.sy = F32(2 ** -1), F32(2 ** -2), F32(2 ** -2)

    def params(self):
        zero8 = np.zeros(8, np.int8)
        return [init("sx", self.sx), init("sa", self.sa), init("sm", self.sm), init("sc", self.sc), init("sp", self.sp),
                init("sy", self.sy), init("z", self.u), init("w1", self.w1), init("sw1", self.sw1),
                init("zw1", zero8), init("b1", self.b1), init("w2", self.w2), init("sw2", self.sw2),
                init("zw2", zero8), init("b2", self.b2), init("w3", self.w3), init("sw3", self.sw3),
                init("zw3", np.zeros(5, np.int8)), init("b3", self.b3)]

    def expected(self):
        """The QOperator semantics in numpy (ORT's formulas)."""
        u = self.u
        xq = q(self.x, self.sx, u)
        c1 = requantize(conv_int(xq, u, self.w1, self.b1, 1), self.sx, self.sw1.reshape(1, -1, 1, 1), self.sa, u)
        f1 = dq(c1, self.sa, u)
        l1 = q(np.where(f1 < 0, F32(0.125) * f1, f1), self.sa, u)
        c2 = requantize(conv_int(l1, u, self.w2, self.b2, 1), self.sa, self.sw2.reshape(1, -1, 1, 1), self.sa, u)
        a = q(dq(c2, self.sa, u) + dq(l1, self.sa, u), self.sa, u)
        m = q(dq(a, self.sa, u) * dq(l1, self.sa, u), self.sm, u)
        cat = q(np.concatenate([dq(a, self.sa, u), dq(m, self.sm, u)], axis=1), self.sc, u)
        pool = q(dq(cat, self.sc, u).mean(axis=(2, 3), keepdims=True, dtype=np.float64).astype(F32), self.sp, u)
        g = qgemm(pool.reshape(1, 16), self.sp, u, self.w3, self.sw3, 0, self.b3, trans_b=True, sy=self.sy, zy=u)
        return dq(g, self.sy, u), cat

    def expected_qdq(self):
        """The QDQ graph's float semantics in numpy (float64 sums; exact here)."""
        u = self.u

        def qdq(v, s):
            return dq(q(np.asarray(v, F32), s, u), s, u)

        def conv_f(x, w, sw, b, s_in):
            wf = (w.astype(F32) * sw.reshape(-1, 1, 1, 1)).astype(np.float64)
            bf = (b.astype(F32) * (F32(s_in) * sw)).astype(np.float64)
            xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
            y = np.zeros((1, w.shape[0]) + x.shape[2:], np.float64)
            for i in range(x.shape[2]):
                for j in range(x.shape[3]):
                    y[:, :, i, j] = np.einsum("nckl,mckl->nm", xp[:, :, i:i + 3, j:j + 3], wf)
            return (y + bf.reshape(1, -1, 1, 1)).astype(F32)

        x = qdq(self.x, self.sx)
        c1 = qdq(conv_f(x, self.w1, self.sw1, self.b1, self.sx), self.sa)
        l1 = qdq(np.where(c1 < 0, F32(0.125) * c1, c1), self.sa)
        c2 = qdq(conv_f(l1, self.w2, self.sw2, self.b2, self.sa), self.sa)
        a = qdq(c2 + l1, self.sa)
        m = qdq(a * l1, self.sm)
        cat_q = q(np.concatenate([a, m], axis=1), self.sc, u)
        pool = qdq(dq(cat_q, self.sc, u).mean(axis=(2, 3), dtype=np.float64).astype(F32), self.sp)
        w3 = (self.w3.astype(F32) * self.sw3.reshape(-1, 1)).astype(np.float64)
        b3 = (self.b3.astype(F32) * (self.sp * self.sw3)).astype(np.float64)
        g = (pool.reshape(1, 16).astype(np.float64) @ w3.T + b3).astype(F32)
        return qdq(g, self.sy), cat_q


def qoperator_convnet(root, net):
    nodes = [
        ms_node("QuantizeLinear", ["x", "sx", "z"], ["xq"]),
        helper.make_node("QLinearConv", ["xq", "sx", "z", "w1", "sw1", "zw1", "sa", "z", "b1"], ["c1"], pads=[1] * 4),
        ms_node("QLinearLeakyRelu", ["c1", "sa", "z", "sa", "z"], ["l1"], alpha=0.125),
        helper.make_node("QLinearConv", ["l1", "sa", "z", "w2", "sw2", "zw2", "sa", "z", "b2"], ["c2"], pads=[1] * 4),
        ms_node("QLinearAdd", ["c2", "sa", "z", "l1", "sa", "z", "sa", "z"], ["a"]),
        ms_node("QLinearMul", ["a", "sa", "z", "l1", "sa", "z", "sm", "z"], ["m"]),
        ms_node("QLinearConcat", ["sc", "z", "a", "sa", "z", "m", "sm", "z"], ["cat"], axis=1),
        ms_node("QLinearGlobalAveragePool", ["cat", "sc", "z", "sp", "z"], ["pool"], channels_last=0),
        helper.make_node("Flatten", ["pool"], ["flat"]),
        ms_node("QGemm", ["flat", "sp", "z", "w3", "sw3", "zw3", "b3", "sy", "z"], ["g"], transB=1),
        ms_node("DequantizeLinear", ["g", "sy", "z"], ["y"]),
    ]
    m = ms_model(nodes, "ort_qoperator_convnet", [vi("x", net.x)],
                 [out("y", TensorProto.FLOAT), out("cat", TensorProto.UINT8)], net.params())
    write_case(root, "quant_ort_qoperator_convnet", m, [([net.x], list(net.expected()))])


def qdq_convnet(root, net):
    nodes = []

    def add(op, ins, outs, domain="", **attrs):
        nodes.append(helper.make_node(op, ins, outs, domain=domain, **attrs))

    def qdq(v, s, name):
        add("QuantizeLinear", [v, s, "z"], [name + "_q"], MS)
        add("DequantizeLinear", [name + "_q", s, "z"], [name], MS)
        return name

    for k, axis in (("1", 0), ("2", 0), ("3", 0)):
        add("DequantizeLinear", ["w" + k, "sw" + k, "zw" + k], ["wf" + k], MS, axis=axis)
    # ORT's QDQ bias: int32, dequantized with input scale * weight scale.
    bias_scales = []
    for k, s_in in (("1", net.sx), ("2", net.sa), ("3", net.sp)):
        bias_scales.append(init("sb" + k, (s_in * getattr(net, "sw" + k)).astype(F32)))
        add("DequantizeLinear", ["b" + k, "sb" + k], ["bf" + k], MS, axis=0)
    x = qdq("x", "sx", "xd")
    add("Conv", [x, "wf1", "bf1"], ["c1f"], pads=[1] * 4)
    c1 = qdq("c1f", "sa", "c1")
    add("LeakyRelu", [c1], ["l1f"], alpha=0.125)
    l1 = qdq("l1f", "sa", "l1")
    add("Conv", [l1, "wf2", "bf2"], ["c2f"], pads=[1] * 4)
    c2 = qdq("c2f", "sa", "c2")
    add("Add", [c2, l1], ["af"])
    a = qdq("af", "sa", "a")
    add("Mul", [a, l1], ["mf"])
    m = qdq("mf", "sm", "m")
    add("Concat", [a, m], ["catf"], axis=1)
    add("QuantizeLinear", ["catf", "sc", "z"], ["cat"], MS)
    add("DequantizeLinear", ["cat", "sc", "z"], ["catd"], MS)
    add("GlobalAveragePool", ["catd"], ["poolf"])
    pool = qdq("poolf", "sp", "pool")
    add("Flatten", [pool], ["flat"])
    add("Gemm", ["flat", "wf3", "bf3"], ["gf"], transB=1)
    y = qdq("gf", "sy", "y")
    m = ms_model(nodes, "ort_qdq_convnet", [vi("x", net.x)], [out(y, TensorProto.FLOAT), out("cat", TensorProto.UINT8)],
                 net.params() + bias_scales)
    write_case(root, "quant_ort_qdq_convnet", m, [([net.x], list(net.expected_qdq()))])


def transformer_block(root):
    """ONNX Runtime's optimized form of a dynamically quantized attention
    block: DynamicQuantizeMatMul projections (q and k without a bias, so
    their float32 values are one rounding as in numpy, and their int8
    quantization exact), QuantizeLinear to int8, a MatMulIntegerToFloat
    QK^T with the 1/sqrt(d) folded into its b_scale, float Softmax, PV,
    residual and LayerNormalization."""
    rng = np.random.default_rng(42)
    t, d = 8, 16
    x = rng.standard_normal((1, t, d)).astype(F32)
    ws = {n: rng.integers(-127, 128, (d, d)).astype(np.int8) for n in "qkv"}
    w_scale = {n: F32(rng.uniform(0.002, 0.006)) for n in "qkv"}
    bias_v = (rng.standard_normal(d) * 0.1).astype(F32)
    s_q, s_k, zp8 = F32(0.02), F32(0.025), np.int8(0)
    s_kd = F32(s_k / F32(4.0))  # 1 / sqrt(d) folded into K's scale
    gamma = rng.uniform(0.5, 1.5, d).astype(F32)
    beta = (rng.standard_normal(d) * 0.1).astype(F32)
    nodes = [ms_node("DynamicQuantizeMatMul", ["x", "wq", "swq"], ["q"]),
             ms_node("DynamicQuantizeMatMul", ["x", "wk", "swk"], ["k"]),
             ms_node("DynamicQuantizeMatMul", ["x", "wv", "swv", "", "bias_v"], ["v"]),
             helper.make_node("QuantizeLinear", ["q", "s_q", "zp8"], ["q8"]),
             helper.make_node("QuantizeLinear", ["k", "s_k", "zp8"], ["k8"]),
             helper.make_node("Transpose", ["k8"], ["k8t"], perm=[0, 2, 1]),
             ms_node("MatMulIntegerToFloat", ["q8", "k8t", "s_q", "s_kd", "zp8", "zp8"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["attn"]),
             helper.make_node("Add", ["x", "attn"], ["res"]),
             helper.make_node("LayerNormalization", ["res", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-5)]
    inits = [init("w" + n, ws[n]) for n in "qkv"] + [init("sw" + n, w_scale[n]) for n in "qkv"]
    inits += [init("bias_v", bias_v), init("s_q", s_q), init("s_k", s_k), init("s_kd", s_kd), init("zp8", zp8),
              init("gamma", gamma), init("beta", beta)]
    graph = helper.make_graph(nodes, "ort_transformer_block", [vi("x", x)],
                              [out("y", TensorProto.FLOAT), out("q8", TensorProto.INT8),
                               out("logits", TensorProto.FLOAT)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    m.ir_version = 8

    xq, xs, xz = dynamic_quantize(x)
    proj = {}
    for n in "qkv":
        acc = ((xq.astype(np.int64) - int(xz)) @ ws[n].astype(np.int64)).astype(np.int32)
        proj[n] = (acc.astype(F32) * (xs * w_scale[n])).astype(F32)
    proj["v"] = (proj["v"] + bias_v).astype(F32)
    q8, k8 = quantize(proj["q"], s_q, np.asarray(zp8)), quantize(proj["k"], s_k, np.asarray(zp8))
    scores = (q8.astype(np.int64) @ k8.astype(np.int64).transpose(0, 2, 1)).astype(np.int32)
    logits = (scores.astype(F32) * (s_q * s_kd)).astype(F32)
    e = np.exp(logits.astype(np.float64) - logits.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    res = x.astype(np.float64) + p @ proj["v"].astype(np.float64)
    mu, var = res.mean(axis=-1, keepdims=True), res.var(axis=-1, keepdims=True)
    y = ((res - mu) / np.sqrt(var + 1e-5) * gamma + beta).astype(F32)
    write_case(root, "quant_ort_transformer_block", m, [([x], [y, q8, logits])])


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    os.makedirs(sys.argv[1], exist_ok=True)
    op_cases(sys.argv[1])
    net = Net()
    (y_op, cat_op), (y_qdq, cat_qdq) = net.expected(), net.expected_qdq()
    if not (np.array_equal(y_op, y_qdq) and np.array_equal(cat_op, cat_qdq)):
        raise AssertionError("the QOperator and QDQ forms of the power-of-two network differ")
    qoperator_convnet(sys.argv[1], net)
    qdq_convnet(sys.argv[1], net)
    transformer_block(sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())

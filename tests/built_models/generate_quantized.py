#!/usr/bin/python3
"""Writes quantized-model test cases in the ONNX node-test layout (see generate_recurrent.py).

Tiny models built with onnx.helper in the three forms quantizers emit, with
expected outputs from the numpy implementation of the ONNX formulas below
(onnxruntime is not a dependency):
  * quant_qdq_convnet (opset 13): QuantizeLinear/DequantizeLinear around two
    convolutions (per-channel int8 weights, one grouped and strided), Relu,
    a global average pool and a MatMul with per-tensor int8 weights. Scales
    are powers of two and sums stay below 2^24, so every float value is
    exact in any summation order and the requantizations' .5 ties are
    decided by the rounding rule alone;
  * quant_qdq_matmul_gemm (opset 13): the MatMul/Gemm forms of static QDQ
    that kiln.canonicalize's fuse-qdq pass rewrites to integer kernels — a
    MatMul with per-column int8 weights, a MatMul + bias Add + Clip(0, 8)
    into uint8, a Gemm (transB) with per-row weights and a bias C; scales
    powers of two as above, so the rewrite must reproduce the float
    semantics exactly;
  * quant_qoperator_convnet (opset 13): QuantizeLinear, QLinearConv
    (per-channel w_scale, int32 bias, padding), QLinearConv with stride 2 and
    groups into int8, Reshape, QLinearMatMul, DequantizeLinear;
  * quant_dynamic_conv_matmul (opset 13): ONNX Runtime's dynamic
    quantization: DynamicQuantizeLinear, ConvInteger and MatMulInteger with
    uint8 weights and zero points, Cast, Mul by the scales, Add;
  * quant_blocked_opset21: DequantizeLinear of int8 weights with
    block_size (opset 21) feeding a MatMul, and an int16 QuantizeLinear;
  * quant_symbolic_shapes: DynamicQuantizeLinear, ConvInteger, Transpose,
    QuantizeLinear, QLinearMatMul over symbolic dims, two data sets of
    different shapes (the second past DynamicQuantizeLinear's one-pass size);
  * quant_transformer_block (opset 17): a dynamically quantized attention
    block — DynamicQuantizeLinear, MatMulInteger projections, int8 Q and K,
    an integer QK^T, float Softmax, PV, residual and LayerNormalization.
Deterministic (fixed seeds). Usage: generate_quantized.py OUTPUT_DIR
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from generate_recurrent import write_case

RANGE = {np.uint8: (0, 255), np.int8: (-128, 127), np.int16: (-32768, 32767)}
ONNX_TYPE = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.int16: TensorProto.INT16}


# --------------------------------------------------------------- numpy ONNX

def per_axis(p, rank, axis):
    """A per-axis parameter reshaped to broadcast along `axis`."""
    p = np.asarray(p)
    if p.ndim == 0 or p.size == 1:
        return p.reshape(())
    shape = [1] * rank
    shape[axis] = p.size
    return p.reshape(shape)


def quantize(x, scale, zp, axis=1):
    """QuantizeLinear: saturate(rint(x / scale) + zp), float32 quotient."""
    dtype = zp.dtype.type
    s = per_axis(scale, x.ndim, axis).astype(np.float32)
    q = np.rint(x.astype(np.float32) / s) + per_axis(zp, x.ndim, axis).astype(np.float64)
    lo, hi = RANGE[dtype]
    return np.clip(q, lo, hi).astype(dtype)


def dequantize(q, scale, zp, axis=1):
    """DequantizeLinear: (float32(q) - float32(zp)) * scale in float32."""
    z = per_axis(zp, q.ndim, axis).astype(np.float32)
    return ((q.astype(np.float32) - z) * per_axis(scale, q.ndim, axis).astype(np.float32)).astype(np.float32)


def dequantize_blocked(q, scale, axis, block):
    s = np.repeat(scale, block, axis=axis)
    s = np.take(s, np.arange(q.shape[axis]), axis=axis)
    return (q.astype(np.float32) * s.astype(np.float32)).astype(np.float32)


def dynamic_quantize(x):
    """DynamicQuantizeLinear (uint8)."""
    lo = np.minimum(np.float32(0), np.min(x)).astype(np.float32)
    hi = np.maximum(np.float32(0), np.max(x)).astype(np.float32)
    scale = (np.float32(1.0) if hi == lo else np.float32(hi - lo)) / np.float32(255)
    zp = np.uint8(np.clip(np.rint(np.float32(0) - lo / scale), 0, 255))
    return quantize(x, np.float32(scale), np.array(zp, np.uint8)), np.float32(scale), zp


def conv(x, w, b=None, stride=1, pad=0, group=1):
    """Direct 2-D convolution in the operands' dtype (int64 or float64)."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad), x.dtype)
    xp[:, :, pad:pad + h, pad:pad + wd] = x
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, m, oh, ow), x.dtype)
    mg = m // group
    for o in range(m):
        g = o // mg
        for i in range(oh):
            for j in range(ow):
                win = xp[:, g * cg:(g + 1) * cg, i * stride:i * stride + kh, j * stride:j * stride + kw]
                y[:, o, i, j] = (win * w[o]).sum(axis=(1, 2, 3))
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def requantize(acc, a_scale, b_scale, y_scale, zp):
    """QLinear*: saturate(rint(double(acc) * float32(a*b/y) + zp)); scales broadcast to acc."""
    mult = (np.float32(a_scale) * b_scale.astype(np.float32)) / np.float32(y_scale)
    d = acc.astype(np.int32).astype(np.float64) * mult.astype(np.float64) + np.float64(zp)
    lo, hi = RANGE[zp.dtype.type]
    return np.clip(np.rint(d), lo, hi).astype(zp.dtype)


def init(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def model(nodes, name, inputs, outputs, inits, opset=13):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10 if opset >= 21 else 7
    return m


# --------------------------------------------------------------- cases

def qdq_convnet(root):
    rng = np.random.default_rng(20)
    x = (rng.integers(-64, 64, (1, 3, 8, 8)) / 16.0).astype(np.float32)  # exact in the 2^-4 grid
    s_act = np.float32(2.0 ** -4)
    zp_act = np.array(128, np.uint8)
    w1 = rng.integers(-127, 128, (8, 3, 3, 3)).astype(np.int8)
    s_w1 = (2.0 ** -rng.integers(5, 8, 8)).astype(np.float32)
    b1 = (rng.integers(-64, 64, 8) / 64.0).astype(np.float32)
    w2 = rng.integers(-127, 128, (8, 4, 3, 3)).astype(np.int8)
    s_w2 = (2.0 ** -rng.integers(6, 9, 8)).astype(np.float32)
    w3 = rng.integers(-127, 128, (8, 5)).astype(np.int8)
    s_w3 = np.float32(2.0 ** -7)
    s_mid = np.float32(2.0 ** -3)
    zp_mid = np.array(0, np.uint8)
    zero8 = lambda n: np.zeros(n, np.int8)  # noqa: E731

    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s_act", "zp_act"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "s_act", "zp_act"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w1", "s_w1", "zw1"], ["w1d"], axis=0),
        helper.make_node("Conv", ["xd", "w1d", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("QuantizeLinear", ["r1", "s_mid", "zp_mid"], ["r1q"]),
        helper.make_node("DequantizeLinear", ["r1q", "s_mid", "zp_mid"], ["r1d"]),
        helper.make_node("DequantizeLinear", ["w2", "s_w2", "zw2"], ["w2d"], axis=0),
        helper.make_node("Conv", ["r1d", "w2d"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2], group=2),
        helper.make_node("QuantizeLinear", ["c2", "s_mid", "zp_i8"], ["c2q"]),
        helper.make_node("DequantizeLinear", ["c2q", "s_mid", "zp_i8"], ["c2d"]),
        helper.make_node("GlobalAveragePool", ["c2d"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("DequantizeLinear", ["w3", "s_w3"], ["w3d"]),
        helper.make_node("MatMul", ["f", "w3d"], ["y"]),
    ]
    inits = [init("s_act", s_act), init("zp_act", zp_act), init("w1", w1), init("s_w1", s_w1), init("zw1", zero8(8)),
             init("b1", b1), init("s_mid", s_mid), init("zp_mid", zp_mid), init("w2", w2), init("s_w2", s_w2),
             init("zw2", zero8(8)), init("zp_i8", np.array(0, np.int8)), init("w3", w3), init("s_w3", s_w3)]
    m = model(nodes, "qdq_convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)

    xd = dequantize(quantize(x, s_act, zp_act), s_act, zp_act).astype(np.float64)
    w1d = dequantize(w1, s_w1, zero8(8), axis=0).astype(np.float64)
    r1 = np.maximum(conv(xd, w1d, b1.astype(np.float64), pad=1), 0).astype(np.float32)
    r1d = dequantize(quantize(r1, s_mid, zp_mid), s_mid, zp_mid).astype(np.float64)
    w2d = dequantize(w2, s_w2, zero8(8), axis=0).astype(np.float64)
    c2 = conv(r1d, w2d, stride=2, pad=1, group=2).astype(np.float32)
    zp_i8 = np.array(0, np.int8)
    c2d = dequantize(quantize(c2, s_mid, zp_i8), s_mid, zp_i8).astype(np.float64)
    f = c2d.mean(axis=(2, 3))
    y = (f @ dequantize(w3, s_w3, zero8(1)).astype(np.float64)).astype(np.float32)
    write_case(root, "quant_qdq_convnet", m, [([x], [y])])


def qdq_matmul_gemm(root):
    rng = np.random.default_rng(22)
    x = (rng.integers(-48, 48, (3, 2, 8)) / 16.0).astype(np.float32)
    s_x, zp_x = np.float32(2.0 ** -4), np.array(0, np.int8)
    w1 = rng.integers(-127, 128, (8, 6)).astype(np.int8)
    s_w1 = (2.0 ** -rng.integers(6, 9, 6)).astype(np.float32)
    w2 = rng.integers(-127, 128, (8, 5)).astype(np.int8)
    s_w2 = (2.0 ** -rng.integers(6, 9, 5)).astype(np.float32)
    b2 = (rng.integers(-64, 64, 5) / 16.0).astype(np.float32)
    w3 = rng.integers(-127, 128, (4, 6)).astype(np.int8)  # Gemm transB: [N, K]
    s_w3 = (2.0 ** -rng.integers(6, 9, 4)).astype(np.float32)
    c3 = (rng.integers(-64, 64, 4) / 16.0).astype(np.float32)
    s_y, zp_y = np.float32(2.0 ** -3), np.array(0, np.int8)
    s_r, zp_r = np.float32(2.0 ** -5), np.array(0, np.uint8)
    zero8 = lambda n: np.zeros(n, np.int8)  # noqa: E731
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s_x", "zp_x"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "s_x", "zp_x"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w1", "s_w1"], ["w1d"], axis=1),
        helper.make_node("MatMul", ["xd", "w1d"], ["m1"]),
        helper.make_node("QuantizeLinear", ["m1", "s_y", "zp_y"], ["y1"]),
        helper.make_node("DequantizeLinear", ["w2", "s_w2", "zw2"], ["w2d"], axis=1),
        helper.make_node("MatMul", ["xd", "w2d"], ["m2"]),
        helper.make_node("Add", ["m2", "b2"], ["a2"]),
        helper.make_node("Clip", ["a2", "lo", "hi"], ["r2"]),
        helper.make_node("QuantizeLinear", ["r2", "s_r", "zp_r"], ["y2"]),
        helper.make_node("DequantizeLinear", ["y1", "s_y", "zp_y"], ["y1d"]),
        helper.make_node("Reshape", ["y1d", "rows"], ["g_in"]),
        helper.make_node("QuantizeLinear", ["g_in", "s_y", "zp_y"], ["gq"]),
        helper.make_node("DequantizeLinear", ["gq", "s_y", "zp_y"], ["gd"]),
        helper.make_node("DequantizeLinear", ["w3", "s_w3", "zw3"], ["w3d"], axis=0),
        helper.make_node("Gemm", ["gd", "w3d", "c3"], ["g"], transB=1),
        helper.make_node("QuantizeLinear", ["g", "s_y", "zp_y"], ["y3"]),
    ]
    inits = [init("s_x", s_x), init("zp_x", zp_x), init("w1", w1), init("s_w1", s_w1), init("w2", w2),
             init("s_w2", s_w2), init("zw2", zero8(5)), init("b2", b2), init("lo", np.float32(0)),
             init("hi", np.float32(8)), init("s_y", s_y), init("zp_y", zp_y), init("s_r", s_r), init("zp_r", zp_r),
             init("rows", np.array([-1, 6], np.int64)), init("w3", w3), init("s_w3", s_w3), init("zw3", zero8(4)),
             init("c3", c3)]
    m = model(nodes, "qdq_matmul_gemm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
              [helper.make_tensor_value_info(n, t, None)
               for n, t in (("y1", TensorProto.INT8), ("y2", TensorProto.UINT8), ("y3", TensorProto.INT8))], inits)

    xd = dequantize(quantize(x, s_x, zp_x), s_x, zp_x).astype(np.float64)
    m1 = (xd @ dequantize(w1, s_w1, zero8(6)).astype(np.float64)).astype(np.float32)
    y1 = quantize(m1, s_y, zp_y)
    a2 = xd @ dequantize(w2, s_w2, zero8(5)).astype(np.float64) + b2
    y2 = quantize(np.clip(a2, 0, 8).astype(np.float32), s_r, zp_r)
    gd = dequantize(y1, s_y, zp_y).reshape(-1, 6).astype(np.float64)
    g = gd @ dequantize(w3, s_w3, zero8(4), axis=0).astype(np.float64).T + c3
    y3 = quantize(g.astype(np.float32), s_y, zp_y)
    write_case(root, "quant_qdq_matmul_gemm", m, [([x], [y1, y2, y3])])


def qoperator_convnet(root):
    rng = np.random.default_rng(21)
    x = rng.uniform(-1.0, 3.0, (1, 3, 6, 6)).astype(np.float32)
    s_x, zp_x = np.float32(0.0157), np.array(64, np.uint8)
    w1 = rng.integers(-127, 128, (8, 3, 3, 3)).astype(np.int8)
    s_w1 = rng.uniform(0.002, 0.01, 8).astype(np.float32)
    b1 = rng.integers(-3000, 3000, 8).astype(np.int32)
    s_y1, zp_y1 = np.float32(0.043), np.array(100, np.uint8)
    w2 = rng.integers(0, 256, (4, 4, 3, 3)).astype(np.uint8)
    s_w2, zp_w2 = np.float32(0.0031), np.array(131, np.uint8)
    s_y2, zp_y2 = np.float32(0.071), np.array(-7, np.int8)
    w3 = rng.integers(-127, 128, (36, 5)).astype(np.int8)
    s_w3 = rng.uniform(0.003, 0.009, 5).astype(np.float32)
    s_y3, zp_y3 = np.float32(0.11), np.array(3, np.int8)
    zero8 = np.zeros(8, np.int8)

    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s_x", "zp_x"], ["xq"]),
        helper.make_node("QLinearConv", ["xq", "s_x", "zp_x", "w1", "s_w1", "zw1", "s_y1", "zp_y1", "b1"], ["c1"],
                         pads=[1, 1, 1, 1]),
        helper.make_node("QLinearConv", ["c1", "s_y1", "zp_y1", "w2", "s_w2", "zp_w2", "s_y2", "zp_y2"], ["c2"],
                         strides=[2, 2], pads=[1, 1, 1, 1], group=2),
        helper.make_node("Reshape", ["c2", "shape"], ["f"]),
        helper.make_node("QLinearMatMul", ["f", "s_y2", "zp_y2", "w3", "s_w3", "zw3", "s_y3", "zp_y3"], ["mq"]),
        helper.make_node("DequantizeLinear", ["mq", "s_y3", "zp_y3"], ["y"]),
    ]
    inits = [init("s_x", s_x), init("zp_x", zp_x), init("w1", w1), init("s_w1", s_w1), init("zw1", zero8),
             init("b1", b1), init("s_y1", s_y1), init("zp_y1", zp_y1), init("w2", w2), init("s_w2", s_w2),
             init("zp_w2", zp_w2), init("s_y2", s_y2), init("zp_y2", zp_y2),
             init("shape", np.array([1, 36], np.int64)), init("w3", w3), init("s_w3", s_w3),
             init("zw3", np.array(0, np.int8)), init("s_y3", s_y3), init("zp_y3", zp_y3)]
    m = model(nodes, "qoperator_convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
               helper.make_tensor_value_info("c2", TensorProto.INT8, None)], inits)

    xq = quantize(x, s_x, zp_x)
    acc1 = conv(xq.astype(np.int64) - 64, w1.astype(np.int64), b1.astype(np.int64), pad=1)
    c1 = requantize(acc1, s_x, s_w1.reshape(1, -1, 1, 1), s_y1, zp_y1)
    acc2 = conv(c1.astype(np.int64) - 100, w2.astype(np.int64) - 131, stride=2, pad=1, group=2)
    c2 = requantize(acc2, s_y1, np.array(s_w2), s_y2, zp_y2)
    acc3 = (c2.reshape(1, 36).astype(np.int64) + 7) @ w3.astype(np.int64)
    mq = requantize(acc3, s_y2, s_w3.reshape(1, -1), s_y3, zp_y3)
    y = dequantize(mq, s_y3, zp_y3)
    write_case(root, "quant_qoperator_convnet", m, [([x], [y, c2])])


def dynamic_conv_matmul(root):
    rng = np.random.default_rng(22)
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    w1 = rng.integers(0, 256, (4, 2, 3, 3)).astype(np.uint8)
    zp_w1, s_w1 = np.array(128, np.uint8), np.float32(0.0042)
    w2 = rng.integers(0, 256, (9, 6)).astype(np.uint8)
    zp_w2, s_w2 = np.array(120, np.uint8), np.float32(0.0067)
    bias = rng.standard_normal(6).astype(np.float32)

    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("ConvInteger", ["xq", "w1", "xz", "zp_w1"], ["acc1"]),
        helper.make_node("Cast", ["acc1"], ["acc1f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["xs", "s_w1"], ["m1"]),
        helper.make_node("Mul", ["acc1f", "m1"], ["h"]),
        helper.make_node("Reshape", ["h", "shape"], ["h2"]),
        helper.make_node("DynamicQuantizeLinear", ["h2"], ["hq", "hs", "hz"]),
        helper.make_node("MatMulInteger", ["hq", "w2", "hz", "zp_w2"], ["acc2"]),
        helper.make_node("Cast", ["acc2"], ["acc2f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["hs", "s_w2"], ["m2"]),
        helper.make_node("Mul", ["acc2f", "m2"], ["p"]),
        helper.make_node("Add", ["p", "bias"], ["y"]),
    ]
    inits = [init("w1", w1), init("zp_w1", zp_w1), init("s_w1", s_w1), init("shape", np.array([4, 9], np.int64)),
             init("w2", w2), init("zp_w2", zp_w2), init("s_w2", s_w2), init("bias", bias)]
    m = model(nodes, "dynamic_conv_matmul", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
               helper.make_tensor_value_info("hq", TensorProto.UINT8, None)], inits)

    xq, xs, xz = dynamic_quantize(x)
    acc1 = conv(xq.astype(np.int64) - int(xz), w1.astype(np.int64) - 128).astype(np.int32)
    h = acc1.astype(np.float32) * (xs * s_w1)
    hq, hs, hz = dynamic_quantize(h.reshape(4, 9))
    acc2 = ((hq.astype(np.int64) - int(hz)) @ (w2.astype(np.int64) - 120)).astype(np.int32)
    y = (acc2.astype(np.float32) * (hs * s_w2) + bias).astype(np.float32)
    write_case(root, "quant_dynamic_conv_matmul", m, [([x], [y, hq])])


def blocked_opset21(root):
    rng = np.random.default_rng(23)
    # Powers of two and a 2^-4 grid: the MatMul is exact in any order, so
    # the int16 requantization's ties are decided by the rounding rule.
    x = (rng.integers(-64, 64, (3, 8)) / 16.0).astype(np.float32)
    w = rng.integers(-128, 128, (8, 4)).astype(np.int8)
    s_w = (2.0 ** -rng.integers(4, 8, (3, 4))).astype(np.float32)  # blocks of 3 rows along axis 0 (the last holds 2)
    s_y = np.float32(2.0 ** -9)
    nodes = [
        helper.make_node("DequantizeLinear", ["w", "s_w"], ["wd"], axis=0, block_size=3),
        helper.make_node("MatMul", ["x", "wd"], ["m"]),
        helper.make_node("QuantizeLinear", ["m", "s_y", "zp16"], ["y"]),
    ]
    inits = [init("w", w), init("s_w", s_w), init("s_y", s_y), init("zp16", np.array(-5, np.int16))]
    m = model(nodes, "blocked_opset21", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
              [helper.make_tensor_value_info("y", TensorProto.INT16, None),
               helper.make_tensor_value_info("m", TensorProto.FLOAT, None)], inits, opset=21)
    wd = dequantize_blocked(w, s_w, 0, 3)
    mm = (x.astype(np.float64) @ wd.astype(np.float64)).astype(np.float32)
    y = quantize(mm, s_y, np.array(-5, np.int16))
    write_case(root, "quant_blocked_opset21", m, [([x], [y, mm])])


def symbolic_shapes(root):
    """One model, two data sets of different shapes: the lowerings' symbolic
    dims (and DynamicQuantizeLinear's two-pass range past 64K elements)."""
    rng = np.random.default_rng(24)
    w1 = rng.integers(0, 256, (4, 2, 3, 3)).astype(np.uint8)
    zp_w1 = np.array(128, np.uint8)
    s, z = np.float32(0.7), np.array(3, np.int8)
    w2 = rng.integers(-128, 128, (4, 6)).astype(np.int8)
    s_w2 = rng.uniform(0.01, 0.02, 6).astype(np.float32)
    s_y, zp_y = np.float32(0.9), np.array(-2, np.int8)
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("ConvInteger", ["xq", "w1", "xz", "zp_w1"], ["acc"], pads=[1, 1, 1, 1]),
        helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
        helper.make_node("Transpose", ["accf"], ["t"], perm=[0, 2, 3, 1]),
        helper.make_node("QuantizeLinear", ["t", "s", "z"], ["tq"]),
        helper.make_node("QLinearMatMul", ["tq", "s", "z", "w2", "s_w2", "zw2", "s_y", "zp_y"], ["y"]),
    ]
    inits = [init("w1", w1), init("zp_w1", zp_w1), init("s", s), init("z", z), init("w2", w2), init("s_w2", s_w2),
             init("zw2", np.array(0, np.int8)), init("s_y", s_y), init("zp_y", zp_y)]
    m = model(nodes, "symbolic_shapes", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2, "h", "w"])],
              [helper.make_tensor_value_info("y", TensorProto.INT8, None),
               helper.make_tensor_value_info("xq", TensorProto.UINT8, None)], inits)
    sets = []
    for shape, scale in (((2, 2, 5, 7), 1.0), ((1, 2, 200, 180), 3.0)):
        x = (rng.standard_normal(shape) * scale).astype(np.float32)
        xq, _, xz = dynamic_quantize(x)
        acc = conv(xq.astype(np.int64) - int(xz), w1.astype(np.int64) - 128, pad=1).astype(np.int32)
        tq = quantize(acc.astype(np.float32).transpose(0, 2, 3, 1), s, z)
        y = requantize((tq.astype(np.int64) - 3) @ w2.astype(np.int64), s, s_w2, s_y, zp_y)
        sets.append(([x], [y, xq]))
    write_case(root, "quant_symbolic_shapes", m, sets)


def transformer_block(root):
    """A dynamically quantized attention block (ONNX Runtime's dynamic
    quantization of a transformer): int8 projections and an integer QK^T,
    float softmax, PV and LayerNormalization. Every value that is quantized
    is computed with the same float32 operations numpy does (Cast, Mul), so
    its int8 and int32 results are exact; the float tail has the float
    tolerance."""
    rng = np.random.default_rng(25)
    t, d = 8, 16
    x = rng.standard_normal((1, t, d)).astype(np.float32)
    ws = {n: rng.integers(0, 256, (d, d)).astype(np.uint8) for n in "qkv"}
    w_zp = {n: np.array(rng.integers(100, 156), np.uint8) for n in "qkv"}
    w_scale = {n: np.float32(rng.uniform(0.002, 0.006)) for n in "qkv"}
    s_q, s_k = np.float32(0.02), np.float32(0.025)
    zp8 = np.array(0, np.int8)
    s_att = np.float32(s_q * s_k / np.float32(4.0))  # 1 / sqrt(d)
    gamma = rng.uniform(0.5, 1.5, d).astype(np.float32)
    beta = rng.standard_normal(d).astype(np.float32) * 0.1

    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"])]
    inits = []
    for n in "qkv":
        nodes += [
            helper.make_node("MatMulInteger", ["xq", "w" + n, "xz", "zw" + n], ["acc_" + n]),
            helper.make_node("Cast", ["acc_" + n], ["accf_" + n], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["xs", "sw" + n], ["m_" + n]),
            helper.make_node("Mul", ["accf_" + n, "m_" + n], [n]),
        ]
        inits += [init("w" + n, ws[n]), init("zw" + n, w_zp[n]), init("sw" + n, w_scale[n])]
    nodes += [
        helper.make_node("QuantizeLinear", ["q", "s_q", "zp8"], ["q8"]),
        helper.make_node("QuantizeLinear", ["k", "s_k", "zp8"], ["k8"]),
        helper.make_node("Transpose", ["k8"], ["k8t"], perm=[0, 2, 1]),
        helper.make_node("MatMulInteger", ["q8", "k8t"], ["scores"]),
        helper.make_node("Cast", ["scores"], ["scoresf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["scoresf", "s_att"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["attn"]),
        helper.make_node("Add", ["x", "attn"], ["res"]),
        helper.make_node("LayerNormalization", ["res", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-5),
    ]
    inits += [init("s_q", s_q), init("s_k", s_k), init("zp8", zp8), init("s_att", s_att), init("gamma", gamma),
              init("beta", beta)]
    m = model(nodes, "transformer_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
               helper.make_tensor_value_info("scores", TensorProto.INT32, None),
               helper.make_tensor_value_info("q8", TensorProto.INT8, None)], inits, opset=17)

    xq, xs, xz = dynamic_quantize(x)
    proj = {}
    for n in "qkv":
        acc = ((xq.astype(np.int64) - int(xz)) @ (ws[n].astype(np.int64) - int(w_zp[n]))).astype(np.int32)
        proj[n] = acc.astype(np.float32) * (np.float32(xs) * w_scale[n])
    q8, k8 = quantize(proj["q"], s_q, zp8), quantize(proj["k"], s_k, zp8)
    scores = (q8.astype(np.int64) @ k8.astype(np.int64).transpose(0, 2, 1)).astype(np.int32)
    logits = (scores.astype(np.float32) * s_att).astype(np.float64)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    res = x.astype(np.float64) + p @ proj["v"].astype(np.float64)
    mu, var = res.mean(axis=-1, keepdims=True), res.var(axis=-1, keepdims=True)
    y = ((res - mu) / np.sqrt(var + 1e-5) * gamma + beta).astype(np.float32)
    write_case(root, "quant_transformer_block", m, [([x], [y, scores, q8])])


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    os.makedirs(sys.argv[1], exist_ok=True)
    qdq_convnet(sys.argv[1])
    qdq_matmul_gemm(sys.argv[1])
    qoperator_convnet(sys.argv[1])
    dynamic_conv_matmul(sys.argv[1])
    blocked_opset21(sys.argv[1])
    symbolic_shapes(sys.argv[1])
    transformer_block(sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())

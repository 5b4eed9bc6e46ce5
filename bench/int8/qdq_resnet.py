#!/usr/bin/python3
"""Writes a static-QDQ resnet50 (or another torchvision CNN) the way ONNX
Runtime's static quantizer does, without ONNX Runtime: onnx.helper and numpy.

The float network comes from the benchmark zoo's export path
(tests/models/export_zoo.py: torchvision's model with weights=None,
torch.manual_seed(0), BatchNorm calibrated, eval, TorchScript exporter with
constant folding, so BatchNorm is folded into the convolutions); pretrained
weights are not needed for latency. Then, in ONNX Runtime's QDQ format:

  * weights: int8, symmetric, per output channel (Conv axis 0, Gemm's B
    with transB=1 axis 0), in [-127, 127];
  * biases: int32, DequantizeLinear(round(b / (sx*sw)), sx*sw), axis 0;
  * activations: per tensor, uint8 (default) or int8, asymmetric, from the
    min/max of each float tensor over --calib random inputs (ORT's MinMax
    calibrator; ranges include 0);
  * every activation gets QuantizeLinear -> DequantizeLinear where it is
    produced, except a Conv/Gemm/Add output read only by a Relu (the Relu's
    output is quantized instead, so Conv -> Relu -> QuantizeLinear folds).

The float graph is evaluated by a small numpy interpreter (Conv, Relu,
MaxPool, AveragePool, Add, BatchNormalization, GlobalAveragePool, Flatten,
Gemm, QuantizeLinear, DequantizeLinear; anything else is an error naming
the node), once for calibration and once on the QDQ graph for the
reference output: OUT/model.onnx, input.npy and output.npy, the benchmark
zoo's layout, so `kiln bench OUT/model.onnx` feeds input.npy and reports
max|d| against output.npy (the QDQ graph's float semantics, fp32 sums in
numpy's order). OUT/quant.json says what was quantized and how.

Usage: qdq_resnet.py OUT [--model resnet50] [--size 224] [--calib 4]
                         [--activations uint8|int8] [--seed 0]
"""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "models"))
sys.path.insert(0, os.path.join(HERE, ".."))

OPSET = 13  # per-axis QuantizeLinear/DequantizeLinear


# ---- the float network ---------------------------------------------------------------------


def export_float(name, size):
    """The zoo's network as ONNX (BatchNorm folded), and its input shape."""
    import torch

    import export_zoo
    from export_models import torchscript_exporter

    model, example, _ = export_zoo.build(name)
    example = torch.randn(1, 3, size, size)
    export_zoo.initialize_zero_heads(model)
    export_zoo.calibrate_batchnorm(model, example)
    model.eval()
    with tempfile.TemporaryDirectory() as tmp, torchscript_exporter():
        path = os.path.join(tmp, "float.onnx")
        torch.onnx.export(model, (example,), path, opset_version=OPSET, input_names=["input"], output_names=["output"],
                          do_constant_folding=True)
        return onnx.load(path), list(example.shape)


# ---- a numpy interpreter for the ops these networks use ------------------------------------


def attrs_of(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def pads_of(a, spatial):
    pads = list(a.get("pads", [0] * (2 * spatial)))
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise ValueError(f"auto_pad {a['auto_pad']} is not supported by this interpreter")
    return pads


def windows(x, kernel, strides, pads, fill):
    """[N, C, Ho, Wo, kh, kw] views of x padded with `fill`."""
    (kh, kw), (sh, sw) = kernel, strides
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])), constant_values=fill)
    v = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    return v[:, :, ::sh, ::sw]


def conv(x, w, b, a):
    if a.get("group", 1) != 1 or any(d != 1 for d in a.get("dilations", [1, 1])):
        raise ValueError("this interpreter runs Conv with group 1 and dilation 1 only")
    m, _, kh, kw = w.shape
    win = windows(x, (kh, kw), a.get("strides", [1, 1]), pads_of(a, 2), 0.0)
    n, c, ho, wo = win.shape[:4]
    cols = np.ascontiguousarray(win.transpose(0, 2, 3, 1, 4, 5)).reshape(n * ho * wo, c * kh * kw)
    # Sums in float64: the products of a QDQ conv are multiples of sx*sw, so
    # exact sums (as the integer kernels compute them) are what the float
    # graph means; float32 BLAS sums in blocks and rounds near-ties the
    # other way, and a deep network amplifies each such flip.
    y = cols.astype(np.float64) @ w.reshape(m, -1).T.astype(np.float64)
    if b is not None:
        y = y + b
    return np.ascontiguousarray(y.reshape(n, ho, wo, m).transpose(0, 3, 1, 2)).astype(np.float32)


def per_axis(p, x, axis):
    """A per-tensor or per-axis parameter broadcast against x."""
    p = np.asarray(p)
    if p.ndim == 0 or p.size == 1:
        return p.reshape(())
    shape = [1] * x.ndim
    shape[axis % x.ndim] = p.size
    return p.reshape(shape)


def quantize(x, s, z, axis):
    info = np.iinfo(z.dtype)
    q = np.rint(x / per_axis(s, x, axis)) + per_axis(z, x, axis).astype(np.float64)  # rint: half to even
    return np.clip(q, info.min, info.max).astype(z.dtype)


def dequantize(q, s, z, axis):
    zp = per_axis(z, q, axis).astype(np.int64) if z is not None else 0
    return ((q.astype(np.int64) - zp) * per_axis(s, q, axis)).astype(np.float32)


def run_node(node, ins):
    a, op = attrs_of(node), node.op_type
    if op == "Conv":
        return conv(ins[0], ins[1], ins[2] if len(ins) > 2 else None, a)
    if op == "Relu":
        return np.maximum(ins[0], 0).astype(np.float32)
    if op == "Add":
        return (ins[0] + ins[1]).astype(np.float32)
    if op in ("MaxPool", "AveragePool"):
        if a.get("ceil_mode", 0) or any(d != 1 for d in a.get("dilations", [1, 1])):
            raise ValueError(f"{op} with ceil_mode/dilations is not supported by this interpreter")
        k = a["kernel_shape"]
        pads = pads_of(a, 2)
        if op == "MaxPool":
            return windows(ins[0], k, a.get("strides", [1, 1]), pads, -np.inf).max(axis=(4, 5)).astype(np.float32)
        if any(pads) and not a.get("count_include_pad", 0):
            raise ValueError("AveragePool with pads and count_include_pad=0 is not supported by this interpreter")
        return windows(ins[0], k, a.get("strides", [1, 1]), pads, 0.0).mean(axis=(4, 5)).astype(np.float32)
    if op == "BatchNormalization":  # when the exporter did not fold it into the Conv
        scale, bias, mean, var = (per_axis(v, ins[0], 1) for v in ins[1:5])
        return ((ins[0] - mean) / np.sqrt(var + a.get("epsilon", 1e-5)) * scale + bias).astype(np.float32)
    if op == "GlobalAveragePool":
        return ins[0].mean(axis=(2, 3), keepdims=True, dtype=np.float64).astype(np.float32)
    if op == "Flatten":
        axis = a.get("axis", 1)
        return ins[0].reshape(int(np.prod(ins[0].shape[:axis])), -1)
    if op == "Gemm":
        A = ins[0].T if a.get("transA", 0) else ins[0]
        B = ins[1].T if a.get("transB", 0) else ins[1]
        y = a.get("alpha", 1.0) * (A.astype(np.float64) @ B.astype(np.float64))
        if len(ins) > 2 and ins[2] is not None:
            y = y + a.get("beta", 1.0) * ins[2]
        return y.astype(np.float32)
    if op == "QuantizeLinear":
        return quantize(ins[0], ins[1], ins[2], a.get("axis", 1))
    if op == "DequantizeLinear":
        return dequantize(ins[0], ins[1], ins[2] if len(ins) > 2 else None, a.get("axis", 1))
    raise ValueError(f"node '{node.name}' ({op}): not supported by this interpreter")


def evaluate(model, x, keep=None):
    """Every tensor's value (or only those in `keep`, and the outputs)."""
    env = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    env[model.graph.input[0].name] = x
    seen = {}
    outputs = {o.name for o in model.graph.output}
    for node in model.graph.node:
        y = run_node(node, [env[i] if i else None for i in node.input])
        env[node.output[0]] = y
        if keep is None or node.output[0] in keep or node.output[0] in outputs:
            seen[node.output[0]] = y
    seen[model.graph.input[0].name] = x
    return seen


# ---- quantization --------------------------------------------------------------------------


def activation_params(lo, hi, dtype):
    """Asymmetric parameters as ORT's MinMax calibrator picks them (range includes 0)."""
    info = np.iinfo(dtype)
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if hi == lo:
        hi = lo + 1.0
    scale = np.float32((hi - lo) / (info.max - info.min))
    zp = np.array(np.clip(np.rint(info.min - lo / scale), info.min, info.max), dtype)
    return scale, zp


def weight_params(w, axis):
    red = tuple(i for i in range(w.ndim) if i != axis)
    scale = (np.abs(w).max(axis=red) / 127.0).astype(np.float32)
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(w / np.expand_dims(scale, red)), -127, 127).astype(np.int8)
    return q, scale


def quantize_model(model, ranges, act_dtype):
    g = model.graph
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    out_name = g.output[0].name

    def only_relu_reads(t):
        readers = consumers.get(t, [])
        return len(readers) == 1 and readers[0].op_type == "Relu" and t != out_name

    nodes, new_inits, renamed, act = [], [], {}, {}
    stats = {"weights": 0, "activations": 0, "biases": 0}  # how many of each got quantization parameters

    def const(name, a):
        new_inits.append(numpy_helper.from_array(np.asarray(a), name))
        return name

    def qdq(t):
        """Q -> DQ after float tensor t; consumers read the returned name."""
        scale, zp = activation_params(*ranges[t], act_dtype)
        s, z = const(f"{t}_scale", scale), const(f"{t}_zero_point", zp)
        act[t] = (scale, zp)
        out = t + "_dq" if t != out_name else out_name
        src = t if t != out_name else out_name + "_float"
        nodes.append(helper.make_node("QuantizeLinear", [src, s, z], [t + "_q"], name=t + "_quantize"))
        nodes.append(helper.make_node("DequantizeLinear", [t + "_q", s, z], [out], name=t + "_dequantize"))
        stats["activations"] += 1
        return out

    def dq_weight(w_name, axis):
        q, scale = weight_params(inits[w_name], axis)
        ins = [const(w_name + "_quantized", q), const(w_name + "_scale", scale),
               const(w_name + "_zero_point", np.zeros(scale.size, np.int8))]
        nodes.append(helper.make_node("DequantizeLinear", ins, [w_name + "_dq"], name=w_name + "_dequantize", axis=axis))
        stats["weights"] += 1
        return w_name + "_dq", scale

    def dq_bias(b_name, x_scale, w_scale):
        scale = (np.float32(x_scale) * w_scale).astype(np.float32)
        q = np.rint(inits[b_name].astype(np.float64) / scale).astype(np.int32)
        ins = [const(b_name + "_quantized", q), const(b_name + "_scale", scale)]
        nodes.append(helper.make_node("DequantizeLinear", ins, [b_name + "_dq"], name=b_name + "_dequantize", axis=0))
        stats["biases"] += 1
        return b_name + "_dq"

    x_name = g.input[0].name
    renamed[x_name] = qdq(x_name)
    for n in g.node:
        ins = [renamed.get(i, i) for i in n.input]
        if n.op_type in ("Conv", "Gemm"):
            x_scale = act[n.input[0]][0]
            trans_b = n.op_type == "Gemm" and attrs_of(n).get("transB", 0)
            ins[1], w_scale = dq_weight(n.input[1], 0 if n.op_type == "Conv" or trans_b else 1)
            if len(ins) > 2 and ins[2]:
                ins[2] = dq_bias(n.input[2], x_scale, w_scale)
        node = helper.make_node(n.op_type, ins, list(n.output), name=n.name)
        node.attribute.extend(n.attribute)
        nodes.append(node)
        t = n.output[0]
        if t == out_name:
            node.output[0] = out_name + "_float"
            qdq(t)
        elif not only_relu_reads(t):
            renamed[t] = qdq(t)
    keep = [i for i in g.initializer if i.name not in {n for node in g.node if node.op_type in ("Conv", "Gemm")
                                                       for n in node.input[1:]}]
    graph = helper.make_graph(nodes, g.name + "_qdq", list(g.input), list(g.output), keep + new_inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="kiln bench/int8/qdq_resnet.py")
    m.ir_version = 7
    return m, stats


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--model", default="resnet50")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--calib", type=int, default=4, help="random calibration inputs")
    p.add_argument("--activations", choices=["uint8", "int8"], default="uint8")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    t0 = time.monotonic()
    fmodel, shape = export_float(args.model, args.size)
    rng = np.random.default_rng(args.seed)
    ranges = {}
    for _ in range(args.calib):
        for t, v in evaluate(fmodel, rng.standard_normal(shape).astype(np.float32)).items():
            lo, hi = float(v.min()), float(v.max())
            old = ranges.get(t, (lo, hi))
            ranges[t] = (min(old[0], lo), max(old[1], hi))
    qmodel, stats = quantize_model(fmodel, ranges, np.uint8 if args.activations == "uint8" else np.int8)
    onnx.checker.check_model(qmodel)
    path = os.path.join(args.out, "model.onnx")
    onnx.save(qmodel, path)
    x = np.random.default_rng(args.seed + 1000).standard_normal(shape).astype(np.float32)
    y = evaluate(qmodel, x, keep=set())[qmodel.graph.output[0].name]
    np.save(os.path.join(args.out, "input.npy"), x)
    np.save(os.path.join(args.out, "output.npy"), y)
    out_scale = float(numpy_helper.to_array(next(i for i in qmodel.graph.initializer
                                                  if i.name == fmodel.graph.output[0].name + "_scale")))
    info = {"model": args.model, "size": args.size, "activation_dtype": args.activations, "calibration_inputs": args.calib,
            "seed": args.seed, "opset": OPSET, "output_step": out_scale, "nodes": len(qmodel.graph.node),
            "ops": sorted({n.op_type for n in qmodel.graph.node}), **stats,
            "seconds": round(time.monotonic() - t0, 1)}
    with open(os.path.join(args.out, "quant.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())

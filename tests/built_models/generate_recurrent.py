#!/usr/bin/python3
"""Writes LSTM/GRU/RNN test cases in the ONNX node-test layout.

Each case is OUTPUT/<name>/model.onnx with test_data_set_N/{input,output}_K.pb,
so kiln_onnx_node_test runs them on the reference executor and on Vulkan.
Two sources, both independent of Kiln:
  * torch exports of nn.LSTM / nn.GRU / nn.RNN (bidirectional, two layers,
    batch_first), expected outputs from torch itself; one is a streaming
    model (state in, state out) run on consecutive chunks, each data set
    feeding the previous set's state back;
  * onnx.helper models for what torch never emits (sequence_lens, clip,
    activations with alpha/beta, layout=1, peepholes, input_forget,
    linear_before_reset=0, reverse, an LSTM inside If), expected outputs
    from the numpy implementation of the ONNX equations below.
Deterministic (fixed seeds). Usage: generate_cases.py OUTPUT_DIR
"""
import io
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT


# --------------------------------------------------------------- numpy ONNX


def act(name, x, alpha=None, beta=None):
    n = name.lower()
    if n == "sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if n == "tanh":
        return np.tanh(x)
    if n == "relu":
        return np.maximum(x, 0.0)
    if n == "leakyrelu":
        return np.where(x >= 0, x, alpha * x)
    if n == "hardsigmoid":
        return np.clip(alpha * x + beta, 0.0, 1.0)
    if n == "scaledtanh":
        return alpha * np.tanh(beta * x)
    if n == "affine":
        return alpha * x + beta
    if n == "elu":
        return np.where(x >= 0, x, alpha * (np.exp(x) - 1.0))
    if n == "softsign":
        return x / (1.0 + np.abs(x))
    if n == "softplus":
        return np.log1p(np.exp(x))
    raise ValueError(name)


USES = {"leakyrelu": (True, False), "hardsigmoid": (True, True), "scaledtanh": (True, True), "affine": (True, True),
        "elu": (True, False), "thresholdedrelu": (True, False)}


def bind_activations(names, alphas, betas):
    """[(name, alpha, beta)] consuming alpha/beta in order (ONNX's rule)."""
    out, ia, ib = [], 0, 0
    for n in names:
        ua, ub = USES.get(n.lower(), (False, False))
        a = b = None
        if ua:
            a, ia = alphas[ia], ia + 1
        if ub:
            b, ib = betas[ib], ib + 1
        out.append((n, a, b))
    return out


def reference(kind, x, w, r, b=None, lens=None, h0=None, c0=None, p=None, direction="forward", layout=0, clip=None,
              acts=None, alphas=(), betas=(), input_forget=0, linear_before_reset=0):
    """ONNX LSTM/GRU/RNN in float64: returns (Y, Y_h[, Y_c]) in the node's layout."""
    x = x.astype(np.float64)
    if layout == 1:
        x = x.transpose(1, 0, 2)
    T, B, _ = x.shape
    D = 2 if direction == "bidirectional" else 1
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    H = r.shape[2]
    nf = {"LSTM": 3, "GRU": 2, "RNN": 1}[kind]
    default = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}[kind]
    acts = acts or default * D
    fns = bind_activations(acts, list(alphas), list(betas))
    b = np.zeros((D, 2 * G * H)) if b is None else b.astype(np.float64)
    lens = np.full(B, T) if lens is None else lens
    to_dbh = (lambda s: s.transpose(1, 0, 2)) if layout == 1 else (lambda s: s)
    h0 = np.zeros((D, B, H)) if h0 is None else to_dbh(h0).astype(np.float64)
    c0 = np.zeros((D, B, H)) if c0 is None else to_dbh(c0).astype(np.float64)
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    Y = np.zeros((T, D, B, H))
    Yh, Yc = np.zeros((D, B, H)), np.zeros((D, B, H))
    for d in range(D):
        f = [lambda v, e=e: act(e[0], v, e[1], e[2]) for e in fns[d * nf:(d + 1) * nf]]
        rev = direction == "reverse" or d == 1
        W, R, Wb, Rb = w[d], r[d], b[d, :G * H], b[d, G * H:]
        for bb in range(B):
            h, c = h0[d, bb].copy(), c0[d, bb].copy()
            n = int(lens[bb])
            for s in range(n):
                t = n - 1 - s if rev else s
                xt = x[t, bb]
                if kind == "RNN":
                    h = f[0](cl(W @ xt + R @ h + Wb + Rb))
                elif kind == "LSTM":
                    g = W @ xt + R @ h + Wb + Rb
                    gi, go, gf, gc = np.split(g, 4)
                    pi, po, pf = np.split(p[d], 3) if p is not None else (0, 0, 0)
                    i = f[0](cl(gi + pi * c))
                    fg = 1 - i if input_forget else f[0](cl(gf + pf * c))
                    c = fg * c + i * f[1](cl(gc))
                    o = f[0](cl(go + po * c))
                    h = o * f[2](c)
                else:
                    xw = W @ xt + Wb
                    z = f[0](cl(xw[:H] + R[:H] @ h + Rb[:H]))
                    rg = f[0](cl(xw[H:2 * H] + R[H:2 * H] @ h + Rb[H:2 * H]))
                    if linear_before_reset:
                        hc = f[1](cl(xw[2 * H:] + rg * (R[2 * H:] @ h + Rb[2 * H:])))
                    else:
                        hc = f[1](cl(xw[2 * H:] + R[2 * H:] @ (rg * h) + Rb[2 * H:]))
                    h = (1 - z) * hc + z * h
                Y[t, d, bb] = h
            Yh[d, bb], Yc[d, bb] = h, c
    if layout == 1:
        Y, Yh, Yc = Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)
    outs = [Y, Yh] + ([Yc] if kind == "LSTM" else [])
    return [o.astype(np.float32) for o in outs]


# ------------------------------------------------------------------ writing


def write_case(root, name, model, data_sets):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for n, (inputs, outputs) in enumerate(data_sets):
        sd = os.path.join(d, f"test_data_set_{n}")
        os.makedirs(sd, exist_ok=True)
        for kind, arrays in (("input", inputs), ("output", outputs)):
            for k, a in enumerate(arrays):
                with open(os.path.join(sd, f"{kind}_{k}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(np.asarray(a, order="C")).SerializeToString())


def helper_case(root, name, kind, T=5, B=3, I=4, H=3, opset=14, with_b=True, with_lens=False, with_init=False,
                with_p=False, direction="forward", layout=0, clip=None, acts=None, alphas=(), betas=(),
                input_forget=0, linear_before_reset=0, outputs=("Y", "Y_h", "Y_c"), seed=0):
    rng = np.random.default_rng(seed)
    D = 2 if direction == "bidirectional" else 1
    G = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    x = rng.standard_normal((B, T, I) if layout else (T, B, I)).astype(np.float32)
    w = (rng.standard_normal((D, G * H, I)) * 0.6).astype(np.float32)
    r = (rng.standard_normal((D, G * H, H)) * 0.6).astype(np.float32)
    b = (rng.standard_normal((D, 2 * G * H)) * 0.3).astype(np.float32) if with_b else None
    lens = np.array([T, max(T - 2, 0), 1][:B] + [T] * max(B - 3, 0), dtype=np.int32) if with_lens else None
    state = (B, D, H) if layout else (D, B, H)
    h0 = rng.standard_normal(state).astype(np.float32) if with_init else None
    c0 = rng.standard_normal(state).astype(np.float32) if with_init and kind == "LSTM" else None
    p = (rng.standard_normal((D, 3 * H)) * 0.5).astype(np.float32) if with_p else None
    feeds = [("X", x), ("W", w), ("R", r), ("B", b), ("sequence_lens", lens), ("initial_h", h0)]
    if kind == "LSTM":
        feeds += [("initial_c", c0), ("P", p)]
    while feeds and feeds[-1][1] is None:
        feeds.pop()
    attrs = dict(hidden_size=H, direction=direction)
    if opset >= 14:
        attrs["layout"] = layout
    if clip:
        attrs["clip"] = clip
    if acts:
        attrs["activations"] = acts
    if alphas:
        attrs["activation_alpha"] = list(alphas)
    if betas:
        attrs["activation_beta"] = list(betas)
    if input_forget:
        attrs["input_forget"] = 1
    if kind == "GRU":
        attrs["linear_before_reset"] = linear_before_reset
    expected = reference(kind, x, w, r, b, lens, h0, c0, p, direction, layout, clip, acts, alphas, betas, input_forget,
                         linear_before_reset)
    all_names = ["Y", "Y_h", "Y_c"][:len(expected)]
    out_names = [n if n in outputs else "" for n in all_names]
    while out_names and not out_names[-1]:
        out_names.pop()
    node = helper.make_node(kind, [n if a is not None else "" for n, a in feeds], out_names, **attrs)
    inputs = [(n, a) for n, a in feeds if a is not None]
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(n, TensorProto.INT32 if n == "sequence_lens" else F32, a.shape)
         for n, a in inputs],
        [helper.make_tensor_value_info(n, F32, None) for n in out_names if n])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    outs = [e for e, n in zip(expected, all_names) if n in out_names and n]
    write_case(root, name, model, [([a for _, a in inputs], outs)])


def lstm_in_if_case(root):
    """An LSTM in each branch of an If (the streaming VAD models pick one by sample rate)."""
    rng = np.random.default_rng(7)
    T, B, I, H = 4, 2, 3, 3
    x = rng.standard_normal((T, B, I)).astype(np.float32)
    weights = []
    for _ in range(2):
        weights.append(((rng.standard_normal((1, 4 * H, I)) * 0.6).astype(np.float32),
                        (rng.standard_normal((1, 4 * H, H)) * 0.6).astype(np.float32)))

    def branch(k):
        w, r = weights[k]
        inits = [numpy_helper.from_array(w, f"W{k}"), numpy_helper.from_array(r, f"R{k}")]
        node = helper.make_node("LSTM", ["X", f"W{k}", f"R{k}"], ["", f"h{k}"], hidden_size=H)
        return helper.make_graph([node], f"branch{k}", [], [helper.make_tensor_value_info(f"h{k}", F32, None)], inits)

    node = helper.make_node("If", ["cond"], ["Y_h"], then_branch=branch(0), else_branch=branch(1))
    graph = helper.make_graph([node], "lstm_in_if",
                              [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                               helper.make_tensor_value_info("X", F32, x.shape)],
                              [helper.make_tensor_value_info("Y_h", F32, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    sets = []
    for k, cond in ((0, True), (1, False)):
        expected = reference("LSTM", x, weights[k][0], weights[k][1])[1]
        sets.append(([np.array(cond), x], [expected]))
    write_case(root, "rnn_lstm_in_if", model, sets)


# -------------------------------------------------------------------- torch


def torch_case(root, name, module, inputs, input_names, output_names, stream_chunks=0):
    import torch
    module.eval()
    buf = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(module, tuple(inputs), buf, input_names=input_names, output_names=output_names,
                          opset_version=14)
        model = onnx.load_from_string(buf.getvalue())
        sets = []
        current = list(inputs)
        for chunk in range(max(stream_chunks, 1)):
            outs = module(*current)
            outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
            flat = []
            for o in outs:
                flat.extend(o if isinstance(o, (tuple, list)) else [o])
            sets.append(([t.numpy() for t in current], [t.numpy() for t in flat]))
            # Streaming: the next chunk starts from this chunk's final state.
            current = [torch.randn_like(current[0])] + [t for t in flat[1:]]
    write_case(root, name, model, sets)


def torch_cases(root):
    import torch
    torch.manual_seed(0)

    class Wrap(torch.nn.Module):
        def __init__(self, rnn):
            super().__init__()
            self.rnn = rnn

        def forward(self, x, *state):
            if len(state) == 2:
                y, (h, c) = self.rnn(x, (state[0], state[1]))
                return y, h, c
            y, h = self.rnn(x, state[0])
            return y, h

    T, B, I, H = 5, 2, 4, 6
    lstm = torch.nn.LSTM(I, H, num_layers=2, bidirectional=True, batch_first=True)
    torch_case(root, "rnn_torch_lstm_bidir_2layer_batch_first", Wrap(lstm),
               [torch.randn(B, T, I), torch.randn(4, B, H), torch.randn(4, B, H)], ["x", "h0", "c0"],
               ["y", "h", "c"])
    gru = torch.nn.GRU(I, H, bidirectional=True)
    torch_case(root, "rnn_torch_gru_bidir", Wrap(gru), [torch.randn(T, B, I), torch.randn(2, B, H)], ["x", "h0"],
               ["y", "h"])
    rnn = torch.nn.RNN(I, H, num_layers=2, nonlinearity="relu")
    torch_case(root, "rnn_torch_rnn_relu_2layer", Wrap(rnn), [torch.randn(T, B, I), torch.randn(2, B, H)],
               ["x", "h0"], ["y", "h"])
    rnn_tanh = torch.nn.RNN(I, H, bidirectional=True, batch_first=True)
    torch_case(root, "rnn_torch_rnn_tanh_bidir_batch_first", Wrap(rnn_tanh),
               [torch.randn(B, T, I), torch.randn(2, B, H)], ["x", "h0"], ["y", "h"])
    stream = torch.nn.LSTM(I, H)
    torch_case(root, "rnn_torch_lstm_streaming", Wrap(stream),
               [torch.randn(3, 1, I), torch.zeros(1, 1, H), torch.zeros(1, 1, H)], ["chunk", "h_in", "c_in"],
               ["y", "h_out", "c_out"], stream_chunks=3)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    helper_case(root, "rnn_lstm_seq_lens_bidir", "LSTM", with_lens=True, with_init=True, direction="bidirectional")
    helper_case(root, "rnn_lstm_peepholes_clip_layout1", "LSTM", with_p=True, with_init=True, layout=1, clip=0.7)
    helper_case(root, "rnn_lstm_activations_reverse", "LSTM", direction="reverse", with_lens=True,
                acts=["HardSigmoid", "LeakyRelu", "ScaledTanh"], alphas=[0.3, 0.2, 0.8], betas=[0.4, 1.2])
    helper_case(root, "rnn_lstm_input_forget_yh_only", "LSTM", input_forget=1, with_b=False, outputs=("Y_h",))
    helper_case(root, "rnn_gru_reset_before_seq_lens", "GRU", with_lens=True, with_init=True,
                direction="bidirectional", linear_before_reset=0)
    helper_case(root, "rnn_gru_linear_before_reset_layout1_clip", "GRU", layout=1, clip=0.5, with_init=True,
                linear_before_reset=1, acts=["Softsign", "Elu"], alphas=[0.7])
    helper_case(root, "rnn_rnn_affine_reverse_seq_lens", "RNN", direction="reverse", with_lens=True,
                acts=["Affine"], alphas=[0.5], betas=[0.1])
    helper_case(root, "rnn_rnn_bidir_opset7", "RNN", direction="bidirectional", with_init=True, opset=7,
                acts=["Tanh", "Softplus"])
    lstm_in_if_case(root)
    torch_cases(root)
    print(f"wrote {len(os.listdir(root))} recurrent cases into {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

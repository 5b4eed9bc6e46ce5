#!/usr/bin/python3
"""How far fp16 *storage* alone moves a zoo model's output from PyTorch fp32.

Kiln's fp16 mode stores weights and activations as fp16 and computes in fp32.
This rebuilds a model exactly as export_zoo.py did (same seed, head init and
BatchNorm calibration), rounds every parameter, buffer, the input and every
leaf module's output to fp16 (arithmetic stays fp32), and prints max|Δ|
against the exported output.npy next to the fp16 bound 2e-2 * max(1, max|ref|).
When Kiln's fp16 error is about this large, a failure is the format's, not a
kernel's.

--policy replays ZOO_DIR/MODEL/model.onnx instead (BatchNorm already folded,
as Kiln sees it; ops of the ResNet family only) three ways: every float tensor
fp16; Kiln's mixed-precision policy (planner/precision_policy.h: a Conv whose
weight has no more elements than one image of its output keeps its weight and
bias fp32); and, for comparison, all weights fp32 with fp16 activations.

Usage: fp16_storage_error.py [--policy] ZOO_DIR MODEL [MODEL ...]
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_zoo  # noqa: E402


def simulate(zoo, name):
    import torch

    model, example, _ = export_zoo.build(name)
    export_zoo.initialize_zero_heads(model)
    export_zoo.calibrate_batchnorm(model, example)
    model.eval()
    x = torch.from_numpy(np.load(os.path.join(zoo, name, "input.npy")))
    ref = np.load(os.path.join(zoo, name, "output.npy"))

    def to_f16(t):
        return t.half().float()

    with torch.no_grad():
        fp32_error = float(np.abs(model(x).numpy() - ref).max())
        for p in model.parameters():
            p.copy_(to_f16(p))
        for b in model.buffers():
            if b.dtype == torch.float32:
                b.copy_(to_f16(b))
        for m in model.modules():
            if not list(m.children()):
                m.register_forward_hook(lambda _m, _i, o: to_f16(o) if isinstance(o, torch.Tensor) else o)
        y = model(to_f16(x)).numpy()
    scale = max(1.0, float(np.abs(ref).max()))
    err = float(np.abs(y - ref).max())
    print(f"{name}: fp16 storage max|delta| {err:.4g}, bound {0.02 * scale:.4g} "
          f"({'within' if err <= 0.02 * scale else 'OVER'}); rebuilt fp32 vs export {fp32_error:.2g}")


def replay(path, x, keep_f32):
    """Runs the ONNX graph at `path` on `x` with fp32 arithmetic, storing every
    float tensor as fp16 except the initializers named in keep_f32(graph)."""
    import onnx
    import torch
    import torch.nn.functional as F
    from onnx import helper, numpy_helper

    graph = onnx.load(path).graph
    keep = keep_f32(graph)
    env = {}
    for init in graph.initializer:
        t = torch.from_numpy(numpy_helper.to_array(init).copy())
        env[init.name] = t if init.name in keep or not t.is_floating_point() else t.half().float()
    env[graph.input[0].name] = torch.from_numpy(x).half().float()
    with torch.no_grad():
        for node in graph.node:
            a = {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
            ins = [env[i] for i in node.input]
            if node.op_type == "Conv":
                p = a.get("pads", [0, 0, 0, 0])
                if p[:2] != p[2:]:
                    raise ValueError(f"{node.name}: asymmetric pads {p}")
                y = F.conv2d(ins[0], ins[1], ins[2] if len(ins) > 2 else None, a.get("strides", 1), p[:2],
                             a.get("dilations", 1), a.get("group", 1))
            elif node.op_type == "Relu":
                y = F.relu(ins[0])
            elif node.op_type == "Add":
                y = ins[0] + ins[1]
            elif node.op_type == "MaxPool":
                y = F.max_pool2d(ins[0], a["kernel_shape"], a.get("strides"), a.get("pads", [0, 0])[:2])
            elif node.op_type == "GlobalAveragePool":
                y = ins[0].mean((2, 3), keepdim=True)
            elif node.op_type == "Flatten":
                y = ins[0].flatten(a.get("axis", 1))
            elif node.op_type == "Gemm":
                b = ins[1].t() if a.get("transB", 0) else ins[1]
                y = a.get("alpha", 1.0) * (ins[0] @ b) + a.get("beta", 1.0) * ins[2]
            else:
                raise ValueError(f"--policy replays ResNet-family ops only; {node.name} is {node.op_type}")
            env[node.output[0]] = y.half().float()
    return env[graph.output[0].name].numpy()


def policy_f32(graph):
    """The initializers Kiln's policy keeps fp32 (see planner/precision_policy.h)."""
    from onnx import shape_inference

    inferred = shape_inference.infer_shapes(graph_model(graph)).graph
    dims = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in list(inferred.value_info) + list(inferred.output)}
    sizes = {i.name: int(np.prod(i.dims)) for i in graph.initializer}
    keep = set()
    for node in graph.node:
        if node.op_type in ("Conv", "ConvTranspose") and node.input[1] in sizes:
            image = int(np.prod([d or 1 for d in dims[node.output[0]][1:]]))
            if sizes[node.input[1]] <= image:
                keep.update(node.input[1:3])
    return keep


def graph_model(graph):
    from onnx import helper
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def simulate_policy(zoo, name):
    x = np.load(os.path.join(zoo, name, "input.npy"))
    ref = np.load(os.path.join(zoo, name, "output.npy"))
    path = os.path.join(zoo, name, "model.onnx")
    bound = 0.02 * max(1.0, float(np.abs(ref).max()))
    weights = lambda g: {i.name for i in g.initializer}  # noqa: E731
    for label, keep in (("all fp16", lambda g: set()), ("policy", policy_f32), ("weights fp32", weights)):
        err = float(np.abs(replay(path, x, keep) - ref).max())
        print(f"{name}: {label}: max|delta| {err:.4g}, bound {bound:.4g} ({err / bound:.2f} of it)")


def main():
    args = sys.argv[1:]
    policy = "--policy" in args
    args = [a for a in args if a != "--policy"]
    if len(args) < 2:
        print(__doc__)
        return 2
    for name in args[1:]:
        (simulate_policy if policy else simulate)(args[0], name)
    return 0


if __name__ == "__main__":
    sys.exit(main())

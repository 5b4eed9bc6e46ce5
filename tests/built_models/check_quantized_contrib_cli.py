#!/usr/bin/python3
"""Runs ONNX Runtime-style quantized convnets through `kiln run` (the default pass pipeline).

For the QOperator (com.microsoft QLinear* ops) and QDQ (com.microsoft
QuantizeLinear/DequantizeLinear) forms of one network that
generate_quantized_contrib.py writes into NODE_DIR, runs `kiln run` on
BACKEND (reference or vulkan) and requires the outputs to equal the
expected ones bit for bit (power-of-two scales make them exact), and on
Vulkan no host fallback, with the integer GEMMs on packed int8 dot products
(--int8-dot on, where the device has them) and on the scalar int32 kernel
(--int8-dot off); the profiled kernel names must show the path taken. kiln_onnx_node_test runs the same cases without the
pass pipeline; this checks that the passes keep the com.microsoft ops intact.
Usage: check_quantized_contrib_cli.py KILN BACKEND WORKDIR NODE_DIR   (exit 77: no Vulkan device)
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from vulkan_gate import vulkan_gate

CASES = ("quant_ort_qoperator_convnet", "quant_ort_qdq_convnet")


def devices_have_int8_dot(kiln):
    """Whether every Vulkan device `kiln info` lists has packed int8 dot products."""
    p = subprocess.run([kiln, "info", "--json"], capture_output=True, text=True)
    devices = json.loads(p.stdout).get("devices") or [] if p.returncode == 0 else []
    return bool(devices) and all(d.get("shader_integer_dot_product") for d in devices)


def check_int8_dot_kernels(name, stats_file, extra, int8_dot_device):
    """--int8-dot off: no dot-product kernel; on, on a device with them, where
    integer GEMMs run (the QOperator form; the QDQ one runs its float graph):
    some."""
    with open(stats_file) as f:
        kernels = set(re.findall(r'"kernel": *"([^"]+)"', f.read()))
    dot = sorted(k for k in kernels if "_int8dot_" in k)
    scalar = [k for k in kernels if "_int_tile" in k]
    if "off" in extra and dot:
        raise AssertionError(f"{name}: --int8-dot off ran dot-product kernels {dot}")
    if "on" in extra and int8_dot_device and (dot or scalar) and not dot:
        raise AssertionError(f"{name}: --int8-dot on ran no dot-product kernel: {sorted(kernels)}")


def run_case(kiln, backend, work, case_dir, extra=(), int8_dot_device=False):
    name = os.path.basename(case_dir)
    label = "".join(" " + e for e in extra)
    stats_file = os.path.join(work, f"{name}_stats.json")
    path = os.path.join(case_dir, "model.onnx")
    model = onnx.load(path)
    data = os.path.join(case_dir, "test_data_set_0")
    x_file = os.path.join(work, f"{name}_x.npy")
    np.save(x_file, numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "input_0.pb"))))
    cmd = [kiln, "run", path, "--backend", backend, "--input", f"{model.graph.input[0].name}={x_file}"] + list(extra)
    if extra:
        cmd += ["--profile", "--stats", stats_file]
    outs = [o.name for o in model.graph.output]
    for o in outs:
        cmd += ["--output", f"{o}={os.path.join(work, f'{name}_{o}.npy')}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    log = p.stdout + p.stderr
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{log}")
    if backend == "vulkan":
        fallbacks = re.search(r"(\d+) host fallbacks", log)
        if not fallbacks or int(fallbacks.group(1)) != 0:
            raise AssertionError(f"{name}: expected no host fallback on Vulkan:\n{log}")
    if extra:
        check_int8_dot_kernels(name, stats_file, extra, int8_dot_device)
    for k, o in enumerate(outs):
        want = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f"output_{k}.pb")))
        got = np.load(os.path.join(work, f"{name}_{o}.npy"))
        if got.dtype != want.dtype or not np.array_equal(got, want):
            bad = int(np.count_nonzero(got != want)) if got.shape == want.shape else got.size
            raise AssertionError(f"{name} [{backend}{label}]: output {o}: {bad} of {want.size} values differ from "
                                 f"ORT's semantics")
    print(f"{name} [{backend}{label}]: {len(outs)} outputs exact")


def main():
    if len(sys.argv) != 5 or sys.argv[2] not in ("reference", "vulkan"):
        print(__doc__)
        return 2
    kiln, backend, work, node_dir = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    if backend == "vulkan":
        gate = vulkan_gate(kiln)
        if gate is not None:
            return gate
    flags = [["--int8-dot", "on"], ["--int8-dot", "off"]] if backend == "vulkan" else [[]]
    int8_dot_device = backend == "vulkan" and devices_have_int8_dot(kiln)
    for case in CASES:
        for extra in flags:
            run_case(kiln, backend, work, os.path.join(node_dir, case), extra, int8_dot_device)
    return 0


if __name__ == "__main__":
    sys.exit(main())

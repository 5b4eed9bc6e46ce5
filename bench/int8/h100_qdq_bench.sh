#!/usr/bin/env bash
# Issue 20's int8 measurement on the GPU machine, in one device-tool call
# (carry .gl and a staged build: bench/stage_kiln.sh BUILD devcarry):
# a static-QDQ resnet50 (bench/int8/qdq_resnet.py: per-channel int8
# weights, per-tensor uint8 activations calibrated on random inputs) and the
# zoo's float resnet50, exported here with this machine's PyTorch, then
# `kiln bench` on, in each round, one configuration after another:
#   qdq int8        the QDQ model with --int8-dot on (fuse-qdq: QLinearConv on
#                   packed int8 dot products)
#   qdq int8 nocm   the same with --coopmat off: the integer kernels on
#                   packed int8 dot products, not int8 cooperative matrices
#                   (tensor cores), where the device has those
#   qdq auto        the same with the default --int8-dot auto (what the
#                   device decides)
#   qdq int-scalar  fuse-qdq through --passes, --int8-dot off: the integer
#                   kernels on the scalar int32 GEMM (what dot products buy)
#   qdq float fp32  --int8-dot off: the QDQ model's float graph
#   qdq float fp16  the same in fp16
#   r50 fp16 / fp32 the float resnet50
# and prints a table per round: GPU median ms, wall median ms, dispatches,
# the int8 decision (and how many convs/gemms fuse-qdq rewrote), and max|d|
# against the output.npy beside each model (the QDQ model: its float QDQ
# semantics in numpy, with the output's quantization step; the float model:
# PyTorch's output).
#   ROUNDS (default 2) rounds, alternating the configurations, so the table
#   shows the spread; MIN_TIME (default 1) seconds of timed runs and WARMUP
#   (default 20) warm-up runs each; SIZE (default 224) the QDQ model's input
#   side. KILN and VK_DRIVER_FILES override the staged binary and the NVIDIA
#   driver (a local trial on lavapipe: KILN=build/tools/kiln/kiln
#   VK_DRIVER_FILES=... SIZE=64 ROUNDS=1 WARMUP=1 MIN_TIME=0.1).
# Leaves $OUT/int8.tar.gz (JSON, text, table) and prints the tables.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=/tmp/kiln-int8-bench
mkdir -p "$out" "${OUT:-$root/out}"
for f in "$root"/.gl/*.deb; do [ -e "$f" ] && dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
export LD_LIBRARY_PATH=$root/devcarry/lib PYTHONUNBUFFERED=1 KILN_CACHE_DIR=/tmp/kiln-cache
K=${KILN:-$root/devcarry/bin/kiln}
size=${SIZE:-224}
Q=/tmp/kiln-int8/resnet50_qdq_$size
Z=${ZOO:-/tmp/kiln-zoo}
rounds=${ROUNDS:-2}
min_time=${MIN_TIME:-1}
warmup=${WARMUP:-20}

t0=$(date +%s)
[ -f $Q/model.onnx ] || timeout 300 python3 "$root/bench/int8/qdq_resnet.py" $Q --model resnet50 --size "$size" --calib 4 \
  > "$out/qdq_export.log" 2>&1
tail -1 "$out/qdq_export.log"
[ -f $Z/resnet50/model.onnx ] || timeout 200 python3 "$root/bench/zoo/export.py" $Z --models resnet50 \
  > "$out/zoo_export.log" 2>&1
tail -1 "$out/zoo_export.log"
echo "models ready after $(( $(date +%s) - t0 )) s"
"$K" info | grep -E "^device|^  int8:" | head -4

# The default pipeline with fuse-qdq placed before fold-constants, once
# (what --int8-dot on does, spelled out, so --int8-dot off can keep the
# integer kernels on the scalar GEMM).
with_qdq=remove-noops,fold-shapes,fuse-qdq,fold-constants,fuse-conv-batchnorm,cse,dce,rdp,fusion,layout,memplan-order
configs=(
  "qdq_int8|$Q/model.onnx|--int8-dot on"
  "qdq_int8_nocm|$Q/model.onnx|--int8-dot on --coopmat off"
  "qdq_auto|$Q/model.onnx|"
  "qdq_int_scalar|$Q/model.onnx|--int8-dot off --passes $with_qdq"
  "qdq_float_fp32|$Q/model.onnx|--int8-dot off"
  "qdq_float_fp16|$Q/model.onnx|--int8-dot off --precision fp16"
  "r50_fp16|$Z/resnet50/model.onnx|--precision fp16"
  "r50_fp32|$Z/resnet50/model.onnx|"
)
# The integer path against ONNX's integer semantics: Kiln's reference
# backend runs the same fuse-qdq graph (QLinearConv: exact int32 sums, the
# ONNX requantization) on the CPU. output.npy is numpy's float QDQ
# simulation instead, which a 54-conv network leaves some quantization
# steps away (lavapipe, 224: 6 steps, with the Vulkan integer path equal to
# the reference backend's bit for bit, session 16).
"$K" run "$Q/model.onnx" --int8-dot on --input input="$Q/input.npy" --output output="$out/int_device.npy" \
  > "$out/int_device.log" 2>&1
timeout 300 "$K" run "$Q/model.onnx" --backend reference --int8-dot on --input input="$Q/input.npy" \
  --output output="$out/int_reference.npy" > "$out/int_reference.log" 2>&1
python3 - "$out" "$Q/quant.json" <<'EOF' | tee "$out/int_vs_reference.txt"
import json, sys
import numpy as np
out, quant = sys.argv[1], sys.argv[2]
step = json.load(open(quant))["output_step"]
try:
    a, b = np.load(f"{out}/int_device.npy"), np.load(f"{out}/int_reference.npy")
    print(f"integer path, device vs Kiln's reference backend: max {np.abs(a - b).max() / step:.2f} steps, "
          f"{int((np.abs(a - b) > step / 2).sum())} of {a.size} outputs differ")
except (OSError, ValueError) as e:
    print(f"integer path vs reference backend: not compared ({e})")
EOF
for round in $(seq 1 "$rounds"); do
  for c in "${configs[@]}"; do
    IFS='|' read -r name model flags <<< "$c"
    # shellcheck disable=SC2086
    timeout 120 "$K" bench "$model" $flags --warmup "$warmup" --min-time "$min_time" \
      --json "$out/${name}_$round.json" > "$out/${name}_$round.txt" 2>&1 || echo "$name round $round: failed (rc $?)"
  done
done
python3 - "$out" "$rounds" "$Q/quant.json" <<'EOF' | tee "$out/table.md"
import json, os, sys
out, rounds, quant = sys.argv[1], int(sys.argv[2]), sys.argv[3]
step = json.load(open(quant))["output_step"] if os.path.exists(quant) else None
names = ["qdq_int8", "qdq_int8_nocm", "qdq_auto", "qdq_int_scalar", "qdq_float_fp32", "qdq_float_fp16", "r50_fp16", "r50_fp32"]
for r in range(1, rounds + 1):
    print(f"\nround {r}" + (f" (QDQ output step {step:.4g})" if step else ""))
    print("| config | GPU median ms | wall median ms | dispatches | int8 kernels | max abs d vs output.npy |")
    print("|---|---|---|---|---|---|")
    for n in names:
        path = os.path.join(out, f"{n}_{r}.json")
        try:
            m = json.load(open(path))["models"][0]
        except (OSError, ValueError, KeyError, IndexError) as e:
            print(f"| {n} | failed: {e} | | | | |")
            continue
        if m.get("status") != "ok":
            print(f"| {n} | {m.get('status')}: {m.get('error')} | | | | |")
            continue
        gpu = (m.get("gpu") or {}).get("median_ms")
        wall = (m.get("wall") or {}).get("median_ms")
        q = m.get("int8_kernels") or {}
        decision = (f"{'integer' if q.get('integer') else 'float'}, {q.get('rewritten', 0)} rewritten"
                    if q else "-")
        d = m.get("reference_max_abs_diff")
        dtext = "-" if d is None else f"{d:.4g}" + (f" ({d / step:.2f} steps)" if step and n.startswith("qdq") else "")
        fmt = lambda v: "-" if v is None else f"{v:.3f}"
        print(f"| {n} | {fmt(gpu)} | {fmt(wall)} | {m.get('dispatches')} | {decision} | {dtext} |")
EOF
for f in "$out"/qdq_auto_1.txt; do grep -h "int8 kernels" "$f"; done
echo "total $(( $(date +%s) - t0 )) s"
tar -czf "${OUT:-$root/out}/int8.tar.gz" -C "$out" .

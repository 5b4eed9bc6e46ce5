#!/usr/bin/env bash
# The per-op micro-benchmarks on a CUDA GPU machine, Kiln and PyTorch side by
# side in one run (carry .gl and a staged build: bench/stage_kiln.sh BUILD
# devcarry). The peaks the fractions refer to are measured here, by PyTorch:
# GB/s of its 64 MiB relu (read + write), TFLOP/s of its 4096^3 matmul per
# precision.
#   usage: [MIN_TIME=0.05] [PRECISIONS=fp32,fp16] [STEADY=1] bench/kernels/run_gpu.sh CARRY_DIR OUT_DIR
#   (MIN_TIME: GPU seconds per case and precision, Google Benchmark's min_time;
#   PRECISIONS: the precisions Kiln runs; STEADY=0 times Kiln with its
#   operands uploaded and downloaded on every run, as before session 20 —
#   by default they are built on the device, kiln_kernel_bench --steady,
#   so that Kiln runs back to back as PyTorch's timed launches do)
set -euo pipefail
carry=${1:?usage: run_gpu.sh CARRY_DIR OUT_DIR}
out=${2:?usage: run_gpu.sh CARRY_DIR OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export LD_LIBRARY_PATH=$carry/lib
bench=$carry/bin/kiln_kernel_bench
"$bench" --list-cases > "$out/cases.json"
precisions=${PRECISIONS:-fp32,fp16}
# PyTorch runs both precisions whatever Kiln runs: the peaks come from both.
python3 "$here/torch_kernels.py" "$out/cases.json" "$out/torch.json" > "$out/torch.log"
read -r gbs tf16 tf32 < <(python3 - "$out/torch.json" <<'PY'
import json, sys
rows = {(r["name"], r["precision"]): r for r in json.load(open(sys.argv[1]))}
relu = rows[("relu_64mib", "fp32")]
print(2 * 64 * 2**20 / (relu["ms"] / 1e3) / 1e9,
      rows[("gemm_m4096_n4096_k4096", "fp16")]["tflops"], rows[("gemm_m4096_n4096_k4096", "fp32")]["tflops"])
PY
)
echo "measured peaks (PyTorch): $gbs GB/s, $tf16 TFLOP/s fp16, $tf32 TFLOP/s fp32" | tee "$out/peaks.txt"
steady=(); [ "${STEADY:-1}" = 0 ] || steady=(--steady)
"$bench" "${steady[@]}" --precision="$precisions" --peak-gbs="$gbs" --peak-tflops="$tf16" --peak-tflops-fp32="$tf32" --benchmark_min_time="${MIN_TIME:-0.05}" \
  --benchmark_out="$out/kiln.json" --benchmark_out_format=json > "$out/kiln.log" 2>&1 || echo "kiln_kernel_bench failed" >&2
python3 "$here/compare.py" "$out/kiln.json" "$out/torch.json" | tee "$out/compare.md"

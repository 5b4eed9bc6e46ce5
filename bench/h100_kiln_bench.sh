#!/usr/bin/env bash
# Issue 6 on the GPU machine: `kiln bench` twice on the benchmark models (the
# second run checks the first's spread), once with --ablation, and the
# PyTorch peer (eager, reduce-overhead) in the same session; then
# `kiln bench compare` renders them side by side. Carry .gl and a staged
# build (bench/stage_kiln.sh build devcarry); writes into $OUT/kb.
# usage (device tool): bash bench/h100_kiln_bench.sh
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/out}/kb
mkdir -p "$out"
for f in "$root"/.gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$root/devcarry/lib PYTHONUNBUFFERED=1
K=$root/devcarry/bin/kiln
Z=/tmp/kiln-bench-models
models=${MODELS:-mobilenet_v2,resnet50,swin_t,vit_b_16,convnext_tiny}
[ -f $Z/bench_models.json ] || timeout 300 python3 "$root/bench/export_models.py" --out $Z --models "$models" > "$out/export.log" 2>&1
paths=(); for m in ${models//,/ }; do paths+=("$Z/$m/model.onnx"); done
for run in 1 2; do
  timeout 150 "$K" bench "${paths[@]}" --warmup 20 --min-time 1 --json "$out/kiln_bench_$run.json" \
    --csv "$out/kiln_bench_$run.csv" > "$out/kiln_bench_$run.txt" 2>&1
done
timeout 150 "$K" bench "$Z/resnet50/model.onnx" "$Z/mobilenet_v2/model.onnx" --ablation --warmup 10 --iters 30 \
  --json "$out/kiln_bench_ablation.json" > "$out/kiln_bench_ablation.txt" 2>&1
timeout 200 python3 "$root/bench/torch_peer.py" --json "$out/torch.json" --models "$models" --precisions fp32 \
  --engines eager,compile-reduce-overhead --budget-s 180 > "$out/torch.log" 2>&1
"$K" bench compare "$out/kiln_bench_1.json" "$out/kiln_bench_2.json" "$out/torch.json" --out "$out" > "$out/compare.txt" 2>&1
cat "$out/kiln_bench_1.txt" "$out/kiln_bench_2.txt" "$out/compare.txt"; tail -30 "$out/kiln_bench_ablation.txt"

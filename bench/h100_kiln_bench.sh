#!/usr/bin/env bash
# Issue 6 on the GPU machine, in two device-tool calls of under 10 minutes
# (the machine stays warm between them, so the zoo exported by the first is
# still in /tmp): carry .gl and a staged build (bench/stage_kiln.sh BUILD
# devcarry).
#   PHASE=kiln  bash bench/h100_kiln_bench.sh   exports bench/zoo's models with
#               this machine's PyTorch, runs `kiln bench` twice on all of them
#               (the second run checks the first's spread) and once with
#               --ablation on two;
#   PHASE=torch bash bench/h100_kiln_bench.sh   runs the PyTorch peer (eager,
#               torch.compile reduce-overhead) on the same models, in kiln
#               bench's schema, and `kiln bench compare` over everything.
# Each phase leaves $OUT/<phase>.tar.gz (the JSON, CSV, logs, compare.md/.svg:
# the device tool returns few files) and prints a summary.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
phase=${PHASE:?PHASE=kiln or PHASE=torch}
out=/tmp/kiln-h100-bench   # both phases write here; each tars what it has
mkdir -p "$out/ablation" "$out/torch" "${OUT:-$root/out}"
for f in "$root"/.gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$root/devcarry/lib PYTHONUNBUFFERED=1
K=$root/devcarry/bin/kiln
Z=/tmp/kiln-zoo
models=${MODELS:-mobilenet_v2,resnet50,efficientnet_b0,convnext_tiny,swin_t,vit_b_16}
lengths=${SEQ_LENGTHS:-16,128,384}
names=${models//,/ }; for l in ${lengths//,/ }; do names+=" bert_base_s$l"; done
paths=(); for m in $names; do paths+=("$Z/$m/model.onnx"); done

if [ "$phase" = kiln ]; then
  # torch 2.11's TorchScript exporter bakes the traced length into a Reshape
  # of the encoder: one export per length here.
  [ -f $Z/zoo.json ] || timeout 240 python3 "$root/bench/zoo/export.py" $Z --models "$models,bert_base" \
    --seq-lengths "$lengths" --static-lengths > "$out/export.log" 2>&1
  tail -3 "$out/export.log"
  for run in 1 2; do
    timeout 140 "$K" bench "${paths[@]}" --warmup 20 --min-time 1 --peak-gbps 3350 --peak-gflops 67000 \
      --json "$out/kiln_bench_$run.json" --csv "$out/kiln_bench_$run.csv" > "$out/kiln_bench_$run.txt" 2>&1
  done
  timeout 100 "$K" bench "$Z/mobilenet_v2/model.onnx" "$Z/bert_base_s128/model.onnx" --ablation --warmup 10 \
    --iters 30 --json "$out/ablation/kiln_bench_ablation.json" > "$out/kiln_bench_ablation.txt" 2>&1
  cat "$out/kiln_bench_1.txt" "$out/kiln_bench_2.txt"; tail -40 "$out/kiln_bench_ablation.txt"
else
  torch_models=${names// /,}
  timeout 420 python3 "$root/bench/torch_peer.py" --json "$out/torch/torch.json" --cli-json-dir "$out/torch" \
    --models "$torch_models" --precisions fp32 --engines eager,compile-reduce-overhead --budget-s 400 \
    > "$out/torch.log" 2>&1
  tail -25 "$out/torch.log"
  "$K" bench compare "$out/kiln_bench_1.json" "$out/kiln_bench_2.json" "$out"/torch/torch-*-fp32.json --out "$out" \
    > "$out/compare.txt" 2>&1
  cat "$out/compare.txt"
fi
tar -czf "${OUT:-$root/out}/$phase.tar.gz" -C "$out" .

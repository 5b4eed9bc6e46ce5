#!/usr/bin/env bash
# The fusion plugin's benchmark (issue 14) on the GPU machine, in device-tool
# calls of under 10 minutes each (the machine stays warm between them, so the
# zoo exported by the first is still in /tmp). Carry .gl and a staged build
# (bench/stage_kiln.sh BUILD devcarry).
#   PHASE=kiln   exports the models with this machine's PyTorch, then runs
#                `kiln bench` on all of them in fp32 and fp16, each with the
#                default pipeline and with --disable-pass fusion (the
#                ablation), and checks every output against PyTorch's
#                (buffer storage in kiln bench, then image storage with the
#                validation layer on);
#   PHASE=torch  PRECISION=fp32|fp16  times torch.compile(mode=
#                "reduce-overhead") on the same models in kiln bench's schema;
#   PHASE=report `kiln bench compare` over everything, plus the dispatch and
#                fused-kernel counts per model and configuration.
#   QUICK=1      (kiln phase) only the default pipeline, no ablation and no
#                image-storage check: a run that fits one call with the
#                torch phase;  TORCH_BUDGET_S (default 540) bounds the torch
#                phase.
# Each phase leaves $OUT/<phase>.tar.gz and prints a summary.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
phase=${PHASE:?PHASE=kiln, torch or report}
out=/tmp/kiln-fusion-bench
mkdir -p "$out/torch" "${OUT:-$root/out}"
for f in "$root"/.gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$root/devcarry/lib PYTHONUNBUFFERED=1 KILN_CACHE_DIR=/tmp/kiln-cache
K=$root/devcarry/bin/kiln
Z=/tmp/kiln-zoo
models=${MODELS:-mobilenet_v2,resnet50,efficientnet_b0,mnasnet1_0,convnext_tiny,swin_t,vit_b_16}
names=${models//,/ }" bert_base_s128"
paths=(); for m in $names; do paths+=("$Z/$m/model.onnx"); done

case "$phase" in
kiln)
  [ -f $Z/zoo.json ] || timeout 300 python3 "$root/bench/zoo/export.py" $Z --models "$models,bert_base" \
    --seq-lengths 128 --static-lengths > "$out/export.log" 2>&1
  tail -3 "$out/export.log"
  for p in fp32 fp16; do
    timeout 200 "$K" bench "${paths[@]}" --precision $p --warmup 20 --min-time 1 \
      --json "$out/kiln_$p.json" --csv "$out/kiln_$p.csv" > "$out/kiln_$p.txt" 2>&1
    [ -n "${QUICK:-}" ] && continue
    timeout 200 "$K" bench "${paths[@]}" --precision $p --disable-pass fusion --warmup 20 --min-time 1 \
      --json "$out/kiln_${p}_nofusion.json" --csv "$out/kiln_${p}_nofusion.csv" > "$out/kiln_${p}_nofusion.txt" 2>&1
  done
  cat "$out"/kiln_*.txt
  [ -n "${QUICK:-}" ] && { tar -czf "${OUT:-$root/out}/$phase.tar.gz" -C "$out" .; exit 0; }
  # kiln bench checks buffer storage against PyTorch; image storage here,
  # with the validation layer on.
  for m in $names; do
    M=$Z/$m
    for cfg in "fp32 1e-3" "fp16 2e-2"; do
      set -- $cfg
      log=$(timeout 60 "$K" run $M/model.onnx --backend vulkan --validate --storage image --precision $1 \
        --input input=$M/input.npy --output output=/tmp/o.npy 2>&1)
      verdict=$(python3 "$root/tests/models/compare_npy.py" $M/output.npy /tmp/o.npy --rtol $2 2>&1 | tail -1)
      echo "$m image $1: $(echo "$log" | grep -o 'dispatches [0-9]* (fused [0-9]*)'); $verdict;" \
        "validation-error-lines $(echo "$log" | grep -c 'validation error')"
    done
  done 2>&1 | tee "$out/image_check.txt"
  ;;
torch)
  p=${PRECISION:-fp32}
  budget=${TORCH_BUDGET_S:-540}
  timeout $((budget + 20)) python3 "$root/bench/torch_peer.py" --json "$out/torch/torch_$p.json" --cli-json-dir "$out/torch" \
    --models "${names// /,}" --precisions "$p" --engines compile-reduce-overhead --budget-s $budget \
    > "$out/torch_$p.log" 2>&1
  tail -20 "$out/torch_$p.log"
  ;;
report)
  for p in fp32 fp16; do
    "$K" bench compare "$out/kiln_$p.json" "$out/kiln_${p}_nofusion.json" "$out"/torch/torch-*-"$p".json \
      --out "$out/compare_$p" > "$out/compare_$p.txt" 2>&1
    cat "$out/compare_$p.txt"
  done
  python3 "$root/bench/fusion_counts.py" "$out"/kiln_*.json | tee "$out/counts.md"
  ;;
esac
tar -czf "${OUT:-$root/out}/$phase.tar.gz" -C "$out" .

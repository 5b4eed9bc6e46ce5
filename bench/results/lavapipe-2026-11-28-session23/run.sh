#!/usr/bin/env bash
# Session 23 on lavapipe: convnext_tiny with the depthwise convs inside
# their LayerNorms (KILN_FUSION_DW_NORM unset: this device's default) and
# without (off), three alternating rounds per storage. Usage: run.sh OUT_DIR
set -u
out=${1:?usage: run.sh OUT_DIR}; mkdir -p "$out"
K=${KILN:-build/tools/kiln/kiln}
M=/tmp/kiln-zoo/convnext_tiny/model.onnx
for r in 1 2 3; do for s in auto buffer image; do for dn in default off; do
  env $([ $dn = off ] && echo KILN_FUSION_DW_NORM=off) $K bench $M --storage $s --warmup 1 --iters 3 \
    --json "$out/r${r}_${s}_${dn}.json" > "$out/r${r}_${s}_${dn}.txt" 2>&1
done; done; done

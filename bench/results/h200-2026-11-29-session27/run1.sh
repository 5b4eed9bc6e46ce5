#!/usr/bin/env bash
# Session 27, first call: a sweep of the tiled GEMMs' depth, split and tile
# size ($KILN_GEMM_SWEEP) on the convolutional zoo, fp16 and fp32, per-kernel
# GPU times in the JSON; the default ("") first and last to see drift.
set -u
root=$(pwd)
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res1; mkdir -p $res /tmp/new
tar xJf build-carry/new.txz -C /tmp/new
export LD_LIBRARY_PATH=/tmp/new/devcarry/lib KILN_CACHE_DIR=/tmp/kc
K=/tmp/new/devcarry/bin/kiln
names=mobilenet_v2,resnet50,efficientnet_b0,mnasnet1_0,shufflenet_v2_x1_0,resnet18,mobilenet_v3_large,regnet_y_800mf,convnext_tiny
timeout 150 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1; tail -1 $res/export.log
M=$(for n in ${names//,/ }; do [ -f /tmp/z/$n/model.onnx ] && echo /tmp/z/$n/model.onnx; done)
i=0
for s in "" "k=32" "k=64" "k=64,shrink=on" "k=64,split=1,shrink=on" "k=32,split=4,shrink=on" ""; do
  i=$((i+1))
  for p in fp16 fp32; do
    KILN_GEMM_SWEEP=$s timeout 120 $K bench $M --precision $p --warmup 20 --min-time 0.3 --json $res/v${i}_$p.json > $res/v${i}_$p.txt 2>&1
    echo "v$i '$s' $p:" $(grep -E "^[a-z]" $res/v${i}_$p.txt | grep -v "^kiln\|^model" | awk '{printf "%s %s %s; ", substr($1,1,10), $2, $(NF-1)}')
  done
done
tar czf $OUT/res1.tar.gz -C /tmp res1

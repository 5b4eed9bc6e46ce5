#!/usr/bin/env bash
# Session 24, fifth call: padded convolutions' A read unconverted
# (lower_conv's gemm_a_h / X_ath) in the scalar kernel's fp16 staging.
# resnet50 and densenet121 (3x3-heavy) in fp32, fp16 and fp16 with the
# tensor cores off, two rounds.
set -u
root=$(pwd); tar xJf build-carry/dc.txz -C /tmp
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=/tmp/devcarry/lib KILN_CACHE_DIR=/tmp/kc5 KILN_REQUIRE_VULKAN=1
res=$OUT/gather; mkdir -p $res
K=/tmp/devcarry/bin/kiln
timeout 120 python3 bench/zoo/export.py /tmp/z5 --models resnet50,densenet121 > $res/export.log 2>&1; tail -1 $res/export.log
M="/tmp/z5/resnet50/model.onnx /tmp/z5/densenet121/model.onnx"
for r in 1 2; do
  for v in "fp32 --precision fp32" "fp16 --precision fp16" "fp16_scalar --precision fp16 --coopmat off"; do
    set -- $v; name=$1; shift
    timeout 100 $K bench $M --warmup 20 --min-time 0.5 --json $res/r${r}_$name.json "$@" > $res/r${r}_$name.txt 2>&1
    echo "r$r $name: $(grep -E '^(resnet|densenet)' $res/r${r}_$name.txt | awk '{printf "%s %s  ", $1, $(NF-1)}')"
  done
done

#!/usr/bin/env bash
# Session 23, fourth call: Kiln (final build: dw-norm groups left to CPU
# devices) against PyTorch eager and torch.compile reduce-overhead, fp32 and
# fp16, buffers, five CNNs (bench/run_h100.sh).
set -u
root=$(pwd); tar xJf build-carry/dc.txz
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json KILN_CACHE_DIR=/tmp/kc
KILN_BIN=$root/devcarry/bin/kiln KILN_LIB_DIR=$root/devcarry/lib \
MODELS=mobilenet_v2,resnet50,convnext_tiny,efficientnet_b0,mnasnet1_0 STORAGES=buffer \
TORCH_ENGINES=eager,compile-reduce-overhead TOTAL_BUDGET_S=480 KILN_BUDGET_S=150 \
  bash bench/run_h100.sh $OUT/peers > /dev/null 2>&1
tail -45 $OUT/peers/RESULTS.md

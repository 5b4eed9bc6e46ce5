#!/usr/bin/env bash
# Session 28, second call: Kiln (this build) against torch.compile
# reduce-overhead, fp32 and fp16, buffers, five models (bench/run_h100.sh on
# run1.sh's exported models, exported again if the machine is a new one).
set -u
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res2; mkdir -p $res /tmp/new
[ -x /tmp/new/devcarry/bin/kiln ] || tar xJf build-carry/new.txz -C /tmp/new
export LD_LIBRARY_PATH=/tmp/new/devcarry/lib KILN_CACHE_DIR=/tmp/kc
K=/tmp/new/devcarry/bin/kiln
names=mobilenet_v2,resnet50,swin_t,vit_b_16,convnext_tiny
for n in ${names//,/ }; do [ -f /tmp/z/$n/model.onnx ] || need=1; done
[ -z "${need:-}" ] || timeout 150 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1
KILN_BIN=$K KILN_LIB_DIR=/tmp/new/devcarry/lib SKIP_EXPORT=1 MODELS_DIR=/tmp/z \
MODELS=$names STORAGES=buffer TORCH_ENGINES=compile-reduce-overhead TOTAL_BUDGET_S=420 KILN_BUDGET_S=90 \
  bash bench/run_h100.sh $res/peers > /dev/null 2>&1
tail -32 $res/peers/RESULTS.md
tar czf $OUT/res2.tar.gz -C /tmp res2

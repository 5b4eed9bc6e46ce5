#!/usr/bin/env bash
# Session 24, fourth call: GemmCoopMatDeviceTest.Conv again (its 1x1
# projection resized to stay on the tensor cores) with the validation
# layer; then Kiln (final build) against PyTorch eager and torch.compile
# reduce-overhead, fp32 and fp16, buffers, five CNNs (bench/run_h100.sh).
set -u
root=$(pwd); tar xJf build-carry/dc.txz -C /tmp
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json KILN_CACHE_DIR=/tmp/kc4
xz -dkf build-carry/vl/libVkLayer_khronos_validation.so.xz
mkdir -p $OUT/tests
VK_LAYER_PATH=$root/build-carry/vl LD_LIBRARY_PATH=/tmp/devcarry/lib:$root/build-carry/vl KILN_REQUIRE_VULKAN=1 \
  timeout 90 /tmp/devcarry/bin/kiln_planner_test --gtest_filter='*GemmCoopMatDeviceTest.Conv*:*GemmCoopMatDeviceTest.SplitK*' > $OUT/tests/coopmat_conv.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]|OK \]" $OUT/tests/coopmat_conv.txt | tail -8
KILN_BIN=/tmp/devcarry/bin/kiln KILN_LIB_DIR=/tmp/devcarry/lib \
MODELS=mobilenet_v2,resnet50,convnext_tiny,efficientnet_b0,mnasnet1_0 STORAGES=buffer \
TORCH_ENGINES=eager,compile-reduce-overhead TOTAL_BUDGET_S=420 KILN_BUDGET_S=130 \
  bash bench/run_h100.sh $OUT/peers > /dev/null 2>&1
tail -45 $OUT/peers/RESULTS.md

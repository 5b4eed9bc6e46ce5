#!/usr/bin/env bash
# Session 26, sixth call: the final build on the zoo, fp16 and fp32 (GPU
# times, dispatches, differences from PyTorch), and the device tests of the
# session's kernels with the validation layer.
set -u
root=$(pwd)
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res6; mkdir -p $res /tmp/new
tar xJf build-carry/new.txz -C /tmp/new
export LD_LIBRARY_PATH=/tmp/new/devcarry/lib KILN_CACHE_DIR=/tmp/kc
K=/tmp/new/devcarry/bin/kiln
names=mobilenet_v2,resnet50,efficientnet_b0,mnasnet1_0,convnext_tiny,swin_t,vit_b_16,shufflenet_v2_x1_0,squeezenet1_1,resnet18,mobilenet_v3_large,regnet_y_800mf,resnext50_32x4d,densenet121
timeout 200 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1; tail -1 $res/export.log
M=$(for n in ${names//,/ }; do [ -f /tmp/z/$n/model.onnx ] && echo /tmp/z/$n/model.onnx; done)
for p in fp16 fp32; do
  timeout 200 $K bench $M --precision $p --warmup 20 --min-time 0.5 --json $res/zoo_$p.json > $res/zoo_$p.txt 2>&1
  echo "$p:"; grep -E "^[a-z]" $res/zoo_$p.txt | grep -v "^kiln" | awk '{print $1, $2, $(NF-1)}'
done
xz -dkf build-carry/vl/libVkLayer_khronos_validation.so.xz
VK_LAYER_PATH=$root/build-carry/vl LD_LIBRARY_PATH=/tmp/new/devcarry/lib:$root/build-carry/vl \
  timeout 100 /tmp/new/devcarry/bin/kiln_planner_test --gtest_filter='FusionViewsDevice.*:FusionStoreViews.*:FusionEpilogue.NormGemm*:GemmCoopMatKernels.*' > $res/device_tests.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]|alidation" $res/device_tests.txt | tail -6
tar czf $OUT/res6.tar.gz -C /tmp res6

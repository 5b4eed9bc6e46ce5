#!/usr/bin/env bash
# Session 27, second call: latency-bound GEMMs on small tiles with deep K
# steps (the planner's new rule) against the same build with the rule off
# (KILN_GEMM_SWEEP=latency=off, the previous plans), alternating, two
# rounds, fp16 and fp32, on the zoo; then the GEMM/conv device tests with the
# validation layer.
set -u
root=$(pwd)
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res2; rm -rf $res; mkdir -p $res /tmp/new
tar xJf build-carry/new.txz -C /tmp/new
export LD_LIBRARY_PATH=/tmp/new/devcarry/lib KILN_CACHE_DIR=/tmp/kc
K=/tmp/new/devcarry/bin/kiln
names=mobilenet_v2,resnet50,efficientnet_b0,mnasnet1_0,convnext_tiny,swin_t,vit_b_16,shufflenet_v2_x1_0,squeezenet1_1,resnet18,mobilenet_v3_large,regnet_y_800mf,resnext50_32x4d,densenet121
timeout 200 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1; tail -1 $res/export.log
M=$(for n in ${names//,/ }; do [ -f /tmp/z/$n/model.onnx ] && echo /tmp/z/$n/model.onnx; done)
for r in 1 2; do
  for v in old new; do
    s=""; [ $v = old ] && s="latency=off"
    for p in fp16 fp32; do
      KILN_GEMM_SWEEP=$s timeout 150 $K bench $M --precision $p --warmup 20 --min-time 0.4 --json $res/r${r}_${p}_$v.json > $res/r${r}_${p}_$v.txt 2>&1
      echo "r$r $v $p:" $(grep -E "^[a-z]" $res/r${r}_${p}_$v.txt | grep -v "^kiln\|^model" | awk '{printf "%s %s %s; ", substr($1,1,10), $2, $(NF-1)}')
    done
  done
done
xz -dkf build-carry/vl/libVkLayer_khronos_validation.so.xz
VK_LAYER_PATH=$root/build-carry/vl LD_LIBRARY_PATH=/tmp/new/devcarry/lib:$root/build-carry/vl \
  timeout 150 /tmp/new/devcarry/bin/kiln_planner_test --gtest_filter='LowerConv*:LowerLinalg*:GemmSweepEnv.*:FusionViewsDevice.*:GemmCoopMatDeviceTest.*' > $res/device_tests.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]|alidation" $res/device_tests.txt | tail -8
tar czf $OUT/res2.tar.gz -C /tmp res2

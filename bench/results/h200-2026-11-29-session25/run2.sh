#!/usr/bin/env bash
# Session 25, second call: the squeeze-excite fusion group (fusion plugin
# add_squeeze_excites, planner/fusion_squeeze_excite.h) on and off
# (KILN_FUSION_SQUEEZE_EXCITE=off, the ablation) for the zoo's three SE
# models, two alternating rounds; then the whole bench set with this build,
# fp16 and fp32; the fusion and conv kernel tests with the validation layer.
set -u
root=$(pwd)
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res2; mkdir -p $res /tmp/new
tar xJf build-carry/new.txz -C /tmp/new
export LD_LIBRARY_PATH=/tmp/new/devcarry/lib KILN_CACHE_DIR=/tmp/kc
K=/tmp/new/devcarry/bin/kiln
names=mobilenet_v2,mobilenet_v3_large,resnet18,resnet50,efficientnet_b0,regnet_y_800mf,convnext_tiny,swin_t,vit_b_16,densenet121,squeezenet1_1,shufflenet_v2_x1_0,mnasnet1_0,resnext50_32x4d
timeout 200 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1; tail -1 $res/export.log
SE="/tmp/z/efficientnet_b0/model.onnx /tmp/z/regnet_y_800mf/model.onnx /tmp/z/mobilenet_v3_large/model.onnx"
for r in 1 2; do for p in fp16 fp32; do for se in on off; do
  KILN_FUSION_SQUEEZE_EXCITE=$se timeout 100 $K bench $SE --precision $p --warmup 20 --min-time 0.5 \
    --json $res/se_r${r}_${p}_$se.json > $res/se_r${r}_${p}_$se.txt 2>&1
  echo "round $r $p SE $se:"; grep -E "^[a-z]" $res/se_r${r}_${p}_$se.txt | grep -v "^kiln" | awk '{print $1, $2, $(NF-1)}'
done; done; done
M=$(for n in ${names//,/ }; do echo /tmp/z/$n/model.onnx; done)
for p in fp16 fp32; do
  timeout 170 $K bench $M --precision $p --warmup 20 --min-time 0.5 --json $res/all_$p.json > $res/all_$p.txt 2>&1
  echo "all $p:"; grep -E "^[a-z]" $res/all_$p.txt | grep -v "^kiln" | awk '{print $1, $2, $(NF-1)}'
done
xz -dkf build-carry/vl/libVkLayer_khronos_validation.so.xz
export VK_LAYER_PATH=$root/build-carry/vl LD_LIBRARY_PATH=/tmp/new/devcarry/lib:$root/build-carry/vl
timeout 150 /tmp/new/devcarry/bin/kiln_planner_test --gtest_filter='*SqueezeExcite*:LowerConvTest.Split*:*FusionEpilogue.Conv*:*GemmCoopMatDeviceTest.Conv*:*GemmCoopMatDeviceTest.SplitK*' > $res/device_tests.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]|alidation" $res/device_tests.txt | tail -8
tar czf $OUT/res2.tar.gz -C /tmp res2

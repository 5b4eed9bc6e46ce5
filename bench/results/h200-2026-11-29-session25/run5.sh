#!/usr/bin/env bash
# Session 25, fifth call: squeeze-excite's scale folded into the projection
# conv (scaled-conv groups) on and off (KILN_FUSION_SCALED_CONV=off) for
# the three SE models, fp16 and fp32, two alternating rounds; shufflenet
# and mobilenet_v3_large in fp16 with the tensor cores on and off (per-node
# times); the new groups' tests with the validation layer.
set -u
root=$(pwd)
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res5; mkdir -p $res /tmp/new
tar xJf build-carry/new.txz -C /tmp/new
export LD_LIBRARY_PATH=/tmp/new/devcarry/lib KILN_CACHE_DIR=/tmp/kc
K=/tmp/new/devcarry/bin/kiln
names=efficientnet_b0,regnet_y_800mf,mobilenet_v3_large,shufflenet_v2_x1_0
timeout 100 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1; tail -1 $res/export.log
SE="/tmp/z/efficientnet_b0/model.onnx /tmp/z/regnet_y_800mf/model.onnx /tmp/z/mobilenet_v3_large/model.onnx"
for r in 1 2; do for p in fp16 fp32; do for sc in on off; do
  KILN_FUSION_SCALED_CONV=$sc timeout 100 $K bench $SE --precision $p --warmup 20 --min-time 0.5 \
    --json $res/sc_r${r}_${p}_$sc.json > $res/sc_r${r}_${p}_$sc.txt 2>&1
  echo "round $r $p scaled-conv $sc:"; grep -E "^[a-z]" $res/sc_r${r}_${p}_$sc.txt | grep -v "^kiln" | awk '{print $1, $2, $(NF-1)}'
done; done; done
for r in 1 2; do for cm in on off; do
  timeout 60 $K bench /tmp/z/shufflenet_v2_x1_0/model.onnx /tmp/z/mobilenet_v3_large/model.onnx --precision fp16 --coopmat $cm \
    --warmup 20 --min-time 0.5 --json $res/cm_r${r}_$cm.json > $res/cm_r${r}_$cm.txt 2>&1
  echo "round $r fp16 coopmat $cm:"; grep -E "^[a-z]" $res/cm_r${r}_$cm.txt | grep -v "^kiln" | awk '{print $1, $2, $(NF-1)}'
done; done
xz -dkf build-carry/vl/libVkLayer_khronos_validation.so.xz
VK_LAYER_PATH=$root/build-carry/vl LD_LIBRARY_PATH=/tmp/new/devcarry/lib:$root/build-carry/vl \
  timeout 60 /tmp/new/devcarry/bin/kiln_planner_test --gtest_filter='*SqueezeExcite*:*ScaledConv*' > $res/device_tests.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]|alidation" $res/device_tests.txt | tail -4
tar czf $OUT/res5.tar.gz -C /tmp res5

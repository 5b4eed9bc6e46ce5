#!/usr/bin/env bash
# Session 26, first call: pointwise convolutions that read a view (a channel
# shuffle) by coordinates (new) against session 25's final build (old):
# shufflenet in fp16 and fp32, two alternating rounds, plus the other conv
# models as a control (same plans); the device tests of the resized
# tensor-core conv and of the views, with the validation layer.
set -u
root=$(pwd)
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res1; mkdir -p $res /tmp/old /tmp/new
tar xJf build-carry/old.txz -C /tmp/old; tar xJf build-carry/new.txz -C /tmp/new
names=shufflenet_v2_x1_0,mobilenet_v2,resnet50
timeout 100 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1; tail -1 $res/export.log
M=$(for n in ${names//,/ }; do echo /tmp/z/$n/model.onnx; done)
for r in 1 2; do for p in fp16 fp32; do for b in old new; do
  LD_LIBRARY_PATH=/tmp/$b/devcarry/lib:/tmp/new/devcarry/lib KILN_CACHE_DIR=/tmp/kc_$b timeout 100 /tmp/$b/devcarry/bin/kiln bench $M \
    --precision $p --warmup 20 --min-time 0.5 --json $res/r${r}_${p}_$b.json > $res/r${r}_${p}_$b.txt 2>&1
  echo "round $r $p $b:"; grep -E "^[a-z]" $res/r${r}_${p}_$b.txt | grep -v "^kiln" | awk '{print $1, $2, $(NF-1)}'
done; done; done
xz -dkf build-carry/vl/libVkLayer_khronos_validation.so.xz
VK_LAYER_PATH=$root/build-carry/vl LD_LIBRARY_PATH=/tmp/new/devcarry/lib:$root/build-carry/vl \
  timeout 120 /tmp/new/devcarry/bin/kiln_planner_test --gtest_filter='GemmCoopMat*:FusionViewsDevice.*:*ScaledConv*:*ConvSum*' > $res/device_tests.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]|alidation" $res/device_tests.txt | tail -6
tar czf $OUT/res1.tar.gz -C /tmp res1

#!/usr/bin/env bash
# Session 24, third call: the final build (fp16 operands staged in fp16
# registers, small 1x1 convolutions on the scalar kernel in fp16 plans).
# Ten zoo models in fp32 and fp16, two alternating rounds; the fp16 GEMM
# and convolution kernel tests with the Khronos validation layer.
set -u
root=$(pwd); tar xJf build-carry/dc.txz -C /tmp
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=/tmp/devcarry/lib PYTHONUNBUFFERED=1 KILN_CACHE_DIR=/tmp/kc3 KILN_REQUIRE_VULKAN=1
res=/tmp/res3; mkdir -p $res
K=/tmp/devcarry/bin/kiln
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee $res/gpu.txt
names=efficientnet_b0,mnasnet1_0,mobilenet_v2,resnet50,convnext_tiny,resnext50_32x4d,regnet_y_800mf,densenet121,swin_t,vit_b_16
timeout 200 python3 bench/zoo/export.py /tmp/z3 --models $names > $res/export.log 2>&1; tail -1 $res/export.log
M=$(for n in ${names//,/ }; do echo /tmp/z3/$n/model.onnx; done)
for r in 1 2; do for p in fp32 fp16; do
  timeout 170 $K bench $M --precision $p --warmup 20 --min-time 0.5 --json $res/r${r}_$p.json > $res/r${r}_$p.txt 2>&1
  echo "round $r $p:"; grep -E "^[a-z]" $res/r${r}_$p.txt | grep -v "^kiln" | awk '{print $1, $2, $(NF-1)}'
done; done
xz -dkf build-carry/vl/libVkLayer_khronos_validation.so.xz
export VK_LAYER_PATH=$root/build-carry/vl LD_LIBRARY_PATH=/tmp/devcarry/lib:$root/build-carry/vl
timeout 200 /tmp/devcarry/bin/kiln_planner_test --gtest_filter='LowerConvTest.*:*GemmCoopMat*:*FusionEpilogue.Conv*:*LowerLinalg*' > $res/device_tests.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]|alidation" $res/device_tests.txt | tail -12
tar czf $OUT/res3.tar.gz -C /tmp res3

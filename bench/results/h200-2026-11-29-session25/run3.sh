#!/usr/bin/env bash
# Session 25, third call: squeeze-excite as the pool's kernel plus one
# "fused_excite" kernel for both convs, on and off (KILN_FUSION_SQUEEZE_EXCITE
# =off) for the zoo's three SE models, two alternating rounds; its tests with
# the validation layer; then Kiln (this build) against PyTorch eager and
# torch.compile reduce-overhead, fp32 and fp16, buffers (bench/run_h100.sh).
set -u
root=$(pwd)
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res3; mkdir -p $res /tmp/new
tar xJf build-carry/new.txz -C /tmp/new
export LD_LIBRARY_PATH=/tmp/new/devcarry/lib KILN_CACHE_DIR=/tmp/kc
K=/tmp/new/devcarry/bin/kiln
names=efficientnet_b0,regnet_y_800mf,mobilenet_v3_large
timeout 100 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1; tail -1 $res/export.log
SE=$(for n in ${names//,/ }; do echo /tmp/z/$n/model.onnx; done)
for r in 1 2; do for p in fp16 fp32; do for se in on off; do
  KILN_FUSION_SQUEEZE_EXCITE=$se timeout 100 $K bench $SE --precision $p --warmup 20 --min-time 0.5 \
    --json $res/se_r${r}_${p}_$se.json > $res/se_r${r}_${p}_$se.txt 2>&1
  echo "round $r $p SE $se:"; grep -E "^[a-z]" $res/se_r${r}_${p}_$se.txt | grep -v "^kiln" | awk '{print $1, $2, $(NF-1)}'
done; done; done
xz -dkf build-carry/vl/libVkLayer_khronos_validation.so.xz
VK_LAYER_PATH=$root/build-carry/vl LD_LIBRARY_PATH=/tmp/new/devcarry/lib:$root/build-carry/vl \
  timeout 60 /tmp/new/devcarry/bin/kiln_planner_test --gtest_filter='*SqueezeExcite*' > $res/device_tests.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]|alidation" $res/device_tests.txt | tail -4
KILN_BIN=$K KILN_LIB_DIR=/tmp/new/devcarry/lib \
MODELS=mobilenet_v2,resnet50,convnext_tiny,efficientnet_b0,mnasnet1_0 STORAGES=buffer \
TORCH_ENGINES=eager,compile-reduce-overhead TOTAL_BUDGET_S=400 KILN_BUDGET_S=120 \
  bash bench/run_h100.sh $res/peers > /dev/null 2>&1
tail -40 $res/peers/RESULTS.md
tar czf $OUT/res3.tar.gz -C /tmp res3

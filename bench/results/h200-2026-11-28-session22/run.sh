#!/usr/bin/env bash
# Session 22 on the GPU machine: conv sums on vs off (KILN_FUSION_CONV_SUM)
# for resnet50 and resnext50_32x4d, fp32 and fp16, three alternating rounds;
# then the cooperative-matrix device tests (BatchedAndBroadcastBatch among them).
set -u
root=$(pwd); tar xJf build-carry/dc.txz
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$root/devcarry/lib PYTHONUNBUFFERED=1 KILN_CACHE_DIR=/tmp/kc
res=/tmp/res; mkdir -p $res
K=$root/devcarry/bin/kiln
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee $res/gpu.txt
timeout 200 python3 bench/zoo/export.py /tmp/z --models resnet50,resnext50_32x4d > $res/export.log 2>&1; tail -2 $res/export.log
M="/tmp/z/resnet50/model.onnx /tmp/z/resnext50_32x4d/model.onnx"
for r in 1 2 3; do for p in fp32 fp16; do for cs in on off; do
  KILN_FUSION_CONV_SUM=$cs timeout 120 $K bench $M --precision $p --warmup 30 --min-time 3 --json $res/r${r}_${p}_${cs}.json > $res/r${r}_${p}_${cs}.txt 2>&1
  echo "round $r $p conv-sum $cs:"; grep -E "^(resnet50|resnext)|dispatches" $res/r${r}_${p}_${cs}.txt
done; done; done
xz -d devcarry/bin/kiln_planner_test.xz && chmod +x devcarry/bin/kiln_planner_test
KILN_REQUIRE_VULKAN=1 timeout 200 devcarry/bin/kiln_planner_test --gtest_filter='*GemmCoopMatDevice*:*ConvSum*:*ProjectionShortcut*' > $res/coopmat_tests.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |OK \]" $res/coopmat_tests.txt | tail -40
tar czf $OUT/res.tar.gz -C /tmp res

#!/usr/bin/env bash
# Session 23 on the GPU machine (third call: a tree for the per-pixel sums): the depthwise conv inside its LayerNorm
# (dw-norm groups) on vs off (KILN_FUSION_DW_NORM) for convnext_tiny, fp32
# and fp16, three alternating rounds; image storage with --validate; the
# dw-norm and dwpw device tests with the validation layer.
set -u
root=$(pwd); tar xJf build-carry/dc.txz
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
xz -dkf build-carry/vl/libVkLayer_khronos_validation.so.xz
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$root/devcarry/lib PYTHONUNBUFFERED=1 KILN_CACHE_DIR=/tmp/kc
res=/tmp/res; mkdir -p $res
K=$root/devcarry/bin/kiln
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee $res/gpu.txt
timeout 200 python3 bench/zoo/export.py /tmp/z --models convnext_tiny > $res/export.log 2>&1; tail -2 $res/export.log
M=/tmp/z/convnext_tiny/model.onnx
for r in 1 2 3; do for p in fp32 fp16; do for dn in on off; do
  KILN_FUSION_DW_NORM=$dn timeout 120 $K bench $M --precision $p --warmup 30 --min-time 3 --json $res/r${r}_${p}_${dn}.json > $res/r${r}_${p}_${dn}.txt 2>&1
  echo "round $r $p dw-norm $dn:"; grep -E "^convnext|dispatches|max" $res/r${r}_${p}_${dn}.txt
done; done; done
export VK_LAYER_PATH=$root/build-carry/vl LD_LIBRARY_PATH=$root/devcarry/lib:$root/build-carry/vl
for p in fp32 fp16; do timeout 150 $K bench $M --storage image --precision $p --warmup 3 --iters 10 --validate --json $res/image_$p.json > $res/image_$p.txt 2>&1; grep -E "^(conv|mobile)|dispatches|max\|d\||rror" $res/image_$p.txt; done
xz -d devcarry/bin/kiln_planner_test.xz && chmod +x devcarry/bin/kiln_planner_test
KILN_REQUIRE_VULKAN=1 timeout 300 devcarry/bin/kiln_planner_test --gtest_filter='*DwNorm*:*DepthwiseTranspose*:*FusionEpilogue.Dw*' > $res/device_tests.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |OK \]|alidation" $res/device_tests.txt | tail -30
tar czf $OUT/res.tar.gz -C /tmp res

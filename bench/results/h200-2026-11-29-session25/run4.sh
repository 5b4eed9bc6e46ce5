#!/usr/bin/env bash
# Session 25, fourth call: squeeze-excite groups bounded to 20480 weights on
# GPUs (the default), against none (=off) and every block (=on), the
# fused_excite kernel with four loads in flight per loop; the zoo's three
# SE models, fp16 and fp32, two alternating rounds.
set -u
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res4; mkdir -p $res /tmp/new
tar xJf build-carry/new.txz -C /tmp/new
export LD_LIBRARY_PATH=/tmp/new/devcarry/lib KILN_CACHE_DIR=/tmp/kc
K=/tmp/new/devcarry/bin/kiln
names=efficientnet_b0,regnet_y_800mf,mobilenet_v3_large
timeout 100 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1; tail -1 $res/export.log
SE=$(for n in ${names//,/ }; do echo /tmp/z/$n/model.onnx; done)
for r in 1 2; do for p in fp16 fp32; do for se in default off on; do
  if [ $se = default ]; then unset KILN_FUSION_SQUEEZE_EXCITE; else export KILN_FUSION_SQUEEZE_EXCITE=$se; fi
  timeout 100 $K bench $SE --precision $p --warmup 20 --min-time 0.5 \
    --json $res/se_r${r}_${p}_$se.json > $res/se_r${r}_${p}_$se.txt 2>&1
  echo "round $r $p SE $se:"; grep -E "^[a-z]" $res/se_r${r}_${p}_$se.txt | grep -v "^kiln" | awk '{print $1, $2, $(NF-1)}'
done; done; done
tar czf $OUT/res4.tar.gz -C /tmp res4

#!/usr/bin/env bash
# Session 25, sixth call: 1x1 convolutions of at most 32 MFLOP off the
# tensor cores in fp16 (rule) against the fifth call's build (old), six
# models with small pointwise convolutions, fp16, two alternating rounds.
set -u
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res6; mkdir -p $res /tmp/old /tmp/rule
tar xJf build-carry/new.txz -C /tmp/old; tar xJf build-carry/rule.txz -C /tmp/rule
names=shufflenet_v2_x1_0,mobilenet_v3_large,mobilenet_v2,efficientnet_b0,mnasnet1_0,regnet_y_800mf
timeout 100 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1; tail -1 $res/export.log
M=$(for n in ${names//,/ }; do echo /tmp/z/$n/model.onnx; done)
for r in 1 2; do for b in old rule; do
  LD_LIBRARY_PATH=/tmp/$b/devcarry/lib KILN_CACHE_DIR=/tmp/kc_$b timeout 100 /tmp/$b/devcarry/bin/kiln bench $M \
    --precision fp16 --warmup 20 --min-time 0.5 --json $res/r${r}_$b.json > $res/r${r}_$b.txt 2>&1
  echo "round $r $b:"; grep -E "^[a-z]" $res/r${r}_$b.txt | grep -v "^kiln" | awk '{print $1, $2, $(NF-1)}'
done; done
tar czf $OUT/res6.tar.gz -C /tmp res6

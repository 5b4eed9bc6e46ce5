#!/usr/bin/env bash
# Session 26, seventh call: fp16 view-reading pointwise convs staged in
# float registers (new) against fp16 ones (old, the session's final build),
# shufflenet_v2 fp16, two alternating rounds.
set -u
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res7; mkdir -p $res /tmp/old /tmp/new
tar xJf build-carry/old.txz -C /tmp/old; tar xJf build-carry/new.txz -C /tmp/new
timeout 60 python3 bench/zoo/export.py /tmp/z --models shufflenet_v2_x1_0 > $res/export.log 2>&1; tail -1 $res/export.log
for r in 1 2; do for b in old new; do
  LD_LIBRARY_PATH=/tmp/$b/devcarry/lib:/tmp/new/devcarry/lib KILN_CACHE_DIR=/tmp/kc_$b timeout 60 /tmp/$b/devcarry/bin/kiln bench \
    /tmp/z/shufflenet_v2_x1_0/model.onnx --precision fp16 --warmup 20 --min-time 0.5 --json $res/r${r}_$b.json > $res/r${r}_$b.txt 2>&1
  echo "round $r $b:"; grep -E "^[a-z]" $res/r${r}_$b.txt | grep -v "^kiln" | awk '{print $1, $2, $(NF-1)}'
done; done
tar czf $OUT/res7.tar.gz -C /tmp res7

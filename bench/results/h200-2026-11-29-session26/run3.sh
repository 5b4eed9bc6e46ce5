#!/usr/bin/env bash
# Session 26, third call: the statistics pass with eight loads in flight; LayerNorm folded into the MatMul that reads it
# (norm-GEMM groups, new) against session 25's final build (old), the
# transformer-style models in fp16 and fp32, two alternating rounds; the
# ablation (KILN_FUSION_NORM_GEMM=off) once; the new tests with the
# validation layer.
set -u
root=$(pwd)
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res3; mkdir -p $res /tmp/old /tmp/new
tar xJf build-carry/old.txz -C /tmp/old; tar xJf build-carry/new.txz -C /tmp/new
names=convnext_tiny,swin_t
timeout 150 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1; tail -1 $res/export.log
M=$(for n in ${names//,/ }; do echo /tmp/z/$n/model.onnx; done)
run() {  # build tag precision [env]
  env ${4:-KILN_AB=1} LD_LIBRARY_PATH=/tmp/$1/devcarry/lib:/tmp/new/devcarry/lib KILN_CACHE_DIR=/tmp/kc_$1 timeout 150 /tmp/$1/devcarry/bin/kiln bench $M \
    --precision $3 --warmup 20 --min-time 0.5 --json $res/$2.json > $res/$2.txt 2>&1
  echo "$2:"; grep -E "^[a-z]" $res/$2.txt | grep -v "^kiln" | awk '{print $1, $2, $(NF-1)}'
}
for r in 1; do for p in fp16 fp32; do
  run old r${r}_${p}_old $p
  run new r${r}_${p}_new $p
  [ $r = 1 ] && run new r${r}_${p}_off $p KILN_FUSION_NORM_GEMM=off
done; done
tar czf $OUT/res3.tar.gz -C /tmp res3

#!/usr/bin/env bash
# Session 28, fourth call: split-K GEMMs whose partials are at most 64 KiB
# per tile add them in the tile kernel (the one-dispatch fix-up) by default;
# KILN_GEMM_SWEEP=fixup=off is the previous plan (a reduce pass each).
# Twelve zoo models, fp16 and fp32, new and old alternating, two rounds.
set -u
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res4; mkdir -p $res; rm -rf /tmp/new; mkdir -p /tmp/new
tar xJf build-carry/new.txz -C /tmp/new
export LD_LIBRARY_PATH=/tmp/new/devcarry/lib KILN_CACHE_DIR=/tmp/kc4
K=/tmp/new/devcarry/bin/kiln
names=mobilenet_v2,mnasnet1_0,efficientnet_b0,regnet_y_800mf,densenet121,resnet18,resnet50,squeezenet1_1,convnext_tiny,vit_b_16,swin_t,resnext50_32x4d
need=; for n in ${names//,/ }; do [ -f /tmp/z/$n/model.onnx ] || need=1; done
[ -z "$need" ] || timeout 170 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1
M=$(for n in ${names//,/ }; do echo /tmp/z/$n/model.onnx; done)
summary() { grep -E "^[a-z]" $1 | grep -v "^kiln" | awk '{print $1, $2, $(NF-1)}' | tr '\n' ';'; echo; }
for r in 1 2; do for p in fp16 fp32; do for f in on off; do
  [ $r = 2 ] && [ $p = fp32 ] && continue
  KILN_GEMM_SWEEP=fixup=$f timeout 100 $K bench $M --precision $p --warmup 20 --min-time 0.3 \
    --json $res/r${r}_${p}_$f.json > $res/r${r}_${p}_$f.txt 2>&1
  echo "r$r $p fixup=$f: $(summary $res/r${r}_${p}_$f.txt)"
done; done; done
tar czf $OUT/res4.tar.gz -C /tmp res4

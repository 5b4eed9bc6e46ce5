#!/usr/bin/env bash
# Session 28, sixth call: the conv repack into zero-filled memory (main, "zero")
# against uninitialized memory (commit 12726fd, "uninit"), the warm and cold
# plan of the repack-heavy models, alternating, three rounds.
set -u
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res6; mkdir -p $res; rm -rf /tmp/new; mkdir -p /tmp/new
tar xJf build-carry/new.txz -C /tmp/new; tar xJf build-carry/uninit.txz -C /tmp/new
ln -s /tmp/new/devcarry/lib/kiln /tmp/new/uninit/lib/kiln  # the plugins, found beside libkiln
names=resnet50,resnext50_32x4d,resnet18,vit_b_16
need=; for n in ${names//,/ }; do [ -f /tmp/z/$n/model.onnx ] || need=1; done
[ -z "$need" ] || timeout 170 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1
M=$(for n in ${names//,/ }; do echo /tmp/z/$n/model.onnx; done)
for r in 1 2 3; do for v in zero uninit; do
  if [ $v = zero ]; then lib=/tmp/new/devcarry/lib; bin=/tmp/new/devcarry/bin/kiln
  else lib=/tmp/new/uninit/lib:/tmp/new/devcarry/lib; bin=/tmp/new/uninit/bin/kiln; fi
  for p in fp32 fp16; do
    LD_LIBRARY_PATH=$lib KILN_CACHE_DIR=/tmp/kc6_$v timeout 60 $bin bench $M --precision $p --warmup 1 --iters 3 \
      --json $res/r${r}_${v}_$p.json > $res/r${r}_${v}_$p.txt 2>&1
    python3 - $res/r${r}_${v}_$p.json "r$r $v $p" <<'PY'
import json, sys
print(sys.argv[2], ' '.join('%s %d/%d' % ((m.get('model') or m.get('name'))[:9], m['cold_start']['compile_cold']['plan_ms'],
      m['cold_start']['compile_warm']['plan_ms']) for m in json.load(open(sys.argv[1]))['models']))
PY
  done
done; done
tar czf $OUT/res6.tar.gz -C /tmp res6

#!/usr/bin/env bash
# Session 28, fifth call: the final build. The Vulkan platform tests of the
# batched upload and the kernel cache's batch report under the validation
# layer (NVIDIA's arena is not host-visible: the staging path), then the
# compile times again (repack outputs no longer zero-filled first), eight
# zoo models, fp16 and fp32.
set -u
root=$(pwd)
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res5; mkdir -p $res; rm -rf /tmp/new; mkdir -p /tmp/new
tar xJf build-carry/new.txz -C /tmp/new
export LD_LIBRARY_PATH=/tmp/new/devcarry/lib KILN_CACHE_DIR=/tmp/kc5
K=/tmp/new/devcarry/bin/kiln
xz -dkf build-carry/vl/libVkLayer_khronos_validation.so.xz
VK_LAYER_PATH=$root/build-carry/vl LD_LIBRARY_PATH=/tmp/new/devcarry/lib:$root/build-carry/vl \
  timeout 90 /tmp/new/devcarry/bin/kiln_vulkan_test --gtest_filter='MemoryTest.*:KernelCacheBatch*' > $res/device_tests.txt 2>&1
echo "device tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]|alidation" $res/device_tests.txt | tail -6
names=mobilenet_v2,resnet50,convnext_tiny,swin_t,vit_b_16,resnet18,resnext50_32x4d,densenet121
need=; for n in ${names//,/ }; do [ -f /tmp/z/$n/model.onnx ] || need=1; done
[ -z "$need" ] || timeout 170 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1
M=$(for n in ${names//,/ }; do echo /tmp/z/$n/model.onnx; done)
for p in fp16 fp32; do
  timeout 120 $K bench $M --precision $p --warmup 5 --iters 20 --json $res/zoo_$p.json > $res/zoo_$p.txt 2>&1
  python3 - $res/zoo_$p.json $p <<'PY'
import json, sys
for m in json.load(open(sys.argv[1]))['models']:
    w = m['cold_start']['compile_warm']; c = m['cold_start']['compile_cold']
    print(sys.argv[2], m.get('model') or m.get('name'), 'warm', round(w['wall_ms']), 'plan', round(w['plan_ms']),
          'upload', round(w['upload_ms']), 'kernels', round(w['kernels_ms']), '| cold', round(c['wall_ms']),
          c.get('slowest_pipeline'), round(c.get('slowest_pipeline_ms', 0)))
PY
done
tar czf $OUT/res5.tar.gz -C /tmp res5

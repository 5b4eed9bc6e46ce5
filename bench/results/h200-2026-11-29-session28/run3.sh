#!/usr/bin/env bash
# Session 28, third call: which kernel bounds a cold compile. kiln bench now
# reports the slowest shader and pipeline of each batch; NVIDIA's own shader
# disk cache off (__GL_SHADER_DISK_CACHE=0), so every pipeline is compiled by
# the driver. fp16 (the tensor-core kernels), then fp32.
set -u
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1 __GL_SHADER_DISK_CACHE=0
res=/tmp/res3; mkdir -p $res; rm -rf /tmp/new; mkdir -p /tmp/new
tar xJf build-carry/new.txz -C /tmp/new
export LD_LIBRARY_PATH=/tmp/new/devcarry/lib
K=/tmp/new/devcarry/bin/kiln
names=vit_b_16,resnet50,resnet18,densenet121,convnext_tiny,swin_t
for n in ${names//,/ }; do [ -f /tmp/z/$n/model.onnx ] || need=1; done
[ -z "${need:-}" ] || timeout 150 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1
M=$(for n in ${names//,/ }; do echo /tmp/z/$n/model.onnx; done)
for p in fp16 fp32; do
  KILN_CACHE_DIR=/tmp/kc3_$p timeout 150 $K bench $M --precision $p --warmup 5 --iters 20 --json $res/cold_$p.json > $res/cold_$p.txt 2>&1
  python3 - $res/cold_$p.json $p <<'PY'
import json, sys
for m in json.load(open(sys.argv[1]))['models']:
    c = m['cold_start']['compile_cold']
    print(sys.argv[2], m.get('model') or m.get('name'), 'wall', round(c['wall_ms']), 'shaders', round(c['shaders_ms']),
          c.get('slowest_shader'), round(c.get('slowest_shader_ms', 0)), 'pipelines', round(c['pipelines_ms']),
          c.get('slowest_pipeline'), round(c.get('slowest_pipeline_ms', 0)))
PY
done
tar czf $OUT/res3.tar.gz -C /tmp res3

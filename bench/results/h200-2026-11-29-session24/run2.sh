#!/usr/bin/env bash
# Session 24, second call: the scalar tiled GEMM with fp16 operands staged
# in fp16 registers (gemm_tile.comp A_HALF / B_HALF). The fp32 plans do
# not change and are the control: per-node fp16 / fp32 ratios against the
# first call's (run.sh). Two rounds; pipeline statistics again.
set -u
root=$(pwd); tar xJf build-carry/dc.txz -C /tmp
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=/tmp/devcarry/lib PYTHONUNBUFFERED=1 KILN_CACHE_DIR=/tmp/kc2 KILN_REQUIRE_VULKAN=1
res=/tmp/res2; mkdir -p $res/stats
K=/tmp/devcarry/bin/kiln
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee $res/gpu.txt
[ -f /tmp/z/resnet50/model.onnx ] || timeout 240 python3 bench/zoo/export.py /tmp/z --models efficientnet_b0,mnasnet1_0,mobilenet_v2,resnet50 > $res/export.log 2>&1
M="/tmp/z/efficientnet_b0/model.onnx /tmp/z/mnasnet1_0/model.onnx /tmp/z/mobilenet_v2/model.onnx /tmp/z/resnet50/model.onnx"
run() {  # name, kiln bench flags
  local name=$1; shift
  KILN_PIPELINE_STATS=$res/stats/$name.tsv timeout 150 $K bench $M --warmup 20 --min-time 0.5 --json $res/$name.json "$@" > $res/$name.txt 2>&1
  echo "$name:"; grep -E "^(efficientnet|mnasnet|mobilenet|resnet)" $res/$name.txt | head -4
}
for r in 1 2; do
  run r${r}_fp32 --precision fp32
  run r${r}_fp16 --precision fp16
  run r${r}_fp16_scalar --precision fp16 --coopmat off
done
tar czf $OUT/res2.tar.gz -C /tmp res2

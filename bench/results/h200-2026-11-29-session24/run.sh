#!/usr/bin/env bash
# (Call 1 ran a build with a temporary KILN_F16_WORD_LOADS switch, fp16 buffers read as 32-bit words; rejected, not kept.)
# Session 24 on the GPU machine, first call: why the scalar tiled GEMM runs
# slower in fp16 than in fp32. Per-kernel times of four CNNs in fp32, fp16
# and fp16 with the tensor cores off, each with 16-bit loads and with
# KILN_F16_WORD_LOADS=on (fp16 buffers read as 32-bit words), two rounds;
# the driver's pipeline statistics (KILN_PIPELINE_STATS) of each plan.
set -u
root=$(pwd); tar xJf build-carry/dc.txz
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$root/devcarry/lib PYTHONUNBUFFERED=1 KILN_CACHE_DIR=/tmp/kc
export KILN_REQUIRE_VULKAN=1
res=/tmp/res; mkdir -p $res/stats
K=$root/devcarry/bin/kiln
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv | tee $res/gpu.txt
timeout 240 python3 bench/zoo/export.py /tmp/z --models efficientnet_b0,mnasnet1_0,mobilenet_v2,resnet50 > $res/export.log 2>&1; tail -2 $res/export.log
M="/tmp/z/efficientnet_b0/model.onnx /tmp/z/mnasnet1_0/model.onnx /tmp/z/mobilenet_v2/model.onnx /tmp/z/resnet50/model.onnx"
run() {  # name, env, kiln bench flags
  local name=$1 envs=$2; shift 2
  env $envs KILN_PIPELINE_STATS=$res/stats/$name.tsv timeout 150 $K bench $M --warmup 20 --min-time 0.5 --json $res/$name.json "$@" > $res/$name.txt 2>&1
  echo "$name: $(grep -cE '^' $res/stats/$name.tsv 2>/dev/null) stat lines"; grep -E "^(efficientnet|mnasnet|mobilenet|resnet)" $res/$name.txt | head -4
}
for r in 1 2; do
  run r${r}_fp32 KILN_F16_WORD_LOADS=off --precision fp32
  run r${r}_fp16 KILN_F16_WORD_LOADS=off --precision fp16
  run r${r}_fp16_words KILN_F16_WORD_LOADS=on --precision fp16
  run r${r}_fp16_scalar KILN_F16_WORD_LOADS=off --precision fp16 --coopmat off
  run r${r}_fp16_scalar_words KILN_F16_WORD_LOADS=on --precision fp16 --coopmat off
done
head -40 $res/stats/r1_fp16.tsv
tar czf $OUT/res.tar.gz -C /tmp res

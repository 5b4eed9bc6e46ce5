#!/usr/bin/env bash
# Session 28, first call: compile times after the batched constant upload
# and the threaded conv-weight repack (cold and warm, kiln bench's
# cold_start), eight zoo models in fp16 and fp32; a split-K depth sweep
# (KILN_GEMM_SWEEP=split=4|8 against the planner's) on the split-heavy CNNs.
# The models stay in /tmp/z for run2.sh (the peers).
set -u
root=$(pwd)
for f in .gl/*.deb; do dpkg -x $f / 2>/dev/null; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export PYTHONUNBUFFERED=1 KILN_REQUIRE_VULKAN=1
res=/tmp/res1; mkdir -p $res /tmp/new
tar xJf build-carry/new.txz -C /tmp/new
export LD_LIBRARY_PATH=/tmp/new/devcarry/lib KILN_CACHE_DIR=/tmp/kc
K=/tmp/new/devcarry/bin/kiln
names=mobilenet_v2,resnet50,convnext_tiny,swin_t,vit_b_16,resnet18,resnext50_32x4d,densenet121
timeout 170 python3 bench/zoo/export.py /tmp/z --models $names > $res/export.log 2>&1; tail -1 $res/export.log
M=$(for n in ${names//,/ }; do echo /tmp/z/$n/model.onnx; done)
summary() { grep -E "^[a-z]" $1 | grep -v "^kiln" | awk '{print $1, $2, $4, $5, $(NF-1)}'; }
for p in fp16 fp32; do
  timeout 120 $K bench $M --precision $p --warmup 20 --min-time 0.3 --json $res/zoo_$p.json > $res/zoo_$p.txt 2>&1
  echo "zoo $p (model status import cold warm gpu):"; summary $res/zoo_$p.txt
done
S=$(for n in resnet50 resnext50_32x4d densenet121 resnet18 vit_b_16; do echo /tmp/z/$n/model.onnx; done)
for s in 8 4 default; do
  if [ $s = default ]; then unset KILN_GEMM_SWEEP; else export KILN_GEMM_SWEEP=split=$s; fi
  timeout 60 $K bench $S --precision fp16 --warmup 20 --min-time 0.3 --json $res/split_$s.json > $res/split_$s.txt 2>&1
  echo "split $s fp16:"; summary $res/split_$s.txt
done
unset KILN_GEMM_SWEEP
# The batched upload under the validation layer (the NVIDIA arena is not
# host-visible, so the weights go through the staging fills).
xz -dkf build-carry/vl/libVkLayer_khronos_validation.so.xz
for p in fp16 fp32; do
  VK_LAYER_PATH=$root/build-carry/vl LD_LIBRARY_PATH=/tmp/new/devcarry/lib:$root/build-carry/vl \
    timeout 60 $K run /tmp/z/resnet50/model.onnx --precision $p --validate > $res/validate_$p.txt 2>&1
  echo "validate $p rc=$?"; grep -i -E "validation|error" $res/validate_$p.txt | head -3
done
tar czf $OUT/res1.tar.gz -C /tmp res1

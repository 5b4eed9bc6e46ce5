#!/usr/bin/env bash
# Device run: every torchvision zoo model on Vulkan (buffer/image x fp32/fp16,
# validation layer on) against PyTorch's fp32 output, exported on the machine.
# Writes $OUT/zoo_check.txt. Carry .gl and the bench/stage_kiln.sh output as
# devcarry: bench/stage_kiln.sh build devcarry; then in the device run:
#   bash bench/zoo_check.sh
# CONFIGS picks the storage/precision runs (default all six: auto, buffer and
# image, fp32 and fp16; e.g.
# CONFIGS="buffer:fp32 buffer:fp16"); KILN_COOPMAT (nv|khr|off) forces the
# tensor-core dialect and names the output zoo_check_<dialect>.txt. VALIDATE=0
# runs without the validation layer (an older layer than the driver hides the
# extensions it does not know, VK_KHR_cooperative_matrix among them).
set -u
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$PWD/devcarry/lib KILN_CACHE_DIR=/tmp/kc PYTHONUNBUFFERED=1
K=devcarry/bin/kiln
Z=/tmp/zoo
models=${MODELS:-mobilenet_v2,mobilenet_v3_small,resnet18,resnet50,resnext50_32x4d,regnet_y_400mf,efficientnet_b0,convnext_tiny,swin_t,vit_b_16,squeezenet1_0,shufflenet_v2_x1_0,mnasnet1_0,googlenet,densenet121,alexnet,vgg11,transformer_encoder}
[ -f $Z/.exported ] || { python3 bench/export_models.py --out $Z --models $models > $OUT/export.log 2>&1; touch $Z/.exported; }
{
echo "device: $($K info 2>/dev/null | sed -n 3p); tensor-core dialect: ${KILN_COOPMAT:-auto}"
for name in ${models//,/ }; do
  M=$Z/$name
  [ -f $M/model.onnx ] || { echo "$name: not exported"; continue; }
  for cfg in ${CONFIGS:-auto:fp32 buffer:fp32 image:fp32 auto:fp16 buffer:fp16 image:fp16}; do
    set -- ${cfg%%:*} ${cfg##*:} $([ "${cfg##*:}" = fp32 ] && echo 1e-3 || echo 2e-2)
    out=$($K run $M/model.onnx --backend vulkan $([ "${VALIDATE:-1}" = 1 ] && echo --validate) --storage $1 --precision $2 --input input=$M/input.npy --output output=/tmp/o.npy --stats /tmp/s.json 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then echo "$name $1 $2: ERROR $(echo "$out" | grep kiln: | tail -1)"; continue; fi
    verdict=$(python3 tests/models/compare_npy.py $M/output.npy /tmp/o.npy --rtol $3 2>&1 | tail -1)
    fb=$(python3 -c "import json; print(json.load(open('/tmp/s.json'))['compile']['fallbacks'])")
    val=$(echo "$out" | grep -c "validation error")
    echo "$name $1 $2: $verdict; fallbacks $fb; validation-error-lines $val"
  done
done
} 2>&1 | tee $OUT/zoo_check${KILN_COOPMAT:+_$KILN_COOPMAT}.txt

#!/usr/bin/env bash
# Device run of issue 5's checks on a real GPU: the dynamic-shape acceptance
# test (tests/models/dynamic_shapes_test.sh: one process per model, every
# shape matched against PyTorch, nothing compiled after the first run) and
# the control-flow / data-dependent-shape / memplan runtime tests when their
# stripped binaries are carried. Carry .gl, devcarry (bench/stage_kiln.sh) and
# optionally build-dyncarry/ holding transformer_encoder_dyn exported here
# (tests/models/export_dynamic.py with Debian's torch 1.13: torch >= 2.9's
# TorchScript exporter bakes the traced sequence length into a Reshape) and
# test binaries under build-dyncarry/bin. Writes $OUT/dynamic_check.txt.
set -u
for f in .gl/*.deb; do dpkg -x "$f" / ; done; ldconfig
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$PWD/devcarry/lib KILN_CACHE_DIR=/tmp/kc PYTHONUNBUFFERED=1
D=/tmp/dyn
{
python3 tests/models/export_dynamic.py $D 2>&1 | tail -2
if [ -d build-dyncarry/transformer_encoder_dyn ]; then rm -rf $D/transformer_encoder_dyn; cp -r build-dyncarry/transformer_encoder_dyn $D/; fi
echo "== dynamic_shapes_test.sh"
CHECK_VERBOSE=1 PYTHON=python3 bash tests/models/dynamic_shapes_test.sh devcarry/bin/kiln $D 2>&1 | tail -20
for t in build-dyncarry/bin/*; do
  [ -x "$t" ] || continue
  echo "== $t"
  "$t" 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|validation|OK \]" | tail -30
done
} > $OUT/dynamic_check.txt 2>&1
cat $OUT/dynamic_check.txt

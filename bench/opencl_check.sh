#!/usr/bin/env bash
# Device run: Kiln's OpenCL backend on the GPU machine's OpenCL platform
# (issue 19): the platform, the ONNX node tests per storage (every case, with
# each failure's reason), the zoo against PyTorch per storage (whatever
# output a crashed run left is still compared, and the tool's crash report
# kept), and `kiln bench` OpenCL against Vulkan on the same models.
# Carry .gl and a staging with the tests:
#   STAGE_OPENCL_TESTS=1 bench/stage_kiln.sh build devcarry
# then on the machine: bash bench/opencl_check.sh   (writes $OUT/opencl_check.tgz)
# MODELS (default below) picks the zoo; NODE_TIMEOUT (default 150) bounds
# each node-test run (0 skips them: NVIDIA's compiler takes minutes for them); PYTHON (default python3) runs the scripts. The models
# are exported here when absent
# (bench/export_models.py, into /tmp/zoo: zoo_check.sh's directory).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
for f in .gl/*.deb; do [ -e "$f" ] && dpkg -x "$f" / 2>/dev/null; done; ldconfig
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$root/devcarry/lib KILN_CACHE_DIR=/tmp/kc PYTHONUNBUFFERED=1
out=/tmp/opencl_check
mkdir -p "$out"
trap 'tar -czf "${OUT:-/tmp}/opencl_check.tgz" -C /tmp opencl_check' EXIT
K=$root/devcarry/bin/kiln
Z=/tmp/zoo
models=${MODELS:-mobilenet_v2,resnet18,squeezenet1_0,shufflenet_v2_x1_0,efficientnet_b0,convnext_tiny,resnet50,vit_b_16}

# NVIDIA's image ships libnvidia-opencl.so.1 without an ICD file: name it.
if ! grep -qs nvidia /etc/OpenCL/vendors/*.icd; then
  lib=$(find / -xdev -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1)
  if [ -n "$lib" ]; then mkdir -p /tmp/icd; echo "$lib" > /tmp/icd/nvidia.icd; export OCL_ICD_VENDORS=/tmp/icd; fi
fi
"$K" info > "$out/info.txt" 2>&1
sed -n '/backend plugin/,$p' "$out/info.txt" | head -8
grep -q "^platform" "$out/info.txt" || { echo "no OpenCL platform"; exit 0; }

if [ "${NODE_TIMEOUT:-150}" = 0 ]; then
  echo "node tests: skipped (NODE_TIMEOUT=0)"
elif [ -x devcarry/bin/kiln_opencl_node_test ] && [ -f devcarry/onnx_node_data.txz ]; then
  mkdir -p /tmp/nd && tar -xJf devcarry/onnx_node_data.txz -C /tmp/nd
  for st in buffer image; do
    timeout "${NODE_TIMEOUT:-150}" devcarry/bin/kiln_opencl_node_test --storage $st --data /tmp/nd/onnx_node_data --all \
      --results "$out/node_$st.results" > "$out/node_$st.txt" 2>&1
    echo "node tests, $st storage: rc=$?; $(grep -E 'pass|fail' "$out/node_$st.txt" | tail -1)"
  done
else
  echo "node tests: not staged (STAGE_OPENCL_TESTS=1 bench/stage_kiln.sh ...)"
fi

[ -f $Z/.exported ] || [ -f $Z/.opencl ] || { ${PYTHON:-python3} bench/export_models.py --out $Z --models "$models" > "$out/export.log" 2>&1; touch $Z/.opencl; }
for name in ${models//,/ }; do
  for st in buffer image; do
    rm -f /tmp/ocl.npy
    timeout 120 "$K" run $Z/$name/model.onnx --backend opencl --storage $st --input input=$Z/$name/input.npy \
      --output output=/tmp/ocl.npy > "$out/run_${name}_$st.txt" 2>&1
    rc=$?
    verdict="no output"
    [ -f /tmp/ocl.npy ] && verdict=$(${PYTHON:-python3} tests/models/compare_npy.py /tmp/ocl.npy $Z/$name/output.npy --rtol 1e-3 2>&1 | tail -1)
    echo "$name opencl $st fp32: rc=$rc; $verdict$(grep -m1 -o 'fatal signal [A-Z]*' "$out/run_${name}_$st.txt" | sed 's/^/; /')"
  done
done | tee "$out/zoo.txt"

# A model that failed in buffer storage, again with the driver-debugging
# switches (plugins/opencl/README.md): every kernel checked (names the first
# the device faults in), every buffer its own allocation (no shared
# arena), and every activation poisoned with NaN first (names reads of
# memory no kernel wrote).
for name in ${models//,/ }; do
  grep -q "^$name opencl buffer fp32: rc=0; match" "$out/zoo.txt" && continue
  for switch in KILN_OPENCL_CHECK=1 KILN_OPENCL_ARENA=off KILN_OPENCL_POISON=1; do
    rm -f /tmp/ocl.npy
    env $switch timeout 120 "$K" run $Z/$name/model.onnx --backend opencl --storage buffer \
      --input input=$Z/$name/input.npy --output output=/tmp/ocl.npy > "$out/debug_${name}_${switch// /_}.txt" 2>&1
    rc=$?
    verdict="no output: $(grep -m1 'kiln: [A-Z_]*:' "$out/debug_${name}_${switch// /_}.txt")"
    [ -f /tmp/ocl.npy ] && verdict=$(${PYTHON:-python3} tests/models/compare_npy.py /tmp/ocl.npy $Z/$name/output.npy --rtol 1e-3 2>&1 | tail -1)
    echo "$name buffer with $switch: rc=$rc; $verdict"
  done
  break  # one model is enough to tell
done | tee "$out/debug.txt"

paths=(); for name in ${models//,/ }; do paths+=("$Z/$name/model.onnx"); done
for backend in opencl vulkan; do
  timeout 240 "$K" bench "${paths[@]}" --backend $backend --warmup 10 --min-time 0.5 --json "$out/bench_$backend.json" \
    > "$out/bench_$backend.txt" 2>&1
  echo "kiln bench --backend $backend: rc=$?"
done

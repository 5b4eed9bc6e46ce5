#!/usr/bin/env bash
# Kiln's main job, from a fresh Debian machine: install the dependencies,
# build, export a real model (torchvision mobilenet_v2, seeded weights) and
# run it on the default device, checking the result against PyTorch.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KILN_BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
zoo="$build/zoo"
/usr/bin/python3 "$root/tests/models/export_zoo.py" --out "$zoo" mobilenet_v2
model="$zoo/mobilenet_v2"
"$build/tools/kiln/kiln" info
"$build/tools/kiln/kiln" run "$model/model.onnx" --input "input=$model/input.npy" --output "output=$build/mobilenet_v2_out.npy" --stats "$build/mobilenet_v2_stats.json"
/usr/bin/python3 "$root/tests/models/compare_npy.py" "$build/mobilenet_v2_out.npy" "$model/output.npy"
"$build/tools/kiln/kiln" run "$model/model.onnx" --input "input=$model/input.npy"

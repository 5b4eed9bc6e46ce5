#!/usr/bin/env bash
# --storage auto and --storage image on a recognition-style CNN at
# 4x3x48x640 (recognition_cnn.py) whose first feature map is too wide for an
# image: both run on the Vulkan device with validation, match PyTorch, and
# auto's layout pass keeps that tensor a buffer while putting others in
# images on a CPU device (lavapipe). Then the layout pass's ablation: with
# --disable-pass layout the model still runs and no layout statistics appear.
# Usage: storage_modes_test.sh KILN_BINARY PYTHON
set -u
kiln=$1
py=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$here/../../../tools/kiln/check_lib.sh"

check "export the model" 0 "" -- "$py" "$here/recognition_cnn.py" "$tmp/rec"
if have_vulkan "$kiln"; then
  for storage in image auto; do
    check "$storage runs" 0 "\($storage, fp32\).* 0 host fallbacks" -- "$kiln" run "$tmp/rec/model.onnx" --backend vulkan \
      --validate --storage $storage --input "input=$tmp/rec/input.npy" --output "output=$tmp/out_$storage.npy" \
      --stats "$tmp/$storage.json"
    check "$storage matches PyTorch" 0 "^ok$" -- "$py" -c "
import numpy as np
ref, out = np.load('$tmp/rec/output.npy'), np.load('$tmp/out_$storage.npy')
assert out.shape == ref.shape, (out.shape, ref.shape)
err = float(np.abs(out - ref).max())
assert err <= 1e-3 * max(1.0, float(np.abs(ref).max())), err
print('ok')"
  done
  check "auto: the wide map stays a buffer, others are images" 0 "^ok$" -- "$py" -c "
import json
stats = json.load(open('$tmp/auto.json'))
layout = [p['statistics'] for p in stats['passes'] if p['name'] == 'layout' and p['committed']][-1]
assert layout.get('too-large-for-image', 0) >= 1, layout
assert layout.get('tensors-image', 0) >= 1, layout
print('ok')"
  check "ablation: --disable-pass layout" 0 "^ok$" -- sh -c "'$kiln' run '$tmp/rec/model.onnx' --backend vulkan \
    --disable-pass layout --input 'input=$tmp/rec/input.npy' --stats '$tmp/off.json' >/dev/null && '$py' -c \"
import json
stats = json.load(open('$tmp/off.json'))
assert not [p for p in stats['passes'] if p['name'] == 'layout'], 'layout ran'
print('ok')\""
fi
check_summary

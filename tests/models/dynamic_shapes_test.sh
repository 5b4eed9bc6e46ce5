#!/usr/bin/env bash
# Issue 5's dynamic-shape acceptance: one compiled model serves every input
# shape. Each model of export_dynamic.py runs all its shapes in ONE
# `kiln run ... --then ...` process on Vulkan (validation on) and must match
# PyTorch at every shape, with no host fallback, no shader compiled after the
# first run, a new command buffer recorded per new shape signature and the
# old one re-used when a shape comes back (unless the shared activation
# memory grew since: then it is recorded again). The activation memory holds
# the largest plan seen (plus its growth headroom), not one arena per shape.
# Usage: dynamic_shapes_test.sh KILN_BINARY EXPORT_DIR
set -u
kiln=$1
dir=$2
py=${PYTHON:-/usr/bin/python3}  # the GPU machine: PYTHON=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../../tools/kiln/check_lib.sh"

for model in transformer_encoder_dyn resnet18_dyn; do
  d=$dir/$model
  n=$(wc -l < "$d/shapes.txt")
  args=("$kiln" run "$d/model.onnx" --backend vulkan --validate --stats "$tmp/$model.json")
  for ((k = 0; k < n; ++k)); do
    ((k)) && args+=(--then)
    args+=(--input "input=$d/in_$k.npy" --output "output=$tmp/${model}_$k.npy")
  done
  check "$model: $n shapes in one process" 0 "run $n:" -- "${args[@]}"
  check "$model: matches PyTorch, compiles once" 0 "^ok$" -- "$py" -c "
import json, numpy as np
stats = json.load(open('$tmp/$model.json'))
assert stats['compile']['fallbacks'] == 0, stats['compile']['fallback_reasons']
runs = stats['runs']
assert len(runs) == $n, len(runs)
seen = {}  # shape -> activation_bytes when it last ran
largest = 0
for k, run in enumerate(runs):
    ref = np.load('$d/out_%d.npy' % k)
    out = np.load('$tmp/${model}_%d.npy' % k)
    assert out.shape == ref.shape, (k, out.shape, ref.shape)
    err, bound = float(np.abs(out - ref).max()), 1e-3 * max(1.0, float(np.abs(ref).max()))
    assert err <= bound, f'run {k + 1} ({run[\"inputs\"]}): max|d| {err} > {bound}'
    assert run['shader_compiles'] == 0, f'run {k + 1} compiled {run[\"shader_compiles\"]} shaders'
    shape = run['inputs']['input']
    pool = run['activation_bytes']
    again = shape not in seen or seen[shape] != pool
    assert run['recorded'] == again, f'run {k + 1} ({shape}): recorded {run[\"recorded\"]}'
    seen[shape] = pool
    largest = max(largest, run['memory']['arena_bytes'])
    assert run['memory']['arena_bytes'] <= pool <= largest * 9 // 8 + (64 << 10) + 256, (k, pool, largest)
    print(f'run {k + 1} {shape}: max|d| {err:.3g} (bound {bound:.3g}), device memory {run[\"device_bytes\"]} B, activation arena {run[\"memory\"][\"arena_bytes\"]} B, shared activation memory {pool} B')
print('ok')"
done

check_summary

#!/usr/bin/env bash
# Cold and warm compile times of the zoo (issue 16, "shader compilation off
# the critical path"): for each model and precision, one `kiln run` with an
# empty kernel cache directory (cold: every shader compiled, every pipeline
# created) and one more with the cache that run left on disk (warm: a new
# process, so nothing is in memory; SPIR-V and the pipeline cache come from
# disk). Compile time is the session's plan + kernels (shaders and
# pipelines) + weight upload, from `kiln run --stats`.
#
# usage: bench/compile_times.sh ZOO_DIR OUT_DIR [MODEL...]
#   ZOO_DIR holds MODEL/model.onnx (bench/zoo/export.py writes it);
#   KILN (default: kiln on PATH) is the binary; KILN_COMPILE_THREADS as usual.
# Leaves OUT_DIR/compile_times.md (a table) and the stats JSON of every run.
set -euo pipefail
zoo=${1:?usage: compile_times.sh ZOO_DIR OUT_DIR [MODEL...]}
out=${2:?usage: compile_times.sh ZOO_DIR OUT_DIR [MODEL...]}
shift 2
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(mobilenet_v2 resnet50 efficientnet_b0 mnasnet1_0 convnext_tiny swin_t vit_b_16 bert_base_s128)
kiln=${KILN:-kiln}
mkdir -p "$out"

for m in "${models[@]}"; do
  [ -f "$zoo/$m/model.onnx" ] || { echo "compile_times: no $zoo/$m/model.onnx, skipped" >&2; continue; }
  for p in fp32 fp16; do
    cache=$(mktemp -d)
    for phase in cold warm; do
      KILN_CACHE_DIR=$cache timeout 300 "$kiln" run "$zoo/$m/model.onnx" --precision $p \
        --stats "$out/${m}_${p}_$phase.json" > "$out/${m}_${p}_$phase.log" 2>&1 ||
        echo "compile_times: $m $p $phase failed (see $out/${m}_${p}_$phase.log)" >&2
    done
    rm -rf "$cache"
  done
done

python3 - "$out" "${models[@]}" <<'EOF'
import json, os, sys
out, models = sys.argv[1], sys.argv[2:]
def compile_ms(path):
    c = json.load(open(path))["compile"]
    return c["plan_ms"] + c["kernels_ms"] + c["upload_ms"], c
rows = ["| model | precision | cold ms (shaders / pipelines) | warm ms (shaders / pipelines) | pipelines | threads |",
        "|---|---|---|---|---|---|"]
for m in models:
    for p in ("fp32", "fp16"):
        cold, warm = (os.path.join(out, f"{m}_{p}_{ph}.json") for ph in ("cold", "warm"))
        if not (os.path.exists(cold) and os.path.exists(warm)):
            continue
        (ct, c), (wt, w) = compile_ms(cold), compile_ms(warm)
        rows.append(f"| {m} | {p} | {ct:.0f} ({c['shaders_ms']:.0f} / {c['pipelines_ms']:.0f}) | "
                    f"{wt:.0f} ({w['shaders_ms']:.0f} / {w['pipelines_ms']:.0f}) | {c['pipelines']} | {c['compile_threads']} |")
table = "\n".join(rows)
open(os.path.join(out, "compile_times.md"), "w").write(table + "\n")
print(table)
EOF

#!/usr/bin/env bash
# Kiln vs PyTorch on the GPU machine, in one session: exports the benchmark
# models there (they are too large to carry), runs Kiln through
# kiln_runner.py, then the PyTorch peers through torch_peer.py, one after the
# other so neither disturbs the other's timing, and writes into OUT:
#   kiln.json, torch.json  kiln-bench-v1 documents (bench/README.md)
#   RESULTS.md             report.py's tables (also printed at the end)
#   run_h100.log           everything this script printed
# It aims to finish within TOTAL_BUDGET_S (default 450 s): torch.compile's
# compiles dominate, so whatever does not fit is recorded as skipped; run
# again with fewer MODELS / PRECISIONS / TORCH_ENGINES for the rest.
#
# usage: KILN_BIN=build-h100/tools/kiln/kiln bench/run_h100.sh [OUT_DIR]
#        (OUT_DIR defaults to $OUT, else ./out/bench)
# Environment, all optional (without KILN_BIN only PyTorch runs):
#   KILN_BIN         the kiln binary (e.g. carried in an ignored build directory)
#   KILN_LIB_DIR     ':'-separated directories holding shared libraries kiln
#                    needs that the machine lacks (libkiln.so.0, libprotobuf...)
#   KILN_ARGS        extra arguments for every `kiln run` (e.g. "--device 0")
#   MODELS           default mobilenet_v2,resnet50,swin_t,vit_b_16,convnext_tiny
#   PRECISIONS       default fp32,fp16
#   STORAGES         default buffer,image
#   TORCH_ENGINES    default eager,compile,compile-reduce-overhead
#   TOTAL_BUDGET_S   default 450;  KILN_BUDGET_S default 120 (Kiln's share)
#   TORCH_ITERS / TORCH_WARMUP  default 100 / 10
#   KILN_ITERS / KILN_WARMUP    default 50 / 5
#   MODELS_DIR       where models are exported (default /tmp/kiln-bench-models)
#   SKIP_EXPORT      non-empty: use MODELS_DIR as it is (e.g. models exported
#                    here with Debian's torch and carried; only small ones fit)
#   PYTHON           default python3 (the one with PyTorch and CUDA)
#   TORCH_DEVICE / KILN_BACKEND  default cuda / vulkan; cpu / reference make a
#                    smoke test of this script on a machine without a GPU
set -uo pipefail  # no -e: one part failing must not lose the others' results

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-${OUT:-$root/out/bench}}
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
rm -f "$out/kiln.json" "$out/torch.json" "$out/RESULTS.md" "$out/run_h100.log"  # no stale results in the report
exec > >(tee -a "$out/run_h100.log") 2>&1

py=${PYTHON:-python3}
models=${MODELS:-mobilenet_v2,resnet50,swin_t,vit_b_16,convnext_tiny}
precisions=${PRECISIONS:-fp32,fp16}
storages=${STORAGES:-buffer,image}
engines=${TORCH_ENGINES:-eager,compile,compile-reduce-overhead}
total=${TOTAL_BUDGET_S:-450}
kiln_budget=${KILN_BUDGET_S:-120}
models_dir=${MODELS_DIR:-/tmp/kiln-bench-models}
export PYTHONUNBUFFERED=1
start=$SECONDS

say() { printf '\n== %s (%d s)\n' "$*" $((SECONDS - start)); }
left() { echo $((total - (SECONDS - start))); }

say "machine"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 | head -5
else
  echo "no nvidia-smi"
fi
"$py" -c 'import torch, torchvision; print("torch", torch.__version__, "cuda", torch.version.cuda,
"torchvision", torchvision.__version__, "gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)' \
  || echo "warning: $py cannot import torch/torchvision"

# --- Kiln -------------------------------------------------------------------
if [ -z "${KILN_BIN:-}" ]; then
  say "Kiln skipped: KILN_BIN is not set"
elif [ ! -x "$KILN_BIN" ]; then
  say "Kiln skipped: KILN_BIN=$KILN_BIN is not an executable file"
else
  kiln=$(cd "$(dirname "$KILN_BIN")" && pwd)/$(basename "$KILN_BIN")
  if [ -n "${KILN_LIB_DIR:-}" ]; then export LD_LIBRARY_PATH="$KILN_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
  # The Vulkan loader: the machine may have none; the .gl debs (device README)
  # are unpacked only as root, on a machine with an NVIDIA driver, and only
  # when no loader is found.
  if ! ldconfig -p | grep 'libvulkan\.so\.1' >/dev/null; then  # not -q: an early exit trips pipefail
    if [ -d "$root/.gl" ] && [ "$(id -u)" = 0 ] && command -v nvidia-smi >/dev/null; then
      say "unpacking the Vulkan loader from $root/.gl"
      for f in "$root"/.gl/*.deb; do dpkg -x "$f" /; done
      ldconfig
    else
      echo "warning: no libvulkan.so.1 and no $root/.gl to unpack (carry .gl)"
    fi
  fi
  nvidia_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$nvidia_icd" ]; then
    export VK_DRIVER_FILES=$nvidia_icd
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  fi
  missing=$(ldd "$kiln" 2>&1 | grep 'not found')
  if [ -n "$missing" ]; then
    say "Kiln skipped: shared libraries not found (set KILN_LIB_DIR)"
    echo "$missing"
  else
    say "kiln info"
    "$kiln" info 2>&1 | head -20
    if [ -n "${SKIP_EXPORT:-}" ]; then
      say "using the models in $models_dir as they are (SKIP_EXPORT)"
    else
      say "exporting $models to $models_dir"
      timeout -k 10 300 "$py" "$root/bench/export_models.py" --out "$models_dir" --models "$models"
    fi
    budget=$(( kiln_budget < $(left) ? kiln_budget : $(left) ))
    if [ "$budget" -lt 10 ]; then budget=10; fi
    say "Kiln: $models x $precisions x $storages (budget ${budget} s)"
    # shellcheck disable=SC2086  # KILN_ARGS is a list of words
    kiln_args=(); for a in ${KILN_ARGS:-}; do kiln_args+=("--kiln-arg=$a"); done
    timeout -k 10 $((budget + 120)) "$py" "$root/bench/kiln_runner.py" --kiln "$kiln" --models-dir "$models_dir" \
      --json "$out/kiln.json" --models "$models" --precisions "$precisions" --storages "$storages" \
      --iters "${KILN_ITERS:-50}" --warmup "${KILN_WARMUP:-5}" --budget-s "$budget" --timeout-s 120 \
      --backend "${KILN_BACKEND:-vulkan}" \
      "${kiln_args[@]}"
  fi
fi

# --- PyTorch ----------------------------------------------------------------
budget=$(( $(left) - 20 ))
if [ "$budget" -lt 30 ]; then budget=30; fi
say "PyTorch: $engines on $models x $precisions (budget ${budget} s)"
timeout -k 10 $((budget + 90)) "$py" "$root/bench/torch_peer.py" --json "$out/torch.json" --models "$models" \
  --precisions "$precisions" --engines "$engines" --iters "${TORCH_ITERS:-100}" --warmup "${TORCH_WARMUP:-10}" \
  --budget-s "$budget" --device "${TORCH_DEVICE:-cuda}"
rc=$?
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "torch_peer.py was stopped at its time limit; torch.json holds what finished"; fi

# --- Report -----------------------------------------------------------------
jsons=()
for f in "$out/kiln.json" "$out/torch.json"; do [ -f "$f" ] && jsons+=("$f"); done
invocation=""
for v in KILN_BIN KILN_ARGS MODELS PRECISIONS STORAGES TORCH_ENGINES TOTAL_BUDGET_S KILN_BUDGET_S TORCH_ITERS \
         TORCH_WARMUP KILN_ITERS KILN_WARMUP TORCH_DEVICE KILN_BACKEND SKIP_EXPORT; do
  if [ -n "${!v:-}" ]; then invocation+="$v=${!v} "; fi
done
invocation+="bench/run_h100.sh"
if [ ${#jsons[@]} -gt 0 ]; then
  say "report"
  "$py" "$root/bench/report.py" "${jsons[@]}" --out "$out/RESULTS.md" --invocation "$invocation"
else
  say "no results were written"
  exit 1
fi
say "done: $out"

#!/usr/bin/env bash
# Installs everything Kiln needs to build, test and benchmark, from Debian's
# packages only. Safe to re-run: apt skips what is already installed.
set -euo pipefail

packages=(
  # toolchain
  cmake ninja-build g++ ccache pkg-config
  # the fuzz targets (fuzz/): clang with libFuzzer and the sanitizer runtimes
  clang libclang-rt-dev
  # Vulkan: loader + headers, volk, shaderc, glslang, SPIRV-Cross, SPIRV-Tools
  libvulkan-dev libvulkan-volk-dev vulkan-tools
  libshaderc-dev glslc glslang-dev glslang-tools
  spirv-cross libspirv-cross-c-shared-dev spirv-tools
  # ONNX import
  libonnx-dev libprotobuf-dev protobuf-compiler
  # tests and benchmarks
  googletest libgtest-dev libbenchmark-dev
  # OpenCL (the opencl plugin)
  ocl-icd-opencl-dev opencl-headers clinfo
  # GPU-less testing: lavapipe, the Khronos validation layers, PoCL
  mesa-vulkan-drivers vulkan-validationlayers pocl-opencl-icd
  # model export and reference outputs
  python3 python3-torch python3-torchvision python3-onnx python3-numpy
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

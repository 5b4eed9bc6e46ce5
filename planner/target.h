// What the planner needs to know about the device it plans for.
//
// Backend-neutral (no Vulkan types): the Vulkan runtime fills it from the
// device's capabilities, tests fill it by hand to exercise fallbacks
// (tiny image limits, no fp16, no subgroups).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace kiln::planner {

// Which cooperative-matrix extension the device's tensor-core kernels use.
// The kernels' GLSL is GL_NV_cooperative_matrix either way (what glslang 12
// compiles). kNV: the SPIR-V runs as compiled (VK_NV_cooperative_matrix).
// kKHR: the compiled module is rewritten into SPV_KHR_cooperative_matrix
// (platform/vulkan/coopmat_khr.h; vk::CompileOptions::cooperative_matrix_khr)
// for VK_KHR_cooperative_matrix, the portable extension.
enum class CoopMatFlavour : uint8_t { kNone, kNV, kKHR };

// One cooperative-matrix shape with fp16 A (m x k) and B (k x n) operands,
// subgroup scope: C (m x n) accumulates in fp32 or, where the device offers
// only that, in fp16.
struct CoopMatShape {
  uint32_t m = 0, n = 0, k = 0;
  bool f32_accumulator = true;
};

// A workgroup tile of the cooperative-matrix GEMM (planner/gemm_coopmat.h):
// bm x bn outputs, a wm x wn grid of subgroups, bk of K per shared-memory
// step, and 1 or 2 shared-memory buffers (2: the next step's tiles are
// stored while this step multiplies, one barrier per step). bm = bn = wm =
// wn = 0 in a forced tile (TargetInfo::coopmat_tile): the planner's shape.
struct CoopMatTile {
  int bm = 64, bn = 64, wm = 2, wn = 2, bk = 32, stages = 1;
};

// tile_k: K per shared-memory step of the scalar kernel (16, 32 or 64; a
// depth whose tiles exceed the shared memory is ignored). max_split: at most
// this many split-K slices for any GEMM (1: none). latency_tiles false: no
// small tiles and deep steps for latency-bound GEMMs (gemm_kernels.cc
// latency_bound), the plain tiles for ablations.
struct GemmSweep {
  int tile_k = 0;
  int max_split = 0;
  bool latency_tiles = true;
};

struct TargetInfo {
  uint64_t max_storage_buffer_range = 128ull << 20;
  uint32_t max_image_dimension_2d = 16384;
  uint32_t max_push_constants_size = 128;
  uint32_t max_shared_memory = 32768;
  uint32_t max_workgroup_invocations = 1024;
  uint32_t max_workgroup_count_x = 65535;
  // SMs / CUs / shader cores, where the driver says (vk::Capabilities::
  // compute_units); 0 = unknown.
  uint32_t compute_units = 0;
  uint32_t subgroup_size = 0;          // 0: no subgroup operations in compute
  bool subgroup_arithmetic = false;    // subgroupAdd/Max/... in compute shaders
  bool subgroup_shuffle = false;
  bool fp16_storage = false;           // 16-bit storage buffers (float16_t members)
  bool fp16_arithmetic = false;        // shaderFloat16
  bool int64 = false;
  bool float32_atomic_add = false;     // atomicAdd on float storage-buffer members
  // Packed int8 dot products (Vulkan 1.3 shaderIntegerDotProduct: SPIR-V
  // OpSDot/OpSUDot on 4 x 8 bits in a 32-bit word): the integer GEMM's
  // dot-product path (gemm_int.h); without it the scalar int32 kernel.
  bool integer_dot_product = false;
  bool cooperative_matrix = false;     // VK_KHR_cooperative_matrix, fp16 x fp16 -> fp32 16x16x16
  // Cooperative matrices the planner may use for fp16 GEMMs: the dialect and
  // the device's fp16-operand shapes in it (empty with kNone).
  CoopMatFlavour coopmat = CoopMatFlavour::kNone;
  std::vector<CoopMatShape> coopmat_f16_shapes;
  // The same dialect's shapes with int8 A and B and int32 accumulators
  // (f32_accumulator false), for the integer GEMM (gemm_int.h); empty
  // without 8-bit shader arithmetic (shaderInt8), which the int8 fragment
  // types need.
  std::vector<CoopMatShape> coopmat_s8_shapes;
  // A cooperative-matrix GEMM configuration forced on every fp16 GEMM that
  // takes the tensor-core kernel, for kernel sweeps (the runtime reads it
  // from $KILN_COOPMAT_TILE; bench/kernels/README.md): unset, the planner
  // chooses. One the target cannot run leaves the planner's choice.
  std::optional<CoopMatTile> coopmat_tile;
  // Tiled-GEMM choices forced for kernel sweeps (the runtime reads them from
  // $KILN_GEMM_SWEEP; bench/kernels/README.md); zero or false: the planner's.
  GemmSweep gemm_sweep;
  uint32_t vulkan_version = (1u << 22) | (1u << 12);  // VK_MAKE_API_VERSION(0,1,1,0)
};

}  // namespace kiln::planner

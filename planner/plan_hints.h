// Planner hooks: the choices a plugin can make for the planner through graph
// annotations (the keys are defined in kiln/kiln_plugin.h, where plugins see
// them). Without an annotation the planner's own choice applies, bit for bit.
//
//   value  "kiln.storage"      "buffer" | "image"   where the tensor lives
//   value  "kiln.packed_axis"  "<axis>"             an image's axis in the 4 texel channels
//   node   "kiln.kernel"       "tile=64x32,split_k=2,splitk_reduce=atomic,coopmat=off,gemv_columns=8,int8_dot=off"
//                              the kernel configuration of a GEMM-family
//                              node (MatMul, Gemm, Conv lowered as GEMM; the
//                              pointwise Conv of a depthwise-pointwise
//                              fusion group, planner/fusion_dwpw.h)
//   node   "kiln.fusion_group" "<id>"               the node's fusion group
//                              (planner/fusion.h)
//
// A storage hint is a request: constants, non-float tensors and tensors too
// large for the device's images stay buffers. A malformed hint is an error
// naming the value or node, so a plugin's mistake shows where it was made.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "kiln/kiln_plugin.h"
#include "planner/kernel.h"

namespace kiln::planner {

inline constexpr const char* kStorageKey = KILN_ANNOTATION_STORAGE;
inline constexpr const char* kPackedAxisKey = KILN_ANNOTATION_PACKED_AXIS;
inline constexpr const char* kKernelKey = KILN_ANNOTATION_KERNEL;
inline constexpr const char* kFusionGroupKey = KILN_ANNOTATION_FUSION_GROUP;

struct StorageHint {
  std::optional<Storage> storage;
  std::optional<int> packed_axis;
};

enum class SplitKReduce : uint8_t { kSeparate, kFused, kAtomic };

struct KernelHint {
  // GEMM tile rows x columns: 16, 32, 64 or 128 rows (128 only with 64
  // columns), 16, 32 or 64 columns.
  std::optional<int> tile_m, tile_n;
  // K slices of the scalar tiled GEMM: 1 (none) to 16.
  std::optional<int> split_k;
  // How the K slices of a split GEMM are added up (gemm_kernels.h,
  // emit_gemm): "separate" by a second dispatch; "fused" by the tile
  // kernel's last workgroup per tile, which sums the slices in order (the
  // same bits as separate; the tensor-core kernel splits K only then);
  // "atomic" by every workgroup adding its slice into one sum with float
  // atomics, the last storing it (the additions' order, and so the last
  // bits, vary from run to run). Unset: separate, the fastest measured
  // (gemm_kernels.cc). fused and atomic are requests (like storage): a grid
  // of symbolic size, or atomic on a device without float atomics, runs
  // separate.
  std::optional<SplitKReduce> splitk_reduce;
  // false: never the cooperative-matrix kernel for this node.
  std::optional<bool> coopmat;
  // false: never the packed int8 dot-product kernel for this integer GEMM
  // (gemm_int.h); the scalar int32 one instead. on is the default where the
  // device has the dot products.
  std::optional<bool> int8_dot;
  // On an attention group's last MatMul (fusion_attention.h): query rows per
  // workgroup of the attention kernel, 8, 16, 32 or 64 (when its tiles fit
  // the shared memory; else the planner's choice).
  std::optional<int> attention_rows;
  // A GEMV's (gemm_kernels.h: M <= 4) columns per workgroup, 8, 16 or 32
  // (else the planner's choice by the device's compute units).
  std::optional<int> gemv_columns;
  bool empty() const {
    return !tile_m && !split_k && !splitk_reduce && !coopmat && !int8_dot && !attention_rows && !gemv_columns;
  }
};

// The value's storage hint. Errors: kInvalidArgument naming the value for an
// unknown storage or an axis outside its rank.
StatusOr<StorageHint> storage_hint(const ir::Value& value);
// The node's kernel hint. Errors: kInvalidArgument naming the node for an
// unknown key or a value out of range.
StatusOr<KernelHint> kernel_hint(const ir::Node& node);
// The node's fusion group id; nullopt without one. Errors: kInvalidArgument
// naming the node for an id that is empty, longer than 64 characters or has
// a character other than letters, digits and "_.:-".
StatusOr<std::optional<std::string>> fusion_group_hint(const ir::Node& node);
// Checks every hint in the main region and sub-graphs (build_plan calls it
// first, so a bad hint fails the compile before anything is planned).
Status check_plan_hints(const ir::Graph& graph);

}  // namespace kiln::planner

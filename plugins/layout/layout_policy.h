// The layout plugin's decisions for one tensor, apart from the graph and the
// ABI so that they can be tested on hand-made facts (layout_policy_test.cc).
//
// Packed axis (SmartMem §3.2.2, "layout selection by reduction dimension"):
// a tensor is laid out for its consumers' reduction dimensions, the producer
// writing whatever order they read best (writing sub-optimally costs less
// than reading sub-optimally). Kiln's 2.5D image (planner/kernel.h
// image_extent) keeps two dimensions contiguous: the packed axis in a
// texel's four channels, and the last axis along x. So, as the paper does
// for k = 2 memory dimensions: a reduction axis other than the last is
// packed (the last one stays contiguous along x), the most wanted one when
// consumers disagree; with only the last axis reduced, the last axis is
// packed (vec4 along the reduction). More distinct non-last reduction axes
// than one is a conflict the paper resolves with several copies; Kiln keeps
// one layout (the most wanted axis) and counts the conflict. A tensor no
// consumer reduces keeps its producer's order: an elementwise producer
// passes on its input's packed axis (the paper's L1/L2: the operands of a
// fused elementwise op share one layout, no index arithmetic between them),
// anything else the planner's default (channels at rank 4, else the last).
// One exception, measured: Kiln's GEMM-lowered kernels (Conv, MatMul, Gemm)
// store an image only in their natural order (channels; the last axis) and
// need a copy-out dispatch for any other, which costs more than the
// consumer's strided reads gain; their outputs keep that order ("the
// producer's natural output order" of issue 15), counted as overridden.
//
// Storage (auto mode) is chosen per device, by measurement (README.md):
//   * CPU devices (lavapipe): images for rank-4 activations (convolutional
//     feature maps, channel-packed, which Kiln's texel conv/pool kernels read
//     4 channels at a time), buffers for everything else (transformer
//     activations ran slower as images);
//   * discrete GPUs: buffers (on the H100 buffers beat images for most of
//     the zoo; issue 15);
//   * integrated and other GPUs (the mobile GPUs SmartMem targets, where the
//     texture path has ~10x the bandwidth of global memory): images for every
//     activation, SmartMem's and MNN's choice; not measured by Kiln yet;
//   * graph inputs and outputs stay buffers (host bindings need them), and
//     so does a tensor whose image would exceed the device's 2D limit, or
//     might: one with a symbolic dim (a run whose shapes make its image too
//     large would fail where a buffer works; forced image takes that risk).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln_layout {

// One reader of the tensor.
struct ConsumerFacts {
  int32_t layout_class = 0;     // kiln_layout_class_t
  uint64_t reduction_axes = 0;  // bits over the tensor's axes (op_layout)
  bool stencil = false;         // Conv/pooling: axes >= 2 are a short sliding window, not a long reduction
};

struct TensorFacts {
  int rank = 0;
  std::vector<int64_t> dims;  // -1 for a symbolic dim
  bool is_float = false;
  bool graph_io = false;  // a graph input or output
  std::vector<ConsumerFacts> consumers;
  // An elementwise (ILI-Variable) producer's first same-rank activation
  // input's packed axis, already chosen (the values are visited in order).
  std::optional<int> producer_packed_axis;
  // The packed axis a GEMM-lowered producer (Conv: the channels, MatMul and
  // Gemm: the last axis) stores an image in without an extra copy-out
  // dispatch; nullopt for other producers.
  std::optional<int> producer_natural_axis;
};

enum class DeviceKind : uint8_t { kNone, kCpu, kDiscreteGpu, kOtherGpu };
enum class Mode : uint8_t { kAuto, kBuffer, kImage };

struct DeviceFacts {
  DeviceKind kind = DeviceKind::kNone;
  Mode mode = Mode::kAuto;
  int64_t max_image_dimension_2d = 0;  // 0: unknown (no limit checked)
};

// For a Reshape (Flatten, Squeeze, Unsqueeze) from `in` to `out` (static
// dims, equal element counts): the input axis each output axis reads
// contiguously along, or -1. Dims are matched in groups of equal products
// (SmartMem's split and merge maps): an output axis split off an input axis
// maps to it; an axis merged from several input axes maps to the innermost
// of them of extent > 1, along which it is contiguous. Empty when the
// shapes are not static or do not match.
std::vector<int> reshape_axis_map(const std::vector<int64_t>& in, const std::vector<int64_t>& out);

// DeviceKind from kiln_target_info_t's device_type (VkPhysicalDeviceType).
DeviceKind device_kind(int32_t vk_device_type);

enum class PackReason : uint8_t { kReduction, kProducer, kDefault };

struct PackChoice {
  int axis = 0;
  PackReason reason = PackReason::kDefault;
  bool conflict = false;    // consumers wanted more distinct non-last axes than one layout holds
  bool overridden = false;  // consumers wanted another axis than the producer's natural one
};

// The packed axis by the rules above (rank >= 1).
PackChoice choose_packed_axis(const TensorFacts& t);

enum class StorageReason : uint8_t { kDevice, kGraphIo, kTooLarge, kSymbolic };

struct StorageChoice {
  bool image = false;
  StorageReason reason = StorageReason::kDevice;
};

// Where the tensor lives in auto mode (the forced modes need no choice).
StorageChoice choose_storage(const TensorFacts& t, const DeviceFacts& d, int packed_axis);

// Whether the image of `dims` with `packed_axis` fits a device limit of
// `limit` texels per side (planner/kernel.h image_extent); a symbolic dim
// fits (the planner checks it when a run binds the shapes).
bool image_fits(const std::vector<int64_t>& dims, int packed_axis, int64_t limit);

}  // namespace kiln_layout

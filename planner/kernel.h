// The backend-neutral kernel description the planner lowers every op to.
//
// A kernel is a compute dispatch over tensors. Each tensor it touches is
// described by an *accessor* (KernelTensor): its logical shape and where it
// lives on the device — a storage buffer (row-major, any rank) or a 2D image
// used as 2.5D texture memory (four elements of one "packed" axis per RGBA
// texel, the other axes folded into x and y; see image_extent()). The GLSL
// code generator (glsl_codegen.h) turns each accessor into the same small
// set of functions (X_at, X_ld, X_st4_at, ...), so an op's kernel body is
// written once and runs on either storage; the layout plugin can change a
// tensor's storage without touching kernels.
//
// Integer parameters (tensor dims and op-specific sizes) are symbolic dims
// (ir::Dim): the ones known when the plan is built become specialization
// constants, the others push constants evaluated per run from the bound
// symbol values — so a new input shape never recompiles a shader.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/dtype.h"
#include "engine/ir/dim.h"

namespace kiln::planner {

enum class Storage : uint8_t { kBuffer, kImage };
// Element type as stored on the device. Integer and bool graph tensors are
// stored as int32 (converted on upload/download); float64 as float32.
enum class ElemType : uint8_t { kF32, kF16, kI32 };

const char* storage_name(Storage s);   // "buffer", "image"
const char* elem_type_name(ElemType t);  // "f32", "f16", "i32"
uint32_t elem_bytes(ElemType t);
// The device element type for a graph dtype at a float precision (kF32 or kF16).
ElemType device_elem_type(DType dtype, ElemType float_type);
bool is_float(ElemType t);

// Where a tensor lives and how its elements are arranged.
struct DeviceLayout {
  Storage storage = Storage::kBuffer;
  ElemType type = ElemType::kF32;
  // Image only: the logical axis packed four elements per texel.
  int packed_axis = -1;

  bool operator==(const DeviceLayout&) const = default;
};

// The texel extent of an image holding `shape` packed along `packed_axis`.
// With B = ceil(d[p] / 4) blocks of the packed axis p, and W the last axis
// when p is not the last axis (else W = 1):
//   x = block * W + c[last]           (width  = B * W)
//   y = row-major index over the remaining axes (height = their product, >= 1)
// NCHW packed on C: x = (c/4) * W + w, y = n * H + h.
struct ImageExtent {
  ir::Dim width;
  ir::Dim height;
};
ImageExtent image_extent(const std::vector<ir::Dim>& shape, int packed_axis);
// The axis an image of this rank packs by default: C for rank 4 (NCHW),
// else the last axis.
int default_packed_axis(size_t rank);

// A tensor the plan knows: a graph value, a constant derived by a lowering
// (re-packed weights, fp16 copies), or a temporary scratch tensor.
using TensorId = int32_t;
constexpr TensorId kNoTensor = -1;

struct IndexView;  // planner/index_view.h

// One tensor a kernel binds. `name` is the GLSL identifier prefix the
// generated accessors use ("x" -> x_at(...), x_D0, ...).
struct KernelTensor {
  std::string name;
  TensorId tensor = kNoTensor;
  DeviceLayout layout;
  std::vector<ir::Dim> shape;  // logical shape
  bool written = false;        // output of the kernel (else read-only)
  // Read only at the elements this kernel writes of its written tensor, each
  // by the invocation that writes it and before it does (a pure elementwise
  // input: same shape, same linear index, buffers). Set by the lowerings that
  // know it; lets the planner write the output over this input's memory
  // (PlanTensor::inplace_of). Never guessed from names.
  bool elementwise = false;
  // Shares memory with another tensor this kernel binds (an in-place write):
  // the generated GLSL drops `restrict` from this binding.
  bool shares_memory = false;
  // Read through an index view (index_view.h; set by fusion, fusion_views.h):
  // `tensor` and `layout` are the view's SOURCE, addressed with the view's
  // source_shape, while `shape` is the view's logical shape, the one the
  // kernel sees through X_at/X_ld/X_at4 (glsl_codegen.h). Never
  // `elementwise`. A written tensor with a view is a store view (the kernel
  // addresses `shape`, its stores land in the source through the view's
  // map; fusion_store_views.h), which needs the kernel's store epilogue.
  // Null: the tensor is read or written as it is.
  std::shared_ptr<const IndexView> view;
  // Buffers only: other workgroups of the same dispatch read what this one
  // writes (the split-K fix-up): the binding is `coherent`, so its loads and
  // stores bypass caches that are not device-wide.
  bool coherent = false;
};

// An integer the kernel uses beyond the tensors' dims (strides, pads, axis
// sizes). GLSL sees it as `int NAME`.
struct KernelParam {
  std::string name;
  ir::Dim value;
};

// A function every store to one written tensor passes through (operator
// fusion's epilogue, planner/fusion.h): the kernel computes a value for an
// element of `tensor` and stores kiln_epilogue(element, value) instead. See
// glsl_codegen.h for the generated functions.
struct StoreEpilogue {
  std::string tensor;  // the written tensor's name; empty = no epilogue
  // GLSL defining `S kiln_epilogue(int oc0, ..., int ocR-1, int oi, S v)`
  // for `tensor`'s rank R and scalar type S (any helpers it needs first);
  // a store view's takes both of its coordinates (glsl_codegen.h).
  std::string code;
  bool empty() const { return tensor.empty(); }
};

struct KernelDesc {
  // Human-readable kernel name for profiles and errors ("conv2d_3x3s1", "add").
  std::string name;
  enum class Family : uint8_t {
    // One invocation per four consecutive outputs along the single written
    // tensor's vector axis (see glsl_codegen.h); `body` computes one element.
    kMap,
    // `body` is the whole rest of the shader including main(); the lowering
    // chooses local_size and groups.
    kCustom,
  };
  Family family = Family::kMap;
  std::vector<KernelTensor> tensors;
  std::vector<KernelParam> params;
  // GLSL helper functions placed after the accessors and before main (kMap)
  // or the rest of the shader (kCustom).
  std::string helpers;
  std::string body;
  // Extra `#extension NAME : require` lines (subgroups, cooperative matrix).
  std::vector<std::string> extensions;
  // kCustom only: workgroup size and the dispatch grid (symbolic).
  std::array<uint32_t, 3> local_size{64, 1, 1};
  std::array<ir::Dim, 3> groups{ir::Dim(1), ir::Dim(1), ir::Dim(1)};
  // Rough cost for profiles and benchmarks (0 = unknown).
  ir::Dim flops = ir::Dim(0);
  // Stores of one written tensor through a fused epilogue (none by default).
  StoreEpilogue store_epilogue;
};

}  // namespace kiln::planner

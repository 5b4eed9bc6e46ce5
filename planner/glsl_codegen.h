// KernelDesc -> GLSL compute shader.
//
// The generated shader is: a fixed preamble (version, extensions, workgroup
// size), the parameters, one binding + accessor functions per tensor, the
// lowering's helpers, then the body (kMap: wrapped in the map harness;
// kCustom: verbatim).
//
// Parameters. Every dim of every tensor becomes an int parameter named
// `<tensor>_D<k>`, plus `<tensor>_NUMEL`; KernelDesc::params add more. A
// parameter whose value is a constant at plan time is a specialization
// constant (`layout(constant_id = N) const int NAME = 1;` — the value is set
// at pipeline creation, so kernels that differ only in shapes share one
// SPIR-V module); any other is a push constant (`#define NAME kiln_pc.p[j]`),
// evaluated per run. Consequently only constant parameters may size arrays.
// A rank-0 tensor is seen as shape [1].
//
// Accessors for a tensor X of rank R (scalar type S = float for f32/f16
// tensors, int for i32; vector type V = vec4 / ivec4). Coordinates are ints,
// row-major; X_VEC is the tensor's vector axis: the packed axis of an image,
// the last axis of a buffer.
//   S X_at(int c0, ..., int cR-1)   load one element (any storage)
//   S X_ld(int i)                   load by row-major linear index
//   V X_at4(int c0, ..., int cR-1)  load 4 consecutive elements along X_VEC
//                                   from c (lanes past the end read 0); for an
//                                   image c[X_VEC] must be a multiple of 4
// and for a written tensor:
//   void X_st4(int c0, ..., int cR-1, V v)  store 4 consecutive elements along
//                                   X_VEC (lanes past the end dropped); for an
//                                   image c[X_VEC] must be a multiple of 4
//   void X_st(int i, S v)           store one element by linear index
//                                   (buffers only: `#if X_IS_BUFFER`)
// Buffers also define X_IS_BUFFER 1 and expose the array `X_data[]` (element
// type float, float16_t or int); images define X_IS_IMAGE 1.
//
// Store epilogue (KernelDesc::store_epilogue, set by operator fusion,
// planner/fusion.h). For the written tensor Y it names, the stores above are
// generated as Y_st_raw / Y_st4_raw, then come the epilogue's code (which
// defines `S kiln_epilogue(int oc0, ..., int ocR-1, int oi, S v)` and may
// use every accessor), then public stores of the same signatures:
//   void Y_st(int i, S v)           (buffers) Y_st_raw(i, kiln_epilogue(c.., i, v))
//                                   with c.. the coordinates of i
//   void Y_st4(int c0, ..., V v)    kiln_epilogue per lane inside the tensor
//                                   (coordinates c with c[Y_VEC] + lane, their
//                                   linear index), then one Y_st4_raw
// and only then the kernel's helpers and body, so every store a kernel
// makes through Y_st / Y_st4 (its own or the map harness's) goes through
// the epilogue. A kernel must not touch Y's memory otherwise (Y_data, Y_img):
// fusion checks that before attaching an epilogue.
//
// Views (KernelTensor::view, index_view.h). A tensor read through an index
// view binds its SOURCE (the binding's storage and layout, addressed by the
// view's source_shape through accessors named X_src_at, X_src_ld, X_src_D0,
// ...), while the kernel sees the view's logical shape: X_D<k>, X_NUMEL,
//   S X_at(c..)   the view's coordinate map, then one X_src_at
//   S X_ld(i)     i decomposed over the view's dims, then X_at
//   V X_at4(c..)  four X_at along X_VEC (the view's vec_axis, else its last
//                 axis), lanes past the end read 0; any c[X_VEC] works
// and X_IS_VIEW 1. The map's own extents are parameters X_V<j>. A view
// defines neither X_IS_BUFFER nor X_IS_IMAGE nor X_data: a kernel that
// needs them cannot read through a view.
//
// Store views: a written tensor Y with a view must carry the store epilogue
// (planner/fusion_store_views.h). The kernel addresses Y by the view's
// logical shape (Y_D<k>, Y_NUMEL, Y_VEC, Y_index, Y_IS_BUFFER/Y_IS_IMAGE
// of the source's storage) and the binding is the source, Y_src, of the
// view's source_shape; Y_map(c.., out o..) is the view's program. The
// epilogue's code defines
//   S kiln_epilogue(int c0, ..., int ci, int o0, ..., int oi, S v)
// taking both places of an element: c/ci in Y's logical shape (row-major
// index) and o = Y_map(c)/oi in Y_src's. The public Y_st / Y_st4 store each
// element to Y_src at o through it: buffers element by element; an
// image's Y_st4 is one texel store, which needs Y_VEC to map onto Y_src's
// packed axis lane for lane from a multiple of 4 (the planner checks
// that). Y_data, Y_img and Y_texel do not exist.
//
// The map harness (Family::kMap). The single written tensor Y is covered by
// invocations that each own four consecutive elements along Y_VEC. For each
// of its lanes whose coordinate is inside the tensor the body runs with
//   int oc0 ... ocR-1   the element's coordinates
//   int oi              its row-major linear index
// and must assign `v` (type S of Y); the harness stores the four values with
// Y_st4. The dispatch grid is derived from Y's shape. A buffer Y's blocks
// that are whole and aligned take the harness's vector path instead: one
// vector load per same-shape buffer input the body reads as X_ld(oi), one
// vector store (planner/map_vector.h).
//
// Vector accessors (planner/map_vector.h), generated for the tensors whose
// `X_load4(c..)` / `Y_store4(c.., v)` the kernel's helpers or body call:
// X_at4's and Y_st4's contracts, as one vector access where the tensor is a
// buffer (no view, no store epilogue) and the lanes are whole and aligned.
// And `uvec4 X_ld8h(int i)` for a read tensor: the 8 elements at linear
// indices i .. i+7 (i a multiple of 8, all inside X) as packed halves — one
// 16-byte load where X is an fp16 buffer or a reshape-only view of one
// (the cooperative-matrix GEMM's tile units), else X_ld's packed in pairs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/dim.h"
#include "planner/kernel.h"
#include "planner/target.h"

namespace kiln::planner {

struct GeneratedKernel {
  std::string name;
  std::string glsl;
  // Specialization constants: constant_id i has the value spec[i] (constants).
  std::vector<int64_t> spec;
  // Push-constant slot j holds push[j], evaluated per run.
  std::vector<ir::Dim> push;
  // binding b (set 0) is desc.tensors[b].
  size_t bindings = 0;
  std::array<uint32_t, 3> local_size{1, 1, 1};
  std::array<ir::Dim, 3> groups;
};

// Errors: kInvalidArgument for a malformed description (a kMap kernel
// without exactly one written tensor, duplicate names, an image with no
// valid packed axis, a store epilogue naming no written tensor), kUnimplemented when the dynamic parameters exceed the
// device's push-constant space.
StatusOr<GeneratedKernel> generate_glsl(const KernelDesc& desc, const TargetInfo& target);

// The GLSL scalar type name an accessor of this element type returns.
const char* glsl_scalar(ElemType t);  // "float" or "int"
const char* glsl_vec4(ElemType t);    // "vec4" or "ivec4"

}  // namespace kiln::planner

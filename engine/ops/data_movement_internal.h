// Helpers shared by the data-movement op files (data_movement.cc,
// slice_concat.cc, gather_scatter.cc, tensor_gen.cc, pad.cc, resize.cc) and nothing else.
//
// Data movement is dtype-agnostic: kernels move elements as bytes of the
// element size, so one strided-copy routine serves Transpose, Slice, Split,
// Expand, Tile and DepthToSpace for every dtype. The symbolic helpers keep
// the "small int tensor known as dims" (dims_value) rules in one place so the
// Shape->Gather->Concat->Reshape chains of PyTorch exports resolve the same
// way through every op.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/dim.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops::movement {

// dims_value is only tracked for int tensors with at most this many elements:
// shape vectors, never real data.
inline constexpr int64_t kMaxDimsValue = 64;

// Registration of the files that data_movement.cc's register function pulls in.
void register_slice_concat_ops(OpRegistry& r);
void register_gather_scatter_ops(OpRegistry& r);
void register_tensor_gen_ops(OpRegistry& r);
void register_pad_op(OpRegistry& r);
void register_resize_op(OpRegistry& r);

// Adds a schema; a duplicate name is a programmer error caught in debug builds
// (OpRegistry::builtin() tests that every family registers).
void add_op(OpRegistry& r, OpSchema schema, MappingType mapping);

// `axis` in [-rank, rank) mapped to [0, rank); nullopt when out of range.
std::optional<int64_t> normalize_axis(int64_t axis, int64_t rank);

// "[b,s,-1]" for error messages.
inline std::string dims_string(const std::vector<ir::Dim>& dims) { return ir::SymShape(dims).to_string(); }

// Product of dims (1 for none); unknown if any is unknown.
ir::Dim dims_product(const std::vector<ir::Dim>& dims);

// The elements of input `i` as dims when it is a small (rank <= 1, at most
// kMaxDimsValue elements) integer tensor whose value is known, either as a
// tensor or as a dims_value from an earlier shape computation.
std::optional<std::vector<ir::Dim>> small_int_dims(const InferContext& ctx, size_t i);

// The inferred shape of output `i` as concrete dims (it is static at run time).
StatusOr<Shape> static_output_shape(const KernelContext& ctx, size_t i);

// Copies a strided view of `src` into the contiguous `dst`: the output element
// with multi-index (i0, ..., ik) of `shape` reads the source element at
// `offset + sum(ij * strides[j])` (in elements; strides may be 0 or
// negative). Contiguous inner runs are copied with memcpy.
void strided_copy(void* dst, const void* src, size_t elem_size, const Shape& shape,
                  const std::vector<int64_t>& strides, int64_t offset);

// Writes the permutation `perm` of `src` (viewed with shape `src_shape`, whose
// element count must match) into `dst`: dst.shape[k] = src_shape[perm[k]].
void permute_copy(void* dst, const Tensor& src, const Shape& src_shape, const std::vector<int64_t>& perm);

// Reads an integer-valued tensor (any int dtype) into int64s; a float or bool
// tensor is an error naming `what`.
StatusOr<std::vector<int64_t>> read_int_tensor(const KernelContext& ctx, size_t input, const char* what);

}  // namespace kiln::ops::movement

// Small GLSL-text helpers shared by the lowerings (lower_*.cc).
//
// Lowerings write kernel bodies as GLSL text around the generated accessors
// (glsl_codegen.h). The pieces every family needs — literals that are valid
// GLSL for any value, the output coordinate list of the map harness, numpy
// broadcasting of an input's coordinates, reading small integer inputs
// (axes, pads, starts) that are known at plan time — live here so that each
// family writes them the same way. Stateless; every function is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/dim.h"
#include "planner/kernel.h"
#include "planner/lowering.h"

namespace kiln::planner {

// A GLSL float literal for the float nearest `v` ("0.5", "3.0", "1e+20");
// infinities and NaN as bit casts (GLSL has no literal for them).
std::string glsl_float(double v);
// A GLSL int literal for `v` clamped to int32's range (INT_MIN is written
// as an expression: its magnitude is no valid literal).
std::string glsl_int(int64_t v);

// "oc0, oc1, ..., oc<rank-1>": the map harness's output coordinates. A
// rank-0 tensor is seen as shape [1], so rank 0 gives "oc0".
std::string coord_list(size_t rank, std::string_view prefix = "oc");
// Joins expressions with ", " (an accessor's argument list).
std::string join_args(const std::vector<std::string>& args);
// The coordinates along axes first .. first + count - 1 of tensor `t` (its
// dims t_D<i>) of `index`, a GLSL int expression that numbers those axes'
// positions row-major: one expression per axis, the outermost with no
// modulo ("(m / (X_D3)), m % X_D3" for axes 2 and 3 and index m).
std::vector<std::string> row_major_coords(const std::string& t, size_t first, size_t count, const std::string& index);

// The coordinates (one per axis of `in`, rank 0 giving one "0") that read
// tensor `name` of shape `in` for the output element at oc0.. of shape
// `out`, with numpy broadcasting (`in` aligned to the trailing axes of
// `out`). Per axis: a constant 1 reads index 0; a dim the same as the
// output's passes the coordinate through; anything else is decided at run
// time: "(name_Dk == 1 ? 0 : ocj)".
std::vector<std::string> broadcast_coords(std::string_view name, const std::vector<ir::Dim>& in,
                                          const std::vector<ir::Dim>& out);
// An expression loading `t`'s element for the output element at oc0..:
// "t_ld(oi)" when `t` is a buffer with the output's very shape (the common
// same-shape elementwise case: no index arithmetic), else t_at(broadcast
// coordinates).
std::string broadcast_load(const KernelTensor& t, const std::vector<ir::Dim>& out);

// True when every dim of `a` is the same as `b`'s (same rank, same_as).
bool same_shape(const std::vector<ir::Dim>& a, const std::vector<ir::Dim>& b);

// Input `i` as int64 values when known at plan time with constant values:
// a constant tensor of integer type, or a dims value whose dims are all
// constants. nullopt otherwise (also for an omitted input).
std::optional<std::vector<int64_t>> constant_ints(const LoweringContext& ctx, size_t i);

// Input `i`'s values as int64 inside a HostParamFn (call it for inputs the
// node has): an error naming `what` when they are not integers on the host.
StatusOr<std::vector<int64_t>> host_ints(const HostParamInputs& in, size_t i, std::string_view what);
// Whether every present input in [first, last] has its value on the host
// (LoweringContext::input_on_host).
bool inputs_on_host(const LoweringContext& ctx, size_t first, size_t last);

// The first element a Slice of `dim` with `start` and `step` reads, when
// the slice is not empty (ONNX's clamping; an empty slice reads nothing).
// Shared by the Slice lowering and index views (index_view.h).
ir::Dim slice_start(const ir::Dim& start, int64_t step, const ir::Dim& dim);

// `axis` in [-rank, rank) mapped to [0, rank); nullopt when out of range.
std::optional<int64_t> normalize_axis(int64_t axis, int64_t rank);

// A kMap kernel: `tensors` must hold exactly one written tensor; `body`
// assigns `v`. The body is wrapped in braces so that locals it declares
// stay local to one harness lane.
KernelDesc map_kernel(std::string name, std::vector<KernelTensor> tensors, std::string body,
                      std::string helpers = {});

// GLSL text scanning for fusion: whether `c` can be part of an identifier,
// and the first identifier of `text` of the form "<name>_<suffix>" whose
// suffix `match` accepts ("" when none).
bool glsl_ident_char(char c);
std::string find_tensor_identifier(const std::string& text, const std::string& name,
                                   const std::function<bool(const std::string& suffix)>& match);
// Removes every occurrence of `what` from `s` (a helper section two fused
// kernels both define).
void erase_all(std::string& s, const std::string& what);
// `s` in ASCII lower case (op names in kernel names).
std::string lower_case(std::string s);

}  // namespace kiln::planner

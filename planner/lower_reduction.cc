// Device lowerings of the reduction family: ReduceSum/Mean/Max/Min/Prod/L1/
// L2/LogSumExp/SumSquare (axes from input 1 or the older attribute,
// keepdims, noop_with_empty_axes) and ArgMax/ArgMin. Softmax and the
// normalizations (lower_normalization.cc) are registered from here too.
//
// Two kernel shapes, chosen from plan-time sizes:
//   * rows of more than kMapMaxRow elements (or of symbolic length): one
//     workgroup per output texel — four outputs adjacent along Y's vector
//     axis — whose threads stride over the reduced elements and combine
//     through shared memory or subgroup arithmetic (lower_rows.h);
//   * short rows: the map harness, each output looping over its row.
// Both read X through its accessors at coordinates, so any set of axes and
// either storage works. Float tensors accumulate in fp32 whatever their
// storage; integer tensors in int32 (the device stores them so), which is
// exact unless a sum overflows int32.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "planner/lower_rows.h"
#include "planner/lower_util.h"
#include "planner/lowering.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace detail {
void register_normalization_lowerings(LoweringRegistry& r);  // lower_normalization.cc
}  // namespace detail

namespace {

using rows::ReduceKind;
using rows::RowSpace;

// Rows at most this long (and of constant length) run as map kernels.
constexpr int64_t kMapMaxRow = 32;

bool needs_float(ReduceKind k) {
  return k == ReduceKind::kMean || k == ReduceKind::kL2 || k == ReduceKind::kLogSumExp || k == ReduceKind::kLp;
}

// The per-element transform before combining, on a scalar or a vector.
std::string transform(ReduceKind k, const std::string& x, double p, bool vec) {
  switch (k) {
    case ReduceKind::kL1: return "abs(" + x + ")";
    case ReduceKind::kL2:
    case ReduceKind::kSumSquare: return "(" + x + ") * (" + x + ")";
    case ReduceKind::kLp:
      if (p == 1.0) return "abs(" + x + ")";
      if (p == 2.0) return "(" + x + ") * (" + x + ")";
      return "pow(abs(" + x + "), " + (vec ? "vec4(" : "float(") + glsl_float(p) + "))";
    default: return x;
  }
}

rows::Combine combine_of(ReduceKind k) {
  switch (k) {
    case ReduceKind::kMax:
    case ReduceKind::kLogSumExp: return rows::Combine::kMax;  // pass 1 of LogSumExp
    case ReduceKind::kMin: return rows::Combine::kMin;
    case ReduceKind::kProd: return rows::Combine::kProd;
    default: return rows::Combine::kSum;
  }
}

std::string identity(ReduceKind k, bool integer) {
  switch (combine_of(k)) {
    case rows::Combine::kMax: return integer ? glsl_int(INT32_MIN) : glsl_float(-INFINITY);
    case rows::Combine::kMin: return integer ? glsl_int(INT32_MAX) : glsl_float(INFINITY);
    case rows::Combine::kProd: return integer ? "1" : "1.0";
    case rows::Combine::kSum: return integer ? "0" : "0.0";
  }
  return "0";
}

// Combine expression of two values (scalar helpers for the map form).
std::string combine_expr(rows::Combine c, const std::string& a, const std::string& b, bool vec) {
  const std::string sfx = vec ? "4" : "1";
  switch (c) {
    case rows::Combine::kSum: return a + " + " + b;
    case rows::Combine::kProd: return a + " * " + b;
    case rows::Combine::kMax: return "kiln_max" + sfx + "(" + a + ", " + b + ")";
    case rows::Combine::kMin: return "kiln_min" + sfx + "(" + a + ", " + b + ")";
  }
  return a;
}

// The final value of a row from its combined accumulator `r`.
std::string finish(ReduceKind k, const std::string& r, double p, bool vec) {
  switch (k) {
    case ReduceKind::kMean: return r + " / float(KILN_ROW)";
    case ReduceKind::kL2: return "sqrt(" + r + ")";
    case ReduceKind::kLp:
      if (p == 1.0) return r;
      if (p == 2.0) return "sqrt(" + r + ")";
      return "pow(" + r + ", " + (vec ? "vec4(" : "float(") + glsl_float(1.0 / p) + "))";
    default: return r;
  }
}

// Input/output axis bookkeeping of one reduction.
struct ReduceGeometry {
  std::vector<ir::Dim> x_shape;  // rank >= 1 (a scalar as [1])
  std::vector<bool> mask;        // reduced X axes
  std::vector<int> y_to_x;       // per Y axis: its X axis, or -1 (a kept reduced axis, or a scalar Y)
  size_t y_rank = 1;
};

ReduceGeometry geometry(const std::vector<ir::Dim>& x_shape, const std::vector<bool>& mask, bool keepdims) {
  ReduceGeometry g;
  g.x_shape = x_shape.empty() ? std::vector<ir::Dim>{ir::Dim(1)} : x_shape;
  g.mask = mask.empty() ? std::vector<bool>{true} : mask;
  for (size_t k = 0; k < g.mask.size(); ++k) {
    if (!g.mask[k]) g.y_to_x.push_back(static_cast<int>(k));
    else if (keepdims) g.y_to_x.push_back(-1);
  }
  if (g.y_to_x.empty()) g.y_to_x.push_back(-1);  // a scalar output, seen as [1]
  g.y_rank = g.y_to_x.size();
  return g;
}

// Y coordinates from X's non-reduced coordinates named <prefix><k>.
std::string y_coords(const ReduceGeometry& g, const std::string& prefix) {
  std::vector<std::string> c;
  for (int x : g.y_to_x) c.push_back(x < 0 ? "0" : prefix + std::to_string(x));
  return join_args(c);
}

// Declarations "int g<k> = oc<j>;" mapping the map harness's Y coordinates to X's kept axes.
std::string kept_from_output(const ReduceGeometry& g) {
  std::string out;
  for (size_t j = 0; j < g.y_to_x.size(); ++j)
    if (g.y_to_x[j] >= 0) out += "int g" + std::to_string(g.y_to_x[j]) + " = oc" + std::to_string(j) + ";\n";
  return out;
}

Status reduce_map(LoweringContext& ctx, const ReduceGeometry& g, ReduceKind kind, double p, const KernelTensor& x,
                  const KernelTensor& y) {
  const bool integer = !is_float(x.layout.type);
  const std::string A = integer ? "int" : "float";
  RowSpace s{g.x_shape, g.mask, -1};
  const rows::Combine c = combine_of(kind);
  std::string body = kept_from_output(g);
  auto loop = [&](const std::string& acc, const std::string& value) {
    return "for (int kiln_j = 0; kiln_j < KILN_ROW; ++kiln_j) {\n" + rows::item_coords(s, "X", "kiln_j") + "  " + A +
           " x = X_at(" + rows::coords(g.x_shape.size()) + ");\n  " + acc + " = " + value + ";\n}\n";
  };
  body += A + " acc = " + identity(kind, integer) + ";\n";
  body += loop("acc", combine_expr(c, "acc", transform(kind, "x", p, false), false));
  if (kind == ReduceKind::kLogSumExp) {
    body += "float sum = 0.0;\n" + loop("sum", "sum + exp(x - acc)");
    body += "v = (isinf(acc) || isnan(acc)) ? acc : acc + log(sum);\n";
  } else {
    body += "v = " + finish(kind, "acc", p, false) + ";\n";
  }
  KernelDesc d = map_kernel("reduce_loop", {x, y}, body, rows::minmax_helpers(integer));
  d.params.push_back({"KILN_ROW", s.row_size()});
  ctx.emit(std::move(d));
  return ok_status();
}

Status reduce_rows(LoweringContext& ctx, const ReduceGeometry& g, ReduceKind kind, double p, const KernelTensor& x,
                   const KernelTensor& y) {
  const bool integer = !is_float(x.layout.type);
  const std::string A = integer ? "int" : "float";
  const std::string V = integer ? "ivec4" : "vec4";
  // Lanes run along the X axis behind Y's vector axis, so the four results
  // of a workgroup fill one Y_st4. When that axis is reduced (keepdims, or a
  // scalar Y) a workgroup owns one output; its lanes then run inside the row
  // along X's vector axis when that is reduced (whole-texel loads), and are
  // folded into one value at the end.
  int lane = g.y_to_x[static_cast<size_t>(rows::vec_axis(y))];
  if (lane < 0 && g.mask[static_cast<size_t>(rows::vec_axis(x))]) lane = rows::vec_axis(x);
  RowSpace s{g.x_shape, g.mask, lane};
  const uint32_t local = rows::choose_local_size(s.items(), ctx.target());
  const bool sg = ctx.target().subgroup_arithmetic && !integer;
  const rows::Combine c = combine_of(kind);
  std::vector<rows::Combine> combines{c};
  if (kind == ReduceKind::kLogSumExp) combines.push_back(rows::Combine::kSum);

  KernelDesc d = rows::row_kernel("reduce_rows", s, local, ctx.target());
  d.tensors = {x, y};
  d.helpers = rows::minmax_helpers(integer) + rows::workgroup_helpers(combines, integer, local, sg) +
              rows::load4_helper(x, lane);
  if (sg) d.extensions = rows::subgroup_extensions();
  const std::string loop_end = "  }\n";
  std::string b = "  " + V + " acc = " + V + "(" + identity(kind, integer) + ");\n";
  b += rows::item_loop(s, "X", local) + "    " + V + " x = kiln_x4(" + rows::coords(g.x_shape.size()) + ");\n";
  // Lanes past the end of a row keep the identity.
  const bool in_row = s.lanes_in_row();
  const std::string ok = rows::lane_ok(s, "X");
  const std::string step = combine_expr(c, "acc", transform(kind, "x", p, true), true);
  b += "    acc = " + (in_row ? "mix(acc, " + step + ", " + ok + ")" : step) + ";\n" + loop_end;
  b += "  acc = kiln_wg_" + std::string(c == rows::Combine::kSum    ? "sum"
                                        : c == rows::Combine::kProd ? "prod"
                                        : c == rows::Combine::kMax  ? "max"
                                                                    : "min") +
       "(acc);\n";
  if (in_row)
    b += "  acc = " + V + "(" +
         combine_expr(c, "(" + combine_expr(c, "acc.x", "acc.y", false) + ")",
                      "(" + combine_expr(c, "acc.z", "acc.w", false) + ")", false) +
         ");\n";
  if (kind == ReduceKind::kLogSumExp) {
    b += "  vec4 sum = vec4(0.0);\n";
    const std::string e = "exp(kiln_x4(" + rows::coords(g.x_shape.size()) + ") - acc)";
    b += rows::item_loop(s, "X", local) + "    sum += " + (in_row ? "mix(vec4(0.0), " + e + ", " + ok + ")" : e) +
         ";\n" + loop_end;
    b += "  sum = kiln_wg_sum(sum);\n";
    if (in_row) b += "  sum = vec4(sum.x + sum.y + sum.z + sum.w);\n";
    b += "  acc = mix(acc + log(sum), acc, bvec4(uvec4(isinf(acc)) | uvec4(isnan(acc))));\n";
  } else {
    const std::string result = finish(kind, "acc", p, true);
    if (result != "acc") b += "  acc = " + result + ";\n";
  }
  b += "  if (kiln_tid == 0) Y_st4(" + y_coords(g, "g") + ", acc);\n";
  d.body = rows::row_main(s, "X", b);
  ctx.emit(std::move(d));
  return ok_status();
}

// Y = X (noop_with_empty_axes): a copy kernel.
Status copy_through(LoweringContext& ctx) {
  KernelTensor x = ctx.bind("X", ctx.input(0));
  KernelTensor y = ctx.bind("Y", ctx.output(0), true);
  ctx.emit(map_kernel("reduce_noop", {x, y}, "v = X_at(" + coord_list(y.shape.size()) + ");"));
  return ok_status();
}

// A reduction whose axes are a host value per run (a small graph input):
// a map kernel over Y with one host parameter per X axis saying whether it
// is reduced; each output walks its reduced elements. Slower than the row
// kernels for long rows, but one plan serves every axes value.
Status lower_reduce_host(LoweringContext& ctx, ReduceKind kind, bool keepdims) {
  const size_t r = ctx.input_shape(0).size();
  if (r == 0) return ctx.unsupported("a scalar input with an axes input");
  KernelTensor x = ctx.bind("X", ctx.input(0));
  KernelTensor y = ctx.bind("Y", ctx.output(0), true);
  const bool integer = !is_float(x.layout.type);
  if (integer && needs_float(kind)) return ctx.unsupported("this reduction of integers");
  const size_t yr = y.shape.size();
  const bool noop_allowed = ctx.node().attr_int("noop_with_empty_axes", 0) != 0;
  KernelDesc d = map_kernel("reduce_axes", {x, y}, "", rows::minmax_helpers(integer));
  // red<k>: 1 when X axis k is reduced; reduce_noop: 1 for empty axes with
  // noop_with_empty_axes (Y = X untouched).
  auto axes_of = [r](const HostParamInputs& in) -> StatusOr<std::vector<bool>> {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, host_ints(in, 1, "axes"));
    std::vector<bool> mask(r, axes.empty());
    for (int64_t a : axes) {
      auto n = normalize_axis(a, static_cast<int64_t>(r));
      if (!n) return invalid_argument("axis " + std::to_string(a) + " is out of range");
      mask[static_cast<size_t>(*n)] = true;
    }
    return mask;
  };
  for (size_t k = 0; k < r; ++k)
    d.params.push_back({"red" + std::to_string(k), ctx.host_param([=](const HostParamInputs& in) -> StatusOr<int64_t> {
                          KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, host_ints(in, 1, "axes"));
                          if (axes.empty() && noop_allowed) return int64_t{0};
                          KILN_ASSIGN_OR_RETURN(std::vector<bool> mask, axes_of(in));
                          return int64_t{mask[k] ? 1 : 0};
                        })});
  d.params.push_back({"reduce_noop", ctx.host_param([=](const HostParamInputs& in) -> StatusOr<int64_t> {
                        KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, host_ints(in, 1, "axes"));
                        return int64_t{axes.empty() && noop_allowed ? 1 : 0};
                      })});
  const std::string S = integer ? "int" : "float", R = std::to_string(r);
  std::string b = "int c[" + R + "];\nint j = 0, total = 1;\n";
  if (yr > 0) {
    std::vector<std::string> o;
    for (size_t k = 0; k < yr; ++k) o.push_back("oc" + std::to_string(k));
    b += "int o[" + std::to_string(yr) + "] = int[" + std::to_string(yr) + "](" + join_args(o) + ");\n";
  }
  std::vector<std::string> c;
  for (size_t k = 0; k < r; ++k) {
    const std::string K = std::to_string(k), red = "red" + K, kept = yr == 0 ? "0" : "o[min(j, " + std::to_string(yr - 1) + ")]";
    b += "if (" + red + " != 0) { c[" + K + "] = 0; total *= X_D" + K + "; }\nelse c[" + K + "] = " + kept + ";\n";
    b += keepdims ? "j++;\n" : "if (" + red + " == 0) j++;\n";
    c.push_back("c[" + K + "]");
  }
  const std::string xv = "X_at(" + join_args(c) + ")";
  std::string walk = "for (int t = 0; t < total; ++t) {\n  int rem = t;\n";
  for (size_t k = r; k-- > 0;) {
    const std::string K = std::to_string(k);
    walk += "  if (red" + K + " != 0) { c[" + K + "] = rem % X_D" + K + "; rem /= X_D" + K + "; }\n";
  }
  const rows::Combine comb = combine_of(kind);
  b += "if (reduce_noop != 0) { v = " + xv + "; }\nelse {\n" + S + " acc = " + identity(kind, integer) + ";\n" + walk +
       "  " + S + " e = " + xv + ";\n  acc = " + combine_expr(comb, "acc", transform(kind, "e", 2.0, false), false) + ";\n}\n";
  if (kind == ReduceKind::kLogSumExp) {
    b += "float sum = 0.0;\n" + walk + "  sum += exp(" + xv + " - acc);\n}\n";
    b += "v = (isinf(acc) || isnan(acc)) ? acc : acc + log(sum);\n";
  } else if (kind == ReduceKind::kMean) {
    b += "v = acc / float(total);\n";
  } else {
    b += "v = " + finish(kind, "acc", 2.0, false) + ";\n";
  }
  b += "}";
  d.body = "{\n" + b + "\n}";
  ctx.emit(std::move(d));
  return ok_status();
}

// Axes of a Reduce* node: input 1 (opset 18) or the older attribute.
template <ReduceKind K>
Status lower_reduce_op(LoweringContext& ctx) {
  std::vector<int64_t> axes;
  if (ctx.has_input(1)) {
    auto v = constant_ints(ctx, 1);
    if (!v && ctx.input_on_host(1)) return lower_reduce_host(ctx, K, ctx.node().attr_int("keepdims", 1) != 0);
    if (!v) return ctx.unsupported("axes (input 1) are not known when the plan is built");
    axes = *v;
  } else {
    axes = ctx.node().attr_ints("axes");
  }
  const int64_t rank = static_cast<int64_t>(ctx.input_shape(0).size());
  std::vector<bool> mask(static_cast<size_t>(rank), axes.empty());
  if (axes.empty() && ctx.node().attr_int("noop_with_empty_axes", 0) != 0) return copy_through(ctx);
  for (int64_t a : axes) {
    auto n = normalize_axis(a, rank);
    if (!n) return ctx.error("axis " + std::to_string(a) + " is out of range for an input of rank " + std::to_string(rank));
    mask[static_cast<size_t>(*n)] = true;
  }
  return rows::lower_reduce(ctx, K, mask, ctx.node().attr_int("keepdims", 1) != 0);
}

// --- ArgMax / ArgMin -------------------------------------------------------------

// kiln_better(v, i, b, bi): whether element (v, i) beats the best so far
// (b, bi); bi < 0 is "none yet". NaN beats everything (numpy), ties go to the
// first index, or the last with select_last_index.
std::string better_helper(bool max, bool last, bool integer) {
  return fill_shader("reduce_arg_better.glsl", ShaderArgs()
                                                   .set("A", integer ? "int" : "float")
                                                   .set("CMP", max ? ">" : "<")
                                                   .set("TIE", last ? "i > bi" : "i < bi")
                                                   .flag("FLOAT", !integer));
}

template <bool kMax>
Status lower_arg(LoweringContext& ctx) {
  const int64_t rank = static_cast<int64_t>(ctx.input_shape(0).size());
  auto axis = normalize_axis(ctx.node().attr_int("axis", 0), rank);
  if (!axis) return ctx.error("axis is out of range for an input of rank " + std::to_string(rank));
  const bool keepdims = ctx.node().attr_int("keepdims", 1) != 0;
  const bool last = ctx.node().attr_int("select_last_index", 0) != 0;
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  mask[static_cast<size_t>(*axis)] = true;
  const ReduceGeometry g = geometry(ctx.input_shape(0), mask, keepdims);
  KernelTensor x = ctx.bind("X", ctx.input(0));
  KernelTensor y = ctx.bind("Y", ctx.output(0), true);
  if (y.layout.type != ElemType::kI32) return ctx.unsupported("the index output is not stored as int32");
  const bool integer = !is_float(x.layout.type);
  const std::string A = integer ? "int" : "float";
  const std::string V = integer ? "ivec4" : "vec4";
  const std::string helpers = better_helper(kMax, last, integer);
  const ir::Dim n = g.x_shape[static_cast<size_t>(*axis)];
  const std::string name = kMax ? "argmax" : "argmin";

  if (n.is_const() && n.value() <= kMapMaxRow) {
    RowSpace s{g.x_shape, g.mask, -1};
    std::string body = kept_from_output(g) + A + " b = " + A + "(0); int bi = -1;\n" +
                       "for (int kiln_j = 0; kiln_j < KILN_ROW; ++kiln_j) {\n" + rows::item_coords(s, "X", "kiln_j") +
                       "  " + A + " x = X_at(" + rows::coords(g.x_shape.size()) + ");\n" +
                       "  if (kiln_better(x, kiln_j, b, bi)) { b = x; bi = kiln_j; }\n}\nv = bi;\n";
    KernelDesc d = map_kernel(name + "_loop", {x, y}, body, helpers);
    d.params.push_back({"KILN_ROW", n});
    ctx.emit(std::move(d));
    return ok_status();
  }

  const int lane = g.y_to_x[static_cast<size_t>(rows::vec_axis(y))];
  RowSpace s{g.x_shape, g.mask, lane};
  const uint32_t local = rows::choose_local_size(s.items(), ctx.target());
  KernelDesc d = rows::row_kernel(name + "_rows", s, local, ctx.target());
  d.tensors = {x, y};
  const std::string L = std::to_string(local);
  d.helpers = helpers + rows::load4_helper(x, lane) + "shared " + V + " kiln_rv[" + L + "];\nshared ivec4 kiln_ri[" + L +
              "];\n";
  std::string b = "  " + V + " bv = " + V + "(0); ivec4 bi = ivec4(-1);\n";
  // The region is the one axis, so the item index is the element's index.
  b += rows::item_loop(s, "X", local) + "    " + V + " x = kiln_x4(" + rows::coords(g.x_shape.size()) + ");\n" +
       "    for (int l = 0; l < 4; ++l)\n"
       "      if (kiln_better(x[l], kiln_j, bv[l], bi[l])) { bv[l] = x[l]; bi[l] = kiln_j; }\n  }\n";
  b += rows::arg_reduce(integer, local);
  b += "  if (kiln_tid == 0) Y_st4(" + y_coords(g, "g") + ", kiln_ri[0]);\n";
  d.body = rows::row_main(s, "X", b);
  ctx.emit(std::move(d));
  return ok_status();
}

}  // namespace

Status rows::lower_reduce(LoweringContext& ctx, ReduceKind kind, const std::vector<bool>& mask, bool keepdims,
                          double p) {
  KernelTensor x = ctx.bind("X", ctx.input(0));
  KernelTensor y = ctx.bind("Y", ctx.output(0), true);
  if (!is_float(x.layout.type) && needs_float(kind))
    return ctx.unsupported("this reduction of an integer tensor needs float arithmetic");
  if (x.layout.type == ElemType::kI32 && y.layout.type != ElemType::kI32)
    return ctx.unsupported("integer input with a float output");
  const ReduceGeometry g = geometry(ctx.input_shape(0), mask, keepdims);
  if (g.y_rank != std::max<size_t>(1, y.shape.size()))
    return ctx.error("output rank " + std::to_string(y.shape.size()) + " does not match the reduction");
  const RowSpace s{g.x_shape, g.mask, -1};
  const ir::Dim row = s.row_size();
  if (row.is_const() && row.value() <= kMapMaxRow) return reduce_map(ctx, g, kind, p, x, y);
  return reduce_rows(ctx, g, kind, p, x, y);
}

void register_reduction_lowerings(LoweringRegistry& r) {
  r.add("", "ReduceSum", lower_reduce_op<ReduceKind::kSum>);
  r.add("", "ReduceMean", lower_reduce_op<ReduceKind::kMean>);
  r.add("", "ReduceMax", lower_reduce_op<ReduceKind::kMax>);
  r.add("", "ReduceMin", lower_reduce_op<ReduceKind::kMin>);
  r.add("", "ReduceProd", lower_reduce_op<ReduceKind::kProd>);
  r.add("", "ReduceL1", lower_reduce_op<ReduceKind::kL1>);
  r.add("", "ReduceL2", lower_reduce_op<ReduceKind::kL2>);
  r.add("", "ReduceLogSumExp", lower_reduce_op<ReduceKind::kLogSumExp>);
  r.add("", "ReduceSumSquare", lower_reduce_op<ReduceKind::kSumSquare>);
  r.add("", "ArgMax", lower_arg<true>);
  r.add("", "ArgMin", lower_arg<false>);
  detail::register_normalization_lowerings(r);
}

}  // namespace kiln::planner

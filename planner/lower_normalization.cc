// Device lowerings of the softmax and normalization ops: Softmax,
// LogSoftmax, Hardmax (opset 13: one axis), LayerNormalization,
// InstanceNormalization, GroupNormalization, LpNormalization, and
// BatchNormalization (inference: a per-channel affine map).
//
// Each row op is one kernel with one workgroup per row group (lower_rows.h):
// the workgroup makes two or three passes over its rows — statistics
// (max; sum of exp / mean; variance), combined across threads in fp32 —
// and a last pass that writes every element with whole-texel stores. Rows
// whose elements lie along the output's vector axis are walked four
// elements at a time; otherwise four neighbouring rows share the workgroup
// and are computed together in vec4 arithmetic. The same kernel serves
// buffers and images; statistics are exact two-pass (mean, then squared
// deviations) like the reference.
#include <cmath>
#include <string>
#include <vector>

#include "planner/lower_rows.h"
#include "planner/lower_util.h"
#include "planner/lowering.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace detail {
void register_normalization_lowerings(LoweringRegistry& r);
}  // namespace detail

namespace {

using rows::RowSpace;

// Shared setup of one row kernel: X (input 0, or a view), Y (output 0),
// the row space with lanes along Y's vector axis.
struct RowOp {
  KernelTensor x, y;
  RowSpace s;
  uint32_t local = 64;
  // Items each invocation keeps in registers, kiln_xs (rows::cached_items):
  // X is read once by cache_pass; 0: each pass reads X.
  int cached = 0;
  bool subgroups = false;
  KernelDesc desc;
  size_t rank() const { return s.shape.size(); }
  std::string c() const { return rows::coords(rank()); }
};

RowOp start(LoweringContext& ctx, const std::string& name, KernelTensor x, KernelTensor y, std::vector<bool> region) {
  RowOp op;
  op.x = std::move(x);
  op.y = std::move(y);
  op.s = RowSpace{op.x.shape, std::move(region), rows::vec_axis(op.y)};
  op.local = rows::choose_local_size(op.s.items(), ctx.target());
  op.cached = rows::cached_items(op.s, op.local);
  op.subgroups = ctx.target().subgroup_arithmetic;
  op.desc = rows::row_kernel(name, op.s, op.local, ctx.target());
  op.desc.tensors = {op.x, op.y};
  if (op.subgroups) op.desc.extensions = rows::subgroup_extensions();
  op.desc.helpers = rows::minmax_helpers(false) + rows::load4_helper(op.x, op.s.lane_axis);
  return op;
}

// The loop head over the invocation's items and the expression of an
// item's vec4 x inside it: its register, or a load.
std::string item_loop(const RowOp& op) {
  return op.cached ? rows::cached_item_loop(op.s, "X", op.local, op.cached) : rows::item_loop(op.s, "X", op.local);
}
std::string item_value(const RowOp& op) { return op.cached ? "kiln_xs[kiln_k]" : "kiln_x4(" + op.c() + ")"; }

// The first pass of a kernel caching its items: X into kiln_xs.
std::string cache_pass(const RowOp& op) {
  return fill_shader("rows_cache_pass.glsl",
                     ShaderArgs().set("ITEMS", op.cached).set("ITEM_LOOP", item_loop(op)).set("C", op.c()));
}

// A statistics pass: accumulate `value` (an expression of vec4 x) with
// `combine` over the valid lanes, combine across the workgroup, fold the
// lanes when they run inside the row, and assign the vec4 `var`.
std::string stat_pass(const RowOp& op, const std::string& var, rows::Combine combine, const std::string& value) {
  const bool max = combine == rows::Combine::kMax;
  const std::string step = max ? "kiln_max4(" + var + ", " + value + ")" : var + " + " + value;
  // Lanes past the end of a row keep the identity; lanes of rows past the
  // end compute values that are never stored.
  const std::string update = op.s.lanes_in_row() ? "mix(" + var + ", " + step + ", " + rows::lane_ok(op.s, "X") + ")" : step;
  return fill_shader("rows_stat_pass.glsl", ShaderArgs()
                                                .set("VAR", var)
                                                .set("INIT", max ? glsl_float(-INFINITY) : "0.0")
                                                .set("ITEM_LOOP", item_loop(op))
                                                .set("LOAD", item_value(op))
                                                .set("UPDATE", update)
                                                .flag("MAX", max)
                                                .flag("FOLD_LANES", op.s.lanes_in_row()));
}

// The last pass: y = `value` (an expression of vec4 x and the statistics).
std::string write_pass(const RowOp& op, const std::string& value) {
  return fill_shader("rows_write_pass.glsl", ShaderArgs()
                                                 .set("ITEM_LOOP", item_loop(op))
                                                 .set("C", op.c())
                                                 .set("LOAD", item_value(op))
                                                 .set("VALUE", value));
}

void finish(LoweringContext& ctx, RowOp& op, const std::vector<rows::Combine>& combines, const std::string& body) {
  op.desc.helpers += rows::workgroup_helpers(combines, false, op.local, op.subgroups);
  op.desc.body = rows::row_main(op.s, "X", (op.cached ? cache_pass(op) : std::string()) + body);
  ctx.emit(std::move(op.desc));
}

// A helper `vec4 kiln_<fn>4(c..)` evaluating the scalar helper kiln_<fn>(c..)
// for each lane (lanes past the end of Y read 0).
std::string per_lane(const RowOp& op, const std::string& fn) {
  const size_t rank = op.rank();
  std::string params;
  for (size_t k = 0; k < rank; ++k) params += (k ? ", int c" : "int c") + std::to_string(k);
  std::string out = "vec4 kiln_" + fn + "4(" + params + ") {\n";
  const int l = op.s.lane_axis;
  if (l < 0) return out + "  return vec4(kiln_" + fn + "(" + op.c() + "));\n}\n";
  auto lane = [&](int d) {
    std::string args;
    for (size_t k = 0; k < rank; ++k) {
      args += (k ? ", c" : "c") + std::to_string(k);
      if (static_cast<int>(k) == l && d > 0) args += " + " + std::to_string(d);
    }
    return "kiln_" + fn + "(" + args + ")";
  };
  const std::string m = "Y_D" + std::to_string(l) + " - c" + std::to_string(l);
  return out + "  int m = " + m + ";\n  return vec4(" + lane(0) + ", m > 1 ? " + lane(1) + " : 0.0, m > 2 ? " +
         lane(2) + " : 0.0, m > 3 ? " + lane(3) + " : 0.0);\n}\n";
}

// Coordinates reading tensor `name` of shape `in` broadcast against X's
// coordinates c0.. of shape `out` (numpy rules, trailing alignment).
std::string broadcast_args(const std::string& name, const std::vector<ir::Dim>& in, const std::vector<ir::Dim>& out) {
  if (in.empty()) return "0";
  std::vector<std::string> c;
  for (size_t k = 0; k < in.size(); ++k) {
    const int64_t j = static_cast<int64_t>(k) + static_cast<int64_t>(out.size()) - static_cast<int64_t>(in.size());
    const ir::Dim& d = in[k];
    if (j < 0 || (d.is_const() && d.value() == 1)) c.push_back("0");
    else if (d.same_as(out[static_cast<size_t>(j)])) c.push_back("c" + std::to_string(j));
    else c.push_back("(" + name + "_D" + std::to_string(k) + " == 1 ? 0 : c" + std::to_string(j) + ")");
  }
  return join_args(c);
}

std::string scalar_fn(const RowOp& op, const std::string& fn, const std::string& expr) {
  std::string params;
  for (size_t k = 0; k < op.rank(); ++k) params += (k ? ", int c" : "int c") + std::to_string(k);
  return "float kiln_" + fn + "(" + params + ") { return " + expr + "; }\n";
}

StatusOr<int64_t> axis_attr(const LoweringContext& ctx, int64_t fallback) {
  const int64_t rank = static_cast<int64_t>(ctx.input_shape(0).size());
  auto a = normalize_axis(ctx.node().attr_int("axis", fallback), rank);
  if (!a) return ctx.error("axis is out of range for an input of rank " + std::to_string(rank));
  return *a;
}

std::vector<bool> single_axis(size_t rank, int64_t axis) {
  std::vector<bool> m(rank, false);
  m[static_cast<size_t>(axis)] = true;
  return m;
}

// --- Softmax / LogSoftmax / Hardmax ------------------------------------------------

template <bool kLog>
Status lower_softmax(LoweringContext& ctx) {
  if (ctx.input_shape(0).empty()) return ctx.error("softmax needs an input of rank >= 1");
  KILN_ASSIGN_OR_RETURN(int64_t axis, axis_attr(ctx, -1));
  RowOp op = start(ctx, kLog ? "log_softmax" : "softmax", ctx.bind("X", ctx.input(0)),
                   ctx.bind("Y", ctx.output(0), true), single_axis(ctx.input_shape(0).size(), axis));
  std::string b = stat_pass(op, "m", rows::Combine::kMax, "x");
  b += stat_pass(op, "s", rows::Combine::kSum, "exp(x - m)");
  b += write_pass(op, kLog ? "x - m - log(s)" : "exp(x - m) / s");
  finish(ctx, op, {rows::Combine::kMax, rows::Combine::kSum}, b);
  return ok_status();
}

// Hardmax: 1 at the first maximum of the row (NaN and -inf never win; a row
// without a finite maximum marks element 0), 0 elsewhere.
Status lower_hardmax(LoweringContext& ctx) {
  if (ctx.input_shape(0).empty()) return ctx.error("Hardmax needs an input of rank >= 1");
  KILN_ASSIGN_OR_RETURN(int64_t axis, axis_attr(ctx, -1));
  RowOp op = start(ctx, "hardmax", ctx.bind("X", ctx.input(0)), ctx.bind("Y", ctx.output(0), true),
                   single_axis(ctx.input_shape(0).size(), axis));
  op.cached = 0;  // its passes (hardmax.glsl) read X each time
  const std::string a = std::to_string(axis);
  // The element index along the axis is c<axis> (+ lane when lanes run along it).
  const std::string lane_step = op.s.lanes_in_row() ? "1" : "0";
  op.desc.helpers += fill_shader("hardmax.glsl#helpers", ShaderArgs().set("LOCAL", op.local));
  const std::string write =
      write_pass(op, "vec4(equal(ivec4(c" + a + ") + ivec4(0, 1, 2, 3) * " + lane_step + ", bi))");
  const std::string b = fill_shader("hardmax.glsl#body", ShaderArgs()
                                                             .set("ITEM_LOOP", rows::item_loop(op.s, "X", op.local))
                                                             .set("C", op.c())
                                                             .set("LANE_OK", rows::lane_ok(op.s, "X"))
                                                             .set("AXIS", a)
                                                             .set("LANE_STEP", lane_step)
                                                             .set("ARG_REDUCE", rows::arg_reduce(false, op.local))
                                                             .set("WRITE", write)
                                                             .flag("FOLD_LANES", op.s.lanes_in_row()));
  op.desc.body = rows::row_main(op.s, "X", b);
  ctx.emit(std::move(op.desc));
  return ok_status();
}

// --- LayerNormalization / InstanceNormalization / GroupNormalization ---------------------

// The normalization body shared by the three: mean, variance, then
// (x - mean) * inv * gamma + beta, gamma/beta through kiln_gamma4/kiln_beta4.
// `stats` runs once mean and inv are known (LayerNorm's optional outputs).
std::string normalize_body(const RowOp& op, float eps, bool has_beta, const std::string& stats = {}) {
  std::string b = stat_pass(op, "mean", rows::Combine::kSum, "x");
  b += "  mean /= float(KILN_ROW);\n";
  b += stat_pass(op, "var", rows::Combine::kSum, "(x - mean) * (x - mean)");
  b += "  vec4 inv = inversesqrt(var / float(KILN_ROW) + " + glsl_float(eps) + ");\n" + stats;
  b += write_pass(op, "(x - mean) * inv * kiln_gamma4(" + op.c() + ")" +
                          (has_beta ? " + kiln_beta4(" + op.c() + ")" : std::string()));
  return b;
}

// LayerNormalization's optional Mean and InvStdDev outputs: the row kernel
// writes (mean, inv) per row to a scratch buffer (its rows are the leading
// axes before `axis`, in order, so a row's index is its linear index there),
// then a copy kernel per requested output reads them into place, whatever
// that output's layout.
std::string layernorm_stats(LoweringContext& ctx, RowOp& op, int64_t axis, TensorId* scratch) {
  ir::Dim rows(1);
  for (int64_t k = 0; k < axis; ++k) rows = rows * op.s.shape[static_cast<size_t>(k)];
  *scratch = ctx.add_temporary(DType::kFloat32, {rows * ir::Dim(2)}, {Storage::kBuffer, ElemType::kF32, -1});
  op.desc.tensors.push_back(ctx.bind("T", *scratch, true));
  std::string row = "0";
  for (int64_t k = 0; k < axis; ++k)
    row = k == 0 ? "g0" : "(" + row + ") * X_D" + std::to_string(k) + " + g" + std::to_string(k);
  // Lanes outside the row are neighbouring rows along the lane axis.
  const int l = op.s.lane_axis;
  const bool lanes = l >= 0 && !op.s.lanes_in_row();
  std::string stride = "1";
  if (lanes)
    for (int64_t k = l + 1; k < axis; ++k) stride += " * X_D" + std::to_string(k);
  std::string b = "  if (kiln_tid == 0) {\n    for (int l = 0; l < " + std::string(lanes ? "4" : "1") + "; ++l) {\n";
  if (lanes) b += "      if (g" + std::to_string(l) + " + l >= X_D" + std::to_string(l) + ") break;\n";
  b += "      int row = " + row + " + l * " + stride + ";\n"
       "      T_st(2 * row, mean[l]);\n"
       "      T_st(2 * row + 1, inv[l]);\n"
       "    }\n  }\n";
  return b;
}

Status lower_layernorm(LoweringContext& ctx) {
  const std::vector<ir::Dim>& xs = ctx.input_shape(0);
  if (xs.empty()) return ctx.error("LayerNormalization needs an input of rank >= 1");
  KILN_ASSIGN_OR_RETURN(int64_t axis, axis_attr(ctx, -1));
  std::vector<bool> region(xs.size(), false);
  for (size_t k = static_cast<size_t>(axis); k < xs.size(); ++k) region[k] = true;
  RowOp op = start(ctx, "layer_norm", ctx.bind("X", ctx.input(0)), ctx.bind("Y", ctx.output(0), true), region);
  const bool has_beta = ctx.has_input(2);
  KernelTensor g = ctx.bind("G", ctx.input(1));
  op.desc.helpers += scalar_fn(op, "gamma", "G_at(" + broadcast_args("G", g.shape, xs) + ")");
  op.desc.helpers += per_lane(op, "gamma");
  op.desc.tensors.push_back(g);
  if (has_beta) {
    KernelTensor be = ctx.bind("B", ctx.input(2));
    op.desc.helpers += scalar_fn(op, "beta", "B_at(" + broadcast_args("B", be.shape, xs) + ")");
    op.desc.helpers += per_lane(op, "beta");
    op.desc.tensors.push_back(be);
  }
  TensorId scratch = kNoTensor;
  const bool stats = ctx.has_output(1) || ctx.has_output(2);
  const std::string stats_code = stats ? layernorm_stats(ctx, op, axis, &scratch) : std::string();
  const std::string body = normalize_body(op, ctx.node().attr_float("epsilon", 1e-5f), has_beta, stats_code);
  finish(ctx, op, {rows::Combine::kSum}, body);
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_output(i)) continue;
    ctx.emit(map_kernel(i == 1 ? "layer_norm_mean" : "layer_norm_inv_std",
                        {ctx.bind("T", scratch), ctx.bind("Y", ctx.output(i), true)},
                        "v = T_ld(2 * oi + " + std::to_string(i - 1) + ");"));
  }
  return ok_status();
}

Status lower_instancenorm(LoweringContext& ctx) {
  const std::vector<ir::Dim>& xs = ctx.input_shape(0);
  if (xs.size() < 2) return ctx.error("InstanceNormalization needs an input of shape [N, C, ...]");
  std::vector<bool> region(xs.size(), false);
  for (size_t k = 2; k < xs.size(); ++k) region[k] = true;
  if (xs.size() == 2) return ctx.unsupported("InstanceNormalization without spatial axes");
  RowOp op = start(ctx, "instance_norm", ctx.bind("X", ctx.input(0)), ctx.bind("Y", ctx.output(0), true), region);
  op.desc.tensors.push_back(ctx.bind("G", ctx.input(1)));
  op.desc.tensors.push_back(ctx.bind("B", ctx.input(2)));
  op.desc.helpers += scalar_fn(op, "gamma", "G_at(c1)") + per_lane(op, "gamma");
  op.desc.helpers += scalar_fn(op, "beta", "B_at(c1)") + per_lane(op, "beta");
  finish(ctx, op, {rows::Combine::kSum}, normalize_body(op, ctx.node().attr_float("epsilon", 1e-5f), true));
  return ok_status();
}

// Whether GroupNormalization's input `i` (scale or bias) holds one value per
// group rather than per channel.
bool per_group_param(const KernelTensor& t, const ir::Dim& c, int64_t groups) {
  const ir::Dim& d = t.shape[0];
  return d.is_const() && d.value() == groups && !(c.is_const() && c.value() == groups);
}

// GroupNormalization where a texel may hold channels of two groups
// (images): one workgroup per (n, group) writes mean and 1/stddev to a
// scratch buffer, then a map kernel normalizes every element.
Status groupnorm_two_pass(LoweringContext& ctx, int64_t groups, const ir::Dim& spatial, const ir::Dim& per_group) {
  const std::vector<ir::Dim>& xs = ctx.input_shape(0);
  const size_t rank = xs.size();
  const ir::Dim rows = xs[0] * ir::Dim(groups);
  const TensorId stats = ctx.add_temporary(DType::kFloat32, {rows * ir::Dim(2)}, {Storage::kBuffer, ElemType::kF32, -1});
  KernelTensor x = ctx.bind("X", ctx.input(0));
  const ir::Dim row = per_group * spatial;
  const uint32_t local = rows::choose_local_size(row, ctx.target());
  const bool sg = ctx.target().subgroup_arithmetic;
  KernelDesc k;
  k.name = "group_norm_stats";
  k.family = KernelDesc::Family::kCustom;
  k.local_size = {local, 1, 1};
  const ir::Dim max_x(static_cast<int64_t>(ctx.target().max_workgroup_count_x));
  k.groups = {ir::Dim::min(rows, max_x), ir::Dim::ceil_div(rows, max_x), ir::Dim(1)};
  k.params = {{"KILN_GROUPS", rows}, {"KILN_ROW", row}, {"KILN_SPATIAL", spatial}, {"KILN_PER_GROUP", per_group}};
  k.tensors = {x, ctx.bind("T", stats, true)};
  if (sg) k.extensions = rows::subgroup_extensions();
  k.helpers = rows::minmax_helpers(false) + rows::workgroup_helpers({rows::Combine::kSum}, false, local, sg);
  // Element j of group row r: channel r % G * per_group + j / spatial, the
  // spatial coordinates from j % spatial.
  std::string at = "    int kiln_s = j % KILN_SPATIAL;\n";
  std::vector<std::string> args = {"kiln_n", "kiln_c0 + j / KILN_SPATIAL"};
  for (size_t a = rank; a-- > 2;) {
    at += "    int s" + std::to_string(a) + " = kiln_s % X_D" + std::to_string(a) + "; kiln_s /= X_D" + std::to_string(a) + ";\n";
  }
  for (size_t a = 2; a < rank; ++a) args.push_back("s" + std::to_string(a));
  at += "    float x = X_at(" + join_args(args) + ");\n";
  k.body = fill_shader("group_norm_stats.comp", ShaderArgs()
                                                  .set("GROUPS", groups)
                                                  .set("LOCAL", local)
                                                  .set("LOAD_X", at)
                                                  .set("EPS", glsl_float(ctx.node().attr_float("epsilon", 1e-5f))));
  ctx.emit(std::move(k));

  KernelTensor y = ctx.bind("Y", ctx.output(0), true);
  std::vector<KernelTensor> ts = {ctx.bind("X", ctx.input(0)), ctx.bind("T", stats)};
  const ir::Dim& c = xs[1];
  std::string body = "int g = oc1 / KILN_PER_GROUP;\nint r = 2 * (oc0 * " + std::to_string(groups) + " + g);\n";
  body += "v = (X_at(" + coord_list(rank) + ") - T_ld(r)) * T_ld(r + 1)";
  for (size_t i = 1; i < 3; ++i) {
    KernelTensor t = ctx.bind(i == 1 ? "G" : "B", ctx.input(i));
    if (t.shape.size() != 1) return ctx.error("input " + std::to_string(i) + " must be 1-D");
    body += std::string(i == 1 ? " * " : " + ") + t.name + "_at(" + (per_group_param(t, c, groups) ? "g" : "oc1") + ")";
    ts.push_back(std::move(t));
  }
  body += ";";
  ts.push_back(y);
  KernelDesc apply = map_kernel("group_norm_apply", std::move(ts), body);
  apply.params.push_back({"KILN_PER_GROUP", per_group});
  ctx.emit(std::move(apply));
  return ok_status();
}

// GroupNormalization on buffers: X viewed as [N, G, C/G * spatial] makes
// each group a row; scale/bias are per channel (opset 21) or per group (18).
Status lower_groupnorm(LoweringContext& ctx) {
  const std::vector<ir::Dim>& xs = ctx.input_shape(0);
  if (xs.size() < 2) return ctx.error("GroupNormalization needs an input of shape [N, C, ...]");
  const int64_t groups = ctx.node().attr_int("num_groups", 0);
  if (groups <= 0) return ctx.error("needs a positive 'num_groups'");
  const TensorId xt = ctx.input(0), yt = ctx.output(0);
  const ir::Dim c = xs[1];
  if (c.is_const() && c.value() % groups != 0)
    return ctx.error(std::to_string(c.value()) + " channels do not split into " + std::to_string(groups) + " groups");
  ir::Dim spatial(1);
  for (size_t k = 2; k < xs.size(); ++k) spatial = spatial * xs[k];
  const ir::Dim per_group = ir::Dim::floor_div(c, ir::Dim(groups));
  if (ctx.layout(xt).storage != Storage::kBuffer || ctx.layout(yt).storage != Storage::kBuffer)
    return groupnorm_two_pass(ctx, groups, spatial, per_group);
  const std::vector<ir::Dim> view = {xs[0], ir::Dim(groups), per_group * spatial};
  RowOp op = start(ctx, "group_norm", ctx.bind_as("X", xt, view), ctx.bind_as("Y", yt, view, true),
                   {false, false, true});
  op.desc.params.push_back({"KILN_SPATIAL", spatial});
  op.desc.params.push_back({"KILN_PER_GROUP", per_group});
  for (size_t i = 1; i < 3; ++i) {
    const std::string n = i == 1 ? "G" : "B";
    KernelTensor t = ctx.bind(n, ctx.input(i));
    if (t.shape.size() != 1) return ctx.error("input " + std::to_string(i) + " must be 1-D");
    const std::string idx = per_group_param(t, c, groups) ? "c1" : "c1 * KILN_PER_GROUP + c2 / KILN_SPATIAL";
    op.desc.helpers += scalar_fn(op, i == 1 ? "gamma" : "beta", n + "_at(" + idx + ")");
    op.desc.helpers += per_lane(op, i == 1 ? "gamma" : "beta");
    op.desc.tensors.push_back(std::move(t));
  }
  finish(ctx, op, {rows::Combine::kSum}, normalize_body(op, ctx.node().attr_float("epsilon", 1e-5f), true));
  return ok_status();
}

// --- LpNormalization ----------------------------------------------------------------

Status lower_lpnorm(LoweringContext& ctx) {
  if (ctx.input_shape(0).empty()) return ctx.error("LpNormalization needs an input of rank >= 1");
  KILN_ASSIGN_OR_RETURN(int64_t axis, axis_attr(ctx, -1));
  const int64_t p = ctx.node().attr_int("p", 2);
  if (p != 1 && p != 2) return ctx.error("attribute 'p' must be 1 or 2, got " + std::to_string(p));
  RowOp op = start(ctx, "lp_norm", ctx.bind("X", ctx.input(0)), ctx.bind("Y", ctx.output(0), true),
                   single_axis(ctx.input_shape(0).size(), axis));
  std::string b = stat_pass(op, "n", rows::Combine::kSum, p == 1 ? "abs(x)" : "x * x");
  if (p == 2) b += "  n = sqrt(n);\n";
  // A zero vector stays zero rather than becoming 0/0.
  b += "  vec4 inv = mix(1.0 / n, vec4(0.0), equal(n, vec4(0.0)));\n";
  b += write_pass(op, "x * inv");
  finish(ctx, op, {rows::Combine::kSum}, b);
  return ok_status();
}

// --- BatchNormalization (inference) -----------------------------------------------------

// y = x * a[c] + b[c]; a and b folded at plan time when the statistics are
// constants (the usual case), else computed per element from the inputs.
Status lower_batchnorm(LoweringContext& ctx) {
  if (ctx.node().attr_int("training_mode", 0) != 0) return ctx.unsupported("training_mode=1");
  for (size_t i = 1; i < ctx.num_outputs(); ++i)
    if (ctx.has_output(i)) return ctx.unsupported("training outputs (running mean/var)");
  const std::vector<ir::Dim>& xs = ctx.input_shape(0);
  if (xs.size() < 2) return ctx.error("BatchNormalization needs an input of shape [N, C, ...]");
  const double eps = ctx.node().attr_float("epsilon", 1e-5f);
  KernelTensor x = ctx.bind("X", ctx.input(0));
  KernelTensor y = ctx.bind("Y", ctx.output(0), true);
  const std::string xv = broadcast_load(x, y.shape);
  bool constant = true;
  for (size_t i = 1; i < 5; ++i) constant &= ctx.input_constant(i) != nullptr;
  if (constant) {
    const Tensor& scale = *ctx.input_constant(1);
    const Tensor& bias = *ctx.input_constant(2);
    const Tensor& mean = *ctx.input_constant(3);
    const Tensor& var = *ctx.input_constant(4);
    const int64_t c = scale.numel();
    if (bias.numel() != c || mean.numel() != c || var.numel() != c)
      return ctx.error("scale, B, mean and var must have one element per channel");
    std::vector<float> a(static_cast<size_t>(c)), b(static_cast<size_t>(c));
    for (int64_t k = 0; k < c; ++k) {
      const double ak = scale.get_f64(k) / std::sqrt(var.get_f64(k) + eps);
      a[static_cast<size_t>(k)] = static_cast<float>(ak);
      b[static_cast<size_t>(k)] = static_cast<float>(bias.get_f64(k) - mean.get_f64(k) * ak);
    }
    // Kept in fp32 whatever the activation precision: they are tiny.
    const DeviceLayout layout{Storage::kBuffer, ElemType::kF32, -1};
    KernelTensor ta = ctx.bind("A", ctx.add_constant(Tensor::from_vector<float>({c}, a), layout));
    KernelTensor tb = ctx.bind("B", ctx.add_constant(Tensor::from_vector<float>({c}, b), layout));
    ctx.emit(map_kernel("batch_norm", {x, ta, tb, y}, "v = " + xv + " * A_ld(oc1) + B_ld(oc1);"));
    return ok_status();
  }
  std::vector<KernelTensor> ts = {x};
  const char* names[] = {"S", "B", "M", "V"};
  for (size_t i = 1; i < 5; ++i) ts.push_back(ctx.bind(names[i - 1], ctx.input(i)));
  ts.push_back(y);
  ctx.emit(map_kernel("batch_norm_stats", std::move(ts),
                      "float a = S_at(oc1) * inversesqrt(V_at(oc1) + " + glsl_float(eps) +
                          ");\nv = " + xv + " * a + (B_at(oc1) - M_at(oc1) * a);"));
  return ok_status();
}

}  // namespace

void detail::register_normalization_lowerings(LoweringRegistry& r) {
  r.add("", "Softmax", lower_softmax<false>);
  r.add("", "LogSoftmax", lower_softmax<true>);
  r.add("", "Hardmax", lower_hardmax);
  r.add("", "LayerNormalization", lower_layernorm);
  r.add("", "InstanceNormalization", lower_instancenorm);
  r.add("", "GroupNormalization", lower_groupnorm);
  r.add("", "LpNormalization", lower_lpnorm);
  r.add("", "BatchNormalization", lower_batchnorm);
}

}  // namespace kiln::planner

// Device lowerings of QuantizeLinear, DequantizeLinear and
// DynamicQuantizeLinear, with the semantics of the reference kernels
// (engine/ops/quantize_linear.cc): per-tensor, per-axis and blocked
// parameters, rint then saturation.
//
//   QuantizeLinear    one map kernel: kiln_quantize(kiln_div_rn(x, s), zp)
//                     (shaders/quantize.glsl); float x only (an int32 x runs
//                     on the host).
//   DequantizeLinear  one map kernel: (float(x) - float(zp)) * s.
//   DynamicQuantizeLinear  a range pass (shaders/dynamic_quantize_range.comp;
//                     for more than 64K elements 256 workgroups fold partial
//                     ranges first) writes the scale and zero point to an
//                     fp32 scratch buffer (and to the node's outputs), then
//                     a map kernel quantizes x.
// Constant parameters are literals (one value) or fp32 constants; the
// scale and zero point a kernel reads never pass through fp16.
#include <string>
#include <vector>

#include "engine/ops/quantization.h"
#include "planner/lower_quantization.h"
#include "planner/lower_util.h"
#include "planner/shader_template.h"

namespace kiln::planner {

namespace quant {

std::string Param::at(const std::vector<std::string>& coords) const {
  if (!literal.empty()) return literal;
  return name + "_at(" + join_args(coords) + ")";
}

Param bind_param(LoweringContext& ctx, size_t input, const std::string& name) {
  Param p;
  p.name = name;
  const DType dt = ctx.input_dtype(input);
  if (const Tensor* c = ctx.input_constant(input)) {
    if (c->numel() == 1) {
      p.literal = dtype_is_float(dt) ? glsl_float(c->get_f64(0)) : glsl_int(c->get_i64(0));
      return p;
    }
    const ElemType et = dtype_is_float(dt) ? ElemType::kF32 : ElemType::kI32;
    p.tensor = ctx.bind(name, ctx.add_constant(*c, {Storage::kBuffer, et}));
    return p;
  }
  p.tensor = ctx.bind(name, ctx.input(input));
  return p;
}

void add_tensor(const Param& p, std::vector<KernelTensor>& tensors) {
  if (p.tensor) tensors.push_back(*p.tensor);
}

}  // namespace quant

namespace {

using quant::Param;

// The coordinates of the parameter element that applies to the output
// element at oc0.. (granularity from ops::resolve_granularity).
std::vector<std::string> param_coords(const ops::QuantGranularity& g, size_t rank) {
  using Kind = ops::QuantGranularity::Kind;
  if (g.kind == Kind::kPerTensor) return {"0"};
  const std::string axis = "oc" + std::to_string(g.axis);
  if (g.kind == Kind::kPerAxis) return {axis};
  std::vector<std::string> c;
  for (size_t i = 0; i < rank; ++i) c.push_back("oc" + std::to_string(i));
  c[static_cast<size_t>(g.axis)] = "(" + axis + " / " + std::to_string(g.block_size) + ")";
  return c;
}

StatusOr<ops::QuantGranularity> granularity(LoweringContext& ctx) {
  return ops::resolve_granularity(ctx.node(), ir::SymShape(ctx.input_shape(0)), ir::SymShape(ctx.input_shape(1)));
}

// x, its scale (input 1) and zero point (input 2; the literal 0 when
// absent) bound for a map kernel over the output.
struct Operands {
  std::vector<KernelTensor> tensors;  // x, then the parameters' tensors
  Param scale, zero;
};

Operands bind_operands(LoweringContext& ctx) {
  Operands o;
  o.tensors = {ctx.bind("x", ctx.input(0))};
  o.scale = quant::bind_param(ctx, 1, "s");
  o.zero.literal = "0";
  if (ctx.has_input(2)) o.zero = quant::bind_param(ctx, 2, "z");
  quant::add_tensor(o.scale, o.tensors);
  quant::add_tensor(o.zero, o.tensors);
  return o;
}

std::string quant_range(DType t) { return glsl_int(ops::quant_min(t)) + ", " + glsl_int(ops::quant_max(t)); }

std::string helpers(bool round_f16) {
  std::string h = fill_shader("quantize.glsl#two_prod") + fill_shader("quantize.glsl#div_rn") +
                  fill_shader("quantize.glsl#quantize");
  if (round_f16) h += fill_shader("round_f16.glsl");
  return h;
}

Status lower_quantize_linear(LoweringContext& ctx) {
  const DType xt = ctx.input_dtype(0);
  if (!dtype_is_float(xt))
    return ctx.unsupported("QuantizeLinear of a " + std::string(dtype_name(xt)) + " x (the device quantizes floats)");
  KILN_ASSIGN_OR_RETURN(const ops::QuantGranularity g, granularity(ctx));
  Operands o = bind_operands(ctx);
  KernelTensor y = ctx.bind("y", ctx.output(0), true);
  const std::vector<std::string> pc = param_coords(g, ctx.output_shape(0).size());
  // numpy divides two float16 operands in float16: round the quotient so.
  const bool f16 = xt == DType::kFloat16 && ctx.input_dtype(1) == DType::kFloat16;
  std::string body =
      "float q = kiln_div_rn(float(" + broadcast_load(o.tensors[0], y.shape) + "), float(" + o.scale.at(pc) + "));\n";
  if (f16) body += "q = kiln_round_f16(vec4(q)).x;\n";
  body += "v = kiln_quantize(q, " + o.zero.at(pc) + ", " + quant_range(ctx.output_dtype(0)) + ");";
  o.tensors.push_back(std::move(y));
  ctx.emit(map_kernel("quantize_linear", std::move(o.tensors), body, helpers(f16)));
  return ok_status();
}

Status lower_dequantize_linear(LoweringContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const ops::QuantGranularity g, granularity(ctx));
  Operands o = bind_operands(ctx);
  KernelTensor y = ctx.bind("y", ctx.output(0), true);
  const std::vector<std::string> pc = param_coords(g, ctx.output_shape(0).size());
  const std::string body = "v = (float(" + broadcast_load(o.tensors[0], y.shape) + ") - float(" + o.zero.at(pc) +
                           ")) * float(" + o.scale.at(pc) + ");";
  o.tensors.push_back(std::move(y));
  ctx.emit(map_kernel("dequantize_linear", std::move(o.tensors), body));
  return ok_status();
}

constexpr uint32_t kRangeLocal = 256;
// Above this many elements (or a symbolic count) the range is folded by
// kRangeGroups workgroups first, then their partials by one.
constexpr int64_t kOnePassMaxElements = 65536;
constexpr int64_t kRangeGroups = 256;

}  // namespace

namespace quant {

StatusOr<TensorId> emit_dynamic_quant_params(LoweringContext& ctx, size_t input, bool scale_out, bool zero_out) {
  const ElemType f32 = ElemType::kF32;
  // P[0] = scale, P[1] = zero point: fp32 whatever the precision.
  const TensorId params = ctx.add_temporary(DType::kFloat32, {ir::Dim(2)}, {Storage::kBuffer, f32, -1});
  for (size_t i = 1; i < 3; ++i)
    if ((i == 1 ? scale_out : zero_out) && ctx.layout(ctx.output(i)).storage != Storage::kBuffer)
      return ctx.unsupported("output " + std::to_string(i) + " is not a buffer");
  ir::Dim numel(1);
  for (const ir::Dim& d : ctx.input_shape(input)) numel = numel * d;
  const bool two_pass = !numel.is_const() || numel.value() > kOnePassMaxElements;
  const auto range_kernel = [&](const char* name, bool partial, bool from_partials) {
    KernelDesc k;
    k.name = name;
    k.family = KernelDesc::Family::kCustom;
    k.local_size = {kRangeLocal, 1, 1};
    k.helpers = fill_shader("quantize.glsl#two_prod") + fill_shader("quantize.glsl#div_rn");
    k.body = fill_shader("dynamic_quantize_range.comp", ShaderArgs()
                                                            .set("LOCAL", static_cast<int64_t>(kRangeLocal))
                                                            .set("GROUPS", kRangeGroups)
                                                            .flag("PARTIAL", partial)
                                                            .flag("FROM_PARTIALS", from_partials)
                                                            .flag("SCALE", scale_out && !partial)
                                                            .flag("ZERO", zero_out && !partial));
    return k;
  };
  TensorId partials = kNoTensor;
  if (two_pass) {
    partials = ctx.add_temporary(DType::kFloat32, {ir::Dim(2 * kRangeGroups)}, {Storage::kBuffer, f32, -1});
    KernelDesc k = range_kernel("dynamic_quantize_range_partial", true, false);
    k.groups = {ir::Dim(kRangeGroups), ir::Dim(1), ir::Dim(1)};
    k.tensors = {ctx.bind("X", ctx.input(input)), ctx.bind("Q", partials, true)};
    ctx.emit(std::move(k));
  }
  KernelDesc range = range_kernel("dynamic_quantize_range", false, two_pass);
  range.tensors = {two_pass ? ctx.bind("Q", partials) : ctx.bind("X", ctx.input(input)), ctx.bind("P", params, true)};
  if (scale_out) range.tensors.push_back(ctx.bind("S", ctx.output(1), true));
  if (zero_out) range.tensors.push_back(ctx.bind("Z", ctx.output(2), true));
  ctx.emit(std::move(range));
  return params;
}

}  // namespace quant

namespace {

Status lower_dynamic_quantize_linear(LoweringContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const TensorId params,
                        quant::emit_dynamic_quant_params(ctx, 0, ctx.has_output(1), ctx.has_output(2)));
  std::vector<KernelTensor> ts = {ctx.bind("x", ctx.input(0)), ctx.bind("p", params)};
  KernelTensor y = ctx.bind("y", ctx.output(0), true);
  const std::string body = "float q = kiln_div_rn(float(" + broadcast_load(ts[0], y.shape) +
                           "), p_ld(0));\nv = kiln_quantize(q, int(p_ld(1)), 0, 255);";
  ts.push_back(std::move(y));
  ctx.emit(map_kernel("dynamic_quantize_linear", std::move(ts), body, helpers(false)));
  return ok_status();
}

}  // namespace

void register_quantize_lowerings(LoweringRegistry& r) {
  r.add("", "QuantizeLinear", lower_quantize_linear);
  r.add("", "DequantizeLinear", lower_dequantize_linear);
  r.add("", "DynamicQuantizeLinear", lower_dynamic_quantize_linear);
  // ONNX Runtime's com.microsoft forms have the ONNX semantics.
  r.add(ops::kMicrosoftDomain, "QuantizeLinear", lower_quantize_linear);
  r.add(ops::kMicrosoftDomain, "DequantizeLinear", lower_dequantize_linear);
}

}  // namespace kiln::planner

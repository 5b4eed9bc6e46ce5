// Device lowerings of the elementwise family: unary math and activations,
// binary and variadic ops with numpy broadcasting, Where, PRelu, Clip,
// Cast/CastLike, and Kiln's fused kiln.Silu.
//
// Every op is one kMap kernel: the body reads each input at the output
// element's (broadcast) coordinates and computes one value in float (f32 and
// f16 tensors) or int (integer and bool tensors, stored as int32). Inputs of
// the output's very shape held in buffers are read by linear index, so the
// common same-shape case does no index arithmetic beyond the harness's.
//
// Semantics follow the reference kernels (engine/ops/elementwise*.cc):
// NaN propagates where they propagate it, integer arithmetic wraps at the
// graph dtype's width (narrow types are re-wrapped after int32 arithmetic),
// Div truncates, Mod follows the divisor's sign unless fmod=1, float->int
// conversion saturates with NaN -> 0. int64 values must fit int32 (the
// device stores them so).
#include <cctype>
#include <set>
#include <string>
#include <vector>

#include "planner/glsl_codegen.h"
#include "planner/lower_util.h"
#include "planner/lowering.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

constexpr const char* kNanLiteral = "uintBitsToFloat(0x7fc00000u)";

// Collects the helpers a body needs, each once: helper `name` is section
// `name` of shaders/elementwise_math.glsl ("sigmoid" defines kiln_sigmoid).
class Helpers {
 public:
  void need(const std::string& name) {
    if (names_.insert(name).second) text_ += fill_shader("elementwise_math.glsl#" + name);
  }
  const std::string& text() const { return text_; }

 private:
  std::set<std::string> names_;
  std::string text_;
};

// --- integer dtype handling -------------------------------------------------

bool is_unsigned(DType t) {
  return t == DType::kUInt8 || t == DType::kUInt16 || t == DType::kUInt32 || t == DType::kUInt64;
}

// Re-wraps an int32 result to a narrower graph dtype (two's complement).
std::string wrap_int(DType t, const std::string& e) {
  switch (t) {
    case DType::kInt8: return "(((" + e + ") << 24) >> 24)";
    case DType::kUInt8: return "((" + e + ") & 255)";
    case DType::kInt16: return "(((" + e + ") << 16) >> 16)";
    case DType::kUInt16: return "((" + e + ") & 65535)";
    default: return e;
  }
}

// Float -> integer dtype (Cast semantics); uses kiln_f2i.
std::string float_to_int(DType to, const std::string& x, Helpers& h) {
  if (to == DType::kBool) return "(" + x + " == 0.0 ? 0 : 1)";  // NaN != 0 -> true
  if (to == DType::kUInt32 || to == DType::kUInt64)
    return "((isnan(" + x + ") || " + x + " <= 0.0) ? 0 : (" + x + " >= 4294967296.0 ? -1 : int(uint(" + x + "))))";
  h.need("f2i");
  switch (to) {
    case DType::kInt8: return "kiln_f2i(" + x + ", -128.0, 128.0, -128, 127)";
    case DType::kUInt8: return "kiln_f2i(" + x + ", 0.0, 256.0, 0, 255)";
    case DType::kInt16: return "kiln_f2i(" + x + ", -32768.0, 32768.0, -32768, 32767)";
    case DType::kUInt16: return "kiln_f2i(" + x + ", 0.0, 65536.0, 0, 65535)";
    default: return "kiln_f2i(" + x + ", -2147483648.0, 2147483648.0, (-2147483647 - 1), 2147483647)";
  }
}

// --- shared scaffolding --------------------------------------------------------

std::string input_name(size_t i) { return "x" + std::to_string(i); }

// The node's inputs `indices` read for the output element: a one-element
// constant (a scale, an epsilon, an exponent) becomes a literal; any other
// input is bound as x<i> and loaded with broadcasting. Output 0 is y.
struct Bound {
  std::vector<KernelTensor> tensors;  // the bound inputs, then y
  std::vector<std::string> load;      // per requested input: its value for the output element
  std::vector<ElemType> type;         // per requested input: its device element type
  const KernelTensor& y() const { return tensors.back(); }
  std::string scalar(size_t k) const { return glsl_scalar(type[k]); }
};

Bound bind_io(LoweringContext& ctx, const std::vector<size_t>& indices) {
  Bound b;
  KernelTensor y = ctx.bind("y", ctx.output(0), /*written=*/true);
  for (size_t i : indices) {
    const ElemType et = device_elem_type(ctx.input_dtype(i), ctx.float_type());
    if (const Tensor* c = ctx.input_constant(i); c && c->numel() == 1) {
      b.load.push_back(is_float(et) ? glsl_float(c->get_f64(0)) : glsl_int(c->get_i64(0)));
      b.type.push_back(et);
      continue;
    }
    KernelTensor t = ctx.bind(input_name(i), ctx.input(i));
    // Not broadcast: loaded at the output element's own index (x_ld(oi)),
    // so the output may be written over it (planner/inplace.h).
    t.elementwise = t.layout.storage == Storage::kBuffer && y.layout.storage == Storage::kBuffer &&
                    same_shape(t.shape, y.shape);
    b.load.push_back(broadcast_load(t, y.shape));
    b.type.push_back(t.layout.type);
    b.tensors.push_back(std::move(t));
  }
  b.tensors.push_back(std::move(y));
  return b;
}

std::string lower_name(std::string op) {
  for (char& c : op) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return op;
}

void emit_map(LoweringContext& ctx, Bound b, const std::string& body, const Helpers& h) {
  ctx.emit(map_kernel(lower_name(ctx.node().op), std::move(b.tensors), body, h.text()));
}

// --- unary --------------------------------------------------------------------

// The value of a unary op on local `a` (float or int); empty if unsupported.
std::string unary_expr(const ir::Node& n, bool f, DType dt, Helpers& h) {
  const std::string& op = n.op;
  auto attr = [&](const char* name, float fallback) { return glsl_float(n.attr_float(name, fallback)); };
  if (op == "Relu") return f ? "(a < 0.0 ? 0.0 : a)" : "(a < 0 ? 0 : a)";
  if (op == "Neg") return f ? "(-a)" : wrap_int(dt, "-a");
  if (op == "Abs") return f ? "abs(a)" : is_unsigned(dt) ? "a" : wrap_int(dt, "abs(a)");
  if (op == "Sign") return f ? "(a > 0.0 ? 1.0 : (a < 0.0 ? -1.0 : a))" : "sign(a)";
  if (op == "Not") return f ? "" : "(a == 0 ? 1 : 0)";
  if (op == "Shrink") {
    const std::string l = attr("lambd", 0.5f), bias = attr("bias", 0.0f);
    const std::string x = f ? "a" : "float(a)";
    const std::string r = "(" + x + " < -" + l + " ? " + x + " + " + bias + " : (" + x + " > " + l + " ? " + x +
                          " - " + bias + " : 0.0))";
    return f ? r : float_to_int(dt, r, h);
  }
  if (!f) return "";
  if (op == "Sigmoid") return h.need("sigmoid"), "kiln_sigmoid(a)";
  if (op == "Silu") return h.need("sigmoid"), "(a * kiln_sigmoid(a))";
  if (op == "Tanh") return h.need("tanh"), "kiln_tanh(a)";
  if (op == "Erf") return h.need("erf"), "kiln_erf(a)";
  if (op == "Softplus") return h.need("softplus"), "kiln_softplus(a)";
  if (op == "Mish") {
    h.need("softplus");
    h.need("tanh");
    return "(a * kiln_tanh(kiln_softplus(a)))";
  }
  if (op == "Exp") return "exp(a)";
  if (op == "Log") return "log(a)";
  if (op == "Sqrt") return "sqrt(a)";
  if (op == "Reciprocal") return "(1.0 / a)";
  if (op == "Floor") return "floor(a)";
  if (op == "Ceil") return "ceil(a)";
  if (op == "Round") return "roundEven(a)";
  if (op == "Sin") return "sin(a)";
  if (op == "Cos") return "cos(a)";
  if (op == "Tan") return "tan(a)";
  // Through atan: some drivers' asin/acos are far less precise.
  if (op == "Asin") return "atan(a, sqrt((1.0 - a) * (1.0 + a)))";
  if (op == "Acos") return "atan(sqrt((1.0 - a) * (1.0 + a)), a)";
  if (op == "Atan") return "atan(a)";
  if (op == "Sinh") return "sinh(a)";
  if (op == "Cosh") return "cosh(a)";
  if (op == "Asinh") return "asinh(a)";
  if (op == "Acosh") return "acosh(a)";
  if (op == "Atanh") return "atanh(a)";
  if (op == "Softsign") return "(a / (1.0 + abs(a)))";
  if (op == "Elu") return "(a < 0.0 ? " + attr("alpha", 1.0f) + " * (exp(a) - 1.0) : a)";
  if (op == "Selu") {
    const std::string al = attr("alpha", 1.67326319217681884765625f);
    const std::string g = attr("gamma", 1.05070102214813232421875f);
    return "(a <= 0.0 ? " + g + " * (" + al + " * exp(a) - " + al + ") : " + g + " * a)";
  }
  if (op == "Celu") {
    const std::string al = attr("alpha", 1.0f);
    return "(max(0.0, a) + min(0.0, " + al + " * (exp(a / " + al + ") - 1.0)))";
  }
  if (op == "Gelu") {
    if (n.attr_string("approximate", "none") == "tanh") {
      h.need("tanh");
      return "(0.5 * a * (1.0 + kiln_tanh(0.797884561 * (a + 0.044715 * a * a * a))))";
    }
    h.need("erf");
    return "(0.5 * a * (1.0 + kiln_erf(a * 0.707106781)))";
  }
  if (op == "LeakyRelu") return "(a < 0.0 ? " + attr("alpha", 0.01f) + " * a : a)";
  if (op == "HardSigmoid")
    return "max(0.0, min(1.0, " + attr("alpha", 0.2f) + " * a + " + attr("beta", 0.5f) + "))";
  if (op == "HardSwish") return "(a * max(0.0, min(1.0, a / 6.0 + 0.5)))";
  if (op == "ThresholdedRelu") return "(a > " + attr("alpha", 1.0f) + " ? a : 0.0)";
  if (op == "IsNaN") return "(isnan(a) ? 1 : 0)";
  if (op == "IsInf") {
    const bool neg = n.attr_int("detect_negative", 1) != 0, pos = n.attr_int("detect_positive", 1) != 0;
    return std::string("((isinf(a) && (a > 0.0 ? ") + (pos ? "true" : "false") + " : " + (neg ? "true" : "false") +
           ")) ? 1 : 0)";
  }
  return "";
}

Status lower_unary(LoweringContext& ctx) {
  Bound b = bind_io(ctx, {0});
  const bool f = is_float(b.type[0]);
  Helpers h;
  const std::string e = unary_expr(ctx.node(), f, ctx.input_dtype(0), h);
  if (e.empty()) return ctx.unsupported(std::string("input dtype ") + std::string(dtype_name(ctx.input_dtype(0))));
  const std::string body = b.scalar(0) + " a = " + b.load[0] + ";\nv = " + e + ";";
  emit_map(ctx, std::move(b), body, h);
  return ok_status();
}

// --- binary -------------------------------------------------------------------

// The value of a binary op on locals `a`, `b`; empty if unsupported.
std::string binary_expr(const ir::Node& n, bool f, DType dt, Helpers& h) {
  const std::string& op = n.op;
  if (op == "Add") return f ? "(a + b)" : wrap_int(dt, "a + b");
  if (op == "Sub") return f ? "(a - b)" : wrap_int(dt, "a - b");
  if (op == "Mul") return f ? "(a * b)" : wrap_int(dt, "a * b");
  if (op == "Div") return f ? "(a / b)" : (h.need("idiv"), wrap_int(dt, "kiln_idiv(a, b)"));
  if (op == "Mod") {
    if (f) return h.need("fmod"), "kiln_fmod(a, b)";
    if (n.attr_int("fmod", 0) != 0 || is_unsigned(dt)) return h.need("irem"), "kiln_irem(a, b)";
    return h.need("imod"), "kiln_imod(a, b)";
  }
  if (op == "Equal") return "(a == b ? 1 : 0)";
  if (op == "Greater") return "(a > b ? 1 : 0)";
  if (op == "Less") return "(a < b ? 1 : 0)";
  if (op == "GreaterOrEqual") return "(a >= b ? 1 : 0)";
  if (op == "LessOrEqual") return "(a <= b ? 1 : 0)";
  if (op == "And") return "((a != 0 && b != 0) ? 1 : 0)";
  if (op == "Or") return "((a != 0 || b != 0) ? 1 : 0)";
  if (op == "Xor") return "(((a != 0) != (b != 0)) ? 1 : 0)";
  if (op == "BitShift" && !f) {
    int width = 0;
    if (dt == DType::kUInt8) width = 8;
    else if (dt == DType::kUInt16) width = 16;
    // uint64 holds only its low 32 bits on the device, which a 32-bit shift
    // computes exactly.
    else if (dt == DType::kUInt32 || dt == DType::kUInt64) width = 32;
    if (width == 0) return "";
    const std::string w = std::to_string(width);
    if (n.attr_string("direction", "") == "LEFT") return "(uint(b) >= " + w + "u ? 0 : " + wrap_int(dt, "int(uint(a) << uint(b))") + ")";
    return "(uint(b) >= " + w + "u ? 0 : int(uint(a) >> uint(b)))";
  }
  return "";
}

Status lower_binary(LoweringContext& ctx) {
  if (ctx.input_dtype(0) != ctx.input_dtype(1)) return ctx.error("inputs must have one dtype");
  Bound b = bind_io(ctx, {0, 1});
  const bool f = is_float(b.type[0]);
  Helpers h;
  const std::string e = binary_expr(ctx.node(), f, ctx.input_dtype(0), h);
  if (e.empty()) return ctx.unsupported(std::string("input dtype ") + std::string(dtype_name(ctx.input_dtype(0))));
  const std::string body =
      b.scalar(0) + " a = " + b.load[0] + ";\n" + b.scalar(1) + " b = " + b.load[1] + ";\nv = " + e + ";";
  emit_map(ctx, std::move(b), body, h);
  return ok_status();
}

// Pow: base and exponent dtypes may differ; the result has the base's.
Status lower_pow(LoweringContext& ctx) {
  Bound b = bind_io(ctx, {0, 1});
  const bool fa = is_float(b.type[0]), fb = is_float(b.type[1]);
  Helpers h;
  std::string e;
  if (fa) {
    h.need("pow");
    e = fb ? "kiln_pow(a, b)" : "kiln_pow(a, float(b))";
  } else if (!fb) {
    h.need("ipow");
    e = wrap_int(ctx.input_dtype(0), "kiln_ipow(a, b)");
  } else {
    h.need("pow");
    e = float_to_int(ctx.input_dtype(0), "kiln_pow(float(a), b)", h);
  }
  const std::string body =
      b.scalar(0) + " a = " + b.load[0] + ";\n" + b.scalar(1) + " b = " + b.load[1] + ";\nv = " + e + ";";
  emit_map(ctx, std::move(b), body, h);
  return ok_status();
}

// Sum / Mean / Max / Min over any number of inputs.
Status lower_variadic(LoweringContext& ctx) {
  const std::string& op = ctx.node().op;
  std::vector<size_t> idx;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.error("input " + std::to_string(i) + " is missing");
    idx.push_back(i);
  }
  const DType dt = ctx.output_dtype(0);
  if (op == "Mean" && !dtype_is_float(dt)) return ctx.unsupported("Mean of integers");
  Bound b = bind_io(ctx, idx);
  const bool f = is_float(b.y().layout.type);
  Helpers h;
  std::string body = b.scalar(0) + " acc = " + b.load[0] + ";\n";
  for (size_t k = 1; k < idx.size(); ++k) {
    const std::string& x = b.load[k];
    std::string step;
    if (op == "Sum" || op == "Mean") step = f ? "acc + " + x : wrap_int(dt, "acc + " + x);
    else if (f) step = (h.need("fmax"), std::string(op == "Max" ? "kiln_fmax" : "kiln_fmin") + "(acc, " + x + ")");
    else step = std::string(op == "Max" ? "max" : "min") + "(acc, " + x + ")";
    body += "acc = " + step + ";\n";
  }
  if (op == "Mean") {
    body += "v = acc / " + glsl_float(static_cast<double>(idx.size())) + ";";
  } else {
    body += "v = acc;";
  }
  emit_map(ctx, std::move(b), body, h);
  return ok_status();
}

Status lower_where(LoweringContext& ctx) {
  Bound b = bind_io(ctx, {0, 1, 2});
  const std::string body = "v = " + b.load[0] + " != 0 ? " + b.load[1] + " : " + b.load[2] + ";";
  emit_map(ctx, std::move(b), body, Helpers());
  return ok_status();
}

Status lower_prelu(LoweringContext& ctx) {
  Bound b = bind_io(ctx, {0, 1});
  const bool f = is_float(b.type[0]);
  std::string body = b.scalar(0) + " a = " + b.load[0] + ";\n" + b.scalar(1) + " b = " + b.load[1] + ";\n";
  body += f ? "v = a < 0.0 ? a * b : a;" : "v = a < 0 ? " + wrap_int(ctx.input_dtype(0), "a * b") + " : a;";
  emit_map(ctx, std::move(b), body, Helpers());
  return ok_status();
}

// Clip: scalar bounds; constant ones become literals (bind_io).
Status lower_clip(LoweringContext& ctx) {
  std::vector<size_t> idx = {0};
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    if (const Tensor* t = ctx.input_constant(i); t && t->numel() != 1)
      return ctx.error("input " + std::to_string(i) + " must hold one value");
    idx.push_back(i);
  }
  Bound b = bind_io(ctx, idx);
  // A bound on the device is read at element 0, not elementwise.
  for (KernelTensor& t : b.tensors)
    if (t.name != input_name(0) && !t.written) t.elementwise = false;
  std::string body = b.scalar(0) + " a = " + b.load[0] + ";\n";
  for (size_t k = 1; k < idx.size(); ++k) {
    // A bound on the device is read at element 0 whatever its rank.
    const std::string bound = ctx.input_constant(idx[k]) ? b.load[k] : input_name(idx[k]) + "_ld(0)";
    body += idx[k] == 1 ? "a = a < " + bound + " ? " + bound + " : a;\n" : "a = a > " + bound + " ? " + bound + " : a;\n";
  }
  body += "v = a;";
  emit_map(ctx, std::move(b), body, Helpers());
  return ok_status();
}

// --- Cast ---------------------------------------------------------------------

// Whether the device holds `from` and `to` identically (no kernel needed
// when the layouts agree): float to float (precision is the device's), and
// integers into a type at least as wide whose range holds every value.
bool cast_is_noop(DType from, DType to) {
  if (from == to) return true;
  if (dtype_is_float(from) && dtype_is_float(to)) return true;
  auto wide = [](DType t) { return t == DType::kInt32 || t == DType::kInt64; };
  if (dtype_is_integer(from) && wide(to) && from != DType::kUInt32 && from != DType::kUInt64) return true;
  return from == DType::kBool && (dtype_is_integer(to));
}

Status lower_cast(LoweringContext& ctx) {
  const DType from = ctx.input_dtype(0), to = ctx.output_dtype(0);
  const TensorId in = ctx.input(0);
  if (cast_is_noop(from, to) && ctx.alias_output(0, in).ok()) return ok_status();
  Bound b = bind_io(ctx, {0});
  const bool fin = is_float(b.type[0]), fout = is_float(b.y().layout.type);
  Helpers h;
  std::string e;
  if (fin && fout) e = "a";
  else if (fin) e = float_to_int(to, "a", h);
  else if (fout) e = "float(a)";
  else if (to == DType::kBool) e = "(a != 0 ? 1 : 0)";
  else e = wrap_int(to, "a");
  const std::string body = b.scalar(0) + " a = " + b.load[0] + ";\nv = " + e + ";";
  ctx.emit(map_kernel("cast", std::move(b.tensors), body, h.text()));
  return ok_status();
}

}  // namespace

void register_elementwise_lowerings(LoweringRegistry& r) {
  for (const char* op :
       {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Neg", "Abs", "Reciprocal", "Floor", "Ceil", "Round",
        "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softsign", "Not",
        "Sign", "Softplus", "Mish", "Elu", "Selu", "Celu", "Gelu", "LeakyRelu", "HardSigmoid", "HardSwish",
        "ThresholdedRelu", "Shrink", "IsNaN", "IsInf"})
    r.add("", op, lower_unary);
  r.add("kiln", "Silu", lower_unary);
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Mod", "Equal", "Greater", "Less", "GreaterOrEqual",
                         "LessOrEqual", "And", "Or", "Xor", "BitShift"})
    r.add("", op, lower_binary);
  r.add("", "Pow", lower_pow);
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) r.add("", op, lower_variadic);
  r.add("", "Where", lower_where);
  r.add("", "PRelu", lower_prelu);
  r.add("", "Clip", lower_clip);
  r.add("", "Cast", lower_cast);
  r.add("", "CastLike", lower_cast);
}

}  // namespace kiln::planner

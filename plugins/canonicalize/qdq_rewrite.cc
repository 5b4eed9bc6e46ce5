// The 'fuse-qdq' pass: static QDQ patterns, as ONNX Runtime's static
// quantizer and PyTorch's export emit them, rewritten into the QOperator ops
// that Kiln runs as integer kernels (int8/uint8 operands, int32 accumulation,
// one requantization):
//
//   DequantizeLinear(x_q, sx, zx) ─┐
//   DequantizeLinear(w_q, sw, zw) ─┼─ Conv ─ [Relu|Clip] ─ QuantizeLinear(sy, zy)
//   bias (optional)                ┘
//     (a float constant, or DequantizeLinear(int32 constant, sx*sw) as
//     ONNX Runtime's QDQ format writes it)
//     => QLinearConv(x_q, sx, zx, w_q, sw, zw, sy, zy, int32 bias)
//   MatMul (B 2-D)                      => QLinearMatMul
//   MatMul + Add(bias [N]), Gemm        => Reshape, 1x1 QLinearConv, Reshape
//                                          (QLinearMatMul has no bias input;
//                                          the Reshapes are views)
//   DequantizeLinear(a) + DequantizeLinear(b) ─ Add ─ [Relu|Clip] ─ QuantizeLinear
//     => com.microsoft QLinearAdd(a, sa, za, b, sb, zb, sy, zy): a residual
//     connection's three kernels (dequantize, add, quantize) in one, reading
//     and writing 8-bit values (a, b and y of one type, each per tensor)
//
// What is required (anything else is left alone): x and y quantized per
// tensor with int8/uint8; w a constant int8/uint8 tensor (or QuantizeLinear
// of a float constant, as fake-quantized QAT exports write it, which the
// rewrite folds) quantized per tensor or per output channel (Conv axis 0, MatMul's B axis 1, Gemm's B the
// axis of N); scales positive and finite; the float results used only by
// the chain that ends in the QuantizeLinear.
//
// Equivalence. A QDQ graph means its float semantics: y_q = Q(op(DQ(x),
// DQ(w)) + b). The rewrite computes the same sum exactly in int32 and
// requantizes once (acc * float32(sx*sw/sy), ONNX's QLinear rounding), so
// it differs from the float graph only by the float graph's own rounding:
// its fp32 accumulation and one rounding of the quotient — at most one
// quantization step, at a .5 tie. An int32 bias dequantized with exactly
// float32(sx*sw) is taken as is; a float bias becomes the int32 bias
// round(b / float32(sx*sw)), as ONNX Runtime's quantizer writes it; its
// error is at most sx*sw/2, far below a step of y (it too can only move a
// tie). A bias that does not fit int32 leaves the pattern alone.
// Relu/Clip fold into the requantization's saturation only when that is
// exact: when Q(clip_min) <= the type's minimum and Q(clip_max) >= its
// maximum (Relu: zy is the type's minimum, as a uint8 zy = 0 after Relu is).
#include "plugins/canonicalize/qdq_rewrite.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kiln/kiln_plugin.hpp"

namespace kiln::canonicalize {
namespace {

using kiln::plugin::GraphView;
using kiln::plugin::Rewriter;

bool is_op(const GraphView& g, kiln_node_id_t n, const char* op) {
  auto info = g.node(n);
  return info && info->domain.empty() && info->op == op;
}

bool is_main_output(const GraphView& g, kiln_value_id_t v) {
  for (kiln_value_id_t out : g.region_outputs(0))
    if (out == v) return true;
  return false;
}

// The node that alone reads `v` (once), or KILN_NO_ID when v has other
// readers or is a model output.
kiln_node_id_t only_reader(const GraphView& g, kiln_value_id_t v) {
  const auto uses = g.uses(v);
  if (uses.size() != 1 || uses[0].node == KILN_NO_ID || is_main_output(g, v)) return KILN_NO_ID;
  return uses[0].node;
}

bool is_quant_dtype(int32_t t) { return t == KILN_PLUGIN_DTYPE_INT8 || t == KILN_PLUGIN_DTYPE_UINT8; }
int64_t quant_min(int32_t t) { return t == KILN_PLUGIN_DTYPE_INT8 ? -128 : 0; }
int64_t quant_max(int32_t t) { return t == KILN_PLUGIN_DTYPE_INT8 ? 127 : 255; }

// The elements of a constant of rank <= 1 and dtype `dtype`; nullopt otherwise.
std::optional<std::vector<float>> f32_values(const GraphView& g, kiln_value_id_t v) {
  auto info = g.value(v);
  if (!info || !info->is_constant || info->dtype != KILN_PLUGIN_DTYPE_FLOAT32 || info->rank > 1) return std::nullopt;
  size_t bytes = 0;
  const void* data = g.constant_data(v, &bytes);
  if (!data || bytes == 0 || bytes % sizeof(float) != 0) return std::nullopt;
  std::vector<float> out(bytes / sizeof(float));
  std::memcpy(out.data(), data, bytes);
  return out;
}

std::optional<std::vector<int64_t>> quant_values(const GraphView& g, kiln_value_id_t v) {
  auto info = g.value(v);
  if (!info || !info->is_constant || !is_quant_dtype(info->dtype) || info->rank > 1) return std::nullopt;
  size_t bytes = 0;
  const void* data = g.constant_data(v, &bytes);
  if (!data || bytes == 0) return std::nullopt;
  std::vector<int64_t> out(bytes);
  for (size_t i = 0; i < bytes; ++i)
    out[i] = info->dtype == KILN_PLUGIN_DTYPE_INT8 ? static_cast<const int8_t*>(data)[i] : static_cast<const uint8_t*>(data)[i];
  return out;
}

// The quantization parameters of one DequantizeLinear or QuantizeLinear.
struct QuantParams {
  kiln_value_id_t scale = KILN_NO_ID;
  kiln_value_id_t zero_point = KILN_NO_ID;  // KILN_NO_ID: absent (zero)
  int32_t dtype = 0;                        // the quantized side's int8/uint8
  std::vector<float> scales;                // one, or one per slice along axis
  std::vector<int64_t> zero_points;         // as many as scales
  int64_t axis = 0;                         // normalized; per-axis only
  bool per_tensor() const { return scales.size() == 1; }
};

// Reads the scale/zero point inputs (1, 2) and the axis of a (De)QuantizeLinear
// whose quantized operand has `dtype` and `rank` (-1: unknown).
std::optional<QuantParams> read_params(const GraphView& g, kiln_node_id_t n, int32_t dtype, int32_t rank) {
  const auto ins = g.inputs(n);
  if (ins.size() < 2 || ins.size() > 3 || !is_quant_dtype(dtype)) return std::nullopt;
  if (g.attr_int(n, "block_size", 0) != 0) return std::nullopt;  // blocked (opset 21)
  QuantParams p;
  p.dtype = dtype;
  p.scale = ins[1];
  auto scales = f32_values(g, p.scale);
  if (!scales) return std::nullopt;
  for (float s : *scales)
    if (!(s > 0.0f) || !std::isfinite(s)) return std::nullopt;
  p.scales = *scales;
  if (ins.size() == 3 && ins[2] != KILN_NO_ID) {
    auto zps = quant_values(g, ins[2]);
    if (!zps || zps->size() != p.scales.size() || g.value(ins[2])->dtype != dtype) return std::nullopt;
    p.zero_point = ins[2];
    p.zero_points = *zps;
  } else {
    p.zero_points.assign(p.scales.size(), 0);
  }
  if (!p.per_tensor()) {
    if (rank <= 0 || g.value(p.scale)->rank != 1) return std::nullopt;
    p.axis = g.attr_int(n, "axis", 1);
    if (p.axis < 0) p.axis += rank;
    if (p.axis < 0 || p.axis >= rank) return std::nullopt;
  }
  return p;
}

// A float operand that is DequantizeLinear(q, ...): q and its parameters.
struct Dequantized {
  kiln_value_id_t data = KILN_NO_ID;
  QuantParams params;
};

std::optional<Dequantized> dequantized(const GraphView& g, kiln_value_id_t v) {
  auto info = g.value(v);
  if (!info || info->producer == KILN_NO_ID || !is_op(g, info->producer, "DequantizeLinear")) return std::nullopt;
  const auto ins = g.inputs(info->producer);
  if (ins.empty()) return std::nullopt;
  const kiln_value_id_t q = ins[0];
  auto qinfo = g.value(q);
  if (!qinfo) return std::nullopt;
  auto params = read_params(g, info->producer, qinfo->dtype, qinfo->rank);
  if (!params) return std::nullopt;
  return Dequantized{q, *params};
}

// A bias in one of the two forms quantizers write: a float constant, or
// (ONNX Runtime's QDQ format) DequantizeLinear(int32 constant, scale) —
// each of `n` elements.
struct Bias {
  std::vector<float> values;      // a float constant
  std::vector<int32_t> quantized; // or DequantizeLinear's int32 data
  std::vector<float> scales;      // and its scales (one, or n)
};

std::optional<Bias> read_bias(const GraphView& g, kiln_value_id_t v, int64_t n) {
  auto info = g.value(v);
  if (!info || n <= 0) return std::nullopt;
  const size_t count = static_cast<size_t>(n);
  size_t bytes = 0;
  Bias b;
  if (info->is_constant) {
    const void* data = g.constant_data(v, &bytes);
    if (info->dtype != KILN_PLUGIN_DTYPE_FLOAT32 || !data || bytes != count * sizeof(float)) return std::nullopt;
    b.values.resize(count);
    std::memcpy(b.values.data(), data, bytes);
    return b;
  }
  if (info->producer == KILN_NO_ID || !is_op(g, info->producer, "DequantizeLinear")) return std::nullopt;
  const auto ins = g.inputs(info->producer);
  if (ins.size() < 2 || g.attr_int(info->producer, "block_size", 0) != 0) return std::nullopt;
  auto q = g.value(ins[0]);
  const void* data = g.constant_data(ins[0], &bytes);
  if (!q || !q->is_constant || q->dtype != KILN_PLUGIN_DTYPE_INT32 || !data || bytes != count * sizeof(int32_t))
    return std::nullopt;
  auto scales = f32_values(g, ins[1]);
  if (!scales || (scales->size() != 1 && scales->size() != count)) return std::nullopt;
  if (ins.size() > 2 && ins[2] != KILN_NO_ID) {  // an int32 zero point must be 0 (ONNX)
    size_t zbytes = 0;
    const void* z = g.constant_data(ins[2], &zbytes);
    if (!z || zbytes % sizeof(int32_t) != 0) return std::nullopt;
    std::vector<int32_t> zeros(zbytes / sizeof(int32_t));
    std::memcpy(zeros.data(), z, zbytes);
    for (int32_t zp : zeros)
      if (zp != 0) return std::nullopt;
  }
  b.quantized.resize(count);
  std::memcpy(b.quantized.data(), data, bytes);
  b.scales = *scales;
  return b;
}

// The bias as QLinearConv's int32 input, in units of float32(sx * sw[c]):
// an int32 bias already in those units is taken as is; any other value b is
// rounded as ONNX Runtime's quantizer rounds it, round(b / float32(sx*sw)).
// nullopt when a value does not fit int32.
std::optional<std::vector<int32_t>> int32_bias(const Bias& bias, float sx, const std::vector<float>& sw) {
  const size_t n = bias.values.empty() ? bias.quantized.size() : bias.values.size();
  std::vector<int32_t> out(n);
  for (size_t c = 0; c < n; ++c) {
    const float s = sx * sw[sw.size() == 1 ? 0 : c];
    if (!(s > 0.0f) || !std::isfinite(s)) return std::nullopt;
    float b = 0.0f;
    if (bias.values.empty()) {
      const float bs = bias.scales[bias.scales.size() == 1 ? 0 : c];
      if (bs == s) {
        out[c] = bias.quantized[c];
        continue;
      }
      b = static_cast<float>(bias.quantized[c]) * bs;  // DequantizeLinear's float32 value
    } else {
      b = bias.values[c];
    }
    const double q = std::nearbyint(static_cast<double>(b / s));
    if (!(std::fabs(q) <= 2147483647.0)) return std::nullopt;
    out[c] = static_cast<int32_t>(q);
  }
  return out;
}

// The float epilogue between the linear op and the QuantizeLinear ending the
// pattern: an optional bias Add (MatMul only), an optional Relu/Clip.
struct Epilogue {
  kiln_node_id_t bias_add = KILN_NO_ID;
  kiln_value_id_t bias = KILN_NO_ID;
  kiln_node_id_t clamp = KILN_NO_ID;
  kiln_node_id_t quantize = KILN_NO_ID;
  kiln_value_id_t output = KILN_NO_ID;  // the QuantizeLinear's output
  QuantParams out;
};

// The bounds of a Relu or Clip node; nullopt when they are not constants.
std::optional<std::pair<float, float>> clamp_bounds(const GraphView& g, kiln_node_id_t n) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (is_op(g, n, "Relu")) return std::make_pair(0.0f, kInf);
  if (!is_op(g, n, "Clip")) return std::nullopt;
  const auto ins = g.inputs(n);
  if (ins.size() == 1) return std::make_pair(g.attr_float(n, "min", -kInf), g.attr_float(n, "max", kInf));  // opset < 11
  float bound[2] = {-kInf, kInf};
  for (size_t i = 1; i < ins.size() && i < 3; ++i) {
    if (ins[i] == KILN_NO_ID) continue;
    auto v = f32_values(g, ins[i]);
    if (!v || v->size() != 1) return std::nullopt;
    bound[i - 1] = (*v)[0];
  }
  return std::make_pair(bound[0], bound[1]);
}

// QuantizeLinear of one float value in float32 arithmetic, before saturation.
double quantize_unsaturated(float v, float scale, int64_t zero_point) {
  return std::nearbyint(static_cast<double>(v / scale)) + static_cast<double>(zero_point);
}

std::optional<Epilogue> epilogue(const GraphView& g, kiln_value_id_t v, bool allow_bias, int64_t n_cols) {
  Epilogue e;
  kiln_node_id_t next = only_reader(g, v);
  if (next == KILN_NO_ID) return std::nullopt;
  if (allow_bias && is_op(g, next, "Add")) {
    const auto ins = g.inputs(next);
    if (ins.size() != 2) return std::nullopt;
    const kiln_value_id_t bias = ins[0] == v ? ins[1] : ins[0];
    auto shape = g.static_shape(bias);  // [N]: broadcasts along the last axis
    if (!shape || shape->size() != 1 || (*shape)[0] != n_cols || !read_bias(g, bias, n_cols)) return std::nullopt;
    e.bias_add = next;
    e.bias = bias;
    v = g.outputs(next).at(0);
    next = only_reader(g, v);
    if (next == KILN_NO_ID) return std::nullopt;
  }
  std::optional<std::pair<float, float>> bounds;
  if (is_op(g, next, "Relu") || is_op(g, next, "Clip")) {
    bounds = clamp_bounds(g, next);
    if (!bounds) return std::nullopt;
    e.clamp = next;
    v = g.outputs(next).at(0);
    next = only_reader(g, v);
    if (next == KILN_NO_ID) return std::nullopt;
  }
  if (!is_op(g, next, "QuantizeLinear") || g.inputs(next)[0] != v) return std::nullopt;
  e.quantize = next;
  e.output = g.outputs(next)[0];
  auto out_info = g.value(e.output);
  if (!out_info) return std::nullopt;
  auto params = read_params(g, next, out_info->dtype, out_info->rank);
  if (!params || !params->per_tensor()) return std::nullopt;
  e.out = *params;
  if (bounds) {
    // Exact only when the clamp removes nothing the saturation keeps.
    const float sy = e.out.scales[0];
    const int64_t zy = e.out.zero_points[0];
    if (!(quantize_unsaturated(bounds->first, sy, zy) <= static_cast<double>(quant_min(e.out.dtype))) ||
        !(quantize_unsaturated(bounds->second, sy, zy) >= static_cast<double>(quant_max(e.out.dtype))))
      return std::nullopt;
  }
  return e;
}

bool attrs_copyable(const GraphView& g, kiln_node_id_t n) {
  auto names = g.attr_names(n);
  if (!names) return false;
  for (const std::string& name : *names) {
    const kiln_attr_kind_t k = g.attr_kind(n, name.c_str());
    if (k != KILN_ATTR_INT && k != KILN_ATTR_FLOAT && k != KILN_ATTR_STRING && k != KILN_ATTR_INTS &&
        k != KILN_ATTR_FLOATS)
      return false;
  }
  return true;
}

class FuseQdq : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    for (kiln_node_id_t n : g.nodes(0)) {
      if (is_op(g, n, "Conv")) rewrite_conv(g, rw, n);
      else if (is_op(g, n, "MatMul")) rewrite_matmul(g, rw, n);
      else if (is_op(g, n, "Gemm")) rewrite_gemm(g, rw, n);
      else if (is_op(g, n, "Add")) rewrite_add(g, rw, n);
      else if (is_op(g, n, "GlobalAveragePool")) rewrite_global_average_pool(g, rw, n);
      else if (is_op(g, n, "Flatten") || is_op(g, n, "Reshape")) rewrite_view(g, rw, n);
    }
  }

 private:
  // The operands every pattern shares: x per tensor, w a constant.
  struct Operands {
    Dequantized x, w;
    std::vector<int64_t> w_shape;
    // Fake-quantized weights (PyTorch's QAT export): w's data is
    // QuantizeLinear(float constant), evaluated once the pattern matched.
    kiln_node_id_t w_quantize = KILN_NO_ID;
  };

  static std::optional<Operands> operands(const GraphView& g, kiln_value_id_t x, kiln_value_id_t w) {
    auto dx = dequantized(g, x);
    auto dw = dequantized(g, w);
    if (!dx || !dw || !dx->params.per_tensor()) return std::nullopt;
    auto shape = g.static_shape(dw->data);
    if (!shape) return std::nullopt;
    Operands ops{*dx, *dw, *shape};
    if (!g.is_constant(dw->data)) {
      const kiln_node_id_t q = g.value(dw->data)->producer;
      if (q == KILN_NO_ID || !is_op(g, q, "QuantizeLinear")) return std::nullopt;
      for (kiln_value_id_t in : g.inputs(q))
        if (in != KILN_NO_ID && !g.is_constant(in)) return std::nullopt;
      ops.w_quantize = q;
    }
    return ops;
  }

  // Makes w's data a constant (evaluating a fake-quantizing QuantizeLinear);
  // false when the host cannot, before anything is staged.
  static bool constant_weight(Rewriter& rw, Operands& ops) {
    if (ops.w_quantize == KILN_NO_ID) return true;
    auto made = rw.evaluate(ops.w_quantize, 1);
    if (!made || made->at(0) == KILN_NO_ID) return false;
    ops.w.data = made->at(0);
    return true;
  }

  // The zero point input of `p`, made as a zero constant when absent.
  static kiln_value_id_t zero_point(Rewriter& rw, const QuantParams& p, const std::string& name) {
    if (p.zero_point != KILN_NO_ID) return p.zero_point;
    const uint8_t zero = 0;
    return rw.add_constant(name, p.dtype, {}, &zero, 1);
  }

  static kiln_value_id_t add_int32_bias(Rewriter& rw, const std::vector<int32_t>& b, const std::string& name) {
    return rw.add_constant(name, KILN_PLUGIN_DTYPE_INT32, {static_cast<int64_t>(b.size())}, b.data(),
                           b.size() * sizeof(int32_t));
  }

  // Erases the float chain from the QuantizeLinear back; the replacement,
  // added before the linear op, re-produces the QuantizeLinear's output.
  static void erase_epilogue(Rewriter& rw, const Epilogue& e) {
    rw.erase_node(e.quantize);
    if (e.clamp != KILN_NO_ID) rw.erase_node(e.clamp);
    if (e.bias_add != KILN_NO_ID) rw.erase_node(e.bias_add);
  }

  static void count(Rewriter& rw, const Epilogue& e, const char* what) {
    rw.add_statistic(what, 1);
    if (e.clamp != KILN_NO_ID) rw.add_statistic("qdq-clamps-folded", 1);
  }

  static void rewrite_conv(GraphView& g, Rewriter& rw, kiln_node_id_t conv) {
    const auto ins = g.inputs(conv);
    if (ins.size() < 2 || !attrs_copyable(g, conv)) return;
    auto ops = operands(g, ins[0], ins[1]);
    if (!ops || ops->w_shape.size() < 3 || ops->w_shape[0] <= 0) return;
    const int64_t m = ops->w_shape[0];
    const QuantParams& wp = ops->w.params;
    if (!wp.per_tensor() && (wp.axis != 0 || static_cast<int64_t>(wp.scales.size()) != m)) return;
    std::optional<std::vector<int32_t>> bias;
    if (ins.size() > 2 && ins[2] != KILN_NO_ID) {
      auto b = read_bias(g, ins[2], m);
      if (!b) return;
      bias = int32_bias(*b, ops->x.params.scales[0], wp.scales);
      if (!bias) return;
    }
    auto e = epilogue(g, g.outputs(conv)[0], false, 0);
    if (!e || !constant_weight(rw, *ops)) return;

    const std::string base = g.value(e->output)->name;
    std::vector<kiln_value_id_t> qins = {ops->x.data,  ops->x.params.scale, zero_point(rw, ops->x.params, base + "_x_zero_point"),
                                         ops->w.data,  wp.scale,            zero_point(rw, wp, base + "_w_zero_point"),
                                         e->out.scale, zero_point(rw, e->out, base + "_y_zero_point")};
    if (bias) qins.push_back(add_int32_bias(rw, *bias, base + "_bias_int32"));
    erase_epilogue(rw, *e);
    const auto info = g.node(conv);
    kiln_node_id_t q = rw.add_node("QLinearConv", qins, {e->output}, info->name, 0, conv);
    kiln::plugin::copy_node_attrs(g, rw, conv, q);
    rw.erase_node(conv);
    count(rw, *e, "qdq-convs");
  }

  static void rewrite_matmul(GraphView& g, Rewriter& rw, kiln_node_id_t mm) {
    const auto ins = g.inputs(mm);
    if (ins.size() != 2) return;
    auto ops = operands(g, ins[0], ins[1]);
    auto a = g.value(ins[0]);
    if (!ops || !a || a->rank < 2 || ops->w_shape.size() != 2) return;
    const int64_t n_cols = ops->w_shape[1];
    const QuantParams& wp = ops->w.params;
    if (!wp.per_tensor() && (wp.axis != 1 || static_cast<int64_t>(wp.scales.size()) != n_cols)) return;
    auto e = epilogue(g, g.outputs(mm)[0], true, n_cols);
    if (!e) return;
    if (e->bias != KILN_NO_ID) {
      rewrite_as_conv1x1(g, rw, mm, *ops, /*w_is_k_by_n=*/true, e->bias, *e);
      return;
    }
    if (!constant_weight(rw, *ops)) return;
    const std::string base = g.value(e->output)->name;
    const std::vector<kiln_value_id_t> qins = {
        ops->x.data,  ops->x.params.scale, zero_point(rw, ops->x.params, base + "_a_zero_point"),
        ops->w.data,  wp.scale,            zero_point(rw, wp, base + "_b_zero_point"),
        e->out.scale, zero_point(rw, e->out, base + "_y_zero_point")};
    erase_epilogue(rw, *e);
    rw.add_node("QLinearMatMul", qins, {e->output}, g.node(mm)->name, 0, mm);
    rw.erase_node(mm);
    count(rw, *e, "qdq-matmuls");
  }

  static void rewrite_gemm(GraphView& g, Rewriter& rw, kiln_node_id_t gemm) {
    const auto ins = g.inputs(gemm);
    if (ins.size() < 2 || g.attr_int(gemm, "transA", 0) != 0 || g.attr_float(gemm, "alpha", 1.0f) != 1.0f) return;
    const bool has_c = ins.size() > 2 && ins[2] != KILN_NO_ID;
    if (has_c && g.attr_float(gemm, "beta", 1.0f) != 1.0f) return;
    auto ops = operands(g, ins[0], ins[1]);
    auto a = g.value(ins[0]);
    if (!ops || !a || a->rank != 2 || ops->w_shape.size() != 2) return;
    const bool trans_b = g.attr_int(gemm, "transB", 0) != 0;
    const int64_t n_cols = ops->w_shape[trans_b ? 0 : 1];
    const QuantParams& wp = ops->w.params;
    if (!wp.per_tensor() && (wp.axis != (trans_b ? 0 : 1) || static_cast<int64_t>(wp.scales.size()) != n_cols)) return;
    if (has_c) {  // C of [N] (or [1, N]) broadcasts along the rows
      auto c = g.static_shape(ins[2]);
      if (!c || c->empty() || c->back() != n_cols || (c->size() == 2 && (*c)[0] != 1) || c->size() > 2) return;
    }
    auto e = epilogue(g, g.outputs(gemm)[0], false, 0);
    if (!e) return;
    rewrite_as_conv1x1(g, rw, gemm, *ops, !trans_b, has_c ? ins[2] : KILN_NO_ID, *e);
  }

  // Add of two dequantized tensors, requantized: QLinearAdd computes the
  // same float32 sum (dequantize, add, quantize: lower_qlinear_contrib.cc),
  // so the rewrite is exact, a folded Relu/Clip included (epilogue()).
  static void rewrite_add(GraphView& g, Rewriter& rw, kiln_node_id_t add) {
    const auto ins = g.inputs(add);
    if (ins.size() != 2 || ins[0] == KILN_NO_ID || ins[1] == KILN_NO_ID) return;
    auto a = dequantized(g, ins[0]);
    auto b = dequantized(g, ins[1]);
    if (!a || !b || !a->params.per_tensor() || !b->params.per_tensor() || a->params.dtype != b->params.dtype) return;
    auto e = epilogue(g, g.outputs(add)[0], false, 0);
    if (!e || e->out.dtype != a->params.dtype) return;
    const std::string base = g.value(e->output)->name;
    const std::vector<kiln_value_id_t> qins = {
        a->data, a->params.scale, zero_point(rw, a->params, base + "_a_zero_point"),
        b->data, b->params.scale, zero_point(rw, b->params, base + "_b_zero_point"),
        e->out.scale, zero_point(rw, e->out, base + "_y_zero_point")};
    erase_epilogue(rw, *e);
    rw.add_node("QLinearAdd", qins, {e->output}, g.node(add)->name, 0, add, "com.microsoft");
    rw.erase_node(add);
    count(rw, *e, "qdq-adds");
  }

  // The float GlobalAveragePool between a dequantize and a quantize:
  // QLinearGlobalAveragePool averages the dequantized values with the same
  // float kernel (lower_qlinear_contrib.cc) and quantizes once.
  static void rewrite_global_average_pool(GraphView& g, Rewriter& rw, kiln_node_id_t pool) {
    const auto ins = g.inputs(pool);
    if (ins.size() != 1 || ins[0] == KILN_NO_ID) return;
    auto x = dequantized(g, ins[0]);
    auto rank = g.value(ins[0]);
    if (!x || !x->params.per_tensor() || !rank || rank->rank < 3) return;
    auto e = epilogue(g, g.outputs(pool)[0], false, 0);
    if (!e || e->out.dtype != x->params.dtype) return;
    const std::string base = g.value(e->output)->name;
    const std::vector<kiln_value_id_t> qins = {x->data, x->params.scale,
                                               zero_point(rw, x->params, base + "_x_zero_point"), e->out.scale,
                                               zero_point(rw, e->out, base + "_y_zero_point")};
    erase_epilogue(rw, *e);
    const kiln_node_id_t q = rw.add_node("QLinearGlobalAveragePool", qins, {e->output}, g.node(pool)->name, 0, pool,
                                         "com.microsoft");
    rw.set_attr_int(q, "channels_last", 0);
    rw.erase_node(pool);
    count(rw, *e, "qdq-pools");
  }

  // A Flatten or Reshape between a dequantize and a quantize of the same
  // parameters moves the 8-bit values themselves.
  static void rewrite_view(GraphView& g, Rewriter& rw, kiln_node_id_t view) {
    const auto ins = g.inputs(view);
    if (ins.empty() || ins[0] == KILN_NO_ID || !attrs_copyable(g, view)) return;
    auto x = dequantized(g, ins[0]);
    if (!x || !x->params.per_tensor()) return;
    const kiln_node_id_t q = only_reader(g, g.outputs(view)[0]);
    if (q == KILN_NO_ID || !is_op(g, q, "QuantizeLinear")) return;
    const kiln_value_id_t out = g.outputs(q)[0];
    auto out_info = g.value(out);
    if (!out_info) return;
    auto y = read_params(g, q, out_info->dtype, out_info->rank);
    if (!y || !y->per_tensor() || y->dtype != x->params.dtype || y->scales != x->params.scales ||
        y->zero_points != x->params.zero_points)
      return;
    std::vector<kiln_value_id_t> vins(ins.begin(), ins.end());
    vins[0] = x->data;
    rw.erase_node(q);
    const kiln_node_id_t moved = rw.add_node(g.node(view)->op, vins, {out}, g.node(view)->name, 0, view);
    kiln::plugin::copy_node_attrs(g, rw, view, moved);
    rw.erase_node(view);
    rw.add_statistic("qdq-views", 1);
  }

  // A matrix product with a bias as QLinearConv over [rows, K, 1, 1]: the
  // only QOperator op that adds an int32 bias before requantizing.
  static void rewrite_as_conv1x1(GraphView& g, Rewriter& rw, kiln_node_id_t op, Operands ops, bool w_is_k_by_n,
                                 kiln_value_id_t bias_value, const Epilogue& e) {
    const int64_t k = ops.w_shape[w_is_k_by_n ? 0 : 1], n = ops.w_shape[w_is_k_by_n ? 1 : 0];
    // The output's dims for the Reshape back: constants, at most one symbolic.
    auto out_dims = g.shape(e.output);
    if (!out_dims || k <= 0 || n <= 0) return;
    std::vector<int64_t> out_shape;
    int symbolic = 0;
    for (const auto& d : *out_dims) {
      out_shape.push_back(d.is_const ? d.value : -1);
      symbolic += d.is_const ? 0 : 1;
    }
    if (symbolic > 1 || out_shape.empty() || out_shape.back() != n) return;
    std::optional<std::vector<int32_t>> bias;
    if (bias_value != KILN_NO_ID) {
      auto b = read_bias(g, bias_value, n);
      if (!b) return;
      bias = int32_bias(*b, ops.x.params.scales[0], ops.w.params.scales);
      if (!bias) return;
    }
    if (!constant_weight(rw, ops)) return;
    size_t bytes = 0;
    const auto* w = static_cast<const uint8_t*>(g.constant_data(ops.w.data, &bytes));
    if (!w || bytes != static_cast<size_t>(k * n)) return;
    std::vector<uint8_t> w_nk(bytes);  // [N, K, 1, 1]; int8 and uint8 alike are bytes
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < k; ++c)
        w_nk[static_cast<size_t>(r * k + c)] = w_is_k_by_n ? w[c * n + r] : w[r * k + c];

    const std::string base = g.value(e.output)->name;
    const QuantParams& wp = ops.w.params;
    const int32_t in_dtype = ops.x.params.dtype;
    const kiln_value_id_t weight = rw.add_constant(base + "_weight_nk11", wp.dtype, {n, k, 1, 1}, w_nk.data(), w_nk.size());
    const int64_t in_shape[4] = {-1, k, 1, 1};
    const kiln_value_id_t in_target = rw.add_constant(base + "_rows_shape", KILN_PLUGIN_DTYPE_INT64, {4}, in_shape, sizeof(in_shape));
    const kiln_value_id_t out_target = rw.add_constant(base + "_out_shape", KILN_PLUGIN_DTYPE_INT64,
                                                       {static_cast<int64_t>(out_shape.size())}, out_shape.data(),
                                                       out_shape.size() * sizeof(int64_t));
    std::vector<kiln_value_id_t> qins = {kiln_value_id_t{}, ops.x.params.scale, zero_point(rw, ops.x.params, base + "_x_zero_point"),
                                         weight,            wp.scale,           zero_point(rw, wp, base + "_w_zero_point"),
                                         e.out.scale,       zero_point(rw, e.out, base + "_y_zero_point")};
    if (bias) qins.push_back(add_int32_bias(rw, *bias, base + "_bias_int32"));
    const kiln_value_id_t rows = rw.add_value(base + "_rows", in_dtype);
    const kiln_value_id_t conv_out = rw.add_value(base + "_nk11", e.out.dtype);
    qins[0] = rows;
    erase_epilogue(rw, e);
    const std::string name = g.node(op)->name;
    const char* statistic = is_op(g, op, "Gemm") ? "qdq-gemms" : "qdq-matmuls";
    rw.add_node("Reshape", {ops.x.data, in_target}, {rows}, name + "_rows", 0, op);
    rw.add_node("QLinearConv", qins, {conv_out}, name, 0, op);
    rw.add_node("Reshape", {conv_out, out_target}, {e.output}, name + "_out", 0, op);
    rw.erase_node(op);
    count(rw, e, statistic);
  }
};

FuseQdq fuse_qdq;

}  // namespace

const kiln_pass_t kFuseQdqPass = kiln::plugin::make_pass(
    fuse_qdq, "fuse-qdq",
    "rewrites DequantizeLinear -> Conv/MatMul/Gemm/Add/GlobalAveragePool [-> Relu/Clip] -> QuantizeLinear into "
    "QLinearConv/QLinearMatMul/QLinearAdd/QLinearGlobalAveragePool (integer kernels), and a Flatten/Reshape between "
    "the same DequantizeLinear and QuantizeLinear parameters onto the 8-bit values");

}  // namespace kiln::canonicalize

// The in-tree 'kiln.canonicalize' plugin: graph clean-ups every model wants
// before planning (constant and shape folding, Conv+BatchNormalization
// fusion, no-op removal, CSE, DCE).
//
// It is written against the plugin ABI only (kiln_plugin.hpp), exactly like a
// third-party plugin, and is built both as a shared library and as a static
// library the host links in (kiln_canonicalize_plugin_query).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/kiln_plugin.hpp"
#include "plugins/canonicalize/canonicalize.h"
#include "plugins/canonicalize/qdq_rewrite.h"

namespace {

using kiln::plugin::GraphView;
using kiln::plugin::Rewriter;

// Folding a node whose outputs are larger than this would bloat the model.
constexpr int64_t kMaxFoldElements = 1 << 20;

// Main-region outputs keep their names: a rewrite that would make another
// value the model's output is skipped.
bool is_main_output(const GraphView& g, kiln_value_id_t v) {
  for (kiln_value_id_t out : g.region_outputs(0))
    if (out == v) return true;
  return false;
}

bool is_default_op(const GraphView& g, kiln_node_id_t n, const char* op) {
  auto info = g.node(n);
  return info && info->domain.empty() && info->op == op;
}

bool unused(const GraphView& g, kiln_value_id_t v) { return v == KILN_NO_ID || g.uses(v).empty(); }

std::vector<kiln_region_id_t> regions(const GraphView& g) {
  std::vector<kiln_region_id_t> out;
  for (size_t r = 0; r < g.region_count(); ++r) out.push_back(static_cast<kiln_region_id_t>(r));
  return out;
}

// A node's attributes as a comparable string; nullopt when one cannot be
// read through the ABI (tensor, sub-graph, string list).
std::optional<std::string> attr_signature(const GraphView& g, kiln_node_id_t n) {
  auto names = g.attr_names(n);
  if (!names) return std::nullopt;
  std::string sig;
  for (const std::string& name : *names) {
    const char* key = name.c_str();
    sig += name + "=";
    switch (g.attr_kind(n, key)) {
      case KILN_ATTR_INT: sig += "i" + std::to_string(g.attr_int(n, key, 0)); break;
      case KILN_ATTR_FLOAT: {
        float f = g.attr_float(n, key, 0.0f);
        uint32_t bits;
        std::memcpy(&bits, &f, sizeof(bits));
        sig += "f" + std::to_string(bits);
        break;
      }
      case KILN_ATTR_STRING: sig += "s" + std::to_string(g.attr_string(n, key).size()) + ":" + g.attr_string(n, key); break;
      case KILN_ATTR_INTS:
        sig += "I";
        for (int64_t v : g.attr_ints(n, key)) sig += std::to_string(v) + ",";
        break;
      case KILN_ATTR_FLOATS:
        sig += "F";
        for (float f : g.attr_floats(n, key)) {
          uint32_t bits;
          std::memcpy(&bits, &f, sizeof(bits));
          sig += std::to_string(bits) + ",";
        }
        break;
      default: return std::nullopt;
    }
    sig += ";";
  }
  return sig;
}

bool has_unreadable_attrs(const GraphView& g, kiln_node_id_t n) { return !attr_signature(g, n).has_value(); }

// True when the node owns a sub-graph (or its attributes cannot be listed).
bool has_subgraph(const GraphView& g, kiln_node_id_t n) {
  auto names = g.attr_names(n);
  if (!names) return true;
  for (const std::string& name : *names)
    if (g.attr_kind(n, name.c_str()) == KILN_ATTR_GRAPH) return true;
  return false;
}

// The element count of a static shape; nullopt when a dim is negative or the
// product overflows int64 (a model may declare any dims).
std::optional<int64_t> static_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

// Replaces each output of `n` by the matching value in `with` and erases n.
void replace_node(Rewriter& rw, kiln_node_id_t n, const std::vector<kiln_value_id_t>& outs,
                  const std::vector<kiln_value_id_t>& with) {
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i] != KILN_NO_ID && with[i] != KILN_NO_ID) rw.replace_uses(outs[i], with[i]);
  rw.erase_node(n);
}

// ---- constant folding ------------------------------------------------------

class FoldConstants : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    if (!rw.can_evaluate()) {
      rw.log(KILN_LOG_WARNING, "the host cannot evaluate nodes; nothing folded");
      return;
    }
    for (kiln_region_id_t r : regions(g))
      for (kiln_node_id_t n : g.nodes(r)) fold(g, rw, n);
  }

 private:
  static void fold(GraphView& g, Rewriter& rw, kiln_node_id_t n) {
    auto info = g.node(n);
    if (!info || !info->domain.empty() || info->output_count == 0) return;
    if (info->op.rfind("Random", 0) == 0) return;  // not deterministic
    const auto ins = g.inputs(n);
    if (ins.empty() && info->op != "Constant") return;
    for (kiln_value_id_t v : ins)
      if (v != KILN_NO_ID && !g.is_constant(v)) return;
    const auto outs = g.outputs(n);
    for (kiln_value_id_t v : outs) {
      if (v == KILN_NO_ID) continue;
      if (is_main_output(g, v)) return;
      auto shape = g.static_shape(v);
      if (!shape) return;
      const std::optional<int64_t> numel = static_numel(*shape);
      if (!numel || *numel > kMaxFoldElements) return;
    }
    auto made = rw.evaluate(n, outs.size());
    if (!made) return;
    replace_node(rw, n, outs, *made);
    rw.add_statistic("nodes-folded", 1);
  }
};

// ---- shape-computation folding ---------------------------------------------

class FoldShapes : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    for (kiln_region_id_t r : regions(g))
      for (kiln_node_id_t n : g.nodes(r)) {
        if (is_default_op(g, n, "Shape")) fold_shape(g, rw, n);
        else if (is_default_op(g, n, "Size")) fold_size(g, rw, n);
      }
  }

 private:
  static void fold_shape(GraphView& g, Rewriter& rw, kiln_node_id_t n) {
    const auto ins = g.inputs(n);
    const auto outs = g.outputs(n);
    if (ins.empty() || ins[0] == KILN_NO_ID || outs.empty() || is_main_output(g, outs[0])) return;
    auto dims = g.shape(ins[0]);
    if (!dims) return;
    // ONNX Shape's start/end: negative counts from the back, then clamp.
    const int64_t rank = static_cast<int64_t>(dims->size());
    auto clamp = [rank](int64_t v) {
      if (v < 0) v += rank;
      return v < 0 ? 0 : (v > rank ? rank : v);
    };
    const int64_t start = clamp(g.attr_int(n, "start", 0));
    const int64_t end = clamp(g.attr_int(n, "end", rank));
    std::vector<int64_t> values;
    for (int64_t i = start; i < end; ++i) {
      if (!(*dims)[static_cast<size_t>(i)].is_const) return;
      values.push_back((*dims)[static_cast<size_t>(i)].value);
    }
    auto region = g.node(n)->region;
    kiln_value_id_t c = rw.add_constant(g.value(outs[0])->name, KILN_PLUGIN_DTYPE_INT64, {static_cast<int64_t>(values.size())},
                                        values.data(), values.size() * sizeof(int64_t), region);
    replace_node(rw, n, {outs[0]}, {c});
    rw.add_statistic("shapes-folded", 1);
  }

  static void fold_size(GraphView& g, Rewriter& rw, kiln_node_id_t n) {
    const auto ins = g.inputs(n);
    const auto outs = g.outputs(n);
    if (ins.empty() || ins[0] == KILN_NO_ID || outs.empty() || is_main_output(g, outs[0])) return;
    auto shape = g.static_shape(ins[0]);
    if (!shape) return;
    // A size that overflows int64 is not folded: shape inference reports it.
    const std::optional<int64_t> checked = static_numel(*shape);
    if (!checked) return;
    const int64_t numel = *checked;
    kiln_value_id_t c =
        rw.add_constant(g.value(outs[0])->name, KILN_PLUGIN_DTYPE_INT64, {}, &numel, sizeof(numel), g.node(n)->region);
    replace_node(rw, n, {outs[0]}, {c});
    rw.add_statistic("shapes-folded", 1);
  }
};

// ---- Conv + BatchNormalization ---------------------------------------------

// f32 constant data of exactly `count` elements, or empty.
std::vector<float> f32_constant(const GraphView& g, kiln_value_id_t v, size_t count) {
  auto info = g.value(v);
  if (!info || !info->is_constant || info->dtype != KILN_PLUGIN_DTYPE_FLOAT32) return {};
  size_t bytes = 0;
  const void* data = g.constant_data(v, &bytes);
  if (!data || bytes != count * sizeof(float)) return {};
  std::vector<float> out(count);
  std::memcpy(out.data(), data, bytes);
  return out;
}

class FuseConvBatchNorm : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    for (kiln_region_id_t r : regions(g))
      for (kiln_node_id_t n : g.nodes(r))
        if (is_default_op(g, n, "BatchNormalization")) fuse(g, rw, n);
  }

 private:
  static void fuse(GraphView& g, Rewriter& rw, kiln_node_id_t bn) {
    if (g.attr_int(bn, "training_mode", 0) != 0) return;
    const auto bn_in = g.inputs(bn);
    const auto bn_out = g.outputs(bn);
    if (bn_in.size() != 5 || bn_out.empty() || bn_out[0] == KILN_NO_ID) return;
    for (size_t i = 1; i < bn_out.size(); ++i)
      if (!unused(g, bn_out[i])) return;
    auto x = g.value(bn_in[0]);
    if (!x || x->producer == KILN_NO_ID || !is_default_op(g, x->producer, "Conv")) return;
    if (g.uses(bn_in[0]).size() != 1 || is_main_output(g, bn_in[0])) return;
    const kiln_node_id_t conv = x->producer;
    const auto conv_in = g.inputs(conv);
    if (conv_in.size() < 2 || conv_in[1] == KILN_NO_ID) return;
    auto w_shape = g.static_shape(conv_in[1]);
    if (!w_shape || w_shape->empty() || (*w_shape)[0] <= 0) return;
    const size_t m = static_cast<size_t>((*w_shape)[0]);
    const std::optional<int64_t> w_numel = static_numel(*w_shape);
    if (!w_numel || *w_numel <= 0 || static_cast<uint64_t>(*w_numel) > SIZE_MAX / sizeof(float)) return;
    const size_t w_count = static_cast<size_t>(*w_numel);
    std::vector<float> w = f32_constant(g, conv_in[1], w_count);
    std::vector<float> b(m, 0.0f);
    if (conv_in.size() > 2 && conv_in[2] != KILN_NO_ID) b = f32_constant(g, conv_in[2], m);
    const std::vector<float> scale = f32_constant(g, bn_in[1], m);
    const std::vector<float> bias = f32_constant(g, bn_in[2], m);
    const std::vector<float> mean = f32_constant(g, bn_in[3], m);
    const std::vector<float> var = f32_constant(g, bn_in[4], m);
    if (w.empty() || b.empty() || scale.empty() || bias.empty() || mean.empty() || var.empty()) return;
    if (has_unreadable_attrs(g, conv)) return;
    const double eps = g.attr_float(bn, "epsilon", 1e-5f);
    const size_t per_channel = w_count / m;
    for (size_t c = 0; c < m; ++c) {
      const double s = scale[c] / std::sqrt(static_cast<double>(var[c]) + eps);
      for (size_t k = 0; k < per_channel; ++k) w[c * per_channel + k] = static_cast<float>(w[c * per_channel + k] * s);
      b[c] = static_cast<float>((static_cast<double>(b[c]) - mean[c]) * s + bias[c]);
    }
    const auto info = g.node(conv);
    const std::string base = g.value(bn_out[0])->name;
    kiln_value_id_t new_w =
        rw.add_constant(base + "_weight", KILN_PLUGIN_DTYPE_FLOAT32, *w_shape, w.data(), w.size() * sizeof(float), info->region);
    kiln_value_id_t new_b = rw.add_constant(base + "_bias", KILN_PLUGIN_DTYPE_FLOAT32, {static_cast<int64_t>(m)}, b.data(),
                                            b.size() * sizeof(float), info->region);
    // The fused Conv produces the BatchNormalization's output value itself,
    // so the value (and a model output's name) survives the fusion.
    rw.erase_node(bn);
    kiln_node_id_t fused =
        rw.add_node("Conv", {conv_in[0], new_w, new_b}, {bn_out[0]}, info->name, info->region, conv);
    kiln::plugin::copy_node_attrs(g, rw, conv, fused);
    rw.erase_node(conv);
    rw.add_statistic("batchnorms-fused", 1);
  }
};

// ---- no-op removal -----------------------------------------------------------

class RemoveNoops : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    for (kiln_region_id_t r : regions(g)) {
      const auto nodes = g.nodes(r);
      for (size_t i = 0; i < nodes.size(); ++i) {
        const kiln_node_id_t n = nodes[i];
        if (is_noop(g, n)) {
          const auto ins = g.inputs(n);
          const auto outs = g.outputs(n);
          replace_node(rw, n, {outs[0]}, {ins[0]});
          rw.add_statistic("noops-removed", 1);
        } else if (auto target = unit_axis_transpose_target(g, n)) {
          // Moving only axes of extent 1 keeps every element's row-major
          // position: the Transpose is a Reshape, which the planner makes a
          // view of a buffer instead of a copy kernel.
          const auto info = g.node(n);
          const kiln_value_id_t in = g.inputs(n)[0];
          const auto outs = g.outputs(n);
          const kiln_value_id_t shape =
              rw.add_constant(g.value(outs[0])->name + "_shape", KILN_PLUGIN_DTYPE_INT64,
                              {static_cast<int64_t>(target->size())}, target->data(), target->size() * sizeof(int64_t),
                              info->region);
          // Erased first (the Reshape produces its output value), so the
          // Reshape goes where the node after it stands.
          rw.erase_node(n);
          rw.add_node("Reshape", {in, shape}, {outs[0]}, info->name, info->region,
                      i + 1 < nodes.size() ? nodes[i + 1] : KILN_NO_ID);
          rw.add_statistic("transposes-to-reshapes", 1);
        }
      }
    }
  }

 private:
  static bool same_static_shape(const GraphView& g, kiln_value_id_t a, kiln_value_id_t b) {
    auto sa = g.static_shape(a);
    auto sb = g.static_shape(b);
    return sa && sb && *sa == *sb;
  }

  // The Reshape target of a Transpose whose permutation keeps the order of
  // the input's axes of extent other than 1 (e.g. [1,197,768] -> [197,1,768]),
  // when the output's dims are constants except at most one (written -1).
  static std::optional<std::vector<int64_t>> unit_axis_transpose_target(const GraphView& g, kiln_node_id_t n) {
    if (!is_default_op(g, n, "Transpose") || !g.has_attr(n, "perm")) return std::nullopt;
    const auto ins = g.inputs(n);
    const auto outs = g.outputs(n);
    if (ins.size() != 1 || outs.size() != 1 || ins[0] == KILN_NO_ID || outs[0] == KILN_NO_ID) return std::nullopt;
    const auto in = g.shape(ins[0]);
    const auto out = g.shape(outs[0]);
    const auto perm = g.attr_ints(n, "perm");
    if (!in || !out || perm.size() != in->size() || out->size() != in->size()) return std::nullopt;
    const auto unit = [](const kiln::plugin::Dim& d) { return d.is_const && d.value == 1; };
    int64_t last = -1;
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(in->size())) return std::nullopt;
      if (unit((*in)[static_cast<size_t>(p)])) continue;
      if (p < last) return std::nullopt;  // two real axes swap: a real transpose
      last = p;
    }
    std::vector<int64_t> target;
    bool symbolic = false;
    for (const kiln::plugin::Dim& d : *out) {
      if (d.is_const) {
        target.push_back(d.value);
      } else {
        if (symbolic || d.is_unknown) return std::nullopt;
        symbolic = true;
        target.push_back(-1);
      }
    }
    return target;
  }

  static bool is_noop(const GraphView& g, kiln_node_id_t n) {
    auto info = g.node(n);
    if (!info || !info->domain.empty()) return false;
    const auto ins = g.inputs(n);
    const auto outs = g.outputs(n);
    if (ins.empty() || ins[0] == KILN_NO_ID || outs.empty() || outs[0] == KILN_NO_ID) return false;
    if (is_main_output(g, outs[0])) return false;
    for (size_t i = 1; i < outs.size(); ++i)
      if (!unused(g, outs[i])) return false;
    auto in = g.value(ins[0]);
    auto out = g.value(outs[0]);
    if (!in || !out || in->dtype != out->dtype) return false;
    const std::string& op = info->op;
    if (op == "Identity") return true;
    if (op == "Dropout") {
      // Inference: identity unless training_mode is given and not constant false.
      if (ins.size() > 2 && ins[2] != KILN_NO_ID) {
        size_t bytes = 0;
        const void* data = g.constant_data(ins[2], &bytes);
        if (!data || bytes != 1 || *static_cast<const uint8_t*>(data) != 0) return false;
      }
      return true;
    }
    if (op == "Reshape") return same_static_shape(g, ins[0], outs[0]);
    if (op == "Cast") return true;  // dtypes are equal (checked above)
    if (op == "Transpose") {
      if (!g.has_attr(n, "perm")) return in->rank >= 0 && in->rank <= 1;
      const auto perm = g.attr_ints(n, "perm");
      for (size_t i = 0; i < perm.size(); ++i)
        if (perm[i] != static_cast<int64_t>(i)) return false;
      return true;
    }
    // Copies of the whole tensor: a Concat of one input, an Expand or Tile
    // to the same shape, a Slice keeping every element in order, a Pad by
    // nothing (swin pads its windows by zeros when the size divides).
    if (op == "Concat") return ins.size() == 1;
    if (op == "Expand" || op == "Tile") return same_static_shape(g, ins[0], outs[0]);
    if (op == "Slice") return same_static_shape(g, ins[0], outs[0]) && constant_all(g, ins, 4, 1);
    if (op == "Pad") {  // in any mode
      if (g.has_attr(n, "pads")) {  // opset < 11
        for (int64_t p : g.attr_ints(n, "pads"))
          if (p != 0) return false;
        return true;
      }
      return ins.size() > 1 && ins[1] != KILN_NO_ID && constant_all(g, ins, 1, 0);
    }
    return false;
  }

  // Whether input `i` is absent (the ONNX default, when `value` is that
  // default) or a constant integer tensor whose every element is `value`.
  static bool constant_all(const GraphView& g, const std::vector<kiln_value_id_t>& ins, size_t i, int64_t value) {
    if (i >= ins.size() || ins[i] == KILN_NO_ID) return value == 1;
    auto info = g.value(ins[i]);
    size_t bytes = 0;
    const void* data = g.constant_data(ins[i], &bytes);
    if (!info || !info->is_constant || (!data && bytes != 0)) return false;
    auto all_equal = [&](auto element) {
      using T = decltype(element);
      std::vector<T> v(bytes / sizeof(T));
      if (bytes) std::memcpy(v.data(), data, v.size() * sizeof(T));
      return std::all_of(v.begin(), v.end(), [&](T x) { return x == value; });
    };
    if (info->dtype == KILN_PLUGIN_DTYPE_INT64) return all_equal(int64_t{});
    if (info->dtype == KILN_PLUGIN_DTYPE_INT32) return all_equal(int32_t{});
    return false;
  }
};

// ---- dead code and common subexpressions -------------------------------------

class DeadCodeElimination : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    for (kiln_region_id_t r : regions(g)) {
      const auto nodes = g.nodes(r);
      // Reverse order: erasing a user may make its producers dead too.
      for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
        const auto outs = g.outputs(*it);
        if (outs.empty() || has_subgraph(g, *it)) continue;  // If/Loop are kept
        bool dead = true;
        for (kiln_value_id_t v : outs) dead = dead && unused(g, v);
        if (!dead) continue;
        rw.erase_node(*it);
        rw.add_statistic("nodes-erased", 1);
      }
    }
  }
};

class CommonSubexpressionElimination : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    for (kiln_region_id_t r : regions(g)) {
      std::map<std::string, kiln_node_id_t> seen;
      for (kiln_node_id_t n : g.nodes(r)) {
        auto info = g.node(n);
        if (!info || info->op.rfind("Random", 0) == 0 || info->output_count == 0) continue;
        auto sig = attr_signature(g, n);
        if (!sig) continue;
        std::string key = info->domain + "|" + info->op + "|" + std::to_string(info->output_count) + "|";
        for (kiln_value_id_t v : g.inputs(n)) key += std::to_string(v) + ",";
        key += "|" + *sig;
        auto [it, inserted] = seen.emplace(key, n);
        if (inserted) continue;
        const auto outs = g.outputs(n);
        const auto prev = g.outputs(it->second);
        bool keep = false;
        for (size_t i = 0; i < outs.size(); ++i)
          keep = keep || (outs[i] != KILN_NO_ID && (prev[i] == KILN_NO_ID || is_main_output(g, outs[i])));
        if (keep) continue;
        replace_node(rw, n, outs, prev);
        rw.add_statistic("nodes-merged", 1);
      }
    }
  }
};

FoldConstants fold_constants;
FoldShapes fold_shapes;
FuseConvBatchNorm fuse_conv_bn;
RemoveNoops remove_noops;
DeadCodeElimination dce;
CommonSubexpressionElimination cse;

const kiln_pass_t kFoldConstants = kiln::plugin::make_pass(
    fold_constants, "fold-constants", "evaluates nodes whose inputs are all constants (outputs up to 1M elements)");
const kiln_pass_t kFoldShapes = kiln::plugin::make_pass(
    fold_shapes, "fold-shapes", "replaces Shape/Size of statically shaped values with constants");
const kiln_pass_t kFuseConvBn = kiln::plugin::make_pass(
    fuse_conv_bn, "fuse-conv-batchnorm", "folds an inference BatchNormalization into the Conv before it");
const kiln_pass_t kRemoveNoops = kiln::plugin::make_pass(
    remove_noops, "remove-noops", "removes Identity, Dropout and no-op Reshape/Transpose/Cast/Concat/Expand/Tile/Slice/Pad; a Transpose moving "
    "only unit axes becomes a Reshape");
const kiln_pass_t kDce = kiln::plugin::make_pass(dce, "dce", "erases nodes whose outputs are unused");
const kiln_pass_t kCse =
    kiln::plugin::make_pass(cse, "cse", "merges nodes with the same op, inputs and attributes");

const kiln_pass_t* const kPasses[] = {&kRemoveNoops, &kFoldShapes, &kFoldConstants, &kFuseConvBn,
                                      &kiln::canonicalize::kFuseQdqPass, &kCse, &kDce};
const kiln_plugin_t kPlugin =
    kiln::plugin::make_plugin("kiln.canonicalize", "1.0", kPasses, sizeof(kPasses) / sizeof(kPasses[0]));

}  // namespace

KILN_PLUGIN_DEFINE_QUERY(kiln_canonicalize_plugin_query, kPlugin)
#ifdef KILN_CANONICALIZE_SHARED
KILN_PLUGIN_DEFINE_QUERY(kiln_plugin_query, kPlugin)
#endif

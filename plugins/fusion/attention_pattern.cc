// Attention groups (see attention_pattern.h).
#include "plugins/fusion/attention_pattern.h"

#include <algorithm>
#include <optional>
#include <string>

namespace kiln::fusion {
namespace {

using kiln::plugin::GraphView;

bool is_float(int32_t dtype) {
  return dtype == KILN_PLUGIN_DTYPE_FLOAT32 || dtype == KILN_PLUGIN_DTYPE_FLOAT16 ||
         dtype == KILN_PLUGIN_DTYPE_FLOAT64;
}

class Matcher {
 public:
  Matcher(const GraphView& g, const std::set<kiln_value_id_t>& host) : g_(g), host_(host) {
    for (kiln_value_id_t v : g.region_outputs(0)) graph_outputs_.insert(v);
  }

  // The pattern ending in the Softmax `sm`, its nodes; empty when there is none.
  std::vector<kiln_node_id_t> match(kiln_node_id_t sm) {
    nodes_.clear();
    const auto in = g_.inputs(sm);
    const auto out = g_.outputs(sm);
    if (in.size() != 1 || out.size() != 1 || !float_value(in[0])) return {};
    const auto rank = g_.value(in[0])->rank;
    const bool explicit_axis = g_.has_attr(sm, "axis");
    const int64_t axis = g_.attr_int(sm, "axis", -1);
    if (rank < 2 || (explicit_axis ? !(axis == -1 || axis == rank - 1) : rank != 2)) return {};
    // P is read once, as the left operand of the output MatMul.
    const std::optional<kiln_node_id_t> pv = only_reader(out[0]);
    if (!pv || !is_op(*pv, "MatMul")) return {};
    const auto pv_in = g_.inputs(*pv);
    const auto pv_out = g_.outputs(*pv);
    if (pv_in.size() != 2 || pv_in[0] != out[0] || pv_out.size() != 1 || !float_value(pv_in[1]) ||
        !float_value(pv_out[0]) || !head_dim_ok(pv_in[1]) || host_.count(pv_out[0]))
      return {};
    nodes_ = {sm, *pv};
    // Back to the scores' MatMul through scalings and Adds.
    kiln_value_id_t s = in[0];
    for (kiln_node_id_t reader = sm;;) {
      const std::optional<kiln_node_id_t> p = chain_producer(s, reader);
      if (!p) return {};
      nodes_.push_back(*p);
      const auto p_in = g_.inputs(*p);
      if (is_op(*p, "MatMul")) {
        if (p_in.size() != 2 || !operand(p_in[0], *p, true) || !operand(p_in[1], *p, false)) return {};
        break;
      }
      if (const std::optional<size_t> data = scaling_data(*p)) {
        s = p_in[*data];
      } else if (is_op(*p, "Add") && p_in.size() == 2) {
        // The scores are the operand made by the chain (a MatMul, a scaling
        // or an Add); the other one, from outside, must not be the same.
        if (p_in[0] == p_in[1]) return {};
        const int k = chain_operand(p_in, *p);
        if (k < 0 || shape_text(p_in[static_cast<size_t>(k)]) != shape_text(s)) return {};  // no broadcast of S
        s = p_in[static_cast<size_t>(k)];
      } else if (is_op(*p, "Reshape") && p_in.size() == 2 && keeps_rows(p_in[0], s)) {
        s = p_in[0];  // swin's shifted windows add their mask in a [1, windows, heads, m, n] view
      } else {
        return {};
      }
      reader = *p;
    }
    return nodes_;
  }

 private:
  bool is_op(kiln_node_id_t n, const char* op) const {
    auto info = g_.node(n);
    return info && info->domain.empty() && info->op == op && info->region == 0;
  }

  bool float_value(kiln_value_id_t v) const {
    auto info = g_.value(v);
    return info && is_float(info->dtype) && info->rank >= 0;
  }

  std::string shape_text(kiln_value_id_t v) const {
    std::string key;
    auto dims = g_.shape(v);
    if (!dims) return "?";
    for (const auto& d : *dims) key += (d.is_unknown ? "?" : d.is_const ? std::to_string(d.value) : d.expr) + ",";
    return key;
  }

  // The one node reading `v` (once), when `v` is no graph output.
  std::optional<kiln_node_id_t> only_reader(kiln_value_id_t v) const {
    if (graph_outputs_.count(v)) return std::nullopt;
    const auto uses = g_.uses(v);
    if (uses.size() != 1 || uses[0].node == KILN_NO_ID) return std::nullopt;
    return uses[0].node;
  }

  // The producer of `v` when `v` is read only by `reader` and may be a
  // member: a single-output main-graph node, not computed on the host, not
  // yet in the pattern.
  std::optional<kiln_node_id_t> chain_producer(kiln_value_id_t v, kiln_node_id_t reader) const {
    auto info = g_.value(v);
    if (!info || info->producer == KILN_NO_ID || host_.count(v) || !float_value(v)) return std::nullopt;
    if (only_reader(v) != reader || g_.outputs(info->producer).size() != 1) return std::nullopt;
    if (std::find(nodes_.begin(), nodes_.end(), info->producer) != nodes_.end()) return std::nullopt;
    return info->producer;
  }

  bool scalar_constant(kiln_value_id_t v) const {
    auto shape = g_.static_shape(v);
    if (!g_.is_constant(v) || !float_value(v) || !shape) return false;
    int64_t numel = 1;
    for (int64_t d : *shape) numel *= d;
    return numel == 1;
  }

  // Whether the Reshape `from` -> `to` keeps the last two dims (queries,
  // keys) and the number of batch elements (static or the same dims), so
  // that it only renames the batch coordinates.
  bool keeps_rows(kiln_value_id_t from, kiln_value_id_t to) const {
    auto a = g_.shape(from), b = g_.shape(to);
    if (!a || !b || a->size() < 2 || b->size() < 2) return false;
    const auto text = [](const kiln::plugin::Dim& d) {
      return d.is_unknown ? std::string("?") : d.is_const ? std::to_string(d.value) : d.expr;
    };
    for (size_t k = 1; k <= 2; ++k)
      if (text((*a)[a->size() - k]) != text((*b)[b->size() - k]) || (*a)[a->size() - k].is_unknown) return false;
    const auto batch = [&](const std::vector<kiln::plugin::Dim>& dims) -> std::optional<int64_t> {
      int64_t n = 1;
      for (size_t k = 0; k + 2 < dims.size(); ++k) {
        if (!dims[k].is_const) return std::nullopt;
        n *= dims[k].value;
      }
      return n;
    };
    const auto na = batch(*a), nb = batch(*b);
    return na && nb && *na == *nb;
  }

  // For a Mul or Div by a scalar constant that keeps the data's dims: the
  // data operand.
  std::optional<size_t> scaling_data(kiln_node_id_t n) const {
    const auto in = g_.inputs(n);
    const auto out = g_.outputs(n);
    if (in.size() != 2 || out.size() != 1) return std::nullopt;
    std::optional<size_t> data;
    if (is_op(n, "Mul")) data = scalar_constant(in[1]) ? 0 : scalar_constant(in[0]) ? std::optional<size_t>(1) : std::nullopt;
    else if (is_op(n, "Div") && scalar_constant(in[1])) data = 0;
    if (!data || shape_text(in[*data]) != shape_text(out[0])) return std::nullopt;
    return data;
  }

  // Which input of the Add `add` continues the chain: the one a MatMul, a
  // scaling, an Add or a Reshape makes and only `add` reads; -1 when not
  // exactly one.
  int chain_operand(const std::vector<kiln_value_id_t>& in, kiln_node_id_t add) const {
    int found = -1;
    for (int k = 0; k < 2; ++k) {
      const std::optional<kiln_node_id_t> p = chain_producer(in[static_cast<size_t>(k)], add);
      if (!p || !(is_op(*p, "MatMul") || is_op(*p, "Add") || is_op(*p, "Reshape") || scaling_data(*p))) continue;
      if (found >= 0) return -1;
      found = k;
    }
    return found;
  }

  // An operand of the scores' MatMul: rank >= 2 after its scalings (which
  // join the pattern); A's last dim is the head dim.
  bool operand(kiln_value_id_t x, kiln_node_id_t reader, bool query) {
    for (;;) {
      const std::optional<kiln_node_id_t> p = chain_producer(x, reader);
      const std::optional<size_t> data = p ? scaling_data(*p) : std::nullopt;
      if (!data) break;
      nodes_.push_back(*p);
      reader = *p;
      x = g_.inputs(*p)[*data];
    }
    auto info = g_.value(x);
    return info && info->rank >= 2 && float_value(x) && (!query || head_dim_ok(x));
  }

  // A last dim that is a constant the planner's kernel takes.
  bool head_dim_ok(kiln_value_id_t v) const {
    auto dims = g_.shape(v);
    if (!dims || dims->size() < 2) return false;
    const auto& d = dims->back();
    return d.is_const && d.value >= 1 && d.value <= kMaxAttentionHeadDim;
  }

  const GraphView& g_;
  const std::set<kiln_value_id_t>& host_;
  std::set<kiln_value_id_t> graph_outputs_;
  std::vector<kiln_node_id_t> nodes_;  // the pattern being matched
};

}  // namespace

std::vector<std::vector<kiln_node_id_t>> find_attention_groups(const GraphView& g,
                                                               const std::set<kiln_value_id_t>& host_values) {
  Matcher matcher(g, host_values);
  std::vector<std::vector<kiln_node_id_t>> groups;
  std::set<kiln_node_id_t> taken;
  for (kiln_node_id_t n : g.nodes(0)) {
    auto info = g.node(n);
    if (!info || !info->domain.empty() || info->op != "Softmax") continue;
    std::vector<kiln_node_id_t> nodes = matcher.match(n);
    if (nodes.empty()) continue;
    bool overlaps = false;
    for (kiln_node_id_t m : nodes) overlaps = overlaps || taken.count(m);
    if (overlaps) continue;
    taken.insert(nodes.begin(), nodes.end());
    groups.push_back(std::move(nodes));
  }
  return groups;
}

}  // namespace kiln::fusion

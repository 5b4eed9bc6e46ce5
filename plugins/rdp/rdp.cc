// The in-tree 'kiln.rdp' plugin: SoD²'s Rank and Dimension Propagation
// (§4.1, Alg. 1) as one pass, `rdp`.
//
// It classifies every node by dynamism degree (op_classes.h), then runs the
// forward and backward transfer functions (analysis.h) over a worklist to a
// fixed point, starting from what the host's shape inference already knows.
// Named input dims are symbols already; dims still unknown after a first
// fixed point get fresh symbols and the analysis runs on. The facts are
// written back as the values' dims (rw_set_value_dims, ABI 1.1), so the
// planner and runtime see fewer unknown dims, and as annotations the text IR
// shows: "rdp.class" on nodes, "rdp.value" on shape-data values. Statistics
// give the share of values whose shape is static, symbolic or nac (Fig. 8).
//
// Written against the plugin ABI only, like kiln.canonicalize; built as a
// static library (kiln_rdp_plugin_query) and as a loadable shared library.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kiln/kiln_plugin.hpp"
#include "plugins/rdp/analysis.h"
#include "plugins/rdp/op_classes.h"
#include "plugins/rdp/rdp.h"

namespace kiln_rdp {
namespace {

using kiln::plugin::GraphView;
using kiln::plugin::Rewriter;

Expr to_expr(const kiln::plugin::Dim& d) {
  if (d.is_unknown) return Expr();
  return d.is_const ? Expr(d.value) : Expr::parse(d.expr);
}

// Symbols a dim's text mentions (all of it when it does not parse: a name
// to keep clear of when fresh symbols are made).
void collect_symbols(const std::string& text, std::set<std::string>& out) {
  std::vector<std::string> names;
  if (auto e = kiln::plugin::DimExpr::parse(text)) e->collect_symbols(names);
  else names.push_back(text);
  out.insert(names.begin(), names.end());
}

std::string sanitize(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
  return s;
}

std::string values_text(const std::vector<Expr>& vals) {
  std::string s = "[";
  for (size_t i = 0; i < vals.size(); ++i) s += (i ? "," : "") + vals[i].text();
  return s + "]";
}

enum class ShapeKind { kStatic, kSymbolic, kNac };

ShapeKind shape_kind(const Fact& f) {
  if (f.rank < 0) return ShapeKind::kNac;
  ShapeKind k = ShapeKind::kStatic;
  for (const Expr& d : f.dims) {
    if (!d.known()) return ShapeKind::kNac;
    if (!d.is_const()) k = ShapeKind::kSymbolic;
  }
  return k;
}

class Analysis {
 public:
  Analysis(GraphView& g, Rewriter& rw) : g_(g), rw_(rw), facts_(0) {}

  void run() {
    analyze(true);
    std::vector<ShapeKind> before;
    for (const Fact& f : seeded_) before.push_back(shape_kind(f));
    write_back(before);
    // The same analysis from the graph inputs and constants alone, without
    // what the host's inference put on intermediate values: how much RDP's
    // own transfer functions derive, and whether they agree with the host.
    Analysis alone(g_, rw_);
    alone.analyze(false);
    compare(alone);
  }

 private:
  struct NodeData {
    NodeRef ref;
    const OpClass* cls;
  };

  void visit_region(kiln_region_id_t r) {
    for (kiln_value_id_t v : g_.region_inputs(r)) note(v), defined_.push_back(v);
    for (kiln_node_id_t id : g_.nodes(r)) {
      auto info = g_.node(id);
      if (!info) continue;
      // Sub-graphs first, as shape inference does: an If merges its branches.
      for (const char* key : {"then_branch", "else_branch", "body"}) {
        const kiln_region_id_t sub = g_.host()->attr_graph(g_.raw(), id, key);
        if (sub == KILN_NO_ID) continue;
        visit_region(sub);
        owner_[sub] = static_cast<int>(nodes_.size());  // the index this node gets below
      }
      NodeData n{NodeRef{g_, id, info->op, info->domain, g_.inputs(id), g_.outputs(id)},
                 find_op_class(info->domain, info->op)};
      for (kiln_value_id_t v : n.ref.in) note(v);
      for (kiln_value_id_t v : n.ref.out) note(v), defined_.push_back(v);
      nodes_.push_back(std::move(n));
    }
    for (kiln_value_id_t v : g_.region_outputs(r)) note(v);
  }

  void note(kiln_value_id_t v) {
    if (v == KILN_NO_ID) return;
    max_value_ = std::max(max_value_, v);
  }

  void collect() {
    visit_region(0);
    facts_ = Facts(static_cast<size_t>(max_value_ + 1));
    consumers_.assign(static_cast<size_t>(max_value_ + 1), {});
    producer_.assign(static_cast<size_t>(max_value_ + 1), -1);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      for (kiln_value_id_t v : nodes_[i].ref.in)
        if (v != KILN_NO_ID) consumers_[static_cast<size_t>(v)].push_back(static_cast<int>(i));
      for (kiln_value_id_t v : nodes_[i].ref.out)
        if (v != KILN_NO_ID) producer_[static_cast<size_t>(v)] = static_cast<int>(i);
    }
    // A branch's outputs feed the If that owns the branch.
    for (const auto& [region, node] : owner_)
      for (kiln_value_id_t v : g_.region_outputs(region))
        if (v != KILN_NO_ID) consumers_[static_cast<size_t>(v)].push_back(node);
  }

  // Initial facts: what the IR holds (host shape inference and the model's
  // declared shapes), and constants' data as values.
  void analyze(bool from_ir) {
    collect();
    seed(from_ir);
    for (kiln_value_id_t v : tracked_) seeded_.push_back(*facts_.get(v));
    propagate();
    // Input dims nothing determined become symbols of their own (SoD²'s
    // set_model_input_shape), and the facts built on them follow.
    if (name_free_input_dims()) propagate();
  }

  // `from_ir`: every value starts from its IR shape; otherwise only the
  // main graph's inputs do (constants always carry their data).
  void seed(bool from_ir) {
    const auto inputs = g_.region_inputs(0);
    for (kiln_value_id_t v = 0; v <= max_value_; ++v) {
      auto info = g_.value(v);
      if (!info) continue;
      Fact& f = facts_.at(v);
      f.dtype = info->dtype;
      const bool seed_shape =
          from_ir || info->is_constant || std::find(inputs.begin(), inputs.end(), v) != inputs.end();
      if (auto dims = seed_shape ? g_.shape(v) : std::nullopt) {
        std::vector<Expr> d;
        for (const auto& dim : *dims) {
          d.push_back(to_expr(dim));
          if (!dim.is_unknown && !dim.is_const) collect_symbols(dim.expr, symbols_);
        }
        facts_.set_shape(v, d);
      }
      if (info->is_constant) seed_constant(v, f);
    }
    for (kiln_value_id_t v : g_.region_inputs(0)) facts_.at(v).pinned = true;
    for (kiln_value_id_t v : defined_)
      if (v != KILN_NO_ID && !g_.is_constant(v)) tracked_.push_back(v);
  }

  void seed_constant(kiln_value_id_t v, const Fact& f) {
    if (f.rank > 1 || (f.dtype != KILN_PLUGIN_DTYPE_INT32 && f.dtype != KILN_PLUGIN_DTYPE_INT64 &&
                       f.dtype != KILN_PLUGIN_DTYPE_BOOL))
      return;
    size_t bytes = 0;
    const auto* data = static_cast<const unsigned char*>(g_.constant_data(v, &bytes));
    const size_t elem = kiln_plugin_dtype_size(f.dtype);
    if (!data || bytes % elem || bytes / elem > kMaxValueElements) return;
    std::vector<Expr> vals;
    for (size_t i = 0; i < bytes / elem; ++i) {
      int64_t x = 0;
      if (elem == 8) std::memcpy(&x, data + i * 8, 8);
      else if (elem == 4) {
        int32_t y;
        std::memcpy(&y, data + i * 4, 4);
        x = y;
      } else {
        x = data[i] != 0;
      }
      vals.push_back(Expr(x));
    }
    facts_.set_values(v, vals);
  }

  bool name_free_input_dims() {
    bool named = false;
    for (kiln_value_id_t v : g_.region_inputs(0)) {
      const Fact* f = facts_.get(v);
      if (!f || f->rank < 0 || f->has_values) continue;
      for (size_t k = 0; k < f->dims.size(); ++k) {
        if (f->dims[k].known()) continue;
        std::string name = sanitize(g_.value(v)->name) + "_" + std::to_string(k);
        while (symbols_.count(name)) name += "_";
        symbols_.insert(name);
        named |= facts_.set_dim(v, k, Expr::symbol(name));
      }
    }
    return named;
  }

  // The worklist (Alg. 1's chaos iteration): a node is re-examined when a
  // fact about one of its inputs or outputs changed.
  void propagate() {
    std::deque<int> work;
    std::vector<bool> queued(nodes_.size(), true);
    for (size_t i = 0; i < nodes_.size(); ++i) work.push_back(static_cast<int>(i));
    while (!work.empty()) {
      const int i = work.front();
      work.pop_front();
      queued[static_cast<size_t>(i)] = false;
      const NodeRef& n = nodes_[static_cast<size_t>(i)].ref;
      std::vector<std::pair<kiln_value_id_t, uint32_t>> seen;
      for (const auto* list : {&n.in, &n.out})
        for (kiln_value_id_t v : *list)
          if (v != KILN_NO_ID) seen.emplace_back(v, facts_.version(v));
      if (nodes_[static_cast<size_t>(i)].cls && nodes_[static_cast<size_t>(i)].cls->cls == DynClass::kEDO &&
          n.op != "If") {
        // Execution determined: nothing beyond what the host knows, except
        // the rank NonZero always has.
        forward_shapes(n, facts_);
      } else {
        forward_shapes(n, facts_);
        forward_values(n, facts_);
        backward_shapes(n, facts_);
      }
      ++steps_;
      for (const auto& [v, version] : seen) {
        if (facts_.version(v) == version) continue;
        auto enqueue = [&](int j) {
          if (j >= 0 && !queued[static_cast<size_t>(j)]) queued[static_cast<size_t>(j)] = true, work.push_back(j);
        };
        enqueue(producer_[static_cast<size_t>(v)]);
        for (int j : consumers_[static_cast<size_t>(v)]) enqueue(j);
      }
    }
  }

  // The node's class after what RDP learned: an ISVDOS node whose
  // shape-deciding inputs are all known behaves as ISDOS.
  DynClass node_class(const NodeData& n) const {
    if (n.cls->cls != DynClass::kISVDOS) return n.cls->cls;
    for (int i : n.cls->value_inputs) {
      const kiln_value_id_t v = n.ref.input(static_cast<size_t>(i));
      if (v == KILN_NO_ID) continue;
      const std::vector<Expr>* vals = facts_.values(v);
      if (!vals || std::any_of(vals->begin(), vals->end(), [](const Expr& e) { return !e.known(); }))
        return DynClass::kISVDOS;
    }
    return DynClass::kISDOS;
  }

  void compare(const Analysis& alone) {
    int64_t counts[3] = {}, mismatches = 0;
    for (kiln_value_id_t v : alone.tracked_) {
      const Fact& a = *alone.facts_.get(v);
      ++counts[static_cast<int>(shape_kind(a))];
      const Fact& b = *facts_.get(v);
      if (a.rank < 0 || a.rank != b.rank) continue;
      for (size_t k = 0; k < a.dims.size(); ++k)
        if (a.dims[k].is_const() && b.dims[k].is_const() && a.dims[k].value() != b.dims[k].value()) ++mismatches;
    }
    rw_.add_statistic("rdp-alone-static", counts[0]);
    rw_.add_statistic("rdp-alone-symbolic", counts[1]);
    rw_.add_statistic("rdp-alone-nac", counts[2]);
    // A constant dim RDP derives differently from the host's: a transfer
    // function (or the host's inference) is wrong. Tests expect none.
    rw_.add_statistic("rdp-alone-mismatches", mismatches);
  }

  void write_back(const std::vector<ShapeKind>& before) {
    const bool can_set = rw_.can_set_value_dims();
    int64_t refined = 0;
    for (kiln_value_id_t v : tracked_) {
      const Fact& f = *facts_.get(v);
      auto ir = g_.shape(v);
      if (f.rank < 0 || !can_set) continue;
      bool better = !ir || ir->size() != f.dims.size();
      for (size_t k = 0; !better && k < f.dims.size(); ++k) {
        const kiln::plugin::Dim& d = (*ir)[k];
        better = (d.is_unknown && f.dims[k].known()) || (!d.is_const && f.dims[k].is_const());
      }
      if (!better || (ir && ir->size() != f.dims.size())) continue;
      std::vector<std::string> text;
      for (size_t k = 0; k < f.dims.size(); ++k) {
        const bool keep_ir = ir && !(*ir)[k].is_unknown && !(!(*ir)[k].is_const && f.dims[k].is_const());
        text.push_back(keep_ir ? (*ir)[k].expr : f.dims[k].text());
        if (ir && (text.back() != (*ir)[k].expr)) ++refined;
      }
      try {
        rw_.set_value_dims(v, text);
      } catch (const kiln::plugin::Error&) {
        throw kiln::plugin::Error("the host refused dims " + values_text(f.dims) + " for '" + g_.value(v)->name + "'",
                                  KILN_PLUGIN_INTERNAL);
      }
      if (!ir) refined += std::count_if(f.dims.begin(), f.dims.end(), [](const Expr& e) { return e.known(); });
    }
    int64_t shape_values = 0;
    for (kiln_value_id_t v : tracked_) {
      const std::vector<Expr>* vals = facts_.values(v);
      if (!vals || vals->empty() || std::none_of(vals->begin(), vals->end(), [](const Expr& e) { return e.known(); }))
        continue;
      rw_.annotate_value(v, KILN_ANNOTATION_RDP_VALUE, values_text(*vals));
      ++shape_values;
    }
    std::map<std::string, int64_t> classes;
    for (const NodeData& n : nodes_) {
      if (!n.cls) {
        ++classes["nodes-unclassified"];
        continue;
      }
      const DynClass cls = node_class(n);
      rw_.annotate_node(n.ref.id, KILN_ANNOTATION_RDP_CLASS, class_name(cls));
      ++classes[std::string("nodes-") + class_name(cls)];
      if (cls != n.cls->cls) ++classes["nodes-ISVDOS-resolved"];
    }
    int64_t counts[2][3] = {};
    for (size_t i = 0; i < tracked_.size(); ++i) {
      ++counts[0][static_cast<int>(before[i])];
      ++counts[1][static_cast<int>(shape_kind(*facts_.get(tracked_[i])))];
    }
    rw_.add_statistic("values", static_cast<int64_t>(tracked_.size()));
    rw_.add_statistic("values-static", counts[1][0]);
    rw_.add_statistic("values-symbolic", counts[1][1]);
    rw_.add_statistic("values-nac", counts[1][2]);
    rw_.add_statistic("values-nac-before", counts[0][2]);
    rw_.add_statistic("dims-refined", refined);
    rw_.add_statistic("shape-data-values", shape_values);
    rw_.add_statistic("transfer-steps", steps_);
    if (facts_.conflicts()) rw_.add_statistic("conflicting-facts", facts_.conflicts());
    for (const auto& [key, count] : classes) rw_.add_statistic(key.c_str(), count);
  }

  GraphView& g_;
  Rewriter& rw_;
  Facts facts_;
  std::vector<NodeData> nodes_;
  std::map<kiln_region_id_t, int> owner_;
  std::vector<std::vector<int>> consumers_;
  std::vector<int> producer_;
  std::vector<kiln_value_id_t> defined_;  // region inputs and node outputs
  std::vector<kiln_value_id_t> tracked_;  // the non-constant ones
  std::vector<Fact> seeded_;  // tracked_ values' facts before propagation
  std::set<std::string> symbols_;
  kiln_value_id_t max_value_ = -1;
  int64_t steps_ = 0;
};

class RdpPass : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override { Analysis(g, rw).run(); }
};

RdpPass rdp_pass;
const kiln_pass_t kRdp = kiln::plugin::make_pass(
    rdp_pass, "rdp",
    "rank and dimension propagation (SoD²): refines value shapes forward and backward, classifies ops by dynamism");
const kiln_pass_t* const kPasses[] = {&kRdp};
const kiln_plugin_t kPlugin = kiln::plugin::make_plugin("kiln.rdp", "1.0", kPasses, 1);

}  // namespace
}  // namespace kiln_rdp

KILN_PLUGIN_DEFINE_QUERY(kiln_rdp_plugin_query, kiln_rdp::kPlugin)
#ifdef KILN_RDP_SHARED
KILN_PLUGIN_DEFINE_QUERY(kiln_plugin_query, kiln_rdp::kPlugin)
#endif

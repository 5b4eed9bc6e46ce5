// RDP's per-value facts (the S-map and V-map of SoD² Alg. 1) and the
// transfer functions that refine them, one node at a time.
//
// Every fact is an equality that holds in every valid execution of the
// model: a dim derived forward from a node's inputs and one derived backward
// from its outputs are both true. So where two facts about one dim differ,
// refining keeps the more useful one instead of dropping both: undef gives
// way to any known Expr, an expression to a constant, and nothing else
// changes. Each dim thus moves at most twice and the worklist terminates.
// Graph inputs' symbolic dims are pinned: they are the names every derived
// expression is written in (the runtime binds them from the input shapes),
// so they never change. What is still undef at the fixed point is nac.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/kiln_plugin.hpp"
#include "plugins/rdp/expr.h"

namespace kiln_rdp {

// Shape data longer than this is not tracked element by element.
constexpr size_t kMaxValueElements = 16;

struct Fact {
  int32_t dtype = 0;
  int rank = -1;           // -1: undef
  std::vector<Expr> dims;  // rank entries once the rank is known
  // Element values of a small integer tensor of rank <= 1 (shape data), in
  // row-major order; set once the element count is known.
  bool has_values = false;
  std::vector<Expr> values;
  bool pinned = false;     // a graph input: its symbolic dims never change
};

class Facts {
 public:
  explicit Facts(size_t values) : facts_(values), versions_(values, 0) {}
  size_t size() const { return facts_.size(); }
  Fact& at(kiln_value_id_t v) { return facts_[static_cast<size_t>(v)]; }
  // nullptr for KILN_NO_ID (an omitted optional input) or an unknown id.
  const Fact* get(kiln_value_id_t v) const;
  int rank(kiln_value_id_t v) const;
  Expr dim(kiln_value_id_t v, size_t k) const;  // undef when not known
  // The dims when the rank is known (entries may be undef).
  std::optional<std::vector<Expr>> dims(kiln_value_id_t v) const;
  // The element values when known (entries may be undef).
  const std::vector<Expr>* values(kiln_value_id_t v) const;
  // The element values when every one is a known constant.
  std::optional<std::vector<int64_t>> const_values(kiln_value_id_t v) const;

  // Refinements; each returns true when the fact changed.
  bool set_rank(kiln_value_id_t v, int rank);
  bool set_dim(kiln_value_id_t v, size_t k, const Expr& e);
  bool set_shape(kiln_value_id_t v, const std::vector<Expr>& dims);  // rank and dims
  bool set_values(kiln_value_id_t v, const std::vector<Expr>& values);
  // Bumped by every refinement of v (the worklist re-queues its neighbours).
  uint32_t version(kiln_value_id_t v) const { return get(v) ? versions_[static_cast<size_t>(v)] : 0; }

  // Dims refined to a conflicting constant (the model contradicts itself,
  // or a transfer function is wrong): counted, never applied.
  int64_t conflicts() const { return conflicts_; }

 private:
  bool refine(Expr& have, const Expr& next, bool pinned);
  bool bump(kiln_value_id_t v, bool changed) {
    if (changed) ++versions_[static_cast<size_t>(v)];
    return changed;
  }
  std::vector<Fact> facts_;
  std::vector<uint32_t> versions_;
  int64_t conflicts_ = 0;
};

// One node as the transfer functions see it.
struct NodeRef {
  const kiln::plugin::GraphView& g;
  kiln_node_id_t id;
  std::string op;
  std::string domain;
  std::vector<kiln_value_id_t> in;
  std::vector<kiln_value_id_t> out;

  kiln_value_id_t input(size_t i) const { return i < in.size() ? in[i] : KILN_NO_ID; }
  kiln_value_id_t output(size_t i) const { return i < out.size() ? out[i] : KILN_NO_ID; }
  bool has_attr(const char* key) const { return g.has_attr(id, key); }
  int64_t attr_int(const char* key, int64_t fallback) const { return g.attr_int(id, key, fallback); }
  std::vector<int64_t> attr_ints(const char* key) const { return g.attr_ints(id, key); }
  std::vector<float> attr_floats(const char* key) const { return g.attr_floats(id, key); }
};

// Forward transfer of a node's output shapes (F^fs) and shape-data values
// (F^fv) from its inputs' facts. Returns true if any output fact changed.
bool forward_shapes(const NodeRef& n, Facts& f);
bool forward_values(const NodeRef& n, Facts& f);
// Backward transfer (F^bs) of what a node's outputs say about its inputs.
bool backward_shapes(const NodeRef& n, Facts& f);

// Helpers shared by the transfer functions.
// Output 0 has the shape of input 0 (elementwise unary ops, Softmax,
// normalizations, Cast, Scatter*...), in both directions.
bool keeps_input_shape(const NodeRef& n);
// Output 0 is the numpy broadcast of all inputs (binary and variadic
// elementwise ops, Where).
bool broadcasts(const NodeRef& n);
// `axis` normalized against `rank` (negative counts from the end); nullopt
// when out of range.
std::optional<size_t> norm_axis(int64_t axis, int rank);
// The integer values of input `i`: attribute-free ops read them from the
// facts (constants are facts too).
std::optional<std::vector<int64_t>> input_ints(const NodeRef& n, const Facts& f, size_t i);
// Squeeze/Unsqueeze axes: opset 13 passes them as input `i`, older opsets as
// the "axes" attribute.
std::optional<std::vector<int64_t>> axes_input(const NodeRef& n, const Facts& f, size_t i);
// `dims` without the given axes; nullopt for an axis out of range.
std::optional<std::vector<Expr>> without_axes(const std::vector<Expr>& dims, const std::vector<int64_t>& axes);

}  // namespace kiln_rdp

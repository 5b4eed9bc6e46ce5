// The graph IR: values, nodes and regions in one arena, addressed by ids.
//
// One Graph holds a whole model. Region 0 is the main body; each sub-graph of
// an If/Loop node is another region whose parent is the region holding that
// node, so a sub-graph can read values of enclosing regions by id (ONNX's
// outer-scope references) without copying them. Nodes of a region are kept
// in a topological order. Ids are dense and never reused; erased nodes stay
// in the arena (marked) so that ids held by passes stay valid.
//
// Values carry a dtype and a symbolic shape (dim.h). A value with a constant
// tensor is an initializer; it has no producer.
//
// Not thread-safe: one writer at a time; concurrent readers are fine.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/tensor.h"
#include "engine/ir/dim.h"

namespace kiln::ir {

using ValueId = int32_t;
using NodeId = int32_t;
using RegionId = int32_t;
inline constexpr ValueId kNoValue = -1;  // an omitted optional input
inline constexpr NodeId kNoNode = -1;
inline constexpr RegionId kNoRegion = -1;
inline constexpr RegionId kMainRegion = 0;

enum class AttrKind : uint8_t { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor, kGraph };
std::string_view attr_kind_name(AttrKind kind);

struct Attribute {
  AttrKind kind = AttrKind::kInt;
  int64_t i = 0;
  float f = 0.0f;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  Tensor tensor;
  RegionId region = kNoRegion;  // for kGraph

  static Attribute of_int(int64_t v) { Attribute a; a.kind = AttrKind::kInt; a.i = v; return a; }
  static Attribute of_float(float v) { Attribute a; a.kind = AttrKind::kFloat; a.f = v; return a; }
  static Attribute of_string(std::string v) { Attribute a; a.kind = AttrKind::kString; a.s = std::move(v); return a; }
  static Attribute of_ints(std::vector<int64_t> v) { Attribute a; a.kind = AttrKind::kInts; a.ints = std::move(v); return a; }
  static Attribute of_floats(std::vector<float> v) { Attribute a; a.kind = AttrKind::kFloats; a.floats = std::move(v); return a; }
  static Attribute of_strings(std::vector<std::string> v) { Attribute a; a.kind = AttrKind::kStrings; a.strings = std::move(v); return a; }
  static Attribute of_tensor(Tensor t) { Attribute a; a.kind = AttrKind::kTensor; a.tensor = std::move(t); return a; }
  static Attribute of_graph(RegionId r) { Attribute a; a.kind = AttrKind::kGraph; a.region = r; return a; }
};

struct Value {
  ValueId id = kNoValue;
  std::string name;
  DType dtype = DType::kUndefined;
  SymShape shape;
  NodeId producer = kNoNode;  // kNoNode for graph/region inputs and constants
  int32_t producer_output = 0;
  RegionId region = kMainRegion;  // where the value is defined
  Tensor constant;                // defined() for initializers
  // Free-form facts passes attach (layout, storage) for later passes and
  // the planner; ordered for deterministic printing.
  std::map<std::string, std::string> annotations;

  bool is_constant() const { return constant.defined(); }
};

struct Node {
  NodeId id = kNoNode;
  std::string op;      // "Conv", "MatMul", ... (ONNX names for the default domain)
  std::string domain;  // "" for the default ONNX domain
  std::string name;    // the model's node name, for error messages
  std::vector<ValueId> inputs;  // kNoValue for omitted optional inputs
  std::vector<ValueId> outputs;
  std::map<std::string, Attribute> attrs;  // ordered: deterministic printing
  RegionId region = kMainRegion;
  bool erased = false;
  // Free-form facts passes attach (fusion group, kernel configuration).
  std::map<std::string, std::string> annotations;

  const Attribute* attr(std::string_view key) const;
  int64_t attr_int(std::string_view key, int64_t fallback) const;
  float attr_float(std::string_view key, float fallback) const;
  std::string attr_string(std::string_view key, std::string fallback) const;
  std::vector<int64_t> attr_ints(std::string_view key, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(std::string_view key, std::vector<float> fallback = {}) const;
  // "node 'conv1' (Conv)" for error messages.
  std::string describe() const;
};

struct Region {
  RegionId id = kNoRegion;
  RegionId parent = kNoRegion;  // kNoRegion for the main region
  NodeId owner = kNoNode;       // the If/Loop node owning this sub-graph
  std::string name;
  std::vector<ValueId> inputs;   // graph inputs (main) or sub-graph parameters
  std::vector<ValueId> outputs;
  std::vector<NodeId> nodes;     // topological order
};

class Graph {
 public:
  Graph();

  std::string name;
  int64_t opset = 17;             // default-domain opset the model was written for
  std::string producer;           // e.g. "pytorch 1.13.1"

  // --- construction -----------------------------------------------------
  RegionId add_region(RegionId parent, std::string region_name = {});
  ValueId add_value(std::string value_name, DType dtype, SymShape shape, RegionId region = kMainRegion);
  ValueId add_constant(std::string value_name, Tensor tensor, RegionId region = kMainRegion);
  ValueId add_input(std::string value_name, DType dtype, SymShape shape, RegionId region = kMainRegion);
  void add_output(ValueId value, RegionId region = kMainRegion);
  // Appends a node to `region` and makes it the producer of `outputs`.
  NodeId add_node(std::string op, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                  std::map<std::string, Attribute> attrs = {}, std::string node_name = {},
                  RegionId region = kMainRegion);
  // Marks a node erased and removes it from its region's order.
  void erase_node(NodeId id);

  // --- access -------------------------------------------------------------
  Value& value(ValueId id) { return values_[static_cast<size_t>(id)]; }
  const Value& value(ValueId id) const { return values_[static_cast<size_t>(id)]; }
  Node& node(NodeId id) { return nodes_[static_cast<size_t>(id)]; }
  const Node& node(NodeId id) const { return nodes_[static_cast<size_t>(id)]; }
  Region& region(RegionId id) { return regions_[static_cast<size_t>(id)]; }
  const Region& region(RegionId id) const { return regions_[static_cast<size_t>(id)]; }
  Region& main() { return regions_[0]; }
  const Region& main() const { return regions_[0]; }

  size_t num_values() const { return values_.size(); }
  size_t num_nodes() const { return nodes_.size(); }
  size_t num_regions() const { return regions_.size(); }
  // Live (non-erased) nodes across all regions.
  size_t num_live_nodes() const;

  // The first value with this name, or kNoValue.
  ValueId find_value(std::string_view value_name) const;
  // True if region `inner` is `outer` or nested inside it.
  bool region_within(RegionId inner, RegionId outer) const;
  // Constant initializers (values with tensors), in id order.
  std::vector<ValueId> constants() const;

 private:
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<Region> regions_;
};

}  // namespace kiln::ir

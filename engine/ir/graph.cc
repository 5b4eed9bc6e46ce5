// Graph arena operations; see graph.h.
#include "engine/ir/graph.h"

#include <algorithm>

namespace kiln::ir {

std::string_view attr_kind_name(AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt: return "int";
    case AttrKind::kFloat: return "float";
    case AttrKind::kString: return "string";
    case AttrKind::kInts: return "ints";
    case AttrKind::kFloats: return "floats";
    case AttrKind::kStrings: return "strings";
    case AttrKind::kTensor: return "tensor";
    case AttrKind::kGraph: return "graph";
  }
  return "?";
}

const Attribute* Node::attr(std::string_view key) const {
  auto it = attrs.find(std::string(key));
  return it == attrs.end() ? nullptr : &it->second;
}

int64_t Node::attr_int(std::string_view key, int64_t fallback) const {
  const Attribute* a = attr(key);
  return a && a->kind == AttrKind::kInt ? a->i : fallback;
}

float Node::attr_float(std::string_view key, float fallback) const {
  const Attribute* a = attr(key);
  if (!a) return fallback;
  if (a->kind == AttrKind::kFloat) return a->f;
  if (a->kind == AttrKind::kInt) return static_cast<float>(a->i);
  return fallback;
}

std::string Node::attr_string(std::string_view key, std::string fallback) const {
  const Attribute* a = attr(key);
  return a && a->kind == AttrKind::kString ? a->s : fallback;
}

std::vector<int64_t> Node::attr_ints(std::string_view key, std::vector<int64_t> fallback) const {
  const Attribute* a = attr(key);
  return a && a->kind == AttrKind::kInts ? a->ints : fallback;
}

std::vector<float> Node::attr_floats(std::string_view key, std::vector<float> fallback) const {
  const Attribute* a = attr(key);
  return a && a->kind == AttrKind::kFloats ? a->floats : fallback;
}

std::string Node::describe() const {
  std::string s = "node '" + (name.empty() ? "#" + std::to_string(id) : name) + "' (" ;
  if (!domain.empty()) s += domain + ".";
  return s + op + ")";
}

Graph::Graph() {
  Region main_region;
  main_region.id = kMainRegion;
  main_region.name = "main";
  regions_.push_back(std::move(main_region));
}

RegionId Graph::add_region(RegionId parent, std::string region_name) {
  Region r;
  r.id = static_cast<RegionId>(regions_.size());
  r.parent = parent;
  r.name = std::move(region_name);
  regions_.push_back(std::move(r));
  return regions_.back().id;
}

ValueId Graph::add_value(std::string value_name, DType dtype, SymShape shape, RegionId region) {
  Value v;
  v.id = static_cast<ValueId>(values_.size());
  v.name = std::move(value_name);
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.region = region;
  values_.push_back(std::move(v));
  return values_.back().id;
}

ValueId Graph::add_constant(std::string value_name, Tensor tensor, RegionId region) {
  const DType dtype = tensor.dtype();
  SymShape shape = SymShape::from_concrete(tensor.shape());
  ValueId id = add_value(std::move(value_name), dtype, std::move(shape), region);
  values_[static_cast<size_t>(id)].constant = std::move(tensor);
  return id;
}

ValueId Graph::add_input(std::string value_name, DType dtype, SymShape shape, RegionId region) {
  ValueId id = add_value(std::move(value_name), dtype, std::move(shape), region);
  regions_[static_cast<size_t>(region)].inputs.push_back(id);
  return id;
}

void Graph::add_output(ValueId v, RegionId region) { regions_[static_cast<size_t>(region)].outputs.push_back(v); }

NodeId Graph::add_node(std::string op, std::vector<ValueId> inputs, std::vector<ValueId> outputs,
                       std::map<std::string, Attribute> attrs, std::string node_name, RegionId region) {
  Node n;
  n.id = static_cast<NodeId>(nodes_.size());
  n.op = std::move(op);
  n.name = std::move(node_name);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attrs = std::move(attrs);
  n.region = region;
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (n.outputs[i] == kNoValue) continue;  // an omitted optional output
    Value& v = values_[static_cast<size_t>(n.outputs[i])];
    v.producer = n.id;
    v.producer_output = static_cast<int32_t>(i);
  }
  // Sub-graph regions record their owner.
  for (auto& [key, a] : n.attrs)
    if (a.kind == AttrKind::kGraph && a.region != kNoRegion) regions_[static_cast<size_t>(a.region)].owner = n.id;
  nodes_.push_back(std::move(n));
  regions_[static_cast<size_t>(region)].nodes.push_back(nodes_.back().id);
  return nodes_.back().id;
}

void Graph::erase_node(NodeId id) {
  Node& n = nodes_[static_cast<size_t>(id)];
  if (n.erased) return;
  n.erased = true;
  auto& order = regions_[static_cast<size_t>(n.region)].nodes;
  order.erase(std::remove(order.begin(), order.end(), id), order.end());
  for (ValueId out : n.outputs)
    if (out != kNoValue && values_[static_cast<size_t>(out)].producer == id)
      values_[static_cast<size_t>(out)].producer = kNoNode;
}

size_t Graph::num_live_nodes() const {
  size_t n = 0;
  for (const Node& node : nodes_) n += node.erased ? 0 : 1;
  return n;
}

ValueId Graph::find_value(std::string_view value_name) const {
  for (const Value& v : values_)
    if (v.name == value_name) return v.id;
  return kNoValue;
}

bool Graph::region_within(RegionId inner, RegionId outer) const {
  for (RegionId r = inner; r != kNoRegion; r = regions_[static_cast<size_t>(r)].parent)
    if (r == outer) return true;
  return false;
}

std::vector<ValueId> Graph::constants() const {
  std::vector<ValueId> out;
  for (const Value& v : values_)
    if (v.is_constant()) out.push_back(v.id);
  return out;
}

}  // namespace kiln::ir

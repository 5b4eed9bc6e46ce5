// ModelProto → ir::Graph conversion; see onnx_graph_builder.h.
#include "frontends/onnx/onnx_graph_builder.h"

#include "frontends/onnx/onnx_checks.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <queue>

#include "engine/base/limits.h"
#include "engine/ir/verifier.h"

namespace kiln::onnx {

namespace {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::NodeProto;

std::string describe(const std::string& name, const std::string& domain, const std::string& op) {
  return "node '" + name + "' (" + (domain.empty() ? "" : domain + ".") + op + ")";
}

// Symbols made from value names must stay parseable by the text IR.
std::string symbol_safe(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v" + out;
  return out;
}

// The op a legacy op becomes, for the up-front support check.
std::string upgraded_op_name(const std::string& op) {
  if (op == "Upsample") return "Resize";
  if (op == "Scatter") return "ScatterElements";
  return op;
}

// Names a sub-graph reads from enclosing scopes (ONNX's implicit inputs).
void collect_outer_refs(const GraphProto& g, std::set<std::string>& out) {
  std::set<std::string> defined;
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) defined.insert(o);
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name)) out.insert(name);
  };
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) use(in);
    for (const auto& a : n.attribute()) {
      std::set<std::string> inner;
      if (a.has_g()) collect_outer_refs(a.g(), inner);
      for (const auto& sub : a.graphs()) collect_outer_refs(sub, inner);
      for (const auto& name : inner) use(name);
    }
  }
  for (const auto& o : g.output()) use(o.name());
}

void collect_names(const GraphProto& g, std::set<std::string>& out) {
  for (const auto& v : g.input()) out.insert(v.name());
  for (const auto& t : g.initializer()) out.insert(t.name());
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) out.insert(o);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) collect_names(a.g(), out);
      for (const auto& sub : a.graphs()) collect_names(sub, out);
    }
  }
}

// Merges what inference says about one dim with what the model declares.
// Returns false on a contradiction (two different constants).
bool merge_dim(const ir::Dim& inferred, const ir::Dim& declared, ir::Dim& out) {
  if (inferred.is_const() && declared.is_const()) {
    out = inferred;
    return inferred.value() == declared.value();
  }
  if (inferred.is_const()) out = inferred;
  else if (declared.is_const()) out = declared;
  else if (inferred.is_known()) out = inferred;  // an expression over inputs says more than a fresh name
  else out = declared;
  return true;
}

// Ops whose meaning has not changed since opset 1 apart from new types and
// the removal of the 'consumed_inputs' hint (which never changed results), or
// whose older forms upgrade_node rewrites anyway. Models for opsets 1–6 that
// use only these import as if written for opset 7; binary ops are not here
// because their 'broadcast'/'axis' attributes had other semantics.
bool stable_since_opset1(const std::string& op) {
  static const std::set<std::string> kStable = {
      "Abs", "Acos", "ArgMax", "ArgMin", "Asin", "Atan", "AveragePool", "Ceil", "Constant", "Conv", "Cos",
      "DepthToSpace", "Elu", "Exp", "Flatten", "Floor", "Gather", "GlobalAveragePool", "GlobalMaxPool",
      "Hardmax", "HardSigmoid", "Identity", "InstanceNormalization", "LeakyRelu", "Log", "LogSoftmax", "LRN",
      "MatMul", "MaxPool", "Neg", "Not", "Reciprocal", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
      "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare", "Relu", "Selu",
      "Shape", "Sigmoid", "Sin", "Size", "Slice", "Softmax", "Softplus", "Softsign", "SpaceToDepth", "Sqrt",
      "Squeeze", "Tan", "Tanh", "Transpose", "Unsqueeze"};
  return kStable.count(op) > 0;
}

// The first default-domain node (sub-graphs included) not stable since opset 1.
const NodeProto* first_unstable_node(const GraphProto& g, int& index) {
  for (int i = 0; i < g.node_size(); ++i) {
    const NodeProto& n = g.node(i);
    if ((n.domain().empty() || n.domain() == "ai.onnx") && !stable_since_opset1(n.op_type())) {
      index = i;
      return &n;
    }
    for (const auto& a : n.attribute())
      if (a.has_g())
        if (const NodeProto* inner = first_unstable_node(a.g(), index)) return inner;
  }
  return nullptr;
}

}  // namespace

ir::ValueId GraphBuilder::Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent) {
    auto it = s->names.find(name);
    if (it != s->names.end()) return it->second;
  }
  return ir::kNoValue;
}

std::string GraphBuilder::normalize_domain(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

std::string GraphBuilder::node_display_name(const NodeProto& node, int index) {
  return node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
}

std::string GraphBuilder::unique_name(const std::string& base) {
  std::string name = base;
  for (int i = 1; used_names_.count(name); ++i) name = base + "_" + std::to_string(i);
  used_names_.insert(name);
  return name;
}

StatusOr<std::unique_ptr<ir::Graph>> GraphBuilder::build(::onnx::ModelProto& model) {
  if (!model.has_graph()) return invalid_argument("the model has no graph");
  KILN_RETURN_IF_ERROR(check_opsets(model));
  KILN_RETURN_IF_ERROR(check_ops_supported(model));
  graph_ = std::make_unique<ir::Graph>();
  inferrer_.emplace(*graph_, registry_);
  graph_->name = model.graph().name();
  graph_->opset = opset_;
  graph_->producer = model.producer_name() + (model.producer_version().empty() ? "" : " " + model.producer_version());
  collect_names(model.graph(), used_names_);

  Scope main_scope;
  main_scope.region = ir::kMainRegion;
  KILN_RETURN_IF_ERROR(convert_graph(*model.mutable_graph(), main_scope, /*is_main=*/true, {}));
  if (graph_->main().outputs.empty()) return invalid_argument("the model's graph has no outputs");
  Status verified = ir::verify_graph(*graph_);
  if (!verified.ok()) return internal_error("the imported graph is inconsistent: " + verified.message());
  return std::move(graph_);
}

Status GraphBuilder::check_opsets(const ::onnx::ModelProto& model) {
  bool found = false;
  for (const auto& opset : model.opset_import()) {
    if (!normalize_domain(opset.domain()).empty()) continue;
    found = true;
    opset_ = opset.version();
  }
  if (!found) {
    // Only a problem if some node uses the default domain.
    std::function<bool(const GraphProto&)> uses_default = [&](const GraphProto& g) {
      for (const auto& n : g.node()) {
        if (normalize_domain(n.domain()).empty()) return true;
        for (const auto& a : n.attribute())
          if (a.has_g() && uses_default(a.g())) return true;
      }
      return false;
    };
    if (uses_default(model.graph()))
      return invalid_argument("the model imports no opset of the default ONNX domain (opset_import is missing)");
    opset_ = kMaxOpset;
    return ok_status();
  }
  const std::string range = "the model uses ONNX opset " + std::to_string(opset_) + "; Kiln imports opsets " +
                            std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset);
  if (opset_ > kMaxOpset || opset_ < 1) return unimplemented(range);
  if (opset_ < kMinOpset) {
    int index = 0;
    if (const NodeProto* n = first_unstable_node(model.graph(), index))
      return unimplemented(range + ", and older models only when all their ops kept their meaning since; " +
                           describe(node_display_name(*n, index), "", n->op_type()) + " did not");
  }
  return ok_status();
}

void GraphBuilder::collect_unsupported(const GraphProto& graph, std::map<std::string, std::vector<std::string>>& found,
                                       const std::set<std::string>& local_functions) {
  for (int i = 0; i < graph.node_size(); ++i) {
    const NodeProto& node = graph.node(i);
    const std::string domain = normalize_domain(node.domain());
    for (const auto& a : node.attribute()) {
      if (a.has_g()) collect_unsupported(a.g(), found, local_functions);
      for (const auto& g : a.graphs()) collect_unsupported(g, found, local_functions);
    }
    if (domain.empty() && node.op_type() == "Constant") continue;  // becomes a constant value
    const std::string op = domain.empty() ? upgraded_op_name(node.op_type()) : node.op_type();
    if (registry_.find(domain, op)) continue;
    std::string entry = describe(node_display_name(node, i), domain, node.op_type()) + ": op is not supported";
    if (local_functions.count(domain + "\n" + node.op_type()))
      entry += " (it is a model-local function, which Kiln does not expand)";
    found[(domain.empty() ? "" : domain + ".") + node.op_type()].push_back(std::move(entry));
  }
}

std::vector<std::string> GraphBuilder::unsupported_ops(const ::onnx::ModelProto& model) {
  std::map<std::string, std::vector<std::string>> found;
  collect_unsupported(model.graph(), found, {});
  std::vector<std::string> out;
  for (const auto& [op, entries] : found) out.push_back(op);
  return out;
}

namespace {

std::string onnx_type_name(int32_t elem) {
  std::string name = ::onnx::TensorProto::DataType_IsValid(elem) ? ::onnx::TensorProto::DataType_Name(elem) : "";
  if (name.empty()) return "element type " + std::to_string(elem);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

void collect_type_problems(const ::onnx::TypeProto& type, std::set<std::string>& out) {
  switch (type.value_case()) {
    case ::onnx::TypeProto::kTensorType: {
      const int32_t elem = type.tensor_type().elem_type();
      if (elem == ::onnx::TensorProto::UNDEFINED) return;
      if (!dtype_from_onnx(elem, "").ok()) out.insert(onnx_type_name(elem));
      return;
    }
    case ::onnx::TypeProto::kSequenceType: out.insert("sequence"); return;
    case ::onnx::TypeProto::kMapType: out.insert("map"); return;
    case ::onnx::TypeProto::kOptionalType: out.insert("optional"); return;
    case ::onnx::TypeProto::kSparseTensorType: out.insert("sparse tensor"); return;
    default: return;
  }
}

void collect_type_problems(const GraphProto& g, std::set<std::string>& out) {
  for (const auto* list : {&g.input(), &g.output(), &g.value_info()})
    for (const auto& vi : *list) collect_type_problems(vi.type(), out);
  for (const auto& t : g.initializer())
    if (!dtype_from_onnx(t.data_type(), "").ok()) out.insert(onnx_type_name(t.data_type()));
  if (g.sparse_initializer_size() > 0) out.insert("sparse tensor");
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.has_g()) collect_type_problems(a.g(), out);
      for (const auto& sub : a.graphs()) collect_type_problems(sub, out);
    }
}

}  // namespace

std::vector<std::string> GraphBuilder::unsupported_types(const ::onnx::ModelProto& model) {
  std::set<std::string> found;
  collect_type_problems(model.graph(), found);
  return {found.begin(), found.end()};
}

Status GraphBuilder::check_ops_supported(const ::onnx::ModelProto& model) {
  std::set<std::string> local_functions;
  for (const auto& f : model.functions()) local_functions.insert(f.domain() + "\n" + f.name());
  std::map<std::string, std::vector<std::string>> found;
  collect_unsupported(model.graph(), found, local_functions);
  if (found.empty()) return ok_status();
  std::string message;
  for (const auto& [op, entries] : found) {
    if (!message.empty()) message += "; ";
    message += entries.front();
    if (entries.size() > 1) message += " (and " + std::to_string(entries.size() - 1) + " more " + op + " nodes)";
  }
  return unimplemented(message);
}

StatusOr<GraphBuilder::DeclaredType> GraphBuilder::declared_type(const ::onnx::ValueInfoProto& info,
                                                                 const std::string& what, bool fresh_symbols) {
  DeclaredType out;
  if (!info.has_type()) return out;
  const ::onnx::TypeProto& type = info.type();
  switch (type.value_case()) {
    case ::onnx::TypeProto::kTensorType: break;
    case ::onnx::TypeProto::VALUE_NOT_SET: return out;
    case ::onnx::TypeProto::kSequenceType: return unimplemented(what + " is a sequence; Kiln supports only tensors");
    case ::onnx::TypeProto::kMapType: return unimplemented(what + " is a map; Kiln supports only tensors");
    case ::onnx::TypeProto::kOptionalType: return unimplemented(what + " is an optional; Kiln supports only tensors");
    default: return unimplemented(what + " is not a dense tensor; Kiln supports only tensors");
  }
  const auto& tensor_type = type.tensor_type();
  if (tensor_type.has_elem_type() && tensor_type.elem_type() != ::onnx::TensorProto::UNDEFINED) {
    KILN_ASSIGN_OR_RETURN(out.dtype, dtype_from_onnx(tensor_type.elem_type(), what));
  }
  if (!tensor_type.has_shape()) return out;
  std::vector<ir::Dim> dims;
  for (int i = 0; i < tensor_type.shape().dim_size(); ++i) {
    const auto& d = tensor_type.shape().dim(i);
    if (d.has_dim_value()) {
      if (d.dim_value() < 0) return invalid_argument(what + " has negative dim " + std::to_string(d.dim_value()));
      dims.emplace_back(d.dim_value());
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      dims.push_back(ir::Dim::symbol(d.dim_param()));
    } else if (fresh_symbols) {
      dims.push_back(ir::Dim::symbol(symbol_safe(info.name()) + "_d" + std::to_string(i)));
    } else {
      dims.emplace_back();
    }
  }
  out.shape = ir::SymShape(std::move(dims));
  return out;
}

Status GraphBuilder::merge_declared(ir::ValueId id, const DeclaredType& declared) {
  ir::Value& v = graph_->value(id);
  if (v.is_constant()) return ok_status();
  if (declared.dtype != DType::kUndefined) {
    if (v.dtype == DType::kUndefined) {
      v.dtype = declared.dtype;
    } else if (v.dtype != declared.dtype) {
      return invalid_argument("value '" + v.name + "': the model declares dtype " +
                              std::string(dtype_name(declared.dtype)) + " but inference gives " +
                              std::string(dtype_name(v.dtype)));
    }
  }
  if (!declared.shape.has_rank) return ok_status();
  if (!v.shape.has_rank) {
    v.shape = declared.shape;
    return ok_status();
  }
  if (v.shape.rank() != declared.shape.rank())
    return invalid_argument("value '" + v.name + "': the model declares shape " + declared.shape.to_string() +
                            " but inference gives " + v.shape.to_string());
  std::vector<ir::Dim> dims(v.shape.dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    if (!merge_dim(v.shape.dims[i], declared.shape.dims[i], dims[i]))
      return invalid_argument("value '" + v.name + "': the model declares shape " + declared.shape.to_string() +
                              " but inference gives " + v.shape.to_string());
  v.shape = ir::SymShape(std::move(dims));
  return ok_status();
}

Status GraphBuilder::convert_graph(GraphProto& graph, Scope& scope, bool is_main, const std::vector<DType>& input_hints) {
  const ir::RegionId region = scope.region;
  std::unordered_map<std::string, const ::onnx::ValueInfoProto*> infos;
  for (const auto& vi : graph.value_info()) infos[vi.name()] = &vi;
  value_infos_.push_back(std::move(infos));
  struct Pop {
    std::vector<std::unordered_map<std::string, const ::onnx::ValueInfoProto*>>& stack;
    ~Pop() { stack.pop_back(); }
  } pop{value_infos_};

  if (graph.sparse_initializer_size() > 0)
    return unimplemented("sparse initializer '" + graph.sparse_initializer(0).values().name() +
                         "': sparse tensors are not supported");
  std::set<std::string> initializer_names;
  for (int i = 0; i < graph.initializer_size(); ++i) {
    ::onnx::TensorProto& t = *graph.mutable_initializer(i);
    if (t.name().empty()) return invalid_argument("initializer #" + std::to_string(i) + " has no name");
    if (scope.names.count(t.name())) return invalid_argument("initializer '" + t.name() + "' is defined twice");
    KILN_ASSIGN_OR_RETURN(Tensor tensor, tensor_from_proto(t, "initializer '" + t.name() + "'", policy_));
    // The payload is now in `tensor`; drop the protobuf copy.
    std::string().swap(*t.mutable_raw_data());
    t.clear_float_data();
    t.clear_int32_data();
    t.clear_int64_data();
    t.clear_double_data();
    t.clear_uint64_data();
    initializer_names.insert(t.name());
    scope.names[t.name()] = graph_->add_constant(t.name(), std::move(tensor), region);
  }

  for (int i = 0; i < graph.input_size(); ++i) {
    const ::onnx::ValueInfoProto& in = graph.input(i);
    if (initializer_names.count(in.name())) continue;  // an initializer with an overridable default: a constant
    if (in.name().empty()) return invalid_argument("graph input #" + std::to_string(i) + " has no name");
    const std::string what = (is_main ? "graph input '" : "sub-graph input '") + in.name() + "'";
    if (scope.names.count(in.name())) return invalid_argument(what + " is declared twice");
    KILN_ASSIGN_OR_RETURN(DeclaredType type, declared_type(in, what, /*fresh_symbols=*/is_main));
    if (type.dtype == DType::kUndefined && static_cast<size_t>(i) < input_hints.size()) type.dtype = input_hints[i];
    if (is_main && type.dtype == DType::kUndefined) return invalid_argument(what + " has no tensor element type");
    scope.names[in.name()] = graph_->add_input(in.name(), type.dtype, std::move(type.shape), region);
  }

  KILN_ASSIGN_OR_RETURN(std::vector<int> order, topological_order(graph, scope));
  for (int index : order) {
    NodeProto& node = *graph.mutable_node(index);
    KILN_RETURN_IF_ERROR(convert_node(node, node_display_name(node, index), scope));
  }

  for (int i = 0; i < graph.output_size(); ++i) {
    const ::onnx::ValueInfoProto& out = graph.output(i);
    const std::string what = (is_main ? "graph output '" : "sub-graph output '") + out.name() + "'";
    const ir::ValueId id = scope.find(out.name());
    if (id == ir::kNoValue) return invalid_argument(what + " is not produced by any node, initializer or graph input");
    KILN_ASSIGN_OR_RETURN(DeclaredType type, declared_type(out, what, /*fresh_symbols=*/false));
    if (graph_->value(id).region == region) KILN_RETURN_IF_ERROR(merge_declared(id, type));
    graph_->add_output(id, region);
  }
  return ok_status();
}

StatusOr<std::vector<int>> GraphBuilder::topological_order(const GraphProto& graph, const Scope& scope) {
  const int n = graph.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i) {
    const NodeProto& node = graph.node(i);
    for (int k = 0; k < node.output_size(); ++k) {
      const std::string& out = node.output(k);
      if (out.empty()) continue;
      auto [it, inserted] = producer.emplace(out, i);
      if (!inserted)
        return invalid_argument(describe(node_display_name(node, i), normalize_domain(node.domain()), node.op_type()) +
                                ": output " + std::to_string(k) + " '" + out + "' is already produced by " +
                                describe(node_display_name(graph.node(it->second), it->second),
                                         normalize_domain(graph.node(it->second).domain()),
                                         graph.node(it->second).op_type()));
    }
  }
  std::vector<std::vector<int>> users(static_cast<size_t>(n));
  std::vector<int> pending(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    const NodeProto& node = graph.node(i);
    std::set<std::string> reads(node.input().begin(), node.input().end());
    for (const auto& a : node.attribute()) {
      if (a.has_g()) collect_outer_refs(a.g(), reads);
      for (const auto& g : a.graphs()) collect_outer_refs(g, reads);
    }
    std::set<int> deps;
    for (const auto& name : reads) {
      if (name.empty()) continue;
      auto it = producer.find(name);
      // Graph inputs and initializers shadow nothing: a node output with the
      // same name is reported as a duplicate when the node is converted.
      if (it != producer.end() && scope.names.count(name) == 0) deps.insert(it->second);
    }
    for (int d : deps) {
      users[static_cast<size_t>(d)].push_back(i);
      ++pending[static_cast<size_t>(i)];
    }
  }
  // Kahn's algorithm, preferring the file's order (a sorted graph stays as is).
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[static_cast<size_t>(i)] == 0) ready.push(i);
  std::vector<int> order;
  order.reserve(static_cast<size_t>(n));
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[static_cast<size_t>(i)])
      if (--pending[static_cast<size_t>(u)] == 0) ready.push(u);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (pending[static_cast<size_t>(i)] > 0)
        return invalid_argument("the graph has a cycle through " +
                                describe(node_display_name(graph.node(i), i), normalize_domain(graph.node(i).domain()),
                                         graph.node(i).op_type()));
  }
  return order;
}

Status GraphBuilder::convert_node(NodeProto& node, const std::string& node_name, Scope& scope) {
  const std::string domain = normalize_domain(node.domain());
  if (domain.empty() && node.op_type() == "Constant") return convert_constant_node(node, node_name, scope);
  Draft draft;
  draft.op = node.op_type();
  draft.domain = domain;
  draft.name = node_name;
  const std::string desc = describe(node_name, domain, node.op_type());
  if (node.op_type().empty()) return invalid_argument(desc + ": the node has no op_type");
  for (int i = 0; i < node.input_size(); ++i) {
    const std::string& in = node.input(i);
    if (in.empty()) {
      draft.inputs.push_back(ir::kNoValue);
      continue;
    }
    const ir::ValueId id = scope.find(in);
    if (id == ir::kNoValue)
      return invalid_argument(desc + ": input " + std::to_string(i) + " '" + in +
                              "' is not produced by any node, initializer or graph input");
    draft.inputs.push_back(id);
  }
  std::set<std::string> own_outputs;
  for (int i = 0; i < node.output_size(); ++i) {
    const std::string& out = node.output(i);
    if (!out.empty() && (scope.find(out) != ir::kNoValue || !own_outputs.insert(out).second))
      return invalid_argument(desc + ": output " + std::to_string(i) + " '" + out +
                              "' is already defined (by a graph input, initializer or another node)");
    draft.outputs.push_back(out);
  }
  while (!draft.outputs.empty() && draft.outputs.back().empty()) draft.outputs.pop_back();
  if (domain.empty()) KILN_RETURN_IF_ERROR(check_node_against_schema(node, opset_, desc));
  for (int i = 0; i < node.attribute_size(); ++i) {
    AttributeProto& attr = *node.mutable_attribute(i);
    if (attr.name().empty()) return invalid_argument(desc + ": attribute #" + std::to_string(i) + " has no name");
    if (draft.attrs.count(attr.name()))
      return invalid_argument(desc + ": attribute '" + attr.name() + "' is given twice");
    KILN_ASSIGN_OR_RETURN(ir::Attribute converted, convert_attribute(attr, draft, scope));
    draft.attrs.emplace(attr.name(), std::move(converted));
  }
  if (domain.empty()) KILN_RETURN_IF_ERROR(upgrade_node(draft, scope));
  KILN_ASSIGN_OR_RETURN(ir::NodeId id, emit(std::move(draft), scope));
  (void)id;
  return ok_status();
}

StatusOr<ir::Attribute> GraphBuilder::convert_attribute(AttributeProto& attr, const Draft& draft, Scope& scope) {
  const std::string what = describe(draft.name, draft.domain, draft.op) + ": attribute '" + attr.name() + "'";
  if (attr.has_ref_attr_name())
    return invalid_argument(what + " refers to a function attribute outside of a function");
  const AttributeProto::AttributeType type = effective_attribute_type(attr);  // IR < 3 models leave the type out
  if (type == AttributeProto::UNDEFINED) return invalid_argument(what + " has no type and no value");
  switch (type) {
    case AttributeProto::FLOAT: return ir::Attribute::of_float(attr.f());
    case AttributeProto::INT: return ir::Attribute::of_int(attr.i());
    case AttributeProto::STRING: return ir::Attribute::of_string(attr.s());
    case AttributeProto::FLOATS: return ir::Attribute::of_floats({attr.floats().begin(), attr.floats().end()});
    case AttributeProto::INTS: return ir::Attribute::of_ints({attr.ints().begin(), attr.ints().end()});
    case AttributeProto::STRINGS: return ir::Attribute::of_strings({attr.strings().begin(), attr.strings().end()});
    case AttributeProto::TENSOR: {
      KILN_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(attr.t(), what, policy_));
      return ir::Attribute::of_tensor(std::move(t));
    }
    case AttributeProto::GRAPH: {
      if (!attr.has_g()) return invalid_argument(what + " is a graph attribute without a graph");
      // Sub-graph inputs often carry no type; Loop and Scan bodies take
      // theirs from the node's inputs.
      std::vector<DType> hints;
      auto input_dtype = [&](size_t i) {
        return i < draft.inputs.size() && draft.inputs[i] != ir::kNoValue ? graph_->value(draft.inputs[i]).dtype
                                                                           : DType::kUndefined;
      };
      if (draft.domain.empty() && draft.op == "Loop") {
        hints = {DType::kInt64, DType::kBool};
        for (size_t i = 2; i < draft.inputs.size(); ++i) hints.push_back(input_dtype(i));
      } else if (draft.domain.empty() && draft.op == "Scan") {
        for (size_t i = 0; i < draft.inputs.size(); ++i) hints.push_back(input_dtype(i));
      }
      // Every pass recurses into sub-graphs: nesting without end would
      // overflow a stack somewhere later, so it is refused here.
      KILN_ASSIGN_OR_RETURN(const int64_t max_depth, max_subgraph_depth());
      int64_t depth = 1;
      for (const Scope* s = &scope; s->parent != nullptr; s = s->parent) ++depth;
      if (depth > max_depth)
        return invalid_argument(what + " nests sub-graphs " + std::to_string(depth) + " deep, beyond the limit of " +
                                std::to_string(max_depth) + " (" + std::string(kMaxSubgraphDepthEnv) + ")");
      const ir::RegionId region = graph_->add_region(scope.region, draft.name + "/" + attr.name());
      Scope sub;
      sub.parent = &scope;
      sub.region = region;
      Status s = convert_graph(*attr.mutable_g(), sub, /*is_main=*/false, hints);
      if (!s.ok()) return std::move(s).add_context(what);
      return ir::Attribute::of_graph(region);
    }
    case AttributeProto::TENSORS: return unimplemented(what + " is a list of tensors, which Kiln does not support");
    case AttributeProto::GRAPHS: return unimplemented(what + " is a list of graphs, which Kiln does not support");
    case AttributeProto::SPARSE_TENSOR:
    case AttributeProto::SPARSE_TENSORS: return unimplemented(what + " is a sparse tensor, which Kiln does not support");
    case AttributeProto::TYPE_PROTO:
    case AttributeProto::TYPE_PROTOS: return unimplemented(what + " is a type, which Kiln does not support");
    default: return invalid_argument(what + " has unknown type " + std::to_string(static_cast<int>(type)));
  }
}

Status GraphBuilder::convert_constant_node(NodeProto& node, const std::string& node_name, Scope& scope) {
  const std::string desc = describe(node_name, "", "Constant");
  if (node.output_size() != 1 || node.output(0).empty())
    return invalid_argument(desc + ": expects exactly 1 output, got " + std::to_string(node.output_size()));
  if (node.attribute_size() != 1)
    return invalid_argument(desc + ": expects exactly one value attribute, got " + std::to_string(node.attribute_size()));
  const AttributeProto& a = node.attribute(0);
  const std::string what = desc + ": attribute '" + a.name() + "'";
  Tensor tensor;
  if (a.name() == "value") {
    if (!a.has_t()) return invalid_argument(what + " holds no tensor");
    KILN_ASSIGN_OR_RETURN(tensor, tensor_from_proto(a.t(), what, policy_));
  } else if (a.name() == "value_float") {
    tensor = Tensor::scalar_f32(a.f());
  } else if (a.name() == "value_floats") {
    tensor = Tensor::from_vector<float>({a.floats_size()}, {a.floats().begin(), a.floats().end()});
  } else if (a.name() == "value_int") {
    tensor = Tensor::scalar_i64(a.i());
  } else if (a.name() == "value_ints") {
    tensor = Tensor::from_vector<int64_t>({a.ints_size()}, {a.ints().begin(), a.ints().end()});
  } else if (a.name() == "value_string" || a.name() == "value_strings") {
    return unimplemented(what + ": string tensors are not supported");
  } else if (a.name() == "sparse_value") {
    return unimplemented(what + ": sparse tensors are not supported");
  } else {
    return invalid_argument(what + " is not a Constant attribute");
  }
  const std::string& out = node.output(0);
  if (scope.find(out) != ir::kNoValue)
    return invalid_argument(desc + ": output 0 '" + out + "' is already defined (by a graph input, initializer or another node)");
  scope.names[out] = graph_->add_constant(out, std::move(tensor), scope.region);
  return ok_status();
}

StatusOr<ir::NodeId> GraphBuilder::emit(Draft draft, Scope& scope) {
  const ops::OpSchema* schema = registry_.find(draft.domain, draft.op);
  if (!schema) return unimplemented(describe(draft.name, draft.domain, draft.op) + ": op is not supported");
  std::vector<ir::ValueId> outputs;
  std::vector<size_t> omitted;
  for (size_t i = 0; i < draft.outputs.size(); ++i) {
    const std::string& name = draft.outputs[i];
    if (name.empty()) omitted.push_back(i);
    const ir::ValueId id = graph_->add_value(name, DType::kUndefined, ir::SymShape::unranked(), scope.region);
    if (!name.empty()) scope.names[name] = id;
    outputs.push_back(id);
  }
  const ir::NodeId nid = graph_->add_node(draft.op, std::move(draft.inputs), std::move(outputs),
                                          std::move(draft.attrs), draft.name, scope.region);
  ir::Node& node = graph_->node(nid);
  node.domain = draft.domain;
  // An omitted output in the middle ("", then a named one) keeps its slot but
  // has no value: detach the placeholder that add_node needed.
  for (size_t i : omitted) {
    graph_->value(node.outputs[i]).producer = ir::kNoNode;
    node.outputs[i] = ir::kNoValue;
  }
  KILN_RETURN_IF_ERROR(inferrer_->infer_node(nid));
  if (!value_infos_.empty()) {
    const auto& infos = value_infos_.back();
    for (const std::string& name : draft.outputs) {
      auto it = infos.find(name);
      if (name.empty() || it == infos.end()) continue;
      KILN_ASSIGN_OR_RETURN(DeclaredType type, declared_type(*it->second, "value '" + name + "'", false));
      KILN_RETURN_IF_ERROR(merge_declared(scope.find(name), type));
    }
  }
  return nid;
}

StatusOr<ir::ValueId> GraphBuilder::emit_helper(const std::string& op, std::vector<ir::ValueId> inputs,
                                                std::map<std::string, ir::Attribute> attrs,
                                                const std::string& base_name, Scope& scope) {
  Draft d;
  d.op = op;
  d.name = unique_name(base_name);
  d.inputs = std::move(inputs);
  d.attrs = std::move(attrs);
  d.outputs = {d.name};
  KILN_ASSIGN_OR_RETURN(ir::NodeId nid, emit(std::move(d), scope));
  return graph_->node(nid).outputs[0];
}

ir::ValueId GraphBuilder::add_helper_constant(const std::string& base_name, Tensor tensor, Scope& scope) {
  return graph_->add_constant(unique_name(base_name), std::move(tensor), scope.region);
}

}  // namespace kiln::onnx

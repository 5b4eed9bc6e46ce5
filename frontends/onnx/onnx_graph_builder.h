// GraphBuilder: converts a parsed ModelProto into a Kiln graph.
//
// One pass over each (sub-)graph in topological order. Every node is resolved
// against a scope chain (so sub-graphs see outer values), rewritten from its
// opset's form to the latest form the registry implements, appended to the
// graph and immediately shape-inferred — so a rewrite can depend on what is
// known about its inputs (Pad's constant value takes the data's dtype,
// Softmax-12 needs the input's rank). Internal to kiln_onnx.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

#include "engine/base/status.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_registry.h"
#include "engine/ops/shape_inference.h"
#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_tensor.h"

namespace kiln::onnx {

// Opsets of the default domain this importer understands.
inline constexpr int64_t kMinOpset = 7;
inline constexpr int64_t kMaxOpset = 21;

class GraphBuilder {
 public:
  GraphBuilder(const ops::OpRegistry& registry, ExternalDataPolicy policy)
      : registry_(registry), policy_(std::move(policy)) {}

  // Ops of `model` the registry lacks ("Op" or "domain.Op"), after upgrades.
  std::vector<std::string> unsupported_ops(const ::onnx::ModelProto& model);
  // Value types of `model` Kiln lacks ("string", "sequence", ...).
  static std::vector<std::string> unsupported_types(const ::onnx::ModelProto& model);

  // Converts `model`; initializer payloads are released from it as they are
  // copied, to keep peak memory near one copy of the weights.
  StatusOr<std::unique_ptr<ir::Graph>> build(::onnx::ModelProto& model);

  // A node on its way into the graph: inputs already resolved to values,
  // outputs still names ("" for an omitted optional output).
  struct Draft {
    std::string op;
    std::string domain;
    std::string name;
    std::vector<ir::ValueId> inputs;
    std::vector<std::string> outputs;
    std::map<std::string, ir::Attribute> attrs;

    std::string attr_string_or(const std::string& key, std::string fallback) const {
      auto it = attrs.find(key);
      return it != attrs.end() && it->second.kind == ir::AttrKind::kString ? it->second.s : fallback;
    }
  };

 private:
  // Names visible in one (sub-)graph; lookups walk to the enclosing scopes.
  struct Scope {
    const Scope* parent = nullptr;
    ir::RegionId region = ir::kMainRegion;
    std::unordered_map<std::string, ir::ValueId> names;
    ir::ValueId find(const std::string& name) const;
  };
  // A declared tensor type from a ValueInfoProto.
  struct DeclaredType {
    DType dtype = DType::kUndefined;
    ir::SymShape shape;
  };

  Status check_opsets(const ::onnx::ModelProto& model);
  Status check_ops_supported(const ::onnx::ModelProto& model);
  void collect_unsupported(const ::onnx::GraphProto& graph, std::map<std::string, std::vector<std::string>>& found,
                           const std::set<std::string>& local_functions);

  // Converts `graph` into `region`. `input_hints` gives dtypes for sub-graph
  // inputs whose ValueInfoProto has no type (Loop/Scan bodies).
  Status convert_graph(::onnx::GraphProto& graph, Scope& scope, bool is_main,
                       const std::vector<DType>& input_hints);
  StatusOr<std::vector<int>> topological_order(const ::onnx::GraphProto& graph, const Scope& scope);
  Status convert_node(::onnx::NodeProto& node, const std::string& node_name, Scope& scope);
  StatusOr<ir::Attribute> convert_attribute(::onnx::AttributeProto& attr, const Draft& draft, Scope& scope);
  Status convert_constant_node(::onnx::NodeProto& node, const std::string& node_name, Scope& scope);

  // Rewrites an older opset's form of `draft` to the latest form; may emit
  // helper nodes (constants, Flatten/Shape...) before it.
  Status upgrade_node(Draft& draft, Scope& scope);
  Status upgrade_softmax(Draft& draft, Scope& scope);
  // Adds the draft as a node, creating its output values, and infers them.
  StatusOr<ir::NodeId> emit(Draft draft, Scope& scope);
  // Emits a single-output helper node and returns its output.
  StatusOr<ir::ValueId> emit_helper(const std::string& op, std::vector<ir::ValueId> inputs,
                                    std::map<std::string, ir::Attribute> attrs, const std::string& base_name,
                                    Scope& scope);
  ir::ValueId add_helper_constant(const std::string& base_name, Tensor tensor, Scope& scope);

  StatusOr<DeclaredType> declared_type(const ::onnx::ValueInfoProto& info, const std::string& what,
                                       bool fresh_symbols);
  Status merge_declared(ir::ValueId id, const DeclaredType& declared);

  std::string unique_name(const std::string& base);
  static std::string node_display_name(const ::onnx::NodeProto& node, int index);
  static std::string normalize_domain(const std::string& domain);

  const ops::OpRegistry& registry_;
  ExternalDataPolicy policy_;
  std::unique_ptr<ir::Graph> graph_;
  int64_t opset_ = kMaxOpset;
  std::set<std::string> used_names_;
  // Infers each node as emit() appends it (the same inference passes use).
  std::optional<ops::ShapeInferrer> inferrer_;
  // value_info entries of the graph being converted, by name.
  std::vector<std::unordered_map<std::string, const ::onnx::ValueInfoProto*>> value_infos_;
};

}  // namespace kiln::onnx

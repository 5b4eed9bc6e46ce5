// Operator layout classes and reduction axes (see op_layout.h).
#include "engine/ops/op_layout.h"

#include <algorithm>
#include <set>
#include <string>

namespace kiln::ops {
namespace {

bool is_one_of(const std::string& op, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (op == n) return true;
  return false;
}

int rank_of(const ir::Graph& graph, const ir::Node& node, size_t input) {
  if (input >= node.inputs.size() || node.inputs[input] == ir::kNoValue) return -1;
  const ir::Value& v = graph.value(node.inputs[input]);
  return v.shape.has_rank ? static_cast<int>(v.shape.rank()) : -1;
}

// Axes normalized into [0, rank), sorted, duplicates and out-of-range ones dropped.
std::vector<int> normalized(const std::vector<int64_t>& axes, int rank) {
  std::set<int> out;
  for (int64_t a : axes) {
    const int64_t k = a < 0 ? a + rank : a;
    if (k >= 0 && k < rank) out.insert(static_cast<int>(k));
  }
  return {out.begin(), out.end()};
}

std::vector<int> range(int from, int to) {
  std::vector<int> out;
  for (int k = std::max(from, 0); k < to; ++k) out.push_back(k);
  return out;
}

// A constant integer input's elements; nullopt when it is absent or not constant.
std::optional<std::vector<int64_t>> constant_ints(const ir::Graph& graph, const ir::Node& node, size_t input) {
  if (input >= node.inputs.size() || node.inputs[input] == ir::kNoValue) return std::nullopt;
  const ir::Value& v = graph.value(node.inputs[input]);
  if (!v.is_constant() || !dtype_is_integer(v.constant.dtype())) return std::nullopt;
  std::vector<int64_t> out;
  for (int64_t k = 0; k < v.constant.numel(); ++k) out.push_back(v.constant.get_i64(k));
  return out;
}

// Reduce*: `axes` attribute (before opset 18) or constant input 1; none
// given reduces everything unless noop_with_empty_axes.
std::vector<int> reduce_axes(const ir::Graph& graph, const ir::Node& node, int rank) {
  std::vector<int64_t> axes;
  if (node.attr("axes")) {
    axes = node.attr_ints("axes");
  } else if (node.inputs.size() > 1 && node.inputs[1] != ir::kNoValue) {
    auto given = constant_ints(graph, node, 1);
    if (!given) return {};  // decided at run time
    axes = *given;
  }
  if (axes.empty()) return node.attr_int("noop_with_empty_axes", 0) ? std::vector<int>{} : range(0, rank);
  return normalized(axes, rank);
}

// The input index of the data operand and of the weights of the conv/matmul
// families, including the integer and quantized forms.
struct Operands {
  int a = -1, b = -1;
};
Operands linalg_operands(const std::string& op) {
  if (is_one_of(op, {"MatMul", "Gemm", "Conv", "ConvTranspose", "MatMulInteger", "ConvInteger"})) return {0, 1};
  if (is_one_of(op, {"QLinearMatMul", "QLinearConv"})) return {0, 3};
  return {};
}

std::vector<int> default_domain_axes(const ir::Graph& graph, const ir::Node& node, size_t input, int rank) {
  const std::string& op = node.op;
  const int in = static_cast<int>(input);
  const Operands operands = linalg_operands(op);
  if (is_one_of(op, {"MatMul", "MatMulInteger", "QLinearMatMul"})) {
    if (in == operands.a) return {rank - 1};
    if (in == operands.b) return {rank >= 2 ? rank - 2 : 0};
    return {};
  }
  if (op == "Gemm") {
    if (in == 0) return {node.attr_int("transA", 0) ? 0 : 1};
    if (in == 1) return {node.attr_int("transB", 0) ? 1 : 0};
    return {};
  }
  if (is_one_of(op, {"Conv", "ConvInteger", "QLinearConv"})) {
    // X[N, C, spatial...] along C and the window; W[M, C/g, kernel...] along all but M.
    if (in == operands.a || in == operands.b) return range(1, rank);
    return {};
  }
  if (op == "ConvTranspose") {
    // W[C, M/g, kernel...]: the input channels and the window are summed.
    if (in == 0) return range(1, rank);
    if (in == 1) {
      std::vector<int> axes = {0};
      for (int k = 2; k < rank; ++k) axes.push_back(k);
      return axes;
    }
    return {};
  }
  if (in != 0) return {};  // the rest reduce their first input only; others are parameters
  if (is_one_of(op, {"MaxPool", "AveragePool", "LpPool", "GlobalMaxPool", "GlobalAveragePool", "GlobalLpPool",
                     "InstanceNormalization"}))
    return range(2, rank);
  if (op.rfind("Reduce", 0) == 0) return reduce_axes(graph, node, rank);
  if (is_one_of(op, {"ArgMax", "ArgMin", "LpNormalization"}))
    return normalized({node.attr_int("axis", op == "LpNormalization" ? -1 : 0)}, rank);
  if (op == "TopK") return normalized({node.attr_int("axis", -1)}, rank);
  if (op == "CumSum") {
    auto axis = constant_ints(graph, node, 1);
    return axis && axis->size() == 1 ? normalized(*axis, rank) : std::vector<int>{};
  }
  if (is_one_of(op, {"Softmax", "LogSoftmax", "Hardmax"})) {
    // Before opset 13 the input is coerced to 2-D at `axis` (default 1).
    if (graph.opset < 13) {
      const std::vector<int> a = normalized({node.attr_int("axis", 1)}, rank);
      return a.empty() ? a : range(a[0], rank);
    }
    return normalized({node.attr_int("axis", -1)}, rank);
  }
  if (op == "LayerNormalization") {
    const std::vector<int> a = normalized({node.attr_int("axis", -1)}, rank);
    return a.empty() ? a : range(a[0], rank);
  }
  if (op == "GroupNormalization") return range(1, rank);
  if (op == "MeanVarianceNormalization") return normalized(node.attr_ints("axes", {0, 2, 3}), rank);
  if (is_one_of(op, {"LSTM", "GRU", "RNN"})) return {rank - 1};
  return {};
}

}  // namespace

const char* layout_class_name(LayoutClass c) {
  switch (c) {
    case LayoutClass::kUnknown: return "unknown";
    case LayoutClass::kIldVariable: return "ILD-Variable";
    case LayoutClass::kIliVariable: return "ILI-Variable";
    case LayoutClass::kIldFixed: return "ILD-Fixed";
    case LayoutClass::kIliFixed: return "ILI-Fixed";
  }
  return "unknown";
}

LayoutClass layout_class(const OpSchema& schema) {
  const bool onnx = schema.domain.empty();
  // Placements and selections: the element order is the input's, the cost
  // does not depend on its layout (Table 3's Slice).
  if (onnx && is_one_of(schema.name, {"Concat", "Split"})) return LayoutClass::kIliFixed;
  // Scans with their own state layout, and control flow: not classifiable.
  if (onnx && is_one_of(schema.name, {"If", "Loop", "Scan", "LSTM", "GRU", "RNN"})) return LayoutClass::kUnknown;
  switch (schema.mapping) {
    case MappingType::kManyToMany: return LayoutClass::kIldVariable;
    case MappingType::kOneToOne:
    case MappingType::kOneToMany: return LayoutClass::kIliVariable;
    case MappingType::kReorganize:
    case MappingType::kShuffle: return LayoutClass::kIldFixed;
    case MappingType::kOther: return LayoutClass::kIliFixed;
    case MappingType::kUnset: return LayoutClass::kUnknown;
  }
  return LayoutClass::kUnknown;
}

std::vector<int> reduction_axes(const ir::Graph& graph, const ir::Node& node, size_t input) {
  const int rank = rank_of(graph, node, input);
  if (rank <= 0 || !node.domain.empty()) return {};
  return default_domain_axes(graph, node, input, rank);
}

}  // namespace kiln::ops

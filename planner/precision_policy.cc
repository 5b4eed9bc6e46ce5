// The fp16 mixed-precision policy (see precision_policy.h for the measurements).
#include "planner/precision_policy.h"

#include <cstdint>

#include "engine/ops/quantization.h"

namespace kiln::planner {

namespace {

// Elements of a shape, symbolic dims counted as 1 (the least they can be).
int64_t min_elements(const std::vector<ir::Dim>& shape, size_t from) {
  int64_t n = 1;
  for (size_t i = from; i < shape.size(); ++i)
    if (shape[i].is_const()) n *= shape[i].value();
  return n;
}

}  // namespace

bool conv_weights_stay_f32(const std::vector<ir::Dim>& weight, const std::vector<ir::Dim>& output) {
  if (weight.empty() || output.size() < 2) return false;
  for (const ir::Dim& d : weight)
    if (!d.is_const()) return false;
  return min_elements(weight, 0) <= min_elements(output, 1);
}

std::vector<ElemType> choose_float_types(const ir::Graph& graph, const std::vector<std::vector<ir::Dim>>& shapes,
                                         ElemType precision) {
  std::vector<ElemType> types(graph.num_values(), precision);
  if (precision != ElemType::kF16) return types;
  for (ir::NodeId nid : graph.main().nodes) {
    const ir::Node& node = graph.node(nid);
    if (node.erased || !node.domain.empty() || (node.op != "Conv" && node.op != "ConvTranspose")) continue;
    if (node.inputs.size() < 2 || node.outputs.empty() || node.inputs[1] == ir::kNoValue ||
        node.outputs[0] == ir::kNoValue)
      continue;
    const ir::Value& w = graph.value(node.inputs[1]);
    if (!w.is_constant() || !dtype_is_float(w.dtype)) continue;
    if (!conv_weights_stay_f32(shapes[static_cast<size_t>(node.inputs[1])],
                               shapes[static_cast<size_t>(node.outputs[0])]))
      continue;
    // Weight and bias; a constant several nodes share is fp32 if any keeps it.
    for (size_t i = 1; i < node.inputs.size() && i <= 2; ++i) {
      const ir::ValueId v = node.inputs[i];
      if (v != ir::kNoValue && graph.value(v).is_constant()) types[static_cast<size_t>(v)] = ElemType::kF32;
    }
  }
  // What is quantized next is rounded to whole quantization steps, and an
  // input already rounded to fp16 moves values across the .5s: float inputs
  // of QuantizeLinear and DynamicQuantizeLinear stay fp32 (their range too),
  // as do those of ONNX Runtime's com.microsoft QuantizeLinear and
  // DynamicQuantizeMatMul.
  for (ir::NodeId nid : graph.main().nodes) {
    const ir::Node& node = graph.node(nid);
    if (node.erased) continue;
    const bool onnx_quantize =
        node.domain.empty() && (node.op == "QuantizeLinear" || node.op == "DynamicQuantizeLinear");
    const bool ms_quantize =
        node.domain == ops::kMicrosoftDomain && (node.op == "QuantizeLinear" || node.op == "DynamicQuantizeMatMul");
    if (!onnx_quantize && !ms_quantize) continue;
    if (node.inputs.empty() || node.inputs[0] == ir::kNoValue) continue;
    if (dtype_is_float(graph.value(node.inputs[0]).dtype)) types[static_cast<size_t>(node.inputs[0])] = ElemType::kF32;
  }
  return types;
}

}  // namespace kiln::planner

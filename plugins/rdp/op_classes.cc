// The dynamism table (see op_classes.h). Placement follows SoD² Table 2
// where it names the op; two deliberate differences: ConstantOfShape is
// ISVDOS (its output shape is its input's value, not its input's shape), and
// GroupNormalization is ISDOS (its output has its input's shape). Reduce*
// are ISVDOS because opset 18 passes axes as an input.
#include "plugins/rdp/op_classes.h"

#include <map>

namespace kiln_rdp {
namespace {

std::vector<OpClass> build() {
  std::vector<OpClass> t;
  auto add = [&](DynClass c, std::initializer_list<const char*> names, std::vector<int> value_inputs = {}) {
    for (const char* n : names) t.push_back(OpClass{n, c, value_inputs});
  };
  add(DynClass::kISDO, {"Shape", "Size", "EyeLike", "Constant"});
  // Elementwise: the output has the (broadcast) input shape.
  add(DynClass::kISDOS,
      {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Neg", "Abs", "Reciprocal", "Floor", "Ceil", "Round",
       "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softsign", "Not",
       "Sign", "Softplus", "Mish", "Elu", "Selu", "Celu", "Gelu", "LeakyRelu", "HardSigmoid", "HardSwish",
       "ThresholdedRelu", "Shrink", "IsNaN", "IsInf", "kiln::Silu", "Add", "Sub", "Mul", "Div", "Mod", "Pow",
       "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor", "BitShift", "Sum", "Mean",
       "Max", "Min", "Where", "PRelu", "Clip", "Cast", "CastLike", "Identity", "Dropout"});
  // Shape from input shapes and attributes.
  add(DynClass::kISDOS,
      {"Conv", "ConvTranspose", "Gemm", "MatMul", "Einsum", "MaxPool", "AveragePool", "LpPool", "GlobalMaxPool",
       "GlobalAveragePool", "GlobalLpPool", "BatchNormalization", "InstanceNormalization", "LayerNormalization",
       "GroupNormalization", "LpNormalization", "Softmax", "LogSoftmax", "Hardmax", "ArgMax", "ArgMin", "Concat",
       "Gather", "GatherElements", "GatherND", "ScatterElements", "ScatterND", "Transpose", "Flatten",
       "DepthToSpace", "SpaceToDepth", "CumSum", "Trilu", "LSTM", "GRU", "RNN"});
  // Quantization: elementwise (DynamicQuantizeLinear's scale and zero point
  // are scalars) or their float op's shape.
  add(DynClass::kISDOS, {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger",
                         "QLinearMatMul", "QLinearConv"});
  // ONNX Runtime's com.microsoft quantized ops, likewise.
  add(DynClass::kISDOS,
      {"com.microsoft::QuantizeLinear", "com.microsoft::DequantizeLinear", "com.microsoft::QLinearAdd",
       "com.microsoft::QLinearMul", "com.microsoft::QLinearSigmoid", "com.microsoft::QLinearLeakyRelu",
       "com.microsoft::QLinearSoftmax", "com.microsoft::QLinearAveragePool", "com.microsoft::QLinearGlobalAveragePool",
       "com.microsoft::QLinearConcat", "com.microsoft::QGemm", "com.microsoft::MatMulIntegerToFloat",
       "com.microsoft::DynamicQuantizeMatMul"});
  add(DynClass::kISVDOS, {"Reshape", "Expand", "Squeeze", "Unsqueeze", "Tile", "OneHot", "TopK", "Split"}, {1});
  add(DynClass::kISVDOS, {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                          "ReduceLogSumExp", "ReduceSumSquare"},
      {1});
  add(DynClass::kISVDOS, {"Slice"}, {1, 2, 3, 4});
  add(DynClass::kISVDOS, {"Pad"}, {1, 3});
  add(DynClass::kISVDOS, {"Resize"}, {2, 3});
  add(DynClass::kISVDOS, {"Range"}, {0, 1, 2});
  add(DynClass::kISVDOS, {"ConstantOfShape"}, {0});
  add(DynClass::kEDO, {"If", "Loop", "NonZero"});
  return t;
}

}  // namespace

const char* class_name(DynClass c) {
  switch (c) {
    case DynClass::kISDO: return "ISDO";
    case DynClass::kISDOS: return "ISDOS";
    case DynClass::kISVDOS: return "ISVDOS";
    case DynClass::kEDO: return "EDO";
  }
  return "?";
}

const std::vector<OpClass>& op_class_table() {
  static const std::vector<OpClass> table = build();
  return table;
}

const OpClass* find_op_class(std::string_view domain, std::string_view op) {
  static const std::map<std::string, const OpClass*, std::less<>> index = [] {
    std::map<std::string, const OpClass*, std::less<>> m;
    for (const OpClass& c : op_class_table()) m.emplace(c.key, &c);
    return m;
  }();
  const std::string key = domain.empty() ? std::string(op) : std::string(domain) + "::" + std::string(op);
  auto it = index.find(key);
  return it == index.end() ? nullptr : it->second;
}

}  // namespace kiln_rdp

// Parsing of the LSTM/GRU/RNN attributes; see recurrent.h.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "engine/ops/recurrent.h"

namespace kiln::ops {

namespace {

struct FnInfo {
  const char* name;  // lower case
  RecurrentActivation::Fn fn;
  bool uses_alpha, uses_beta;
  float default_alpha, default_beta;  // onnxruntime's, where ONNX gives none
};

constexpr FnInfo kFunctions[] = {
    {"relu", RecurrentActivation::Fn::kRelu, false, false, 0.0f, 0.0f},
    {"tanh", RecurrentActivation::Fn::kTanh, false, false, 0.0f, 0.0f},
    {"sigmoid", RecurrentActivation::Fn::kSigmoid, false, false, 0.0f, 0.0f},
    {"affine", RecurrentActivation::Fn::kAffine, true, true, 1.0f, 0.0f},
    {"leakyrelu", RecurrentActivation::Fn::kLeakyRelu, true, false, 0.01f, 0.0f},
    {"thresholdedrelu", RecurrentActivation::Fn::kThresholdedRelu, true, false, 1.0f, 0.0f},
    {"scaledtanh", RecurrentActivation::Fn::kScaledTanh, true, true, 1.0f, 1.0f},
    {"hardsigmoid", RecurrentActivation::Fn::kHardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", RecurrentActivation::Fn::kElu, true, false, 1.0f, 0.0f},
    {"softsign", RecurrentActivation::Fn::kSoftsign, false, false, 0.0f, 0.0f},
    {"softplus", RecurrentActivation::Fn::kSoftplus, false, false, 0.0f, 0.0f},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<std::string> default_functions(RecurrentKind kind) {
  switch (kind) {
    case RecurrentKind::kLstm: return {"Sigmoid", "Tanh", "Tanh"};
    case RecurrentKind::kGru: return {"Sigmoid", "Tanh"};
    case RecurrentKind::kRnn: return {"Tanh"};
  }
  return {};
}

}  // namespace

double RecurrentActivation::apply(double x) const {
  switch (fn) {
    case Fn::kRelu: return x > 0.0 ? x : 0.0;
    case Fn::kTanh: return std::tanh(x);
    case Fn::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case Fn::kAffine: return alpha * x + beta;
    case Fn::kLeakyRelu: return x >= 0.0 ? x : alpha * x;
    case Fn::kThresholdedRelu: return x > alpha ? x : 0.0;
    case Fn::kScaledTanh: return alpha * std::tanh(beta * x);
    case Fn::kHardSigmoid: return std::max(0.0, std::min(1.0, alpha * x + beta));
    case Fn::kElu: return x >= 0.0 ? x : alpha * (std::exp(x) - 1.0);
    case Fn::kSoftsign: return x / (1.0 + std::fabs(x));
    case Fn::kSoftplus: return std::log1p(std::exp(x));
  }
  return x;
}

StatusOr<RecurrentKind> recurrent_kind(const std::string& op) {
  if (op == "LSTM") return RecurrentKind::kLstm;
  if (op == "GRU") return RecurrentKind::kGru;
  if (op == "RNN") return RecurrentKind::kRnn;
  return invalid_argument("'" + op + "' is not a recurrent op");
}

StatusOr<RecurrentAttrs> parse_recurrent_attrs(const ir::Node& node) {
  KILN_ASSIGN_OR_RETURN(RecurrentKind kind, recurrent_kind(node.op));
  const std::string where = node.describe() + ": ";
  RecurrentAttrs a;
  a.kind = kind;
  a.num_gates = kind == RecurrentKind::kLstm ? 4 : kind == RecurrentKind::kGru ? 3 : 1;
  a.num_functions = kind == RecurrentKind::kLstm ? 3 : kind == RecurrentKind::kGru ? 2 : 1;
  a.direction = node.attr_string("direction", "forward");
  if (a.direction != "forward" && a.direction != "reverse" && a.direction != "bidirectional")
    return invalid_argument(where + "attribute 'direction' is '" + a.direction +
                            "'; expected forward, reverse or bidirectional");
  a.num_directions = a.direction == "bidirectional" ? 2 : 1;
  if (node.attr("hidden_size")) {
    a.hidden_size = node.attr_int("hidden_size", -1);
    if (a.hidden_size <= 0)
      return invalid_argument(where + "attribute 'hidden_size' is " + std::to_string(a.hidden_size) +
                              "; it must be positive");
  }
  a.layout = node.attr_int("layout", 0);
  if (a.layout != 0 && a.layout != 1)
    return invalid_argument(where + "attribute 'layout' is " + std::to_string(a.layout) + "; expected 0 or 1");
  if (node.attr("clip")) {
    a.has_clip = true;
    a.clip = node.attr_float("clip", 0.0f);
    if (!(a.clip > 0.0f)) return invalid_argument(where + "attribute 'clip' must be positive");
  }
  const int64_t input_forget = node.attr_int("input_forget", 0);
  if (input_forget != 0 && kind != RecurrentKind::kLstm)
    return invalid_argument(where + "attribute 'input_forget' is an LSTM attribute");
  a.input_forget = input_forget != 0;
  const int64_t lbr = node.attr_int("linear_before_reset", 0);
  if (lbr != 0 && kind != RecurrentKind::kGru)
    return invalid_argument(where + "attribute 'linear_before_reset' is a GRU attribute");
  a.linear_before_reset = lbr != 0;

  // Activations: one list for every direction (F names per direction); a
  // list of F names for a bidirectional node serves both directions, as
  // onnxruntime accepts.
  std::vector<std::string> names;
  if (const ir::Attribute* act = node.attr("activations")) names = act->strings;
  if (names.empty()) names = default_functions(kind);
  const size_t f = static_cast<size_t>(a.num_functions);
  if (names.size() == f && a.num_directions == 2) {
    const std::vector<std::string> one_direction = names;
    names.insert(names.end(), one_direction.begin(), one_direction.end());
  }
  if (names.size() != f * static_cast<size_t>(a.num_directions))
    return invalid_argument(where + "attribute 'activations' has " + std::to_string(names.size()) +
                            " names; expected " + std::to_string(f) + " per direction (" +
                            std::to_string(f * static_cast<size_t>(a.num_directions)) + ")");
  // activation_alpha/beta are consumed in order by the functions that take
  // them; a function without a value gets its default.
  const std::vector<float> alphas = node.attr_floats("activation_alpha");
  const std::vector<float> betas = node.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  for (const std::string& name : names) {
    const std::string key = lower(name);
    const FnInfo* info = nullptr;
    for (const FnInfo& candidate : kFunctions)
      if (key == candidate.name) info = &candidate;
    if (!info)
      return unimplemented(where + "attribute 'activations': function '" + name + "' is not supported");
    RecurrentActivation fn;
    fn.fn = info->fn;
    fn.name = name;
    fn.alpha = info->default_alpha;
    fn.beta = info->default_beta;
    if (info->uses_alpha && next_alpha < alphas.size()) fn.alpha = alphas[next_alpha++];
    if (info->uses_beta && next_beta < betas.size()) fn.beta = betas[next_beta++];
    a.activations.push_back(fn);
  }
  return a;
}

}  // namespace kiln::ops

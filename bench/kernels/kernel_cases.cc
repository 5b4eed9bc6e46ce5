#include "bench/kernels/kernel_cases.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

namespace kiln::bench {
namespace {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

KernelCase gemm(int64_t m, int64_t n, int64_t k, bool smoke = false) {
  KernelCase c{"gemm_m" + std::to_string(m) + "_n" + std::to_string(n) + "_k" + std::to_string(k), "MatMul"};
  c.inputs = {{m, k}};
  c.weights = {{k, n}};
  c.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  c.smoke = smoke;
  return c;
}

// NCHW convolution, batch 1, square kernel and stride, "same"-style padding.
KernelCase conv(const std::string& tag, int64_t cin, int64_t hw, int64_t cout, int64_t kernel, int64_t stride,
                int64_t group = 1, bool smoke = false) {
  KernelCase c{"conv_" + tag, "Conv"};
  c.inputs = {{1, cin, hw, hw}};
  c.weights = {{cout, cin / group, kernel, kernel}, {cout}};
  const int64_t pad = kernel / 2;
  c.ints = {{"strides", {stride, stride}}, {"pads", {pad, pad, pad, pad}}, {"group", {group}}};
  const int64_t out_hw = (hw + 2 * pad - kernel) / stride + 1;
  c.flops = 2.0 * static_cast<double>(cout * out_hw * out_hw) * static_cast<double>(cin / group * kernel * kernel);
  c.smoke = smoke;
  return c;
}

KernelCase rows(const std::string& name, const std::string& op, Shape shape, bool smoke = false) {
  KernelCase c{name, op};
  c.inputs = {shape};
  if (op == "LayerNormalization") c.weights = {{shape.back()}, {shape.back()}};
  c.ints = {{"axis", {-1}}};
  c.smoke = smoke;
  return c;
}

// Scaled dot-product attention of `heads` heads over `tokens` tokens of
// head dim `d`: Q K^T * d^-1/2 -> Softmax -> * V (four ONNX nodes that the
// fusion plugin turns into one attention kernel). Inputs Q, K, V, each
// [heads, tokens, d]; K is transposed inside the graph as exporters do.
KernelCase attention(int64_t heads, int64_t tokens, int64_t d, bool smoke = false) {
  KernelCase c{"attention_h" + std::to_string(heads) + "_s" + std::to_string(tokens) + "_d" + std::to_string(d),
               "Attention"};
  c.inputs = {{heads, tokens, d}, {heads, tokens, d}, {heads, tokens, d}};
  c.flops = 4.0 * static_cast<double>(heads * tokens * tokens * d);
  c.smoke = smoke;
  return c;
}

KernelCase elementwise(const std::string& op, int64_t elements, bool smoke = false) {
  KernelCase c{op == "Add" ? "add_" : "relu_", op};
  c.name += std::to_string(elements * 4 >> 20) + "mib";
  if (elements * 4 < (1 << 20)) c.name = (op == "Add" ? "add_" : "relu_") + std::to_string(elements) + "el";
  c.inputs = op == "Add" ? std::vector<Shape>{{elements}, {elements}} : std::vector<Shape>{{elements}};
  c.smoke = smoke;
  return c;
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> inputs,
                          const std::string& output) {
  onnx::NodeProto* node = g->add_node();
  node->set_op_type(op);
  node->set_name(output);
  for (std::string& i : inputs) node->add_input(std::move(i));
  node->add_output(output);
  return node;
}

// The attention case's graph: out = Softmax(Q K^T * scale) V.
template <typename Input>
void add_attention_nodes(const KernelCase& c, onnx::GraphProto* g, Input input) {
  const char* names[] = {"q", "k", "v"};
  for (size_t i = 0; i < 3; ++i) input(names[i], c.inputs[i]);
  onnx::NodeProto* kt = add_node(g, "Transpose", {"k"}, "kt");
  auto* perm = kt->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  for (int64_t p : {0, 2, 1}) perm->add_ints(p);
  add_node(g, "MatMul", {"q", "kt"}, "scores");
  auto* scale = g->add_initializer();
  scale->set_name("scale");
  scale->set_data_type(onnx::TensorProto::FLOAT);
  scale->add_float_data(static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.inputs[0].back()))));
  add_node(g, "Mul", {"scores", "scale"}, "scaled");
  onnx::NodeProto* softmax = add_node(g, "Softmax", {"scaled"}, "probs");
  auto* axis = softmax->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(-1);
  add_node(g, "MatMul", {"probs", "v"}, "out");
}

// The steady harness's input `name` of `dims`: ConstantOfShape(dims, value)
// + x, built on the device (x is the graph's one input, shape [1]).
void add_steady_input(onnx::GraphProto* g, const std::string& name, const Shape& dims, float value) {
  onnx::NodeProto* shape = add_node(g, "Constant", {}, std::string(kSteadyPrefix) + name + "_shape");
  auto* st = shape->add_attribute();
  st->set_name("value");
  st->set_type(onnx::AttributeProto::TENSOR);
  st->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  st->mutable_t()->add_dims(static_cast<int64_t>(dims.size()));
  for (int64_t d : dims) st->mutable_t()->add_int64_data(d);
  onnx::NodeProto* fill = add_node(g, "ConstantOfShape", {shape->output(0)}, std::string(kSteadyPrefix) + name + "_fill");
  auto* fv = fill->add_attribute();
  fv->set_name("value");
  fv->set_type(onnx::AttributeProto::TENSOR);
  fv->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  fv->mutable_t()->add_dims(1);
  fv->mutable_t()->add_float_data(value);
  onnx::NodeProto* add = add_node(g, "Add", {fill->output(0), std::string(kSteadyPrefix) + "x"}, name);
  add->set_name(std::string(kSteadyPrefix) + name);
}

}  // namespace

std::vector<KernelCase> kernel_cases(bool smoke_only) {
  std::vector<KernelCase> all = {
      // Peak GEMM, then the batch-1 transformer shapes: vit_b_16 (M = 197)
      // and bert-base at sequence 128: QKV, attention output, MLP up, down.
      gemm(4096, 4096, 4096),
      gemm(197, 2304, 768), gemm(197, 768, 768), gemm(197, 3072, 768), gemm(197, 768, 3072),
      gemm(128, 2304, 768), gemm(128, 768, 768), gemm(128, 3072, 768), gemm(128, 768, 3072),
      gemm(64, 64, 64, true),
      // resnet50: stem, a 3x3 of each stage, 1x1 expansions; deep K at 7x7.
      conv("r50_stem7x7s2", 3, 224, 64, 7, 2),
      conv("r50_3x3_c64_56", 64, 56, 64, 3, 1), conv("r50_3x3_c128_28", 128, 28, 128, 3, 1),
      conv("r50_3x3_c256_14", 256, 14, 256, 3, 1), conv("r50_3x3_c512_7", 512, 7, 512, 3, 1),
      conv("r50_1x1_c64_256_56", 64, 56, 256, 1, 1), conv("r50_1x1_c2048_512_7", 2048, 7, 512, 1, 1),
      // mobilenet_v2: pointwise expand/project and depthwise 3x3.
      conv("mb2_pw_c24_144_56", 24, 56, 144, 1, 1), conv("mb2_pw_c960_160_7", 960, 7, 160, 1, 1),
      conv("mb2_dw3x3_c144_56", 144, 56, 144, 3, 1, 144), conv("mb2_dw3x3s2_c144_56", 144, 56, 144, 3, 2, 144),
      conv("mb2_dw3x3_c960_7", 960, 7, 960, 3, 1, 960),
      conv("small_3x3_c8_16", 8, 16, 8, 3, 1, 1, true), conv("small_dw3x3_c16_16", 16, 16, 16, 3, 1, 16, true),
      // Row kernels: attention scores of vit/bert, the layernorms.
      rows("softmax_12x197x197", "Softmax", {12, 197, 197}), rows("softmax_12x128x128", "Softmax", {12, 128, 128}),
      rows("layernorm_197x768", "LayerNormalization", {197, 768}),
      // Whole attention: vit_b_16 (197 tokens), bert-base at 128, a swin_t
      // stage-1 batch of windows (64 windows x 3 heads, 49 tokens, d 32).
      attention(12, 197, 64), attention(12, 128, 64), attention(192, 49, 32), attention(2, 16, 8, true),
      rows("softmax_4x64", "Softmax", {4, 64}, true), rows("layernorm_4x64", "LayerNormalization", {4, 64}, true),
      // Memory-bound: 64 MiB of fp32 per operand.
      elementwise("Relu", 16 << 20), elementwise("Add", 16 << 20), elementwise("Relu", 4096, true),
      elementwise("Add", 4096, true),
  };
  if (!smoke_only) return all;
  std::vector<KernelCase> smoke;
  for (auto& c : all)
    if (c.smoke) smoke.push_back(std::move(c));
  return smoke;
}

std::string case_model(const KernelCase& c, bool steady) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name(c.name);
  auto declare = [](onnx::ValueInfoProto* v, const std::string& name, const Shape& dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  if (steady) declare(g->add_input(), std::string(kSteadyPrefix) + "x", {1});
  // The op's input `name`: a graph input, or with `steady` built on the device.
  float fill = 0.25f;
  auto input = [&](const std::string& name, const Shape& dims) {
    if (steady) {
      add_steady_input(g, name, dims, fill);
      fill *= -0.5f;
    } else {
      declare(g->add_input(), name, dims);
    }
  };
  if (c.op == "Attention") {
    add_attention_nodes(c, g, input);
  } else {
    std::vector<std::string> in;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      input("in" + std::to_string(i), c.inputs[i]);
      in.push_back("in" + std::to_string(i));
    }
    onnx::NodeProto* node = add_node(g, c.op, in, "out");
    node->set_name(c.name);
    // Weights small and centred so that deep reductions stay in fp16's range.
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
    for (size_t i = 0; i < c.weights.size(); ++i) {
      auto* w = g->add_initializer();
      w->set_name("w" + std::to_string(i));
      w->set_data_type(onnx::TensorProto::FLOAT);
      for (int64_t d : c.weights[i]) w->add_dims(d);
      std::string raw(static_cast<size_t>(numel(c.weights[i])) * sizeof(float), '\0');
      for (size_t k = 0; k < raw.size(); k += sizeof(float)) {
        const float v = dist(rng);
        std::memcpy(raw.data() + k, &v, sizeof(float));
      }
      w->set_raw_data(std::move(raw));
      node->add_input(w->name());
    }
    for (const auto& [name, values] : c.ints) {
      auto* a = node->add_attribute();
      a->set_name(name);
      if (name == "axis" || name == "group") {
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(values.at(0));
      } else {
        a->set_type(onnx::AttributeProto::INTS);
        for (int64_t v : values) a->add_ints(v);
      }
    }
  }
  std::string result = "out";
  if (steady) {  // one float back: the sum of the op's output
    result = std::string(kSteadyPrefix) + "sum";
    auto* keep = add_node(g, "ReduceSum", {"out"}, result)->add_attribute();
    keep->set_name("keepdims");
    keep->set_type(onnx::AttributeProto::INT);
    keep->set_i(0);
  }
  onnx::ValueInfoProto* out = g->add_output();
  out->set_name(result);
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m.SerializeAsString();
}

std::string cases_json(const std::vector<KernelCase>& cases) {
  auto shapes = [](const std::vector<Shape>& list) {
    std::ostringstream s;
    s << "[";
    for (size_t i = 0; i < list.size(); ++i) {
      s << (i ? ", [" : "[");
      for (size_t k = 0; k < list[i].size(); ++k) s << (k ? ", " : "") << list[i][k];
      s << "]";
    }
    s << "]";
    return s.str();
  };
  std::ostringstream s;
  s << "[\n";
  for (size_t i = 0; i < cases.size(); ++i) {
    const KernelCase& c = cases[i];
    s << "  {\"name\": \"" << c.name << "\", \"op\": \"" << c.op << "\", \"inputs\": " << shapes(c.inputs)
      << ", \"weights\": " << shapes(c.weights) << ", \"flops\": " << c.flops << ", \"attrs\": {";
    size_t k = 0;
    for (const auto& [name, values] : c.ints) {
      std::vector<Shape> one = {values};
      std::string list = shapes(one);
      s << (k++ ? ", " : "") << "\"" << name << "\": " << list.substr(1, list.size() - 2);
    }
    s << "}}" << (i + 1 < cases.size() ? "," : "") << "\n";
  }
  s << "]\n";
  return s.str();
}

}  // namespace kiln::bench

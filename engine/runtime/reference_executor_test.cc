// Tests for the reference executor and the built-in op registry: whole
// graphs run, inputs are checked (count, dtype, shape, consistent symbols),
// errors name the node, and every op the foundation claims is registered.
#include "engine/runtime/reference_executor.h"

#include <gtest/gtest.h>

#include "engine/ir/text.h"

namespace kiln::runtime {
namespace {

std::unique_ptr<ir::Graph> parse(const char* text) {
  auto g = ir::parse_graph(text);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return std::move(g).value();
}

constexpr const char* kMlp = R"(graph @mlp {
  input %x : f32[n,2]
  input %y : f32[n,2]
  const %w : f32[2,3] = dense<[1.0,0.0,-1.0,0.5,2.0,1.0]>
  const %b : f32[3] = dense<[0.0,-1.0,1.0]>
  %s = Add(%x, %y) : f32[n,2]
  %h = MatMul(%s, %w) : f32[n,3]
  %z = Add(%h, %b) : f32[n,3]
  %r = Relu(%z) : f32[n,3]
  %m = ReduceSum(%r, none) {keepdims = 0} : f32[]
  return %r, %m
})";

TEST(ReferenceExecutorTest, RunsAChainWithSymbolicBatch) {
  auto g = parse(kMlp);
  ReferenceExecutor exec(*g);
  Tensor x = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  Tensor y = Tensor::from_vector<float>({2, 2}, {0, 0, -3, -4});
  auto out = exec.run({x, y});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  // s = [[1,2],[0,0]]; h = [[2,4,1],[0,0,0]]; z = [[2,3,2],[0,-1,1]]; r = relu(z)
  const std::vector<float> expected = {2, 3, 2, 0, 0, 1};
  ASSERT_EQ((*out)[0].shape(), (Shape{2, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ((*out)[0].data<float>()[i], expected[static_cast<size_t>(i)]);
  EXPECT_FLOAT_EQ((*out)[1].data<float>()[0], 8.0f);
  // The same executor serves another batch size.
  auto out3 = exec.run({Tensor::from_vector<float>({3, 2}, std::vector<float>(6, 1.0f)),
                        Tensor::from_vector<float>({3, 2}, std::vector<float>(6, 0.0f))});
  ASSERT_TRUE(out3.ok()) << out3.status().to_string();
  EXPECT_EQ((*out3)[0].shape(), (Shape{3, 3}));
}

TEST(ReferenceExecutorTest, InputChecksNameTheInput) {
  auto g = parse(kMlp);
  ReferenceExecutor exec(*g);
  Tensor x = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  auto wrong_count = exec.run({x});
  ASSERT_FALSE(wrong_count.ok());
  EXPECT_NE(wrong_count.status().message().find("2 inputs"), std::string::npos);

  auto wrong_dtype = exec.run({x, Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4})});
  ASSERT_FALSE(wrong_dtype.ok());
  EXPECT_NE(wrong_dtype.status().message().find("'y'"), std::string::npos) << wrong_dtype.status().message();

  // 'n' is bound to 2 by x, so y with 3 rows conflicts.
  auto conflict = exec.run({x, Tensor::from_vector<float>({3, 2}, std::vector<float>(6, 0.0f))});
  ASSERT_FALSE(conflict.ok());
  EXPECT_NE(conflict.status().message().find("'n'"), std::string::npos) << conflict.status().message();

  auto by_name = exec.run_named({{"x", x}, {"z", x}});
  ASSERT_FALSE(by_name.ok());
}

TEST(ReferenceExecutorTest, KernelErrorsNameTheNode) {
  auto g = parse(R"(graph @bad {
  input %a : f32[2,3]
  input %b : f32[4,5]
  %c = MatMul(%a, %b) : f32[2,5] loc("the_matmul")
  return %c
})");
  ReferenceExecutor exec(*g);
  auto out = exec.run({Tensor::from_vector<float>({2, 3}, std::vector<float>(6, 1.0f)),
                       Tensor::from_vector<float>({4, 5}, std::vector<float>(20, 1.0f))});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("the_matmul"), std::string::npos) << out.status().message();
}

TEST(ReferenceExecutorTest, UnknownOpIsUnimplemented) {
  auto g = parse(R"(graph @g {
  input %a : f32[2]
  %c = FrobnicateOp(%a) : f32[2] loc("f")
  return %c
})");
  ReferenceExecutor exec(*g);
  auto out = exec.run({Tensor::from_vector<float>({2}, {1, 2})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(out.status().message().find("FrobnicateOp"), std::string::npos);
}

TEST(OpRegistryTest, EveryClaimedOpIsRegisteredOnce) {
  const auto& r = ops::OpRegistry::builtin();
  EXPECT_TRUE(r.registration_errors().empty()) << r.registration_errors()[0];
  // The ops the foundation issue requires (torchvision zoo + BERT-like encoder).
  for (const char* op :
       {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Erf", "Exp", "Tanh", "Sigmoid", "Relu", "Clip", "HardSigmoid",
        "HardSwish", "LeakyRelu", "Neg", "Abs", "Conv", "ConvTranspose", "Gemm", "MatMul", "BatchNormalization",
        "LayerNormalization", "Softmax", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "MaxPool", "AveragePool",
        "GlobalAveragePool", "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice",
        "Gather", "Shape", "ConstantOfShape", "Expand", "Range", "Where", "Equal", "Greater", "Less", "Not", "Mod",
        "Cast", "Pad", "Resize", "ScatterND", "DepthToSpace", "SpaceToDepth", "Identity", "Dropout", "Constant", "If"}) {
    const ops::OpSchema* s = r.find("", op);
    ASSERT_NE(s, nullptr) << op << " is not registered";
    EXPECT_NE(s->infer, nullptr) << op;
    EXPECT_NE(s->kernel, nullptr) << op;
  }
}

}  // namespace
}  // namespace kiln::runtime

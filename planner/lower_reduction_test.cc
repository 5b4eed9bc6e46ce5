// Differential tests of the reduction and normalization lowerings
// (lower_reduction.cc, lower_normalization.cc) against the reference
// executor in every backend config (check_op), plus a check that every
// kernel variant they generate — shared-memory and subgroup combines,
// constant and symbolic sizes, buffers and images — passes spirv-val.
#include <cstdio>
#include <array>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "engine/ops/op_registry.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/execution_plan.h"
#include "planner/glsl_codegen.h"
#include "planner/testing/op_check.h"
#include "platform/vulkan/shader_compiler.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner {
namespace {

using testing::check_op;
using testing::expect_valid_spirv;
using testing::OpCheck;
using testing::random_tensor;

class LowerReduction : public vk::testing::VulkanTest {};

ir::Attribute i_attr(int64_t v) { return ir::Attribute::of_int(v); }
ir::Attribute f_attr(float v) { return ir::Attribute::of_float(v); }
ir::Attribute ints_attr(std::vector<int64_t> v) { return ir::Attribute::of_ints(std::move(v)); }

// Small integers as floats: exact in fp16 too, and full of ties (ArgMax's
// first/last index rules are then tested on every config).
Tensor small_ints(const Shape& shape, uint64_t seed, int lo = -5, int hi = 5) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) x = static_cast<float>(dist(rng));
  return Tensor::from_vector<float>(shape, v);
}

OpCheck reduce(const std::string& op, Tensor x, std::vector<int64_t> axes, int64_t keepdims) {
  OpCheck c;
  c.op = op;
  c.inputs = {std::move(x)};
  if (!axes.empty()) {
    c.inputs.push_back(Tensor::from_vector<int64_t>({static_cast<int64_t>(axes.size())}, axes));
    c.constant_inputs = {1};
  }
  c.attrs["keepdims"] = i_attr(keepdims);
  return c;
}

// A one-node graph with shapes inferred; inputs of `shapes` (symbolic dims allowed).
ir::Graph one_node(const std::string& op, const std::vector<ir::SymShape>& shapes,
                   std::map<std::string, ir::Attribute> attrs, std::vector<Tensor> constants = {}) {
  ir::Graph g;
  std::vector<ir::ValueId> ins;
  for (size_t i = 0; i < shapes.size(); ++i) ins.push_back(g.add_input("in" + std::to_string(i), DType::kFloat32, shapes[i]));
  for (size_t i = 0; i < constants.size(); ++i) ins.push_back(g.add_constant("c" + std::to_string(i), constants[i]));
  const ir::ValueId out = g.add_value("out", DType::kUndefined, ir::SymShape::unranked());
  const ir::NodeId n = g.add_node(op, ins, {out}, std::move(attrs));
  const Status finished = testing::finish_one_node_graph(g, n);
  EXPECT_TRUE(finished.ok()) << finished.to_string();
  return g;
}

// --- Reduce* ---------------------------------------------------------------------------

TEST_F(LowerReduction, EveryReduceOpShortAndLongRows) {
  const char* ops[] = {"ReduceSum", "ReduceMean",    "ReduceMax",  "ReduceMin",         "ReduceProd",
                       "ReduceL1",  "ReduceL2",      "ReduceLogSumExp", "ReduceSumSquare"};
  uint64_t seed = 1;
  for (const char* op : ops) {
    SCOPED_TRACE(op);
    const bool prod = std::string(op) == "ReduceProd";
    const float lo = prod ? 0.97f : -2.0f, hi = prod ? 1.03f : 2.0f;
    // A short row (map kernel), keepdims.
    EXPECT_TRUE(check_op(reduce(op, random_tensor({3, 5, 7}, seed++, lo, hi), {-1}, 1)));
    // Rows longer than a workgroup, not a multiple of 4: without keepdims
    // four rows share a workgroup; with it one row is read four elements
    // at a time along the vector axis.
    for (int64_t keepdims : {0, 1}) {
      OpCheck c = reduce(op, random_tensor({3, 1001}, seed++, lo, hi), {1}, keepdims);
      c.tol_f16 = 3e-2;
      EXPECT_TRUE(check_op(c)) << "keepdims " << keepdims;
    }
  }
}

TEST_F(LowerReduction, AxesAnywhereInRanks1To4) {
  uint64_t seed = 100;
  // Non-contiguous axes, negative axes, the packed channel axis of an NCHW
  // image with and without keepdims, reduce-all to a scalar, rank 1.
  EXPECT_TRUE(check_op(reduce("ReduceSum", random_tensor({6, 5, 70}, seed++), {0, 2}, 1)));
  EXPECT_TRUE(check_op(reduce("ReduceMax", random_tensor({6, 5, 70}, seed++), {0, -1}, 0)));
  EXPECT_TRUE(check_op(reduce("ReduceMean", random_tensor({2, 40, 5, 6}, seed++), {1}, 1)));
  EXPECT_TRUE(check_op(reduce("ReduceMean", random_tensor({2, 40, 5, 6}, seed++), {1}, 0)));
  EXPECT_TRUE(check_op(reduce("ReduceSum", random_tensor({2, 7, 9, 11}, seed++), {-2, -1}, 1)));
  EXPECT_TRUE(check_op(reduce("ReduceMin", random_tensor({2, 3, 9, 11}, seed++), {0, 1}, 0)));
  EXPECT_TRUE(check_op(reduce("ReduceSum", random_tensor({3, 4, 50}, seed++), {}, 0)));  // all axes
  EXPECT_TRUE(check_op(reduce("ReduceL2", random_tensor({1000}, seed++), {0}, 1)));
  EXPECT_TRUE(check_op(reduce("ReduceLogSumExp", random_tensor({5}, seed++, -50, 50), {0}, 0)));
}

TEST_F(LowerReduction, MoreRowsThanOneGridDimension) {
  // 70000 one-element-per-texel rows: the workgroup grid spills into y.
  OpCheck c = reduce("ReduceMax", random_tensor({70000, 33}, 150), {1}, 1);
  c.configs = {{Storage::kBuffer, ElemType::kF32}};
  EXPECT_TRUE(check_op(c));
}

TEST_F(LowerReduction, AxesAttributeAndNoop) {
  // Opset < 18 style: axes as an attribute.
  OpCheck c;
  c.op = "ReduceMean";
  c.inputs = {random_tensor({4, 6, 33}, 200)};
  c.attrs["axes"] = ints_attr({1});
  c.attrs["keepdims"] = i_attr(0);
  EXPECT_TRUE(check_op(c));
  // Empty axes with noop_with_empty_axes: the identity.
  OpCheck n = reduce("ReduceSum", random_tensor({3, 5}, 201), {}, 1);
  n.attrs["noop_with_empty_axes"] = i_attr(1);
  EXPECT_TRUE(check_op(n));
}

// Axes given per run (a small graph input, not an initializer): the
// generic kernel whose reduced axes are host parameters.
TEST_F(LowerReduction, AxesAsRunInput) {
  const char* ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                       "ReduceL1",  "ReduceL2",   "ReduceLogSumExp", "ReduceSumSquare"};
  uint64_t seed = 300;
  for (const char* op : ops)
    for (int64_t keepdims : {0, 1}) {
      SCOPED_TRACE(std::string(op) + " keepdims=" + std::to_string(keepdims));
      OpCheck c = reduce(op, random_tensor({3, 4, 5}, seed++), {-1, 0}, keepdims);
      c.constant_inputs.clear();
      c.tol_f32 = 1e-4;
      EXPECT_TRUE(check_op(c));
    }
  // Empty axes: all of them, or the identity with noop_with_empty_axes.
  for (int64_t noop : {0, 1}) {
    OpCheck c = reduce("ReduceSum", random_tensor({3, 5}, seed++), {}, 1);
    c.inputs.push_back(Tensor::from_vector<int64_t>({0}, {}));
    c.attrs["noop_with_empty_axes"] = i_attr(noop);
    EXPECT_TRUE(check_op(c));
  }
  std::vector<int32_t> v(4 * 7);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i * 37 % 23) - 11;
  OpCheck ints = reduce("ReduceMax", Tensor::from_vector<int32_t>({4, 7}, v), {1}, 0);
  ints.constant_inputs.clear();
  EXPECT_TRUE(check_op(ints));
}

TEST_F(LowerReduction, IntegerReductions) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int32_t> dist(-1000, 1000);
  std::vector<int32_t> v(4 * 77);
  for (int32_t& x : v) x = dist(rng);
  const Tensor x = Tensor::from_vector<int32_t>({4, 77}, v);
  EXPECT_TRUE(check_op(reduce("ReduceMax", x, {1}, 1)));
  EXPECT_TRUE(check_op(reduce("ReduceMin", x, {0}, 0)));
  EXPECT_TRUE(check_op(reduce("ReduceSum", x, {1}, 0)));
  EXPECT_TRUE(check_op(reduce("ReduceL1", x, {1}, 1)));
  for (const char* op : {"ArgMax", "ArgMin"}) {
    OpCheck c;
    c.op = op;
    c.inputs = {x};
    c.attrs = {{"axis", i_attr(1)}, {"keepdims", i_attr(0)}};
    EXPECT_TRUE(check_op(c)) << op;
  }
}

// --- ArgMax / ArgMin -----------------------------------------------------------------------

TEST_F(LowerReduction, ArgMaxArgMinWithTies) {
  struct Case {
    Shape shape;
    int64_t axis, keepdims, last;
  };
  const Case cases[] = {
      {{4, 7}, 1, 1, 0},        {{4, 7}, -1, 0, 1},         {{3, 1000}, -1, 1, 0},  {{3, 1000}, 1, 0, 1},
      {{2, 50, 3}, 1, 0, 0},    {{2, 50, 3}, -2, 1, 1},     {{2, 3, 5, 6}, 1, 1, 0}, {{37}, 0, 0, 0},
  };
  uint64_t seed = 300;
  for (const Case& k : cases) {
    for (const char* op : {"ArgMax", "ArgMin"}) {
      SCOPED_TRACE(std::string(op) + " axis " + std::to_string(k.axis) + " keepdims " + std::to_string(k.keepdims) +
                   " last " + std::to_string(k.last));
      OpCheck c;
      c.op = op;
      c.inputs = {small_ints(k.shape, seed++)};
      c.attrs = {{"axis", i_attr(k.axis)}, {"keepdims", i_attr(k.keepdims)}, {"select_last_index", i_attr(k.last)}};
      c.tol_f32 = c.tol_f16 = 0;
      EXPECT_TRUE(check_op(c));
    }
  }
}

// --- Softmax family ---------------------------------------------------------------------------

TEST_F(LowerReduction, SoftmaxAndLogSoftmaxOverEveryAxisKind) {
  struct Case {
    Shape shape;
    int64_t axis;
  };
  // Last axis (rows along the buffer's vector axis), the packed channel
  // axis of an NCHW image, the last axis of an NCHW image (lanes across
  // channels), the first axis, long rows.
  // Rows up to 8 items per invocation are held in registers; 8200 are not.
  const Case cases[] = {{{2, 3, 7}, -1}, {{2, 1001}, 1}, {{2, 37, 3, 5}, 1}, {{2, 3, 5, 37}, -1},
                        {{5, 6}, 0},     {{9}, 0},       {{1, 8200}, -1}};
  uint64_t seed = 400;
  for (const Case& k : cases) {
    for (const char* op : {"Softmax", "LogSoftmax"}) {
      SCOPED_TRACE(std::string(op) + " axis " + std::to_string(k.axis));
      OpCheck c;
      c.op = op;
      c.inputs = {random_tensor(k.shape, seed++, -4, 4)};
      c.attrs["axis"] = i_attr(k.axis);
      EXPECT_TRUE(check_op(c));
    }
  }
}

TEST_F(LowerReduction, Hardmax) {
  uint64_t seed = 500;
  for (auto [shape, axis] : std::vector<std::pair<Shape, int64_t>>{{{3, 50}, 1}, {{2, 6, 3, 5}, 1}, {{2, 6, 3, 5}, -1}}) {
    OpCheck c;
    c.op = "Hardmax";
    c.inputs = {small_ints(shape, seed++)};
    c.attrs["axis"] = i_attr(axis);
    c.tol_f32 = c.tol_f16 = 0;
    EXPECT_TRUE(check_op(c)) << "axis " << axis;
  }
}

// --- Normalizations ---------------------------------------------------------------------------

TEST_F(LowerReduction, LayerNormalization) {
  struct Case {
    Shape x;
    int64_t axis;
    bool bias;
  };
  const Case cases[] = {{{2, 5, 40}, -1, true}, {{2, 5, 40}, -2, true}, {{2, 3, 4, 37}, -1, true},
                        {{2, 9, 4, 6}, 1, false}, {{1000}, 0, true}};
  uint64_t seed = 600;
  for (const Case& k : cases) {
    SCOPED_TRACE("axis " + std::to_string(k.axis));
    const size_t a = static_cast<size_t>(k.axis < 0 ? k.axis + static_cast<int64_t>(k.x.size()) : k.axis);
    const Shape ps(k.x.begin() + static_cast<std::ptrdiff_t>(a), k.x.end());
    OpCheck c;
    c.op = "LayerNormalization";
    c.inputs = {random_tensor(k.x, seed++, -3, 5), random_tensor(ps, seed++, 0.5f, 1.5f)};
    if (k.bias) c.inputs.push_back(random_tensor(ps, seed++));
    c.constant_inputs = {1, 2};
    c.attrs = {{"axis", i_attr(k.axis)}, {"epsilon", f_attr(1e-3f)}};
    EXPECT_TRUE(check_op(c));
  }
}

TEST_F(LowerReduction, LayerNormalizationMeanAndInvStdDevOutputs) {
  struct Case {
    Shape x;
    int64_t axis;
  };
  // Rows along the vector axis, rows across it (NCHW image, lanes across
  // channels), a single row (axis 0).
  const Case cases[] = {{{3, 5, 40}, -1}, {{2, 6, 4, 37}, -1}, {{2, 6, 4, 5}, 2}, {{4, 9}, 0}};
  uint64_t seed = 650;
  for (const Case& k : cases) {
    const size_t a = static_cast<size_t>(k.axis < 0 ? k.axis + static_cast<int64_t>(k.x.size()) : k.axis);
    const Shape ps(k.x.begin() + static_cast<std::ptrdiff_t>(a), k.x.end());
    OpCheck c;
    c.op = "LayerNormalization";
    c.inputs = {random_tensor(k.x, seed++, -3, 5), random_tensor(ps, seed++, 0.5f, 1.5f), random_tensor(ps, seed++)};
    c.constant_inputs = {1, 2};
    c.attrs = {{"axis", i_attr(k.axis)}};
    c.num_outputs = 3;
    EXPECT_TRUE(check_op(c)) << "axis " << k.axis;
  }
}

TEST_F(LowerReduction, InstanceAndGroupNormalization) {
  OpCheck in;
  in.op = "InstanceNormalization";
  in.inputs = {random_tensor({2, 6, 5, 7}, 700, -2, 4), random_tensor({6}, 701), random_tensor({6}, 702)};
  in.constant_inputs = {1, 2};
  EXPECT_TRUE(check_op(in));
  in.inputs = {random_tensor({2, 5, 100}, 703, -2, 4), random_tensor({5}, 704), random_tensor({5}, 705)};
  EXPECT_TRUE(check_op(in));

  // Per-channel (opset 21) and per-group (opset 18) scale and bias.
  for (int64_t params : {6, 3}) {
    OpCheck g;
    g.op = "GroupNormalization";
    g.inputs = {random_tensor({2, 6, 4, 5}, 706, -2, 4), random_tensor({params}, 707), random_tensor({params}, 708)};
    g.constant_inputs = {1, 2};
    g.attrs = {{"num_groups", i_attr(3)}, {"epsilon", f_attr(1e-4f)}};
    EXPECT_TRUE(check_op(g)) << params << " parameters";
  }
}

TEST_F(LowerReduction, GroupNormalizationGroupsSplittingTexels) {
  // 10 channels in 5 groups: groups of 2 channels share texels of an NCHW
  // image (the two-pass form); rank 3 too.
  for (Shape shape : {Shape{2, 10, 3, 7}, Shape{1, 10, 45}}) {
    OpCheck g;
    g.op = "GroupNormalization";
    g.inputs = {random_tensor(shape, 710, -2, 4), random_tensor({10}, 711), random_tensor({10}, 712)};
    g.constant_inputs = {1, 2};
    g.attrs = {{"num_groups", i_attr(5)}};
    EXPECT_TRUE(check_op(g)) << "rank " << shape.size();
  }
}

TEST_F(LowerReduction, LpNormalization) {
  uint64_t seed = 800;
  for (int64_t p : {1, 2}) {
    for (auto [shape, axis] : std::vector<std::pair<Shape, int64_t>>{{{3, 70}, -1}, {{2, 6, 3, 5}, 1}}) {
      OpCheck c;
      c.op = "LpNormalization";
      c.inputs = {random_tensor(shape, seed++)};
      c.attrs = {{"axis", i_attr(axis)}, {"p", i_attr(p)}};
      EXPECT_TRUE(check_op(c)) << "p " << p << " axis " << axis;
    }
  }
  // A zero row stays zero.
  OpCheck z;
  z.op = "LpNormalization";
  z.inputs = {Tensor::from_vector<float>({2, 3}, {0, 0, 0, 1, 2, 2})};
  EXPECT_TRUE(check_op(z));
}

TEST_F(LowerReduction, BatchNormalizationConstantAndComputed) {
  for (bool constant : {true, false}) {
    for (Shape shape : {Shape{2, 5, 3, 7}, Shape{3, 5}}) {
      OpCheck c;
      c.op = "BatchNormalization";
      c.inputs = {random_tensor(shape, 900, -2, 2), random_tensor({5}, 901, 0.5f, 1.5f), random_tensor({5}, 902),
                  random_tensor({5}, 903), random_tensor({5}, 904, 0.2f, 2.0f)};
      if (constant) c.constant_inputs = {1, 2, 3, 4};
      c.attrs["epsilon"] = f_attr(1e-3f);
      EXPECT_TRUE(check_op(c)) << (constant ? "constant" : "computed") << " rank " << shape.size();
    }
  }
}


// Symbolic dims reach the kernels as push constants: one compiled model
// runs two input shapes (row counts, row lengths, pads of SAME windows).
TEST_F(LowerReduction, SymbolicShapesOneModelTwoShapes) {
  const ir::Dim n = ir::Dim::symbol("n"), h = ir::Dim::symbol("h"), w = ir::Dim::symbol("w");
  struct Case {
    std::string name;
    ir::Graph graph;
  };
  std::vector<Case> cases;
  cases.push_back({"softmax", one_node("Softmax", {ir::SymShape({n, ir::Dim(3), h, w})}, {{"axis", i_attr(-1)}})});
  cases.push_back({"mean", one_node("ReduceMean", {ir::SymShape({n, ir::Dim(6), h, w})}, {},
                                    {Tensor::from_vector<int64_t>({2}, {2, 3})})});
  cases.push_back({"argmin", one_node("ArgMin", {ir::SymShape({n, ir::Dim(6), h, w})}, {{"axis", i_attr(3)}})});
  cases.push_back({"layernorm", one_node("LayerNormalization", {ir::SymShape({n, h, ir::Dim(64)})},
                                         {{"axis", i_attr(-1)}}, {random_tensor({64}, 1), random_tensor({64}, 2)})});
  cases.push_back({"maxpool", one_node("MaxPool", {ir::SymShape({n, ir::Dim(5), h, w})},
                                       {{"kernel_shape", ints_attr({3, 3})},
                                        {"strides", ints_attr({2, 2})},
                                        {"auto_pad", ir::Attribute::of_string("SAME_UPPER")}})});
  cases.push_back({"avgpool", one_node("AveragePool", {ir::SymShape({n, ir::Dim(5), h, w})},
                                       {{"kernel_shape", ints_attr({2, 3})},
                                        {"strides", ints_attr({2, 1})},
                                        {"count_include_pad", i_attr(1)},
                                        {"auto_pad", ir::Attribute::of_string("SAME_LOWER")}})});
  for (const Case& c : cases) {
    runtime::ReferenceExecutor reference(c.graph);
    for (Storage storage : {Storage::kBuffer, Storage::kImage}) {
      runtime::VulkanModelOptions options;
      options.plan.storage = storage;
      auto model = runtime::VulkanModel::compile(device(), *vk::testing::test_kernel_cache(), c.graph, options);
      ASSERT_TRUE(model.ok()) << c.name << ": " << model.status().to_string();
      EXPECT_EQ((*model)->plan().fallback_count(), 0u) << c.name;
      for (auto [nv, hv, wv] : std::vector<std::array<int64_t, 3>>{{1, 5, 7}, {2, 9, 40}}) {
        SCOPED_TRACE(c.name + " " + storage_name(storage) + " h=" + std::to_string(hv) + " w=" + std::to_string(wv));
        const Shape shape = c.name == "layernorm" ? Shape{nv, hv, 64}
                            : c.name == "softmax" ? Shape{nv, 3, hv, wv}
                            : c.name == "mean" || c.name == "argmin" ? Shape{nv, 6, hv, wv}
                                                                     : Shape{nv, 5, hv, wv};
        const std::vector<Tensor> inputs = {c.name == "argmin" ? small_ints(shape, 11) : random_tensor(shape, 11)};
        auto want = reference.run(inputs);
        auto got = (*model)->run(inputs);
        ASSERT_TRUE(want.ok()) << want.status().to_string();
        ASSERT_TRUE(got.ok()) << got.status().to_string();
        ASSERT_EQ((*want)[0].shape(), (*got)[0].shape());
        for (int64_t i = 0; i < (*want)[0].numel(); ++i)
          ASSERT_NEAR((*want)[0].get_f64(i), (*got)[0].get_f64(i), 1e-4) << "element " << i;
      }
    }
  }
}

TEST(LowerReductionRegistry, EveryFamilyOpIsRegisteredOnce) {
  const LoweringRegistry& r = LoweringRegistry::builtin();
  EXPECT_TRUE(r.registration_errors().empty()) << r.registration_errors().front();
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "Softmax", "LogSoftmax", "Hardmax",
                         "LayerNormalization", "InstanceNormalization", "GroupNormalization", "LpNormalization",
                         "BatchNormalization", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool",
                         "GlobalMaxPool", "GlobalLpPool"})
    EXPECT_NE(r.find("", op), nullptr) << op;
}

// --- spirv-val of every variant -----------------------------------------------------------------

TEST(LowerReductionSpirv, SharedAndSubgroupVariantsWithSymbolicDims) {
  const ir::Dim n = ir::Dim::symbol("n"), m = ir::Dim::symbol("m");
  struct G {
    std::string name;
    ir::Graph graph;
  };
  std::vector<G> graphs;
  graphs.push_back({"sum", one_node("ReduceSum", {ir::SymShape({n, m})}, {{"keepdims", i_attr(0)}},
                                    {Tensor::from_vector<int64_t>({1}, {1})})});
  graphs.push_back({"lse", one_node("ReduceLogSumExp", {ir::SymShape({n, ir::Dim(300)})}, {},
                                    {Tensor::from_vector<int64_t>({1}, {-1})})});
  graphs.push_back({"max", one_node("ReduceMax", {ir::SymShape({n, ir::Dim(8), m, ir::Dim(5)})}, {},
                                    {Tensor::from_vector<int64_t>({2}, {0, 2})})});
  graphs.push_back({"argmax", one_node("ArgMax", {ir::SymShape({n, m})}, {{"axis", i_attr(1)}})});
  graphs.push_back({"softmax", one_node("Softmax", {ir::SymShape({n, ir::Dim(3), m, m})}, {{"axis", i_attr(-1)}})});
  graphs.push_back({"hardmax", one_node("Hardmax", {ir::SymShape({n, ir::Dim(7), m, m})}, {{"axis", i_attr(1)}})});
  graphs.push_back({"layernorm", one_node("LayerNormalization", {ir::SymShape({n, m, ir::Dim(64)})},
                                          {{"axis", i_attr(-1)}},
                                          {random_tensor({64}, 1), random_tensor({64}, 2)})});
  graphs.push_back({"instnorm", one_node("InstanceNormalization", {ir::SymShape({n, ir::Dim(6), m, m})}, {},
                                         {random_tensor({6}, 1), random_tensor({6}, 2)})});
  graphs.push_back({"lpnorm", one_node("LpNormalization", {ir::SymShape({n, m})}, {{"axis", i_attr(0)}})});
  for (bool subgroups : {false, true}) {
    TargetInfo target;
    target.subgroup_arithmetic = subgroups;
    target.subgroup_size = subgroups ? 32 : 0;
    target.vulkan_version = (1u << 22) | (1u << 12);
    // The device tests run whichever combine the test device has; here both
    // compile, the subgroup one (lavapipe's) on buffers only.
    for (Storage storage : {Storage::kBuffer, Storage::kImage}) {
      if (subgroups && storage == Storage::kImage) continue;
      for (const G& g : graphs) {
        PlanOptions options;
        options.storage = storage;
        auto plan = build_plan(g.graph, target, options);
        ASSERT_TRUE(plan.ok()) << g.name << ": " << plan.status().to_string();
        EXPECT_EQ(plan->fallback_count(), 0u) << g.name;
        for (const PlanStep& step : plan->steps) {
          if (step.kind != PlanStep::Kind::kDispatch) continue;
          auto k = generate_glsl(step.kernel, target);
          ASSERT_TRUE(k.ok()) << g.name << ": " << k.status().to_string();
          expect_valid_spirv(k->glsl, g.name + (subgroups ? "_sg_" : "_sh_") + storage_name(storage));
        }
      }
    }
  }
}

// Softmax and LayerNorm read a row into registers once when each
// invocation's share fits (lower_rows.h: cached_items), else every pass
// reads it again.
TEST(LowerReductionSpirv, RowsInRegistersWhenTheyFit) {
  struct Case {
    ir::Graph graph;
    bool cached;
  };
  std::vector<Case> cases;
  cases.push_back({one_node("Softmax", {ir::SymShape({12, 197, 197})}, {{"axis", i_attr(-1)}}), true});
  cases.push_back({one_node("Softmax", {ir::SymShape({2, 9000})}, {{"axis", i_attr(-1)}}), false});
  cases.push_back({one_node("Softmax", {ir::SymShape({ir::Dim::symbol("n"), ir::Dim::symbol("m")})},
                            {{"axis", i_attr(-1)}}),
                   false});
  cases.push_back({one_node("LayerNormalization", {ir::SymShape({197, 768})}, {{"axis", i_attr(-1)}},
                            {random_tensor({768}, 1), random_tensor({768}, 2)}),
                   true});
  for (const Case& c : cases) {
    auto plan = build_plan(c.graph, TargetInfo{}, PlanOptions{});
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    ASSERT_EQ(plan->dispatch_count(), 1u);
    for (const PlanStep& step : plan->steps) {
      if (step.kind != PlanStep::Kind::kDispatch) continue;
      EXPECT_EQ(step.kernel.body.find("kiln_xs[kiln_k]") != std::string::npos, c.cached) << step.kernel.body;
      auto k = generate_glsl(step.kernel, TargetInfo{});
      ASSERT_TRUE(k.ok()) << k.status().to_string();
      expect_valid_spirv(k->glsl, step.kernel.name);
    }
  }
}

}  // namespace
}  // namespace kiln::planner

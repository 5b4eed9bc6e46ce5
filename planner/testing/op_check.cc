// Differential op tests against the reference executor (see op_check.h).
#include "planner/testing/op_check.h"

#include <cstdlib>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <cmath>
#include <random>
#include <sstream>

#include <spirv-tools/libspirv.h>

#include "engine/ir/text.h"
#include "engine/ops/op_registry.h"
#include "engine/ops/shape_inference.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/execution_plan.h"
#include "planner/glsl_codegen.h"
#include "platform/vulkan/shader_compiler.h"
#include "platform/vulkan/vk_test_env.h"

namespace kiln::planner::testing {

std::string BackendConfig::name() const {
  return std::string(storage_name(storage)) + "/" + elem_type_name(precision);
}

std::vector<BackendConfig> all_backend_configs() {
  std::vector<BackendConfig> out = {{Storage::kBuffer, ElemType::kF32}, {Storage::kImage, ElemType::kF32}};
  vk::Device* device = vk::testing::test_device();
  if (device && runtime::target_info(*device).fp16_storage) {
    out.push_back({Storage::kBuffer, ElemType::kF16});
    out.push_back({Storage::kImage, ElemType::kF16});
  }
  return out;
}

Tensor random_tensor(const Shape& shape, uint64_t seed, float lo, float hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t = Tensor::allocate(DType::kFloat32, shape).value();
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

namespace {

// The graph of one node; non-constant inputs become graph inputs.
StatusOr<ir::Graph> one_node_graph(const OpCheck& check, std::vector<Tensor>* graph_inputs) {
  ir::Graph g;
  std::vector<ir::ValueId> ins;
  for (size_t i = 0; i < check.inputs.size(); ++i) {
    const Tensor& t = check.inputs[i];
    if (!t.defined()) {
      ins.push_back(ir::kNoValue);
      continue;
    }
    const std::string name = "in" + std::to_string(i);
    if (std::find(check.constant_inputs.begin(), check.constant_inputs.end(), i) != check.constant_inputs.end()) {
      ins.push_back(g.add_constant(name, t));
    } else {
      ins.push_back(g.add_input(name, t.dtype(), ir::SymShape::from_concrete(t.shape())));
      graph_inputs->push_back(t);
    }
  }
  std::vector<ir::ValueId> outs;
  for (size_t j = 0; j < check.num_outputs; ++j)
    outs.push_back(g.add_value("out" + std::to_string(j), DType::kUndefined, ir::SymShape::unranked()));
  const ir::NodeId nid = g.add_node(check.op, ins, outs, check.attrs);
  g.node(nid).domain = check.domain;
  for (const auto& [key, value] : check.annotations) g.node(nid).annotations[key] = value;
  KILN_RETURN_IF_ERROR(finish_one_node_graph(g, nid));
  return g;
}

}  // namespace

Status finish_one_node_graph(ir::Graph& g, ir::NodeId n) {
  const ir::Node& node = g.node(n);
  const ops::OpSchema* schema = ops::OpRegistry::builtin().find(node.domain, node.op);
  if (!schema) return invalid_argument("unknown op " + node.op);
  std::vector<ops::ValueInfo> infos;
  for (ir::ValueId v : node.inputs) {
    ops::ValueInfo info;
    if (v != ir::kNoValue) {
      info.dtype = g.value(v).dtype;
      info.shape = g.value(v).shape;
      if (g.value(v).is_constant()) info.value = &g.value(v).constant;
    }
    infos.push_back(info);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<ops::ValueInfo> inferred, ops::infer_node(*schema, node, infos));
  const std::vector<ir::ValueId> outs = g.node(n).outputs;
  for (size_t j = 0; j < outs.size() && j < inferred.size(); ++j) {
    g.value(outs[j]).dtype = inferred[j].dtype;
    g.value(outs[j]).shape = inferred[j].shape;
    g.add_output(outs[j]);
  }
  return ok_status();
}

::testing::AssertionResult check_op(const OpCheck& check) {
  std::vector<Tensor> inputs;
  auto graph = one_node_graph(check, &inputs);
  if (!graph.ok()) return ::testing::AssertionFailure() << check.op << ": " << graph.status().to_string();
  runtime::ReferenceExecutor reference(*graph);
  auto expected = reference.run(inputs);
  if (!expected.ok()) return ::testing::AssertionFailure() << check.op << " reference: " << expected.status().to_string();
  // Odd runs take other inputs (float inputs times -0.5, exact), so a run
  // that left an output unwritten shows.
  std::vector<Tensor> other = inputs;
  StatusOr<std::vector<Tensor>> expected_other = *expected;
  if (check.runs > 1) {
    for (Tensor& t : other)
      if (t.defined() && t.dtype() == DType::kFloat32) {
        auto copy = t.clone();
        if (!copy.ok()) return ::testing::AssertionFailure() << copy.status().to_string();
        t = std::move(*copy);
        for (float& v : t.span<float>()) v *= -0.5f;
      }
    expected_other = reference.run(other);
    if (!expected_other.ok())
      return ::testing::AssertionFailure() << check.op << " reference: " << expected_other.status().to_string();
  }
  vk::Device* device = vk::testing::test_device();
  vk::KernelCache* cache = vk::testing::test_kernel_cache();
  if (!device || !cache) return ::testing::AssertionFailure() << "no Vulkan test device";
  const std::vector<BackendConfig> configs = check.configs.empty() ? all_backend_configs() : check.configs;
  for (const BackendConfig& config : configs) {
    runtime::VulkanModelOptions options;
    options.plan.storage = config.storage;
    options.plan.precision = config.precision;
    options.plan.cooperative_matrix = check.cooperative_matrix;
    options.lowerings = check.lowerings;
    auto model = runtime::VulkanModel::compile(*device, *cache, *graph, options);
    if (!model.ok())
      return ::testing::AssertionFailure() << check.op << " [" << config.name() << "] compile: " << model.status().to_string();
    if (check.require_device && (*model)->plan().fallback_count() > 0)
      return ::testing::AssertionFailure() << check.op << " [" << config.name()
                                           << "] ran on the host: " << (*model)->plan().fallback_reasons.front();
    size_t dispatches = 0;
    std::string names;
    for (const PlanStep& step : (*model)->plan().steps)
      if (step.kind == PlanStep::Kind::kDispatch) {
        ++dispatches;
        names += " " + step.kernel.name;
      }
    if (dispatches < check.min_dispatches || dispatches > check.max_dispatches)
      return ::testing::AssertionFailure() << check.op << " [" << config.name() << "] planned " << dispatches
                                           << " dispatches (" << names << " ), expected " << check.min_dispatches
                                           << " to " << check.max_dispatches;
    if (!check.expect_kernel.empty() && names.find(check.expect_kernel) == std::string::npos)
      return ::testing::AssertionFailure() << check.op << " [" << config.name() << "] has no kernel named like '"
                                           << check.expect_kernel << "':" << names;
    std::vector<Tensor> first;
    for (int run = 0; run < std::max(check.runs, 1); ++run) {
      auto got = (*model)->run(run % 2 ? other : inputs);
      if (!got.ok())
        return ::testing::AssertionFailure() << check.op << " [" << config.name() << "] run " << run << ": "
                                             << got.status().to_string();
      if (run == 0) first = *got;
      for (size_t j = 0; check.same_bits_every_run && run > 0 && run % 2 == 0 && j < first.size(); ++j)
        for (int64_t i = 0; i < first[j].numel(); ++i) {
          const double was = first[j].get_f64(i), now = (*got)[j].get_f64(i);
          if (was != now && !(std::isnan(was) && std::isnan(now)))
            return ::testing::AssertionFailure() << check.op << " [" << config.name() << "] run " << run << " output "
                                                 << j << " element " << i << ": " << now << ", the first run gave "
                                                 << was;
        }
      const double tol = config.precision == ElemType::kF16 ? check.tol_f16 : check.tol_f32;
      const std::vector<Tensor>& want_all = run % 2 ? *expected_other : *expected;
      for (size_t j = 0; j < want_all.size(); ++j) {
        const Tensor& want = want_all[j];
        const Tensor& have = (*got)[j];
        if (want.shape() != have.shape() || want.dtype() != have.dtype())
          return ::testing::AssertionFailure() << check.op << " [" << config.name() << "] output " << j
                                               << ": shape or dtype differs";
        double max_ref = 0;
        for (int64_t i = 0; i < want.numel(); ++i)
          if (std::isfinite(want.get_f64(i))) max_ref = std::max(max_ref, std::fabs(want.get_f64(i)));
        const double bound = tol * std::max(1.0, max_ref);
        for (int64_t i = 0; i < want.numel(); ++i) {
          const double a = want.get_f64(i), b = have.get_f64(i);
          if (std::isnan(a) && std::isnan(b)) continue;
          if (std::isinf(a) && a == b) continue;
          if (!(std::fabs(a - b) <= bound))
            return ::testing::AssertionFailure() << check.op << " [" << config.name() << "] run " << run << " output "
                                                 << j << " element " << i << ": expected " << a << ", got " << b
                                                 << " (bound " << bound << ")";
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

ir::Graph one_node_graph(const std::string& op, const ir::SymShape& x_shape, const std::vector<Tensor>& constants,
                         std::map<std::string, ir::Attribute> attrs) {
  ir::Graph g;
  std::vector<ir::ValueId> ins = {g.add_input("x", DType::kFloat32, x_shape)};
  for (size_t i = 0; i < constants.size(); ++i) ins.push_back(g.add_constant("c" + std::to_string(i), constants[i]));
  const ir::ValueId y = g.add_value("y", DType::kUndefined, ir::SymShape::unranked());
  const ir::NodeId nid = g.add_node(op, ins, {y}, std::move(attrs));
  const Status finished = finish_one_node_graph(g, nid);
  EXPECT_TRUE(finished.ok()) << finished.to_string();
  return g;
}

std::string spirv_val_errors(const std::vector<uint32_t>& spirv, uint32_t vulkan_version) {
  const uint32_t minor = (vulkan_version >> 12) & 0x3ffu;
  const spv_target_env env = minor >= 3 ? SPV_ENV_VULKAN_1_3 : minor == 2 ? SPV_ENV_VULKAN_1_2 : SPV_ENV_VULKAN_1_1;
  spv_context ctx = spvContextCreate(env);
  spv_diagnostic diag = nullptr;
  const spv_result_t r = spvValidateBinary(ctx, spirv.data(), spirv.size(), &diag);
  std::string out = r == SPV_SUCCESS ? "" : (diag != nullptr ? diag->error : "invalid");
  spvDiagnosticDestroy(diag);
  spvContextDestroy(ctx);
  return out;
}

void expect_valid_spirv(const std::string& glsl, const std::string& what, uint32_t vulkan_version) {
  auto compiler = vk::ShaderCompiler::create();
  ASSERT_TRUE(compiler.ok()) << compiler.status().to_string();
  vk::CompileOptions options;
  options.source_name = what + ".comp";
  options.vulkan_version = vulkan_version;
  const std::string env = "vulkan1." + std::to_string((vulkan_version >> 12) & 0x3ffu);
  auto spirv = (*compiler)->compile(glsl, options);
  ASSERT_TRUE(spirv.ok()) << what << ":\n" << spirv.status().to_string() << "\n" << glsl;
  const std::string path = ::testing::TempDir() + "kiln_spirv_" + what + ".spv";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(spirv->data()), static_cast<std::streamsize>(spirv->size() * 4));
  }
  FILE* pipe = popen(("spirv-val --target-env " + env + " " + path + " 2>&1").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[256];
  while (fgets(buf, sizeof(buf), pipe)) output += buf;
  EXPECT_EQ(pclose(pipe), 0) << what << ": spirv-val: " << output << "\n" << glsl;
  std::remove(path.c_str());
}

std::vector<size_t> expect_plan_kernels_valid(const ir::Graph& g, const std::string& what) {
  TargetInfo target;
  target.fp16_storage = true;
  target.vulkan_version = (1u << 22) | (1u << 12);  // VK_API_VERSION_1_1
  std::vector<size_t> dispatches;
  for (Storage storage : {Storage::kBuffer, Storage::kImage})
    for (ElemType precision : {ElemType::kF32, ElemType::kF16}) {
      PlanOptions options;
      options.storage = storage;
      options.precision = precision;
      const std::string config = what + "_" + storage_name(storage) + "_" + elem_type_name(precision);
      auto plan = build_plan(g, target, options);
      EXPECT_TRUE(plan.ok()) << config << ": " << plan.status().to_string();
      if (!plan.ok()) return dispatches;
      EXPECT_EQ(plan->fallback_count(), 0u) << config;
      dispatches.push_back(plan->dispatch_count());
      size_t k = 0;
      for (const PlanStep& step : plan->steps) {
        if (step.kind != PlanStep::Kind::kDispatch) continue;
        auto glsl = generate_glsl(step.kernel, target);
        EXPECT_TRUE(glsl.ok()) << config << ": " << glsl.status().to_string();
        if (glsl.ok()) expect_valid_spirv(glsl->glsl, config + "_" + std::to_string(++k));
      }
    }
  return dispatches;
}

std::unique_ptr<ir::Graph> parse_shaped_graph(const std::string& text) {
  auto g = ir::parse_graph(text);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return nullptr;
  const Status st = ops::infer_graph_shapes(**g);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return std::move(g).value();
}

ExecutionPlan plan_or_fail(const ir::Graph& g, Storage storage) {
  PlanOptions options;
  options.storage = storage;
  auto plan = build_plan(g, TargetInfo{}, options);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  return plan.ok() ? std::move(plan).value() : ExecutionPlan{};
}

StatusOr<std::unique_ptr<runtime::VulkanModel>> compile_on_test_device(const ir::Graph& g,
                                                                       const BackendConfig& config) {
  vk::Device* device = vk::testing::test_device();
  vk::KernelCache* cache = vk::testing::test_kernel_cache();
  if (!device || !cache) return unavailable("no Vulkan test device");
  runtime::VulkanModelOptions options;
  options.plan.storage = config.storage;
  options.plan.precision = config.precision;
  return runtime::VulkanModel::compile(*device, *cache, g, options);
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) had_ = true, old_ = old;
  setenv(name, value, 1);
}

ScopedEnv::~ScopedEnv() {
  if (had_)
    setenv(name_.c_str(), old_.c_str(), 1);
  else
    unsetenv(name_.c_str());
}

}  // namespace kiln::planner::testing

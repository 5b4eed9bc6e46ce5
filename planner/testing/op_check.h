// Differential op tests: run a one-node graph on the reference executor and
// on the Vulkan backend (every storage x precision), compare the outputs.
//
// The per-op conformance tests of every lowering use this (ggml's
// test-backend-ops idea): build inputs, name the op and its attributes, state
// a tolerance. Vulkan runs on the shared validated test device
// (platform/vulkan/vk_test_env.h); a validation message fails the test. When
// no Vulkan device exists the check is skipped by the caller's fixture.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/tensor.h"
#include "engine/ir/graph.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/execution_plan.h"
#include "planner/kernel.h"
#include "planner/lowering.h"

namespace kiln::planner::testing {

struct BackendConfig {
  Storage storage = Storage::kBuffer;
  ElemType precision = ElemType::kF32;
  std::string name() const;  // "buffer/f32"
};

// buffer/f32, image/f32, buffer/f16, image/f16 (f16 only where the device has 16-bit storage).
std::vector<BackendConfig> all_backend_configs();

struct OpCheck {
  std::string op;
  std::string domain;                               // "" = ONNX default domain
  std::vector<Tensor> inputs;                       // undefined Tensor = omitted optional input
  std::map<std::string, ir::Attribute> attrs;
  std::vector<size_t> constant_inputs;              // inputs that become initializers (weights, shapes)
  size_t num_outputs = 1;
  // |vulkan - reference| <= tol * max(1, max|reference|), per output.
  double tol_f32 = 1e-4;
  double tol_f16 = 2e-2;
  // Fail when the node ran as a host fallback instead of device kernels.
  bool require_device = true;
  // Restrict to these configs (empty = all_backend_configs()).
  std::vector<BackendConfig> configs;
  // The lowerings to plan with (null = LoweringRegistry::builtin()): a test
  // registry can force a variant the test device's limits would not pick.
  const LoweringRegistry* lowerings = nullptr;
  // Fail when the plan has fewer kernel dispatches (e.g. a split that
  // did not happen), or more.
  size_t min_dispatches = 0;
  size_t max_dispatches = SIZE_MAX;
  // Fail unless some dispatch's kernel name contains this (when not empty).
  std::string expect_kernel;
  // Whether the plan may use the device's cooperative matrices
  // (PlanOptions::cooperative_matrix): false checks the kernels a device
  // without them, or a session with --coopmat off, runs.
  bool cooperative_matrix = true;
  // The node's annotations (kiln.kernel hints and the like).
  std::map<std::string, std::string> annotations;
  // Runs of one compiled model per config, each compared with the
  // reference: odd runs with the float inputs times -0.5 (so an output a
  // run failed to write shows), even runs with the inputs, giving the first
  // run's bits (state a kernel keeps between runs must be left as it found
  // it).
  int runs = 1;
  // Whether the even runs must give the first run's bits; false for kernels
  // whose float additions happen in a varying order (the atomic split-K
  // fix-up): every run is still compared with the reference, so state left
  // wrong still fails.
  bool same_bits_every_run = true;
};

// Runs `check` on the reference executor and the Vulkan test device in every
// config; the result names the config, the output and the worst element.
::testing::AssertionResult check_op(const OpCheck& check);

// Sets the dtypes and shapes of node `n`'s outputs by shape inference from
// its inputs and makes them the graph's outputs: the last step of building a
// one-node test graph. Errors: unknown op, inference errors.
Status finish_one_node_graph(ir::Graph& g, ir::NodeId n);

// A one-node graph: a float input "x" of `x_shape` (symbols allowed), then
// `constants` as initializers, output shapes inferred (test failures on error).
ir::Graph one_node_graph(const std::string& op, const ir::SymShape& x_shape, const std::vector<Tensor>& constants,
                         std::map<std::string, ir::Attribute> attrs = {});

// spirv-val's verdict on `spirv` under the rules of `vulkan_version` (a
// VK_MAKE_API_VERSION; 1.1 to 1.3) through SPIRV-Tools' library: "" when
// valid, else its message.
std::string spirv_val_errors(const std::vector<uint32_t>& spirv, uint32_t vulkan_version);

// Compiles `glsl` with shaderc (for Vulkan 1.1 unless `vulkan_version`, a
// VK_MAKE_API_VERSION, says otherwise) and checks the module with the
// spirv-val tool for that version; gtest failures name the kernel `what` and
// show the source.
void expect_valid_spirv(const std::string& glsl, const std::string& what,
                        uint32_t vulkan_version = (1u << 22) | (1u << 12));

// Plans `g` for every storage x precision on a target with 16-bit storage
// (Vulkan 1.1), expects no host fallback, and checks every dispatch's SPIR-V
// with expect_valid_spirv. Returns the dispatch count of each plan, in order
// (buffer/f32, buffer/f16, image/f32, image/f16).
std::vector<size_t> expect_plan_kernels_valid(const ir::Graph& g, const std::string& what);

// Random float tensor in [lo, hi) with a fixed seed.
Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

// `text` (Kiln's text IR) parsed, its shapes inferred; null (and a test
// failure) when either fails.
std::unique_ptr<ir::Graph> parse_shaped_graph(const std::string& text);

// `g` compiled on the validated test device in `config`'s storage and
// precision (every other option default).
StatusOr<std::unique_ptr<runtime::VulkanModel>> compile_on_test_device(const ir::Graph& g,
                                                                       const BackendConfig& config);

// build_plan of `g` for a default TargetInfo with `storage`; an empty plan
// (and a test failure) when planning fails.
ExecutionPlan plan_or_fail(const ir::Graph& g, Storage storage = Storage::kBuffer);

// Sets the environment variable `name` to `value` for its lifetime and
// restores what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  bool had_ = false;
  std::string old_;
};

// $KILN_COOPMAT (runtime::coopmat_mode_from_env) for its lifetime: device
// tests force the KHR cooperative-matrix path on a device that also has NV,
// through the same switch `kiln` and the zoo tests read.
class ScopedCoopMatEnv : public ScopedEnv {
 public:
  explicit ScopedCoopMatEnv(const char* value) : ScopedEnv("KILN_COOPMAT", value) {}
};

}  // namespace kiln::planner::testing

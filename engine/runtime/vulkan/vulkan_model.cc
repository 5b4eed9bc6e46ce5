// VulkanModel: compile a plan into pipelines, run it per shape signature
// (see vulkan_model.h).
#include "engine/runtime/vulkan/vulkan_model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "planner/device_data.h"
#include "engine/runtime/vulkan/vulkan_model_impl.h"
#include "planner/glsl_codegen.h"
#include "platform/vulkan/parallel_jobs.h"
#include "platform/vulkan/transfer.h"

namespace kiln::runtime {

using planner::ExecutionPlan;
using planner::PlanStep;
using planner::PlanTensor;
using planner::Storage;
using planner::TensorId;

namespace {

// The fp16 x fp16 shapes among `shapes` at subgroup scope accumulating in
// fp32 or fp16. VkComponentTypeKHR and VkComponentTypeNV agree on these
// (0 = FLOAT16, 1 = FLOAT32), as do VkScopeKHR / NV (3 = SUBGROUP).
std::vector<planner::CoopMatShape> f16_shapes(const std::vector<vk::CooperativeMatrixShape>& shapes) {
  constexpr uint32_t kF16 = 0, kF32 = 1, kSubgroup = 3;
  std::vector<planner::CoopMatShape> out;
  for (const vk::CooperativeMatrixShape& s : shapes) {
    const bool f32_acc = s.c_type == kF32 && s.result_type == kF32;
    const bool f16_acc = s.c_type == kF16 && s.result_type == kF16;
    if (s.a_type == kF16 && s.b_type == kF16 && s.scope == kSubgroup && !s.saturating_accumulation &&
        (f32_acc || f16_acc))
      out.push_back({s.m, s.n, s.k, f32_acc});
  }
  return out;
}

// The subgroup shapes with int8 A and B and non-saturating int32 C and
// result (VkComponentTypeKHR SINT8 = 3, SINT32 = 5; the NV enum has the
// same values).
std::vector<planner::CoopMatShape> s8_shapes(const std::vector<vk::CooperativeMatrixShape>& shapes) {
  constexpr uint32_t kS8 = 3, kS32 = 5, kSubgroup = 3;
  std::vector<planner::CoopMatShape> out;
  for (const vk::CooperativeMatrixShape& s : shapes)
    if (s.a_type == kS8 && s.b_type == kS8 && s.c_type == kS32 && s.result_type == kS32 && s.scope == kSubgroup &&
        !s.saturating_accumulation)
      out.push_back({s.m, s.n, s.k, false});
  return out;
}

const char* coopmat_mode_name(CoopMatMode mode) {
  switch (mode) {
    case CoopMatMode::kNV:
      return "nv";
    case CoopMatMode::kKHR:
      return "khr";
    case CoopMatMode::kOff:
      return "off";
    default:
      return "auto";
  }
}

}  // namespace

StatusOr<CoopMatMode> coopmat_mode_from_env() {
  const char* env = std::getenv("KILN_COOPMAT");
  if (env == nullptr || *env == '\0') return CoopMatMode::kAuto;
  const std::string v = env;
  if (v == "auto") return CoopMatMode::kAuto;
  if (v == "nv") return CoopMatMode::kNV;
  if (v == "khr") return CoopMatMode::kKHR;
  if (v == "off") return CoopMatMode::kOff;
  return invalid_argument("KILN_COOPMAT='" + v + "' is not one of nv, khr, off, auto");
}

StatusOr<std::optional<planner::CoopMatTile>> coopmat_tile_from_env() {
  const char* env = std::getenv("KILN_COOPMAT_TILE");
  if (env == nullptr || *env == '\0') return std::optional<planner::CoopMatTile>();
  int v[6] = {};
  char tail = 0;
  const int n = std::sscanf(env, "%dx%dx%dx%dx%dx%d%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail);
  bool ok = n == 6 && (v[4] == 32 || v[4] == 64) && (v[5] == 1 || v[5] == 2);
  // All four tile numbers 0: the planner's tile with this depth and buffering.
  const bool planner_tile = v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] == 0;
  for (int i = 0; i < 4; ++i) ok = ok && (planner_tile || (v[i] > 0 && v[i] <= 256));
  if (!ok)
    return invalid_argument(std::string("KILN_COOPMAT_TILE='") + env +
                            "' is not BMxBNxWMxWNxBKxSTAGES (BK 32 or 64, STAGES 1 or 2), e.g. 128x128x2x2x32x2, "
                            "or 0x0x0x0xBKxSTAGES");
  return std::optional<planner::CoopMatTile>(planner::CoopMatTile{v[0], v[1], v[2], v[3], v[4], v[5]});
}

StatusOr<planner::GemmSweep> gemm_sweep_from_env() {
  planner::GemmSweep sweep;
  const char* env = std::getenv("KILN_GEMM_SWEEP");
  if (env == nullptr || *env == '\0') return sweep;
  // The slices of a split=N item (1..16), 0 for anything else.
  const auto split_of = [](const std::string& item) {
    int n = 0;
    char tail = 0;
    return std::sscanf(item.c_str(), "split=%d%c", &n, &tail) == 1 && n >= 1 && n <= 16 ? n : 0;
  };
  std::stringstream items(env);
  for (std::string item; std::getline(items, item, ',');) {
    if (item == "k=16" || item == "k=32" || item == "k=64") {
      sweep.tile_k = std::stoi(item.substr(2));
    } else if (const int split = split_of(item); split > 0) {
      sweep.max_split = split;
    } else if (item == "latency=on" || item == "latency=off") {
      sweep.latency_tiles = item == "latency=on";
    } else {
      return invalid_argument(std::string("KILN_GEMM_SWEEP='") + env + "': '" + item +
                              "' is not k=16|32|64, split=1..16 or latency=on|off");
    }
  }
  return sweep;
}

planner::TargetInfo target_info(const vk::Device& device, CoopMatMode mode) {
  const vk::Capabilities& c = device.capabilities();
  const vk::EnabledFeatures& e = device.enabled();
  planner::TargetInfo t;
  t.max_storage_buffer_range = c.max_storage_buffer_range;
  t.max_image_dimension_2d = c.max_image_dimension_2d;
  t.max_push_constants_size = c.max_push_constants_size;
  t.max_shared_memory = c.max_compute_shared_memory_size;
  t.max_workgroup_invocations = c.max_compute_work_group_invocations;
  t.max_workgroup_count_x = c.max_compute_work_group_count[0];
  t.compute_units = c.compute_units;
  const bool subgroups = c.subgroup_in_compute && c.subgroup_size > 0;
  t.subgroup_size = subgroups ? c.subgroup_size : 0;
  t.subgroup_arithmetic = subgroups && (c.subgroup_operations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  t.subgroup_shuffle = subgroups && (c.subgroup_operations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
  t.fp16_storage = e.storage_buffer_16bit && e.shader_float16;
  t.fp16_arithmetic = e.shader_float16;
  t.int64 = e.shader_int64;
  t.float32_atomic_add = e.buffer_float32_atomic_add;
  t.integer_dot_product = e.shader_integer_dot_product;
  t.cooperative_matrix = e.cooperative_matrix_khr && c.api_version >= VK_API_VERSION_1_3;
  // fp16 GEMMs on tensor cores: KHR first (the kernels' GLSL rewritten at
  // the SPIR-V level, platform/vulkan/coopmat_khr.h), else NV (what the
  // GLSL speaks), each with the fp16 shapes the device advertises through
  // that extension. On an H100, which offers both, KHR's 16x16x16 fragments
  // ran every zoo model faster than NV's 16x8x16 (fp16 GPU ms, one call,
  // bench/results/h100-2026-11-27-session14: vit_b_16 1.227 -> 1.164,
  // bert 0.895 -> 0.850, resnet50 1.080 -> 1.061), outputs identical.
  if (t.fp16_storage && t.subgroup_size > 0 && mode != CoopMatMode::kOff) {
    const bool nv_allowed = mode != CoopMatMode::kKHR, khr_allowed = mode != CoopMatMode::kNV;
    // Capabilities::cooperative_matrix_shapes holds the KHR shapes only
    // when the KHR extension was queried (else a copy of NV's).
    if (khr_allowed && e.cooperative_matrix_khr && c.cooperative_matrix_khr) {
      t.coopmat_f16_shapes = f16_shapes(c.cooperative_matrix_shapes);
      t.coopmat_s8_shapes = s8_shapes(c.cooperative_matrix_shapes);
      if (!t.coopmat_f16_shapes.empty()) t.coopmat = planner::CoopMatFlavour::kKHR;
    }
    if (t.coopmat == planner::CoopMatFlavour::kNone && nv_allowed && e.cooperative_matrix_nv) {
      t.coopmat_f16_shapes = f16_shapes(c.cooperative_matrix_nv_shapes);
      t.coopmat_s8_shapes = s8_shapes(c.cooperative_matrix_nv_shapes);
      if (!t.coopmat_f16_shapes.empty()) t.coopmat = planner::CoopMatFlavour::kNV;
    }
    if (t.coopmat == planner::CoopMatFlavour::kNone || !e.shader_int8) t.coopmat_s8_shapes.clear();
    if (t.coopmat == planner::CoopMatFlavour::kNone) t.coopmat_f16_shapes.clear();
  }
  t.vulkan_version = std::min<uint32_t>(c.api_version, VK_API_VERSION_1_3);
  return t;
}

StatusOr<std::unique_ptr<VulkanModel>> VulkanModel::compile(vk::Device& device, vk::KernelCache& cache,
                                                            const ir::Graph& graph, const VulkanModelOptions& options) {
  KILN_RETURN_IF_ERROR(device.status());
  if (options.concurrent_runs < 1 || options.concurrent_runs > kMaxConcurrentRuns)
    return invalid_argument("concurrent runs must be 1 to " + std::to_string(kMaxConcurrentRuns) + ", not " +
                            std::to_string(options.concurrent_runs));
  auto impl = std::make_unique<Impl>(device, cache, graph);
  impl->options = options;
  CoopMatMode coopmat = options.coopmat;
  if (coopmat == CoopMatMode::kAuto) {
    KILN_ASSIGN_OR_RETURN(coopmat, coopmat_mode_from_env());
  }
  impl->target = target_info(device, coopmat);
  KILN_ASSIGN_OR_RETURN(impl->target.coopmat_tile, coopmat_tile_from_env());
  KILN_ASSIGN_OR_RETURN(impl->target.gemm_sweep, gemm_sweep_from_env());
  const planner::CoopMatFlavour forced = coopmat == CoopMatMode::kNV    ? planner::CoopMatFlavour::kNV
                                         : coopmat == CoopMatMode::kKHR ? planner::CoopMatFlavour::kKHR
                                                                        : planner::CoopMatFlavour::kNone;
  if (forced != planner::CoopMatFlavour::kNone && options.plan.cooperative_matrix && impl->target.coopmat != forced)
    return unavailable(std::string("cooperative matrices forced to ") + coopmat_mode_name(coopmat) +
                       (options.coopmat == CoopMatMode::kAuto ? " (KILN_COOPMAT)" : "") + ", but '" +
                       device.capabilities().device_name + "' has no fp16 subgroup shape through VK_" +
                       (forced == planner::CoopMatFlavour::kNV ? "NV" : "KHR") +
                       "_cooperative_matrix (or no 16-bit storage and subgroups)");
  if (!options.plan.integer_dot_product) impl->target.integer_dot_product = false;
  if (!options.plan.cooperative_matrix) {
    impl->target.coopmat = planner::CoopMatFlavour::kNone;
    impl->target.coopmat_f16_shapes.clear();
    impl->target.coopmat_s8_shapes.clear();
  }
  auto t0 = Clock::now();
  const planner::LoweringRegistry& lowerings =
      options.lowerings ? *options.lowerings : planner::LoweringRegistry::builtin();
  KILN_ASSIGN_OR_RETURN(impl->plan, planner::build_plan(graph, impl->target, options.plan, lowerings));
  impl->compile_stats.plan_ms = ms_since(t0);

  t0 = Clock::now();
  KILN_RETURN_IF_ERROR(impl->compile_kernels());
  impl->compile_stats.kernels_ms = ms_since(t0);

  t0 = Clock::now();
  KILN_ASSIGN_OR_RETURN(impl->transfer, vk::Transfer::create(device));
  KILN_ASSIGN_OR_RETURN(impl->submitter, vk::Submitter::create(device));
  KILN_ASSIGN_OR_RETURN(impl->descriptors, vk::DescriptorAllocator::create(device));
  KILN_RETURN_IF_ERROR(impl->upload_constants());
  impl->compile_stats.upload_ms = ms_since(t0);
  // The other run slots: the same plan, kernels and weights, state of their own.
  std::vector<std::unique_ptr<Impl>> slots;
  slots.push_back(std::move(impl));
  while (slots.size() < options.concurrent_runs) {
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<Impl> slot, slots[0]->make_slot(slots.size()));
    slots.push_back(std::move(slot));
  }
  return std::unique_ptr<VulkanModel>(new VulkanModel(std::move(slots)));
}

Status VulkanModel::Impl::compile_kernels() {
  kernels.resize(plan.steps.size());
  pipelines.assign(plan.steps.size(), nullptr);
  // GLSL for every dispatch step; then the shaders, then the pipelines, each
  // as one batch the cache builds on several threads (vk::KernelCache::shaders).
  std::vector<size_t> dispatch_steps;
  std::vector<vk::CompileOptions> compile_options;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& step = plan.steps[i];
    if (step.kind != PlanStep::Kind::kDispatch) continue;
    auto generated = planner::generate_glsl(step.kernel, target);
    if (!generated.ok())
      return std::move(generated).status().add_context(graph.node(step.node).describe());
    kernels[i] = std::move(generated).value();
    vk::CompileOptions co;
    co.source_name = kernels[i].name + ".comp";
    co.vulkan_version = target.vulkan_version;
    // Tensor-core kernels are NV GLSL; on the KHR path their SPIR-V is
    // rewritten (only theirs, so other kernels keep their cache keys).
    co.cooperative_matrix_khr = target.coopmat == planner::CoopMatFlavour::kKHR &&
                                kernels[i].glsl.find("GL_NV_cooperative_matrix") != std::string::npos;
    dispatch_steps.push_back(i);
    compile_options.push_back(std::move(co));
  }
  const unsigned threads = vk::resolve_compile_threads(options.compile_threads);
  auto step_error = [&](Status status, const vk::CompileBatchReport& report) {
    if (report.failed < dispatch_steps.size())
      return std::move(status).add_context(graph.node(plan.steps[dispatch_steps[report.failed]].node).describe());
    return status;
  };

  std::vector<vk::ShaderRequest> shader_requests;
  for (size_t j = 0; j < dispatch_steps.size(); ++j)
    shader_requests.push_back({kernels[dispatch_steps[j]].glsl, &compile_options[j]});
  const vk::KernelCacheStats before = cache.stats();
  vk::CompileBatchReport report;
  auto t0 = Clock::now();
  // The kernel that took a batch longest, named for compile_stats.
  auto note_slowest = [&](const vk::CompileBatchReport& r, std::string* name, double* ms) {
    if (r.slowest >= dispatch_steps.size()) return;
    *name = kernels[dispatch_steps[r.slowest]].name;
    *ms = r.slowest_ms;
  };
  auto shaders = cache.shaders(shader_requests, threads, &report);
  compile_stats.shaders_ms = ms_since(t0);
  compile_stats.compile_threads = report.threads;
  note_slowest(report, &compile_stats.slowest_shader, &compile_stats.slowest_shader_ms);
  if (!shaders.ok()) return step_error(std::move(shaders).status(), report);
  const vk::KernelCacheStats after = cache.stats();
  compile_stats.shader_compiles += after.compiles - before.compiles;
  compile_stats.shader_cache_hits += (after.memory_hits - before.memory_hits) + (after.disk_hits - before.disk_hits);

  // The optimizer drops specialization constants a kernel never reads.
  std::vector<std::vector<vk::SpecializationValue>> specs(dispatch_steps.size());
  std::vector<vk::PipelineRequest> pipeline_requests(dispatch_steps.size());
  for (size_t j = 0; j < dispatch_steps.size(); ++j) {
    const planner::GeneratedKernel& k = kernels[dispatch_steps[j]];
    const vk::CompiledShader* shader = (*shaders)[j];
    for (size_t id = 0; id < k.spec.size(); ++id) {
      const bool declared =
          std::any_of(shader->reflection.spec_constants.begin(), shader->reflection.spec_constants.end(),
                      [&](const vk::ReflectedSpecConstant& s) { return s.constant_id == id; });
      if (declared)
        specs[j].push_back(vk::SpecializationValue::i32(static_cast<uint32_t>(id), static_cast<int32_t>(k.spec[id])));
    }
    pipeline_requests[j] = {shader, specs[j], k.name};
  }
  t0 = Clock::now();
  auto created = cache.pipelines(pipeline_requests, threads, &report);
  compile_stats.pipelines_ms = ms_since(t0);
  compile_stats.compile_threads = std::max(compile_stats.compile_threads, report.threads);
  note_slowest(report, &compile_stats.slowest_pipeline, &compile_stats.slowest_pipeline_ms);
  if (!created.ok()) return step_error(std::move(created).status(), report);

  std::set<const vk::ComputePipeline*> distinct;
  for (size_t j = 0; j < dispatch_steps.size(); ++j) {
    pipelines[dispatch_steps[j]] = (*created)[j];
    distinct.insert((*created)[j]);
  }
  compile_stats.kernels = static_cast<uint32_t>(distinct.size());
  return ok_status();
}

Status VulkanModel::Impl::upload_constants() {
  // Constants some kernel binds: graph initializers and lowering-made ones;
  // and the first run slot's model state, which starts as zeros.
  std::set<TensorId> bound;
  for (const PlanStep& step : plan.steps)
    for (const planner::KernelTensor& kt : step.kernel.tensors)
      if (plan.tensors[static_cast<size_t>(kt.tensor)].constant.defined()) bound.insert(kt.tensor);
  const VkDeviceSize align = std::max<VkDeviceSize>(device.capabilities().min_storage_buffer_offset_alignment, 256);
  VkDeviceSize total = 0;
  for (TensorId id : bound) {
    const PlanTensor& t = plan.tensors[static_cast<size_t>(id)];
    total += arena_reserve(t.layout, t.constant.shape(), align);
  }
  KILN_ASSIGN_OR_RETURN(const auto stateful, state_shapes());
  for (const auto& [id, shape] : stateful)
    total += arena_reserve(plan.tensors[static_cast<size_t>(id)].layout, shape, align);
  if (bound.empty() && stateful.empty()) return ok_status();
  KILN_RETURN_IF_ERROR(check_memory_limit(total + (1 << 20), "the model's weights and state"));
  KILN_ASSIGN_OR_RETURN(weights_arena, vk::MemoryArena::create(device, total + (1 << 20)));
  // Every constant's device bytes are written straight into host-visible
  // memory, the conversions spread over the compile threads: into the
  // weights themselves where the device lets the host write them (CPU
  // drivers, unified memory; the buffers are new, so no device work uses
  // them yet), else into the staging buffer, one submission copying as many
  // constants as it holds.
  std::vector<vk::Transfer::Region> regions;
  for (TensorId id : bound) {
    const PlanTensor& t = plan.tensors[static_cast<size_t>(id)];
    if (t.layout.storage != Storage::kBuffer)
      return unimplemented("constant tensors are stored in buffers; tensor %" + std::to_string(id) + " is an image");
    const size_t size = device_bytes(t.layout, t.constant.shape());
    if (size > device.capabilities().max_storage_buffer_range)
      return unimplemented("a constant of " + std::to_string(size) + " bytes exceeds the device's storage-buffer range of " +
                           std::to_string(device.capabilities().max_storage_buffer_range) + " bytes");
    KILN_ASSIGN_OR_RETURN(vk::Buffer buffer, weights_arena->create_buffer(std::max<size_t>(size, 16)));
    compile_stats.weight_bytes += size;
    const vk::Buffer& placed = weights.emplace(id, std::move(buffer)).first->second;
    regions.push_back({&placed, 0, size, [&t](std::byte* dst) { to_device(t.constant, t.layout, dst); }});
  }
  const unsigned threads = vk::resolve_compile_threads(options.compile_threads);
  if (weights_arena->host_visible()) {
    KILN_ASSIGN_OR_RETURN(std::byte * base, weights_arena->map());
    vk::parallel_jobs(regions.size(), threads,
                      [&](size_t i) { regions[i].fill(base + regions[i].buffer->arena_offset() + regions[i].offset); });
    KILN_RETURN_IF_ERROR(weights_arena->flush(0, weights_arena->capacity()));
  } else {
    KILN_RETURN_IF_ERROR(transfer->upload_batch(regions, threads));
  }
  // The constants lowerings made (repacked weights: as large as the model's
  // weights) are never read on the host again, only their shapes: their
  // host copies go. Graph initializers stay (the graph holds them anyway,
  // and host steps and outputs may read them).
  for (TensorId id : bound) {
    PlanTensor& t = plan.tensors[static_cast<size_t>(id)];
    if (t.origin == PlanTensor::Origin::kConstant) t.constant = t.constant.without_data();
  }
  for (const auto& [id, shape] : stateful)
    compile_stats.state_bytes += device_bytes(plan.tensors[static_cast<size_t>(id)].layout, shape);
  return create_state(*weights_arena, stateful);
}

}  // namespace kiln::runtime

// VulkanModel: a model compiled for one Vulkan device, run many times.
//
// compile() plans the graph (planner/execution_plan.h), generates and
// compiles every kernel (through the device's KernelCache, so a second
// compile of the same model compiles nothing), creates the pipelines and
// uploads the weights once. run() then binds the inputs and, per input-shape
// signature, evaluates the plan's symbolic sizes, places every tensor in
// the model's activation memory (shared by all signatures, sized for the
// largest plan seen) and records one command buffer, which later runs with
// the same shapes re-use; a new signature records a new command buffer and
// compiles nothing. Barriers are recorded only between a write and a later
// read (or a read and a later write) of the same memory.
//
// Run slots: what a run writes (activation memory, staging, descriptor
// sets, command buffers, timestamp queries, model state, a timeline
// semaphore) lives in a run slot; the plan, kernels, pipelines and weights
// are compiled once and shared by the model's slots
// (VulkanModelOptions::concurrent_runs, default 1). Each run() and submit()
// takes an idle slot; runs in different slots proceed at once on the CPU,
// and their submissions are all in flight at once on the device.
//
// Thread-safety: every method is thread-safe. Runs in one slot take turns
// (its signatures share one activation memory); with one slot (the
// default), runs from several threads take turns as before.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/graph.h"
#include "engine/runtime/vulkan/image_binding.h"
#include "engine/runtime/vulkan/run_slots.h"
#include "engine/runtime/run_stats.h"
#include "planner/execution_plan.h"
#include "platform/vulkan/debug_labels.h"
#include "platform/vulkan/device.h"
#include "platform/vulkan/kernel_cache.h"
#include "platform/vulkan/submitter.h"

namespace kiln::runtime {

// Which cooperative-matrix dialect the tensor-core kernels (planner/
// gemm_coopmat.h, the fused attention) use. Their GLSL is always the NV
// dialect; with KHR the compiled module is rewritten into
// SPV_KHR_cooperative_matrix (platform/vulkan/coopmat_khr.h).
enum class CoopMatMode : uint8_t {
  kAuto,    // $KILN_COOPMAT when set, else kDevice
  kDevice,  // KHR where the device enabled VK_KHR_cooperative_matrix with
            // fp16 shapes, else NV where it enabled VK_NV_cooperative_matrix
  kNV,      // only VK_NV_cooperative_matrix
  kKHR,     // only VK_KHR_cooperative_matrix (for testing it where both exist)
  kOff,     // no cooperative matrices
};

struct VulkanModelOptions {
  planner::PlanOptions plan;
  // Per-kernel GPU timestamps on every run (stats.kernels).
  bool profile = false;
  // The lowerings to plan with; null = planner::LoweringRegistry::builtin().
  const planner::LoweringRegistry* lowerings = nullptr;
  // Input-shape signatures kept recorded (command buffers, descriptor sets,
  // staging); the least recently run beyond it is dropped and re-recorded
  // if its shape comes back (no shader compilation). At least 1.
  size_t max_signatures = 32;
  // Threads compiling the plan's distinct shaders and creating its
  // pipelines; 0 = vk::default_compile_threads() ($KILN_COMPILE_THREADS,
  // else the hardware's threads, at most 16); 1 = one after another on the
  // calling thread. The result does not depend on it.
  unsigned compile_threads = 0;
  // Labels each kernel's dispatch with its name in the command buffers
  // (VK_EXT_debug_utils; VulkanContext::debug_labels()); none when null.
  vk::DebugLabels debug_labels;
  // Device memory this model may hold (weights, state, activations,
  // staging), 0: no limit. Compiling or recording beyond it fails with
  // kOutOfMemory naming the need and the limit.
  uint64_t device_memory_limit = 0;
  // Run slots (see the top of this file): runs and submissions that may be
  // in progress at once, each with its own activation memory, staging,
  // command buffers and timeline. 1 keeps one copy of that state; each
  // further slot costs a slot's memory (DeviceMemoryUse::per_run) once it
  // runs. The memory limit applies to all slots together (a slot counts the
  // others' memory as of their last run or submission). At least 1, at most
  // kMaxConcurrentRuns.
  size_t concurrent_runs = 1;
  // Cooperative-matrix dialect (CoopMatMode). kAuto: $KILN_COOPMAT, else the
  // device's choice. A forced NV or KHR the device cannot use fails compile
  // with kUnavailable (unless plan.cooperative_matrix is off).
  CoopMatMode coopmat = CoopMatMode::kAuto;
};

// The most run slots a model may have (VulkanModelOptions::concurrent_runs).
inline constexpr size_t kMaxConcurrentRuns = 64;

// The device memory a compiled model holds now (VulkanModel::memory()).
struct DeviceMemoryUse {
  uint64_t weights = 0;      // constants and model state, allocated at compile
  uint64_t activations = 0;  // intermediate tensors, shared by input shapes, grown by runs
  uint64_t staging = 0;      // per input shapes: host-visible staging and condition buffers, separate image memory
  uint64_t total = 0;
  uint64_t limit = 0;        // VulkanModelOptions::device_memory_limit (0: none)
  // Run slots (VulkanModelOptions::concurrent_runs), and the most device
  // memory one slot holds alone: its activations and staging (and, past the
  // first slot, its copy of the model state). `activations` and `staging`
  // above are the sums over the slots; `weights` counts the shared weights
  // once, and the other slots' state.
  uint32_t run_slots = 1;
  uint64_t per_run = 0;
};

// One slice of a run recorded into the host's command buffer
// (VulkanModel::record_slice): how much of the run it may hold.
struct SliceOptions {
  double budget_us = 0;         // estimated GPU time per slice; 0: no time limit
  uint32_t max_dispatches = 0;  // 0: no count limit (one of the two must be set)
  bool restart = false;         // drop the run in progress and start a new one
};

// What a slice recorded, and what is left of its run.
struct SliceProgress {
  uint32_t recorded = 0;   // dispatches in this slice (at least 1)
  uint32_t left = 0;       // dispatches after it (0: the run is done)
  uint32_t total = 0;      // dispatches of the whole run
  uint32_t index = 0;      // the slice's number in its run (0: the run's first)
  double estimated_us = 0;      // the slice's estimated GPU time
  double estimated_run_us = 0;  // the whole run's
  bool measured = false;   // estimates from a profiled run's timestamps, else the rate model (slice_plan.h)
};

// The one place $KILN_COOPMAT is read: "nv", "khr", "off" or "auto" (or
// unset / empty: kAuto, meaning the device's choice). Errors:
// kInvalidArgument naming any other value.
StatusOr<CoopMatMode> coopmat_mode_from_env();

// The one place $KILN_COOPMAT_TILE is read: "BMxBNxWMxWNxBKxSTAGES" (e.g.
// 128x128x2x2x32x2), a tensor-core GEMM tile forced for kernel sweeps
// (planner::TargetInfo::coopmat_tile), or 0x0x0x0xBKxSTAGES for the
// planner's own tiles with that depth and buffering; unset or empty:
// nullopt. Errors: kInvalidArgument naming a value that is not six numbers,
// the first four positive (or all zero), BK 32 or 64 and STAGES 1 or 2.
StatusOr<std::optional<planner::CoopMatTile>> coopmat_tile_from_env();

// The one place $KILN_GEMM_SWEEP is read: tiled-GEMM choices forced for
// kernel sweeps (planner::TargetInfo::gemm_sweep), a comma list of k=16|32|64
// (the scalar kernel's K step), split=1..16 (most split-K slices) and
// latency=on|off (small tiles for latency-bound GEMMs), e.g. "k=64,split=1";
// unset or empty: the planner's choices. Errors: kInvalidArgument naming an
// item that is none of these.
StatusOr<planner::GemmSweep> gemm_sweep_from_env();

// What the planner may assume about `device` (limits, fp16, subgroups) with
// cooperative matrices as `mode` allows (kAuto reads nothing: it is
// kDevice here). A forced dialect the device lacks leaves coopmat kNone.
planner::TargetInfo target_info(const vk::Device& device, CoopMatMode mode = CoopMatMode::kDevice);

// What a run did (engine/runtime/run_stats.h); the name predates the
// reference backend filling it too.
using VulkanRunStats = RunStats;

struct VulkanCompileStats {
  double plan_ms = 0;
  double kernels_ms = 0;       // GLSL generation, shaderc (or cache), pipelines
  double shaders_ms = 0;       // of kernels_ms: the shader batch (shaderc or cache)
  double pipelines_ms = 0;     // of kernels_ms: the pipeline batch
  uint32_t compile_threads = 0;  // most threads either batch ran on
  // The kernel whose shader (pipeline) took longest to build and its ms
  // (vk::CompileBatchReport::slowest): with enough threads a batch takes
  // about as long as its slowest entry. Empty when the batch built nothing.
  std::string slowest_shader, slowest_pipeline;
  double slowest_shader_ms = 0, slowest_pipeline_ms = 0;
  double upload_ms = 0;
  uint32_t kernels = 0;        // distinct pipelines
  uint64_t shader_compiles = 0;
  uint64_t shader_cache_hits = 0;  // memory + disk
  uint64_t weight_bytes = 0;
  // Model state (planner PlanTensor::Origin::kState, e.g. split-K arrival
  // counters): device memory zero-filled at compile, kept across runs.
  uint64_t state_bytes = 0;
};

// A range of a host's VkBuffer that one graph input or output lives in
// during a run (zero-copy binding): kernels read that input from, or write
// that output into, the host's buffer directly, with no staging copy.
//
// The range holds the tensor as the device stores it: row-major, densely
// packed, with elements of io_layout(name).type (f32; f16 under fp16
// precision; i32 for integer and bool tensors). Only buffer storage can be
// bound (an image-stored tensor is kFailedPrecondition). The VkBuffer must be
// of the model's VkDevice, have VK_BUFFER_USAGE_STORAGE_BUFFER_BIT (and
// TRANSFER_SRC/TRANSFER_DST when a host fallback step reads or writes the
// tensor), and `offset` must be a multiple of minStorageBufferOffsetAlignment.
struct ExternalBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;  // bytes of the range, at least the tensor's bytes
  Shape shape;            // inputs only: the input's shape (its run() entry stays undefined)
  // Set (image.image non-null, `buffer` null) when the tensor is converted
  // from or into a host image instead (image_binding.h): it then lives in
  // Kiln's memory, and `shape` is image_tensor_shape(image).
  ExternalImage image;

  bool operator==(const ExternalBuffer&) const = default;
};

// Graph input or output value name -> the host buffer range it lives in, or
// the host image it is converted from or into.
using DeviceBindings = std::map<std::string, ExternalBuffer>;

class VulkanModel {
 public:
  // `device`, `cache` and `graph` are borrowed and must outlive the model;
  // the graph must not change afterwards. Errors: planning errors naming the
  // node, shader compile errors naming the kernel, kOutOfMemory, kDeviceLost.
  static StatusOr<std::unique_ptr<VulkanModel>> compile(vk::Device& device, vk::KernelCache& cache,
                                                        const ir::Graph& graph,
                                                        const VulkanModelOptions& options = {});
  ~VulkanModel();
  VulkanModel(const VulkanModel&) = delete;
  VulkanModel& operator=(const VulkanModel&) = delete;

  // Runs with inputs in the order of the graph's inputs; returns the graph's
  // outputs (in their graph dtypes). Errors: kInvalidArgument for a wrong
  // input count, dtype or shape (naming the input), kDeviceLost. Thread-safe.
  StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, VulkanRunStats* stats = nullptr) const;

  // run() with some inputs and outputs in host buffers (see ExternalBuffer).
  // A bound input's entry in `inputs` must be undefined (Tensor{}): its data
  // is what the buffer holds when the run's commands execute. A bound output
  // is written into its buffer and returned as an undefined Tensor (not
  // downloaded). Commands are recorded per input shapes + bindings (buffer,
  // offset, size), so runs re-binding the same ranges re-use them; each
  // distinct set of bindings holds its own activation memory. Kiln's command
  // buffers start with a barrier that makes writes of earlier commands on the
  // queue visible, and end with one that makes the outputs visible to later
  // commands and to the host (host-visible, non-coherent memory must still be
  // invalidated by the host). run() returns once the GPU work is complete.
  // Errors: kNotFound (no graph input or output has the name),
  // kInvalidArgument (null buffer, range too small for the tensor, offset
  // misaligned, overlapping ranges, a tensor given for a bound input),
  // kFailedPrecondition (the tensor is an image, a constant, computed on the
  // host, or shares memory with another bound tensor in the plan).
  StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, const DeviceBindings& bindings,
                                    VulkanRunStats* stats = nullptr) const;

  // Drops the recorded commands and memory of every binding set that uses
  // `buffer`. The host calls it before destroying a VkBuffer it has bound:
  // Vulkan may give a later buffer the same handle, which must not meet
  // commands recorded for the old one. Must not run concurrently with a run
  // that binds `buffer`.
  void forget_buffer(VkBuffer buffer) const;
  // The same for a host image (ExternalImage::image) bound to an input or
  // output (vulkan_model_images.cc).
  void forget_image(VkImage image) const;
  // Checks binding `image` to graph input or output `name` against the
  // model and the device (check_external_image; the tensor: a float buffer
  // of rank 4 with N = 1 on the device, its declared C, H and W the
  // image's) and returns the tensor's shape it implies. What depends on a
  // run's shapes is checked by the run. Errors: kNotFound (no such name),
  // kInvalidArgument (the binding, or dims that disagree), kFailedPrecondition
  // (the tensor is an image, an integer, a constant or on the host).
  StatusOr<Shape> image_binding_shape(const std::string& name, const ExternalImage& image) const;

  // Asynchronous runs (vulkan_model_async.cc). submit() does what run()
  // does up to the submission (records on first sight of the shapes and
  // bindings, stages the given inputs) and returns a ticket at once: with
  // one run slot, the value the model's timeline semaphore (timeline())
  // reaches when the run is complete; with several, a slot's timeline value
  // times the slot count plus the slot. The submission waits on
  // `sync.waits` (the host's semaphores), runs after every earlier
  // submission of its slot (an idle slot with the fewest pending
  // submissions), and signals `sync.signals`. It waits on the CPU only to record new shapes
  // or bindings (for earlier submissions, whose memory recording may
  // reuse). Only runs that are one device submission qualify: no host
  // fallback, If or Loop decided on the host, or sub-graph boundary, and
  // every host-memory input and output staged; others are
  // kFailedPrecondition naming why. Host-memory outputs stay in the staging
  // memory until wait() reads them back, so these shapes and bindings cannot
  // be submitted again until then (kFailedPrecondition); runs whose inputs
  // and outputs are all bound to VkBuffers can be submitted again at once.
  // Thread-safe.
  StatusOr<uint64_t> submit(const std::vector<Tensor>& inputs, const DeviceBindings& bindings,
                            const vk::SubmitSync& sync) const;
  // Whether `ticket`'s run is complete (no waiting). Errors:
  // kInvalidArgument for an unknown or already waited-for ticket.
  StatusOr<bool> poll(uint64_t ticket) const;
  // Waits at most `timeout_ns` for `ticket`'s run, then returns its outputs
  // as run() does (bound outputs undefined) and forgets the ticket. Errors:
  // kUnavailable when the timeout passed first (the ticket stays valid),
  // kInvalidArgument for an unknown ticket, kDeviceLost.
  StatusOr<std::vector<Tensor>> wait(uint64_t ticket, uint64_t timeout_ns) const;
  // Records the run (in the first run slot's memory) with every input and
  // output in `bindings` into the host's command buffer `cmd` (begun, of a compute-capable family of this
  // device), for the host to submit: an entry barrier (writes of all
  // earlier commands -> the kernels), the dispatches, an exit barrier (the
  // kernels' writes -> all later commands and the host). Records the
  // shapes' own commands first when new (which waits for the model's
  // earlier submissions). The recorded work uses the model's memory until
  // it completed: the host orders it against the model's other runs (same
  // queue, or semaphores) and lets it finish before anything that drops
  // recorded work (forget_buffer, new shapes beyond max_signatures, the
  // model's destruction). Errors: kFailedPrecondition naming why the run
  // cannot be recorded (an input or output not bound, a step on the host,
  // a host-decided If or Loop, a value-dependent shape, image storage),
  // then as run(). Thread-safe.
  // With `via_secondary`, `cmd` is a primary command buffer from a pool of
  // queue family `*via_secondary`, which must be the device's: the run is
  // recorded once per signature into a secondary command buffer of the
  // model's (host_secondaries.h), which `cmd` executes; the secondary lives
  // as long as the signature (the same rule as above). More errors then:
  // kInvalidArgument for another family.
  Status record_into(VkCommandBuffer cmd, const DeviceBindings& bindings,
                     std::optional<uint32_t> via_secondary = std::nullopt) const;
  // record_into, a slice at a time (vulkan_model_sliced_record.cc): the
  // first call of a run (none in progress, or opts.restart) starts it with
  // `bindings`; each call records the next dispatches whose estimated cost
  // fits opts (at least one) between an entry and an exit barrier like
  // record_into's, the input image conversions into the first slice and the
  // output ones into the last. Later slices of a run use the signature it
  // started with (re-binding mid-run affects the next run). The host submits
  // the slices in order on one queue (or orders them with semaphores); the
  // outputs are written once the last slice completed. Any other run of the
  // model (run, submit, record_into) between two slices, or dropping its
  // signature, interrupts the run: the next call is kFailedPrecondition
  // saying so, and the call after it starts a new run. Errors: as
  // record_into; kInvalidArgument for options with no limit or a negative
  // or NaN budget. Thread-safe.
  StatusOr<SliceProgress> record_slice(VkCommandBuffer cmd, const DeviceBindings& bindings,
                                       const SliceOptions& opts) const;
  // The device memory the model holds now. Thread-safe.
  DeviceMemoryUse memory() const;
  // The timeline semaphore tickets are values of (VK_NULL_HANDLE when the
  // device has no timeline semaphores, or when the model has several run
  // slots: each has a timeline of its own).
  VkSemaphore timeline() const;
  // VulkanModelOptions::concurrent_runs.
  size_t run_slots() const { return slots_.size(); }
  // How long run() and wait() poll before blocking (vk::Submitter::set_spin;
  // vk::kAutoSpin, the default, follows the runs' durations).
  void set_wait_spin(std::chrono::microseconds spin) const;

  // How the device stores the graph input or output `name` (element type,
  // buffer or image). Errors: kNotFound naming the inputs and outputs.
  StatusOr<planner::DeviceLayout> io_layout(const std::string& name) const;

  const planner::ExecutionPlan& plan() const;
  const VulkanCompileStats& compile_stats() const;

  struct Impl;

 private:
  explicit VulkanModel(std::vector<std::unique_ptr<Impl>> slots);
  // The run slots; the first also answers what does not depend on a run
  // (the plan, io_layout, record_into).
  std::vector<std::unique_ptr<Impl>> slots_;
  std::unique_ptr<RunSlots> pool_;
};

}  // namespace kiln::runtime

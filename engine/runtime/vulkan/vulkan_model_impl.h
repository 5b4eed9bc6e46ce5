// VulkanModel's internals: the compiled state shared by all runs
// (CompiledPlan), one run slot's state (VulkanModel::Impl), and the
// per-shape-signature state of a slot (concrete shapes, memory, recorded
// commands).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "planner/device_data.h"
#include "engine/runtime/vulkan/hazard_tracker.h"
#include "engine/runtime/vulkan/host_commands.h"
#include "engine/runtime/vulkan/host_secondaries.h"
#include "engine/runtime/vulkan/signature_cache.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/glsl_codegen.h"
#include "planner/memory/arena.h"
#include "planner/memory/liveness.h"
#include "planner/memory/plan_cache.h"
#include "platform/vulkan/host_buffer.h"
#include "platform/vulkan/memory_arena.h"
#include "platform/vulkan/pipeline.h"
#include "platform/vulkan/submitter.h"
#include "platform/vulkan/timestamps.h"
#include "platform/vulkan/transfer.h"

namespace kiln::runtime {

using planner::TensorId;

struct ArenaLayout;  // place_tensors' blocks before offsets (vulkan_model_place.cc)
class Recorder;      // recorder.h

// What a constant or state buffer of `shape` reserves in an arena whose
// buffers start at multiples of `align`: its bytes (at least 16) rounded up,
// plus one alignment of slack.
inline VkDeviceSize arena_reserve(const planner::DeviceLayout& layout, const Shape& shape, VkDeviceSize align) {
  return (std::max<size_t>(device_bytes(layout, shape), 16) + align - 1) / align * align + align;
}

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Where one plan tensor lives during runs of a signature.
struct Placement {
  bool present = false;             // has device memory
  const vk::Buffer* buffer = nullptr;
  VkDeviceSize offset = 0;
  // Bytes of this tensor; for an image in the shared arena, the bytes of
  // memory it occupies (its slot), which hazard tracking compares.
  VkDeviceSize size = 0;
  vk::Image* image = nullptr;
  // Hazard-tracking id: 0 = the activation arena (buffers, and images placed
  // in it, by memory offset), 1+ images in a separate image arena, then the
  // host's buffers; -1 constants and model state (a state tensor is bound
  // by one dispatch, which alone reads and writes it).
  int resource = -1;
};

struct RecordedDispatch {
  size_t step = 0;
  std::vector<VkDescriptorSet> sets;
  std::vector<std::byte> push;
  std::array<uint32_t, 3> groups{1, 1, 1};
  // A compute -> compute memory barrier goes before it (a hazard with the
  // dispatches since the last barrier; Recorder::plan_barriers), worked out
  // once so that recording the segment again (record_into, a game's every
  // frame) only replays the commands.
  bool barrier_before = false;
};

// Dispatches recorded into one command buffer; a fallback step (run on the
// host) and an If (whose condition the host reads) end a segment, and each
// branch of an If starts one, so that a run submits only the taken branch.
struct Segment {
  std::vector<RecordedDispatch> dispatches;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  size_t first_step = 0;            // the plan step the segment starts at (skipped branches are found by it)
  size_t fallback_step = SIZE_MAX;  // the step to run on the host after this segment
  size_t if_step = SIZE_MAX;        // the kIf step to decide after this segment
  size_t loop_step = SIZE_MAX;      // the kLoop step whose body follows this segment
  // The condition decided after this segment: the If's, or the body
  // condition of the Loop whose body this segment ends (kNoTensor: none).
  TensorId condition = planner::kNoTensor;
  // The segment's command buffer ends by copying `condition` into
  // sig.conditions at this offset (when it lives on the device and the
  // segment has a command buffer): reading it is then a map read after the
  // segment's own wait.
  bool condition_copied = false;
  VkDeviceSize condition_offset = 0;
  // Ifs before and inside this segment whose condition was a host value,
  // decided when the signature was recorded: (kIf step, then taken).
  std::vector<std::pair<size_t, bool>> decided_ifs;
  // Start + end (or start + one per dispatch when profiling); null when the
  // queue has no timestamps.
  std::unique_ptr<vk::TimestampQueries> timestamps;
  // What the dispatches move, per dispatch (the signature's shapes are the
  // segment's): computed by the first run that submits the segment.
  struct Traffic {
    uint64_t read = 0, written = 0, flops = 0;
  };
  std::vector<Traffic> traffic;
  uint32_t fused_dispatches = 0;
  // Per dispatch, its GPU time in the last profiled run (empty before one):
  // what a sliced recording (record_slice) budgets with when present.
  std::vector<double> measured_ms;
};

// A sub-graph boundary (SoD²'s Execution Determined Output): the plan step
// before which this signature stops because a node's output shape depends on
// tensor values (vulkan_model_dynamic_shape.cc).
struct Boundary {
  size_t step = SIZE_MAX;  // SIZE_MAX: none, the signature runs to the end
  // The step is a host fallback (NonZero, Range on device inputs) run at the
  // boundary: its outputs' shapes key the continuation, which writes them.
  bool host_step = false;
  // Device values the boundary reads back (shape inputs of nodes such as a
  // Reshape, Expand or Slice): their contents key the continuation.
  std::vector<ir::ValueId> read_back;
};

struct Signature {
  std::vector<Shape> shapes;                 // per plan tensor (concrete; 1s where not sized)
  std::map<ir::ValueId, Tensor> host_values;  // host-resident values (shape arithmetic)
  std::map<std::string, int64_t> bindings;   // symbol values
  // The activation arena: the activation buffer and (when one memory type
  // serves both) the image tensors, at memplan's offsets; image_arena holds
  // the images otherwise (`images_note` says why). It is the model's
  // activation memory for this signature's depth (0 for a root signature,
  // 1 for its continuations, ...), shared with every signature of that depth.
  std::shared_ptr<vk::MemoryArena> arena;
  size_t depth = 0;
  uint64_t last_run = 0;  // Impl::runs when it last ran (least recently used goes first)
  // The asynchronous submission (Impl::tickets) whose host-memory outputs
  // are still in `staging`, waiting for Impl::wait; 0: none.
  uint64_t ticket = 0;
  std::unique_ptr<vk::MemoryArena> image_arena;
  vk::Buffer activations;
  std::deque<vk::Image> images;
  std::vector<Placement> place;              // per plan tensor
  // Zero-copy bindings, by the root tensor placed in the host's buffer, and
  // borrowed views of those buffers (deque: placements point into it).
  std::map<TensorId, ExternalBuffer> external;
  std::deque<vk::Buffer> external_buffers;
  // Inputs and outputs converted from and into host images (image_binding.h):
  // recorded before the first kernel and after the last. `image_tensors`
  // holds their plan tensors, which are neither staged nor read back.
  std::vector<ImageConversion> image_conversions;
  std::set<TensorId> image_tensors;
  std::vector<Segment> segments;
  // Inputs and outputs staged through one mapped host buffer, with the
  // copies recorded into the first and last command buffers: a run is one
  // submission. Tensors not staged (bound to host buffers, host values, or
  // with no command buffer to carry the copy) go through Transfer.
  struct Staged {
    TensorId tensor = planner::kNoTensor;
    VkDeviceSize offset = 0;  // in `staging`
    VkDeviceSize bytes = 0;
  };
  std::unique_ptr<vk::HostBuffer> staging;
  std::unique_ptr<vk::HostBuffer> conditions;  // If and Loop conditions read back (see Segment)
  // Per kLoop step: the indices of its body's first and last segments
  // (absent when the body records nothing).
  std::map<size_t, std::pair<size_t, size_t>> loop_bodies;
  std::vector<Staged> staged_inputs;   // per graph input; tensor kNoTensor when not staged
  std::vector<Staged> staged_outputs;  // per graph output
  uint32_t dispatches = 0;
  // Device memory this signature holds alone (a separate image arena when
  // images cannot share, staging and condition buffers; not the activation
  // memory its depth shares).
  uint64_t device_bytes = 0;
  memplan::ArenaReport memory;  // the activation arena's plan (place_tensors)
  double memory_plan_ms = 0;    // time plan_arena took
  uint64_t image_bytes = 0;     // the image tensors' slots, summed (their no-reuse total)
  std::string images_note;      // "shared", "none", or why images have their own arena
  // Images whose memory the arena re-uses within a run, by the plan step
  // that first writes them: record() transitions each from UNDEFINED
  // (contents discarded) right before that dispatch, after every earlier
  // access to its memory, in every run.
  std::map<size_t, std::vector<vk::Image*>> image_births;
  // The dispatches flattened for the host's command buffers
  // (host_commands.h): made by the first record_into or record_slice of
  // this signature, replayed by every later one.
  HostCommands host_commands;
  // That recording in a secondary command buffer the host executes
  // (host_secondaries.h), made on first use; freed by release().
  VkCommandBuffer host_secondary = VK_NULL_HANDLE;

  // Value-dependent shapes (vulkan_model_dynamic_shape.cc). A signature
  // records the steps [first_step, end_step): all of them unless some node's
  // output shape depends on tensor values, in which case it ends at that
  // boundary, and the rest of the plan is a continuation keyed by what the
  // boundary materialized (shapes or read-back values), recorded once per key
  // and cached here. A continuation places only the tensors it writes; the
  // tensors its parents wrote keep their memory.
  size_t first_step = 0;
  size_t end_step = 0;
  std::vector<bool> sized;                   // per plan tensor: shapes[t] is its real shape
  std::set<ir::NodeId> pending;              // nodes sized only past the boundary
  std::map<ir::ValueId, Tensor> known_values;  // device values read back at earlier boundaries
  std::map<ir::ValueId, std::pair<DType, Shape>> known_shapes;  // outputs of boundary nodes run on the host
  Boundary boundary;
  const Signature* parent = nullptr;
  std::map<std::string, std::unique_ptr<Signature>> continuations;
};

// What every run slot of a compiled model shares, written by compile() before
// a second slot exists and read-only afterwards: the plan (its lowering-made
// constants without host data once uploaded: upload_constants), the generated
// kernels, their pipelines (owned by the device's KernelCache) and the
// weights. Model state (PlanTensor::Origin::kState) is not here: kernels
// write it, so each slot has its own.
struct CompiledPlan {
  planner::ExecutionPlan plan;
  VulkanCompileStats compile_stats;
  std::vector<planner::GeneratedKernel> kernels;        // per step
  std::vector<const vk::ComputePipeline*> pipelines;    // per step (null unless dispatch)
  // Constants (`weights`), and the first slot's model state, in one memory
  // allocated at compile.
  std::unique_ptr<vk::MemoryArena> weights_arena;
  std::map<TensorId, vk::Buffer> weights;
  // Each slot's own device memory (Impl::slot_bytes) as of its last run,
  // submission or forget (Impl::publish_memory): what the memory limit
  // counts of the other slots without taking their locks.
  std::array<std::atomic<uint64_t>, kMaxConcurrentRuns> slot_bytes{};
};

// One run slot (VulkanModelOptions::concurrent_runs): everything a run
// writes — activation memory, staging, descriptor sets, command buffers,
// timestamp queries, model state, its own Submitter and timeline — over the
// CompiledPlan it shares with the model's other slots. Runs in one slot take
// turns (`mutex`); runs in different slots share nothing they write.
struct VulkanModel::Impl {
  Impl(vk::Device& d, vk::KernelCache& c, const ir::Graph& g,
       std::shared_ptr<CompiledPlan> shared = std::make_shared<CompiledPlan>())
      : device(d), cache(c), graph(g), compiled(std::move(shared)) {}
  ~Impl();

  // Another slot over the same CompiledPlan, with its own submitter,
  // transfer, descriptor pools and zero-filled model state
  // (vulkan_model_slots.cc). Errors: VkResult errors, kOutOfMemory (the
  // state beyond device_memory_limit).
  StatusOr<std::unique_ptr<Impl>> make_slot(size_t index) const;
  // The shapes of the model-state tensors kernels bind (constant dims).
  // Errors: kInternal for a symbolic one.
  StatusOr<std::map<TensorId, Shape>> state_shapes() const;
  // Allocates this slot's `state` buffers from `arena` and zero-fills them.
  Status create_state(vk::MemoryArena& arena, const std::map<TensorId, Shape>& shapes);
  // This slot's own device memory (not the weights): activations, staging
  // and, for slots after the first, their model state. With `mutex` held.
  uint64_t slot_bytes() const;
  // Publishes slot_bytes() for the other slots' memory-limit checks (takes
  // `mutex`), and reads what they published.
  void publish_memory();
  uint64_t other_slots_bytes() const;
  size_t slot_index = 0;  // in the model's slots

  Status compile_kernels();
  Status upload_constants();
  StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, const DeviceBindings& bindings,
                                    VulkanRunStats* stats);
  StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, VulkanRunStats* stats) {
    return run(inputs, DeviceBindings{}, stats);
  }

  // run()'s phases (vulkan_model_run.cc). input_specs checks the inputs
  // against the graph (kInvalidArgument naming the input); upload_inputs
  // stages or writes them; download_outputs reads the outputs back;
  // fill_run_stats moves `ran`'s lists into `stats`.
  StatusOr<std::vector<InputSpec>> input_specs(const std::vector<Tensor>& inputs,
                                               const DeviceBindings& bindings) const;
  Status upload_inputs(Signature& sig, const std::vector<Tensor>& inputs);
  StatusOr<std::vector<Tensor>> download_outputs(Signature& sig, const DeviceBindings& bindings);
  void fill_run_stats(const Signature& sig, VulkanRunStats& ran, VulkanRunStats& stats) const;

  // Per-signature setup.
  StatusOr<Signature*> signature_for(const std::vector<InputSpec>& inputs, const DeviceBindings& bindings,
                                     bool* created);
  // Shapes (vulkan_model_shapes.cc): the concrete shape of every value and
  // plan tensor for `inputs`, host values, symbol bindings, and the nodes
  // that wait for a sub-graph boundary (sig.pending), in phases. Errors:
  // kInvalidArgument when inputs disagree on a symbol, kUnimplemented for
  // shapes the backend cannot size, the ops' inference errors.
  Status evaluate_shapes(const std::vector<InputSpec>& inputs, Signature& sig) const;
  void seed_inputs(const std::vector<InputSpec>& inputs, Signature& sig, std::vector<ops::ValueInfo>& info) const;
  Status bind_host_params(Signature& sig, const std::vector<ops::ValueInfo>& info) const;
  Status bind_value_shapes(Signature& sig, const std::vector<ops::ValueInfo>& info,
                           const std::vector<bool>& waiting) const;
  Status evaluate_plan_dims(Signature& sig) const;
  // The plan tensor of graph input or output `name` (kNotFound otherwise).
  StatusOr<TensorId> io_tensor(const std::string& name) const;
  // Checks `bindings` against the signature's shapes and fills sig.external.
  Status resolve_bindings(const DeviceBindings& bindings, Signature& sig) const;
  void forget_buffer(VkBuffer buffer);
  // Image bindings (vulkan_model_images.cc). check_image_io checks a binding
  // against the graph and device (VulkanModel::image_binding_shape) and
  // gives the plan tensor; resolve_image_binding checks it against sig's
  // shapes and adds its conversion; prepare_image_conversions (after
  // placement) makes each conversion's pipeline and descriptor set.
  StatusOr<TensorId> check_image_io(const std::string& name, const ExternalImage& image) const;
  Status resolve_image_binding(const std::string& name, const ExternalImage& image, Signature& sig) const;
  Status prepare_image_conversions(Signature& sig);
  void forget_image(VkImage image);
  // Placement (vulkan_model_place.cc): every tensor's memory for `sig`'s
  // shapes, in phases: collect_blocks (lifetimes from planner/memory/
  // liveness.h, sizes, constants), choose_image_memory (images in the
  // activation arena or their own), memory_plans.plan, bind_placements,
  // place_external, place_aliases, then restore_arena. Errors:
  // kUnimplemented for a tensor beyond the device's limits, kOutOfMemory.
  Status place_tensors(Signature& sig);
  Status collect_blocks(Signature& sig, const planner::Liveness& liveness, ArenaLayout& layout);
  Status choose_image_memory(Signature& sig, const planner::Liveness& liveness, ArenaLayout& layout);
  Status bind_placements(Signature& sig, const planner::Liveness& liveness, const ArenaLayout& layout,
                         const memplan::ArenaPlan& arena, int* resource);
  void place_external(Signature& sig, int resource);
  void place_aliases(Signature& sig);
  // The model's activation memory for signatures of `depth` (0: input-shape
  // signatures; d: continuations past d sub-graph boundaries, whose parents'
  // tensors stay live in the memories of lower depths), at least `bytes` of a
  // memory type among `type_bits`. Growing it (or changing its type) drops
  // every signature bound to the old one: their next run makes them again
  // (shapes, placement, recording; no shader compilation). Call with
  // `mutex` held, before the new signature joins `signatures` or its
  // parent's continuations.
  StatusOr<std::shared_ptr<vk::MemoryArena>> activation_memory_for(size_t depth, VkDeviceSize bytes,
                                                                   uint32_t type_bits);
  // What a signature keeps in its arena from one run to the next, written
  // when it was placed: host values kernels bind, and images made GENERAL
  // once. Another signature's run in the shared activation memory
  // overwrites them; this writes them again (memory_owner says whose they
  // are now).
  Status restore_arena(Signature& sig);
  bool owns_memory(const Signature& sig) const {
    return sig.depth < memory_owner.size() && memory_owner[sig.depth] == &sig;
  }
  // Frees sig's descriptor sets and command buffers (and its
  // continuations'), and forgets it as a memory owner; the signature must
  // not be in flight. The caller then destroys it.
  void release(Signature& sig);
  // Drops the least recently run of `family` (root signatures, or one
  // signature's continuations) beyond options.max_signatures (never `keep`).
  void evict_signatures(std::map<std::string, std::unique_ptr<Signature>>& family, const Signature* keep);
  // Records sig's command buffers with a Recorder (recorder.h) over this
  // model's device, plan, kernels, pipelines and allocators.
  Status record(Signature& sig);
  Status create_images(Signature& sig, const std::vector<bool>& needed, VkDeviceSize capacity, int* resource);
  // Asynchronous runs (vulkan_model_async.cc): VulkanModel::submit, poll
  // and wait.
  StatusOr<uint64_t> submit(const std::vector<Tensor>& inputs, const DeviceBindings& bindings,
                            const vk::SubmitSync& sync);
  StatusOr<bool> poll(uint64_t ticket);
  StatusOr<std::vector<Tensor>> wait(uint64_t ticket, uint64_t timeout_ns);
  // Why `sig` cannot run as one device submission with these inputs
  // ("" when it can): a host step, a host-decided If or Loop, a sub-graph
  // boundary, or an input or output moved outside the command buffers.
  std::string single_submission_blocker(const Signature& sig, const std::vector<Tensor>& inputs) const;
  // Moves the outputs of sig's ticket out of its staging memory into the
  // ticket (the run must be complete), so the memory can be used again.
  void keep_ticket_outputs(Signature& sig);
  // Per plan step, the debug label of its dispatch: the node's name and
  // the kernel's ("h (matmul_gemv+relu)"); made on first use when labels
  // are enabled, with `mutex` held.
  const std::vector<std::string>& label_names();
  std::vector<std::string> label_names_;
  // The device memory held now (VulkanModel::memory); with `mutex` held.
  DeviceMemoryUse memory_use() const;
  // kOutOfMemory naming `what`, the need and the limit when `extra` more
  // bytes would take the model past options.device_memory_limit.
  Status check_memory_limit(uint64_t extra, const std::string& what) const;
  // VulkanModel::record_into (vulkan_model_host_record.cc).
  Status record_into(VkCommandBuffer cmd, const DeviceBindings& bindings, std::optional<uint32_t> via_secondary);
  // sig's run recorded into a secondary command buffer: made on first use,
  // then kept in sig.host_secondary until release(). Call with `mutex` held.
  StatusOr<VkCommandBuffer> host_secondary(Signature& sig);
  // The signature of a run with every input and output in `bindings` that
  // can be recorded into the host's command buffer (made on first sight,
  // its arena restored), or kFailedPrecondition naming why not. Call with
  // `mutex` held.
  StatusOr<Signature*> host_recordable(const DeviceBindings& bindings);
  // The last few bindings host_recordable accepted and the signature it
  // gave for each, most recent first: a game records with the same
  // bindings every frame (or with one set per frame in flight), and equal
  // bindings give the same signature and the same verdict, so a call with
  // bindings equal to one of these skips the checks, the signature key and
  // the lookup (vulkan_model_host_record.cc). release() drops an entry
  // with its signature. Guarded by `mutex`.
  struct HostRecordCheck {
    DeviceBindings bindings;
    Signature* sig = nullptr;
  };
  static constexpr size_t kHostRecordChecks = 4;  // frames in flight of a game, with room to spare
  std::vector<HostRecordCheck> host_checks;
  // A Recorder for the host's command buffers (no timestamps; debug labels
  // as options say). Call with `mutex` held.
  Recorder host_recorder();
  // VulkanModel::record_slice (vulkan_model_sliced_record.cc).
  StatusOr<SliceProgress> record_slice(VkCommandBuffer cmd, const DeviceBindings& bindings, const SliceOptions& opts);
  // The sliced run in progress (record_slice): its signature, where the
  // next slice starts, each dispatch's estimated cost. `stamp` is `runs`
  // after its last slice: any other run since (which reuses the activation
  // memory the run's later slices read) interrupts it, as does dropping its
  // signature (release sets `sig` null).
  struct SlicedRun {
    Signature* sig = nullptr;
    uint64_t stamp = 0;
    size_t next = 0;
    uint32_t slices = 0;
    std::vector<double> cost_us;  // per dispatch, in recording order
    bool measured = false;
  };
  std::optional<SlicedRun> sliced;  // guarded by `mutex`
  // A submission's outputs until wait() takes them: read back at wait, or
  // earlier by keep_ticket_outputs.
  struct Ticket {
    Signature* sig = nullptr;  // null once the outputs are kept here
    DeviceBindings bindings;
    StatusOr<std::vector<Tensor>> outputs = std::vector<Tensor>{};
  };
  std::map<uint64_t, Ticket> tickets;  // guarded by `mutex`
  Status run_fallback(Signature& sig, size_t step);
  // The outputs of host fallback step `step`, computed by the reference
  // kernel from inputs read from `sig`.
  StatusOr<std::vector<Tensor>> fallback_outputs(Signature& sig, size_t step);
  // A host fallback of an If or Loop (vulkan_model_control_flow.cc): the
  // values of the enclosing graph its sub-graphs read by id, into `env`
  // (host values, or downloads of device tensors; placement keeps them live
  // up to `step`). Errors: kUnimplemented when such a tensor's memory was
  // re-used before `step` anyway (a check: a continuation's parents placed
  // it).
  Status host_region_env(Signature& sig, size_t step, std::map<ir::ValueId, Tensor>& env);
  // Whether tensor `t`'s device memory still holds its value at plan step
  // `at`: nothing placed over it was written since its last write.
  bool still_holds(const Signature& sig, TensorId t, size_t at) const;
  // Value-dependent shapes (vulkan_model_dynamic_shape.cc). Sets
  // sig.end_step and sig.boundary from sig.pending (the first step of a node
  // evaluate_shapes could not size). Errors: kUnimplemented when the
  // boundary lies inside an If branch or a Loop body, or nothing there can
  // be materialized.
  Status find_boundary(Signature& sig) const;
  // Crosses sig's boundary after its segments ran: runs its host step or
  // reads its values back, and returns the continuation for what it found
  // (made, placed and recorded on first sight; *created then). Call with
  // sig's root mutex held. Fills `ran`'s fallbacks.
  StatusOr<Signature*> cross_boundary(Signature& sig, const std::vector<InputSpec>& inputs,
                                      const DeviceBindings& bindings, bool* created, VulkanRunStats& ran);
  // place_tensors for a signature with a boundary or a parent: the tensors
  // its parents wrote keep the parents' memory (sized 1 for placement, then
  // pointed there); those only steps past its boundary write are sized 1
  // (a continuation places them).
  Status place_phase(Signature& sig);
  // Control flow (vulkan_model_control_flow.cc). Sizes a device If's
  // outputs from its branches (both inferred by `infer_region`); when the
  // branches disagree for these shapes, from the taken one if the condition
  // is known in `info`, else sets *waits (the If is a sub-graph boundary).
  Status if_output_shapes(const ir::Node& node, const std::function<Status(ir::RegionId)>& infer_region,
                          std::vector<ops::ValueInfo>& info, bool* waits) const;
  // Sizes a device Loop's body (its parameters as the initial values, its
  // condition input the host value true, its iteration number a device
  // scalar) and outputs (scan outputs [iterations, ...], the count from the
  // trip count and conditions); sets `waits` when the device computes the
  // trip count or initial condition and this signature has not read it back
  // (a sub-graph boundary before the loop); fails when the body changes a
  // carried value's shape for these shapes.
  Status loop_shapes(const ir::Node& node, const std::function<Status(ir::RegionId)>& infer_region,
                     std::vector<ops::ValueInfo>& info, Signature& sig, bool* waits) const;
  // A trip count or condition: read back at a sub-graph boundary
  // (known_values), else the host value or the device tensor.
  StatusOr<Tensor> loop_input(Signature& sig, TensorId t);
  // Condition tensor `cond` of `node` after `seg` ran: from sig.conditions
  // when `seg` copied it there, else a host value, a constant or a
  // one-element download. Errors: kInvalidArgument for a condition that is
  // not one element.
  StatusOr<bool> read_condition(Signature& sig, const Segment* seg, TensorId cond, ir::NodeId node);
  // Runs the signature's segments with a ControlFlowExecutor
  // (control_flow_executor.h): Ifs skip their untaken ranges, Loops repeat
  // their bodies. Fills gpu_ms, dispatches, fallbacks, kernels, branches
  // and loops of `out`.
  Status run_segments(Signature& sig, VulkanRunStats& out);
  // The condition of kIf step `step` when it is known on the host for this
  // signature (a host value or a constant), else nullopt. Errors:
  // kInvalidArgument for a condition that is not one element.
  StatusOr<std::optional<bool>> host_condition(const Signature& sig, size_t step) const;
  StatusOr<Tensor> read_tensor(Signature& sig, TensorId id);
  Status write_tensor(Signature& sig, TensorId id, const Tensor& value);

  vk::Device& device;
  vk::KernelCache& cache;
  const ir::Graph& graph;
  VulkanModelOptions options;
  planner::TargetInfo target;
  // The compiled model, shared with the other slots; the references below
  // name its parts (written only by compile(), on the first slot).
  std::shared_ptr<CompiledPlan> compiled;
  planner::ExecutionPlan& plan = compiled->plan;
  VulkanCompileStats& compile_stats = compiled->compile_stats;
  std::vector<planner::GeneratedKernel>& kernels = compiled->kernels;
  std::vector<const vk::ComputePipeline*>& pipelines = compiled->pipelines;
  std::unique_ptr<vk::MemoryArena>& weights_arena = compiled->weights_arena;
  std::map<TensorId, vk::Buffer>& weights = compiled->weights;
  // This slot's model state (PlanTensor::Origin::kState: zero-filled once
  // and kept across runs; no signature's arena ever holds it): the first
  // slot's in weights_arena, the others' in `state_arena`.
  std::unique_ptr<vk::MemoryArena> state_arena;
  std::map<TensorId, vk::Buffer> state;
  std::unique_ptr<vk::Transfer> transfer;
  std::unique_ptr<vk::Submitter> submitter;
  std::unique_ptr<vk::DescriptorAllocator> descriptors;
  // Secondary command buffers for the host (host_secondary); made on first
  // use, with `mutex` held.
  std::unique_ptr<HostSecondaries> secondaries;
  // One run of this slot at a time: every root signature's arena is the
  // same activation memory. Guards everything below.
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<Signature>> signatures;
  std::vector<std::shared_ptr<vk::MemoryArena>> activation_memory;  // by depth
  memplan::ArenaPlanCache memory_plans;  // arena plans reused across signatures (planner/memory/plan_cache.h)
  std::vector<const Signature*> memory_owner;  // by depth: whose persistent tensors it holds (restore_arena)
  uint64_t runs = 0;
};

}  // namespace kiln::runtime

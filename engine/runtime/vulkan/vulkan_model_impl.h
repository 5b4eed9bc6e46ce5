// VulkanModel's internals: the compiled state shared by all runs, and the
// per-shape-signature state (concrete shapes, memory, recorded commands).
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/runtime/vulkan/vulkan_model.h"
#include "planner/glsl_codegen.h"
#include "platform/vulkan/host_buffer.h"
#include "platform/vulkan/memory_arena.h"
#include "platform/vulkan/pipeline.h"
#include "platform/vulkan/submitter.h"
#include "platform/vulkan/timestamps.h"
#include "platform/vulkan/transfer.h"

namespace kiln::runtime {

using planner::TensorId;

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Where one plan tensor lives during runs of a signature.
struct Placement {
  bool present = false;             // has device memory
  const vk::Buffer* buffer = nullptr;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;            // bytes of this tensor
  vk::Image* image = nullptr;
  int resource = -1;                // hazard-tracking id: 0 = activations buffer, 1+ images, -1 constants
};

// The dtype and shape of one graph input for a run (a bound input has no
// host tensor, only the shape its binding gives).
struct InputSpec {
  DType dtype = DType::kUndefined;
  Shape shape;
  const Tensor* value = nullptr;  // the host tensor, when the input was given as one
};

struct RecordedDispatch {
  size_t step = 0;
  std::vector<VkDescriptorSet> sets;
  std::vector<std::byte> push;
  std::array<uint32_t, 3> groups{1, 1, 1};
};

// Dispatches recorded into one command buffer; a fallback step (run on the
// host) separates segments.
struct Segment {
  std::vector<RecordedDispatch> dispatches;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  size_t fallback_step = SIZE_MAX;  // the step to run on the host after this segment
  // Start + end (or start + one per dispatch when profiling); null when the
  // queue has no timestamps.
  std::unique_ptr<vk::TimestampQueries> timestamps;
};

struct Signature {
  std::mutex mutex;  // one run at a time per signature
  std::vector<Shape> shapes;                 // per plan tensor (concrete)
  std::map<ir::ValueId, Tensor> host_values;  // host-resident values (shape arithmetic)
  std::map<std::string, int64_t> bindings;   // symbol values
  std::unique_ptr<vk::MemoryArena> arena;        // the activation buffer
  std::unique_ptr<vk::MemoryArena> image_arena;  // image tensors
  vk::Buffer activations;
  std::deque<vk::Image> images;
  std::vector<Placement> place;              // per plan tensor
  // Zero-copy bindings, by the root tensor placed in the host's buffer, and
  // borrowed views of those buffers (deque: placements point into it).
  std::map<TensorId, ExternalBuffer> external;
  std::deque<vk::Buffer> external_buffers;
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
  std::vector<Staged> staged_inputs;   // per graph input; tensor kNoTensor when not staged
  std::vector<Staged> staged_outputs;  // per graph output
  uint32_t dispatches = 0;
  uint64_t device_bytes = 0;
};

struct VulkanModel::Impl {
  Impl(vk::Device& d, vk::KernelCache& c, const ir::Graph& g) : device(d), cache(c), graph(g) {}
  ~Impl();

  Status compile_kernels();
  Status upload_constants();
  StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, const DeviceBindings& bindings,
                                    VulkanRunStats* stats);
  StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, VulkanRunStats* stats) {
    return run(inputs, DeviceBindings{}, stats);
  }

  // Per-signature setup.
  StatusOr<Signature*> signature_for(const std::vector<InputSpec>& inputs, const DeviceBindings& bindings,
                                     bool* created);
  Status evaluate_shapes(const std::vector<InputSpec>& inputs, Signature& sig) const;
  // The plan tensor of graph input or output `name` (kNotFound otherwise).
  StatusOr<TensorId> io_tensor(const std::string& name) const;
  // Checks `bindings` against the signature's shapes and fills sig.external.
  Status resolve_bindings(const DeviceBindings& bindings, Signature& sig) const;
  void forget_buffer(VkBuffer buffer);
  Status place_tensors(Signature& sig);
  Status record(Signature& sig);
  Status plan_staging(Signature& sig);
  Status create_images(Signature& sig, const std::vector<bool>& needed, VkDeviceSize capacity, int* resource);
  void record_input_copies(Signature& sig, VkCommandBuffer cmd);
  void record_output_copies(Signature& sig, VkCommandBuffer cmd);
  Status run_fallback(Signature& sig, size_t step);
  StatusOr<Tensor> read_tensor(Signature& sig, TensorId id);
  Status write_tensor(Signature& sig, TensorId id, const Tensor& value);

  vk::Device& device;
  vk::KernelCache& cache;
  const ir::Graph& graph;
  VulkanModelOptions options;
  planner::TargetInfo target;
  planner::ExecutionPlan plan;
  VulkanCompileStats compile_stats;
  std::vector<planner::GeneratedKernel> kernels;        // per step
  std::vector<const vk::ComputePipeline*> pipelines;    // per step (null unless dispatch)
  std::unique_ptr<vk::MemoryArena> weights_arena;
  std::map<TensorId, vk::Buffer> weights;
  std::unique_ptr<vk::Transfer> transfer;
  std::unique_ptr<vk::Submitter> submitter;
  std::unique_ptr<vk::DescriptorAllocator> descriptors;
  std::mutex mutex;  // guards `signatures`
  std::map<std::string, std::unique_ptr<Signature>> signatures;
};

}  // namespace kiln::runtime

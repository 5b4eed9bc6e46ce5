// What one run of a compiled model did: times, dispatches, memory, and the
// per-kernel profile. Every backend fills what applies to it (the reference
// executor only wall_ms); the C API and `kiln run --stats` report it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime {

struct KernelTiming {
  std::string kernel;  // kernel name ("conv2d_1x1", "add")
  std::string node;    // the graph node it implements (name or op)
  double gpu_ms = 0;
  // Bytes the dispatch reads and writes: every tensor it binds, at its
  // device layout (images padded to whole texels), for this run's shapes.
  uint64_t bytes = 0;
  // KernelDesc::flops for this run's shapes; 0 when the kernel has no count.
  uint64_t flops = 0;
  // `bytes` split: the tensors the kernel only reads, and those it writes
  // (bytes_read + bytes_written == bytes).
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
};

// A fused kernel: the planner's fusion groups ("fused_sigmoid_mul") and a
// plugin's fused kernels, which name their parts with '+' ("dw3x3+pw").
inline bool is_fused_kernel(const std::string& name) {
  return name.rfind("fused", 0) == 0 || name.find('+') != std::string::npos;
}

struct RunStats {
  double wall_ms = 0;          // run() from call to return
  // Whole command buffers on the GPU; -1 without timestamps. Profiled, from
  // the end of the input uploads to the last kernel.
  double gpu_ms = -1;
  // The run's device interval, on the host's steady clock (ns since
  // std::chrono::steady_clock's epoch) so that runs on different queues,
  // and host times, compare: from the first command buffer's opening
  // timestamp (written once the queue's earlier work is done) to the last
  // one's closing timestamp (with profile on, the last kernel's). Host
  // steps between segments lie inside it. Both 0 when unknown: no
  // timestamps, or no calibrated clock (vk::DeviceClock needs
  // VK_EXT_calibrated_timestamps).
  int64_t gpu_begin_ns = 0;
  int64_t gpu_end_ns = 0;
  // The device queue the run was submitted to (its run slot's: slot s
  // takes queue s mod the device's queue count).
  uint32_t queue = 0;
  uint32_t dispatches = 0;     // dispatches submitted (an If's untaken branch: none; a Loop's body: per iteration)
  uint32_t fused_dispatches = 0;  // of them, dispatches of fused kernels (is_fused_kernel)
  // Global memory the dispatches moved, profile or not: per dispatch, every
  // tensor it only reads and every tensor it writes, whole, at its device
  // layout (KernelTiming::bytes_read / bytes_written), summed. A roofline
  // count, not what the caches fetched.
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint32_t host_steps = 0;     // shape arithmetic on the host
  uint32_t fallbacks = 0;      // nodes run by the reference kernels (with transfers)
  // This run recorded new command buffers: a new shape signature, or a new
  // continuation past a sub-graph boundary (a value-dependent shape seen
  // for the first time: a NonZero count, a device-computed Reshape target).
  bool recorded = false;
  uint64_t shader_compiles = 0;  // shaderc compilations during this run (0 after compile())
  // Device memory the model holds after this run: weights, the activation
  // memory every input-shape signature shares, and what each cached
  // signature holds alone (continuations' arenas, staging buffers).
  uint64_t device_bytes = 0;
  // The shared activation memory: the largest arena plan of the signatures
  // seen since it last grew (not the sum over shapes, not a maximum shape).
  uint64_t activation_bytes = 0;
  uint32_t signatures = 0;  // input-shape signatures cached (options.max_signatures at most)
  // The signature's activation arena (buffers, and image tensors when one
  // memory type serves both), as plugins/memplan planned it: its bytes, the
  // live-set lower bound (bytes live at the busiest step of the plan's
  // order), the bytes without reuse, and what a greedy best-fit allocator
  // would need; plan_ms is the time planning took when the signature was
  // made. image_bytes: the image tensors' slots (driver size rounded to
  // alignment and bufferImageGranularity) summed, i.e. their no-reuse
  // total; images: "shared" (in the arena above), "none", or "separate: "
  // and why they have their own arena (not in the numbers above).
  struct Memory {
    uint64_t arena_bytes = 0;
    uint64_t live_lower_bound = 0;
    uint64_t no_reuse_bytes = 0;
    uint64_t best_fit_bytes = 0;
    double plan_ms = 0;
    uint64_t image_bytes = 0;
    std::string images;
    // Which placement gave the offsets: "earlier plan evaluated" (a plan of
    // an earlier signature at these sizes), else plan_arena's strategy.
    std::string strategy;
  };
  Memory memory;
  std::vector<KernelTiming> kernels;  // profile only
  // Each If run on the device, in execution order: its node and the branch
  // the condition chose (only that branch's kernels ran).
  struct Branch {
    std::string node;
    bool then_branch = false;
  };
  std::vector<Branch> branches;
  // Each Loop run on the device, in execution order, and how many times its
  // body ran.
  struct LoopRun {
    std::string node;
    int64_t iterations = 0;
  };
  std::vector<LoopRun> loops;
};

}  // namespace kiln::runtime

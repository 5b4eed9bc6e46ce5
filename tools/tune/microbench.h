// TMModel's micro-benchmarks (../shared/papers/tmmodel.txt §3) as Vulkan
// compute shaders, timed with GPU timestamps:
//
//  * chase: one invocation follows a 2D random-stride pointer chase over a
//    sampled RGBA32F image or over a storage buffer of vec4 laid out row by
//    row (§3.1 steps I-II). Each texel holds two slots 0..15; a run's stride
//    tables map a slot to an x / y stride, so one upload of the texels serves
//    every run and every run draws its strides from its own multinomial
//    distribution (the tables). The host replays the walk exactly, for the
//    cross-block stride histogram (step III).
//  * stream: work groups of G invocations, each invocation walking its own
//    16-texel-wide region with one of the access patterns of §3.2.1 (row,
//    block-2/4/8), every access depending on the last; G and the number of
//    work groups vary (warp-level thrashing, §3.2.1, and work-group
//    concurrency, §3.2.2).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/base/status.h"
#include "platform/vulkan/device.h"
#include "plugins/tmmodel/model.h"

namespace kiln::tune {

// One chase run: strides per slot (16 each) and the measured latency.
struct ChaseRun {
  tmmodel::Storage storage = tmmodel::Storage::kBuffer;
  std::vector<int> stride_x, stride_y;  // 16 entries each
  std::vector<tmmodel::Texel> walk;     // the texels visited, replayed on the host
  double ns_per_access = 0;             // best of the repetitions
};

struct StreamRun {
  tmmodel::StreamConfig config;
  double ns = 0;  // best of the repetitions
};

struct MicrobenchOptions {
  int image_size = 2048;  // the chased image is image_size^2 texels (a power of two)
  int chase_steps = 16384;
  int chase_runs = 96;   // per storage
  int stream_steps = 128;
  std::vector<int> group_sizes = {16, 64, 256};
  std::vector<int64_t> work_groups = {1, 2, 3, 4, 6, 8, 12, 16};
  int repetitions = 5;
  uint64_t seed = 1;
};

class Microbench {
 public:
  // Compiles the kernels and uploads the chased texels for `device`
  // (borrowed). Errors: kUnimplemented without timestamps on the queue or
  // without RGBA32F images of image_size; VkResult errors.
  static StatusOr<std::unique_ptr<Microbench>> create(vk::Device& device, const MicrobenchOptions& options);
  ~Microbench();
  Microbench(const Microbench&) = delete;
  Microbench& operator=(const Microbench&) = delete;

  // options.chase_runs runs per storage, each with its own random
  // distribution of strides.
  StatusOr<std::vector<ChaseRun>> chase();
  // Every storage x pattern x group size x work-group count.
  StatusOr<std::vector<StreamRun>> stream();

 private:
  struct State;
  explicit Microbench(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace kiln::tune

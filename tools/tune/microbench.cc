// The micro-benchmark kernels and their timing (see microbench.h).
#include "tools/tune/microbench.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>

#include "platform/vulkan/memory_arena.h"
#include "platform/vulkan/pipeline.h"
#include "platform/vulkan/shader_compiler.h"
#include "platform/vulkan/timestamps.h"
#include "platform/vulkan/transfer.h"

namespace kiln::tune {

namespace {

using tmmodel::Storage;

constexpr int kSlots = 16;       // stride-table entries per axis
constexpr int kRegionWidth = 16; // texels per row of a stream region

// Strides a chase run draws from (§3.1 step I's list S, here from "stay in
// the line" to "leave any tile").
constexpr std::array<int, 10> kStrideCandidates = {0, 1, 2, 3, 4, 8, 16, 32, 64, 128};

// The storage's fetch; `p` (push constants) is declared before it.
constexpr const char* kFetch = R"(
#ifdef IMAGE
layout(set = 0, binding = 0) uniform sampler2D data;
#define FETCH(q) texelFetch(data, q, 0)
#else
layout(set = 0, binding = 0) readonly buffer Data { vec4 d[]; };
#define FETCH(q) d[(q).y * ROW_TEXELS + (q).x]
#endif
)";

// §3.1 step II: the texel's slots pick the next strides from this run's tables.
constexpr const char* kChase = R"(#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 1) in;
layout(push_constant) uniform P { ivec2 mask; int steps; int table; int slot; } p;
#define ROW_TEXELS (p.mask.x + 1)
#include "fetch.glsl"
layout(set = 0, binding = 1) readonly buffer Tables { int strides[]; };
layout(set = 0, binding = 2) writeonly buffer Out { ivec2 last[]; };
void main() {
  ivec2 q = ivec2(0);
  for (int i = 0; i < p.steps; ++i) {
    ivec2 s = ivec2(FETCH(q).xy);
    q = (q + ivec2(strides[p.table + s.x], strides[p.table + 16 + s.y])) & p.mask;
  }
  last[p.slot] = q;
}
)";

// §3.2: each invocation walks its region in bands of `rows` rows, column by
// column within a band; the texels hold zeros, so adding them to the next
// position only makes each access depend on the last.
constexpr const char* kStream = R"(#version 450
#extension GL_GOOGLE_include_directive : require
layout(local_size_x_id = 0) in;
layout(push_constant) uniform P { int steps; int rows; int regions_per_row; int width; } p;
#define ROW_TEXELS p.width
#include "fetch.glsl"
layout(set = 0, binding = 1) writeonly buffer Out { float sums[]; };
const int kRegion = 16;
void main() {
  int t = int(gl_GlobalInvocationID.x);
  int region_rows = p.steps / kRegion;
  ivec2 origin = ivec2((t % p.regions_per_row) * kRegion, (t / p.regions_per_row) * region_rows);
  ivec2 dep = ivec2(0);
  float acc = 0.0;
  int band = p.rows * kRegion;
  for (int j = 0; j < p.steps; ++j) {
    int in_band = j % band;
    vec4 v = FETCH(origin + dep + ivec2(in_band / p.rows, (j / band) * p.rows + in_band % p.rows));
    dep = ivec2(v.xy);
    acc += v.z;
  }
  sums[t] = acc;
}
)";

struct ChasePush {
  int32_t mask[2];
  int32_t steps, table, slot;
};
struct StreamPush {
  int32_t steps, rows, regions_per_row, width;
};

}  // namespace

struct Microbench::State {
  explicit State(vk::Device& d) : device(d) {}
  vk::Device& device;
  MicrobenchOptions options;
  std::mt19937_64 rng;
  std::unique_ptr<vk::ShaderCompiler> compiler;
  std::unique_ptr<vk::MemoryArena> arena;
  std::unique_ptr<vk::Transfer> transfer;
  std::unique_ptr<vk::DescriptorAllocator> descriptors;
  // Chased texels: two slots per texel, kept on the host for the replay.
  std::vector<float> chase_texels;
  vk::Image chase_image, stream_image;
  vk::Buffer chase_buffer, stream_buffer, out_buffer;
  int regions_per_row = 64, stream_width = 0, stream_height = 0;
  std::map<std::pair<bool, int>, std::unique_ptr<vk::ComputePipeline>> pipelines;  // (image?, G); G 0 = chase

  StatusOr<vk::ComputePipeline*> pipeline(bool image, int group_size) {
    auto& slot = pipelines[{image, group_size}];
    if (slot) return slot.get();
    vk::CompileOptions options;
    options.source_name = group_size == 0 ? "tmmodel_chase.comp" : "tmmodel_stream.comp";
    if (image) options.defines.push_back({"IMAGE", "1"});
    options.includes["fetch.glsl"] = kFetch;
    KILN_ASSIGN_OR_RETURN(std::vector<uint32_t> spirv, compiler->compile(group_size == 0 ? kChase : kStream, options));
    KILN_ASSIGN_OR_RETURN(vk::ShaderReflection reflection, vk::reflect(spirv));
    std::vector<vk::SpecializationValue> specs;
    if (group_size > 0) specs.push_back(vk::SpecializationValue::u32(0, static_cast<uint32_t>(group_size)));
    KILN_ASSIGN_OR_RETURN(slot, vk::ComputePipeline::create(device, spirv, std::move(reflection), specs, VK_NULL_HANDLE,
                                                            options.source_name));
    return slot.get();
  }

  // Runs `count` dispatches of one command buffer, each between two
  // timestamps and ordered after the previous one; returns their times.
  struct Dispatch {
    vk::ComputePipeline* pipeline;
    std::vector<VkDescriptorSet> sets;
    std::vector<std::byte> push;
    std::array<uint32_t, 3> groups;
  };
  StatusOr<std::vector<double>> time(const std::vector<Dispatch>& dispatches) {
    KILN_ASSIGN_OR_RETURN(auto ts, vk::TimestampQueries::create(device, static_cast<uint32_t>(2 * dispatches.size())));
    Status s = transfer->submitter().run([&](VkCommandBuffer cmd) -> Status {
      ts->reset(cmd);
      for (const Dispatch& d : dispatches) {
        KILN_RETURN_IF_ERROR(ts->write(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT).status());
        KILN_RETURN_IF_ERROR(vk::record_dispatch(cmd, *d.pipeline, d.sets, d.push, d.groups));
        KILN_RETURN_IF_ERROR(ts->write(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT).status());
        // Dispatches run one at a time (and rewrite the same outputs).
        VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        b.dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT;
        device.fn().vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &b, 0, nullptr, 0, nullptr);
      }
      return ok_status();
    });
    KILN_RETURN_IF_ERROR(s);
    KILN_ASSIGN_OR_RETURN(std::vector<uint64_t> ticks, ts->read_ticks());
    std::vector<double> ns;
    for (size_t i = 0; i + 1 < ticks.size(); i += 2) ns.push_back(ts->elapsed_ns(ticks[i], ticks[i + 1]));
    return ns;
  }

  // Sets for `pipeline` bound to `resources`, with one untimed dispatch that
  // moves images into the layout the timed ones expect and warms the kernel.
  StatusOr<std::vector<VkDescriptorSet>> bind(vk::ComputePipeline& pipeline,
                                              const std::vector<vk::DescriptorResource>& resources,
                                              std::span<const std::byte> push, std::array<uint32_t, 3> groups) {
    KILN_RETURN_IF_ERROR(vk::dispatch_sync(transfer->submitter(), *descriptors, pipeline, resources, push, groups));
    KILN_ASSIGN_OR_RETURN(std::vector<VkDescriptorSet> sets, descriptors->allocate(pipeline));
    KILN_RETURN_IF_ERROR(vk::write_descriptors(pipeline, sets, resources));
    return sets;
  }
};

Microbench::Microbench(std::unique_ptr<State> state) : state_(std::move(state)) {}
Microbench::~Microbench() = default;

StatusOr<std::unique_ptr<Microbench>> Microbench::create(vk::Device& device, const MicrobenchOptions& options) {
  if (device.timestamp_valid_bits() == 0) return unimplemented("the device's queue has no timestamps to time with");
  const int n = options.image_size;
  if (n < 64 || (n & (n - 1)) != 0) return invalid_argument("the chased image size must be a power of two >= 64");
  if (static_cast<uint32_t>(n) > device.capabilities().max_image_dimension_2d)
    return unimplemented("the device's images are smaller than " + std::to_string(n) + " texels");
  if (options.stream_steps % (kRegionWidth * 8) != 0)
    return invalid_argument("stream steps must be a multiple of 128 (whole bands of 8 rows)");
  auto state = std::make_unique<State>(device);
  state->options = options;
  state->rng.seed(options.seed);
  KILN_ASSIGN_OR_RETURN(state->compiler, vk::ShaderCompiler::create());

  int64_t max_threads = 0;
  for (int g : options.group_sizes)
    for (int64_t w : options.work_groups) max_threads = std::max(max_threads, g * w);
  // Regions side by side, as many per row as keep the image within the
  // device's largest dimension both ways.
  const int64_t max_dim = device.capabilities().max_image_dimension_2d;
  const int64_t region_rows = options.stream_steps / kRegionWidth;
  auto height_for = [&](int64_t per_row) { return (max_threads + per_row - 1) / per_row * region_rows; };
  while (height_for(state->regions_per_row) > max_dim && int64_t{state->regions_per_row} * 2 * kRegionWidth <= max_dim)
    state->regions_per_row *= 2;
  state->stream_width = state->regions_per_row * kRegionWidth;
  state->stream_height = static_cast<int>(height_for(state->regions_per_row));
  if (state->stream_height > max_dim)
    return invalid_argument("too many stream invocations for the device's largest image");
  const VkDeviceSize chase_bytes = VkDeviceSize(n) * n * 16;
  const VkDeviceSize stream_bytes = VkDeviceSize(state->stream_width) * state->stream_height * 16;
  const VkDeviceSize out_bytes = VkDeviceSize(std::max<int64_t>(max_threads, 4096)) * 8;
  KILN_ASSIGN_OR_RETURN(state->arena, vk::MemoryArena::create(device, 2 * (chase_bytes + stream_bytes) + out_bytes +
                                                                          (VkDeviceSize(8) << 20)));
  KILN_ASSIGN_OR_RETURN(state->transfer, vk::Transfer::create(device));
  KILN_ASSIGN_OR_RETURN(state->descriptors, vk::DescriptorAllocator::create(device, 64));

  state->chase_texels.assign(size_t(n) * n * 4, 0.0f);
  std::uniform_int_distribution<int> slot(0, kSlots - 1);
  for (size_t i = 0; i < state->chase_texels.size(); i += 4) {
    state->chase_texels[i] = static_cast<float>(slot(state->rng));
    state->chase_texels[i + 1] = static_cast<float>(slot(state->rng));
  }
  KILN_ASSIGN_OR_RETURN(state->chase_image, state->arena->create_image(n, n, vk::ImageFormat::kRGBA32F));
  KILN_ASSIGN_OR_RETURN(state->chase_buffer, state->arena->create_buffer(chase_bytes));
  KILN_RETURN_IF_ERROR(state->transfer->upload(state->chase_image, state->chase_texels.data(), chase_bytes));
  KILN_RETURN_IF_ERROR(state->transfer->upload(state->chase_buffer, state->chase_texels.data(), chase_bytes));

  const std::vector<float> zeros(size_t(state->stream_width) * state->stream_height * 4, 0.0f);
  KILN_ASSIGN_OR_RETURN(state->stream_image, state->arena->create_image(state->stream_width, state->stream_height,
                                                                        vk::ImageFormat::kRGBA32F));
  KILN_ASSIGN_OR_RETURN(state->stream_buffer, state->arena->create_buffer(stream_bytes));
  KILN_RETURN_IF_ERROR(state->transfer->upload(state->stream_image, zeros.data(), stream_bytes));
  KILN_RETURN_IF_ERROR(state->transfer->upload(state->stream_buffer, zeros.data(), stream_bytes));
  KILN_ASSIGN_OR_RETURN(state->out_buffer, state->arena->create_buffer(out_bytes));
  return std::unique_ptr<Microbench>(new Microbench(std::move(state)));
}

StatusOr<std::vector<ChaseRun>> Microbench::chase() {
  State& st = *state_;
  const MicrobenchOptions& o = st.options;
  const int n = o.image_size, mask = n - 1;
  // §3.1 step I: per run and axis a random multinomial distribution over
  // the candidates (sharpened by a random power so that some runs keep to
  // small strides and some to large ones), quantized into 16 slots.
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto table = [&]() {
    const double sharpness = 1.0 + 6.0 * unit(st.rng);
    std::vector<double> weight(kStrideCandidates.size());
    double total = 0;
    for (double& w : weight) total += (w = std::pow(unit(st.rng), sharpness));
    std::vector<int> strides;
    std::vector<std::pair<double, size_t>> remainders;
    for (size_t i = 0; i < weight.size(); ++i) {
      const double share = weight[i] / total * kSlots;
      for (int k = 0; k < static_cast<int>(share); ++k) strides.push_back(kStrideCandidates[i]);
      remainders.push_back({share - std::floor(share), i});
    }
    std::sort(remainders.rbegin(), remainders.rend());
    for (size_t k = 0; strides.size() < kSlots; ++k) strides.push_back(kStrideCandidates[remainders[k].second]);
    return strides;
  };
  std::vector<ChaseRun> runs;
  std::vector<int32_t> tables;
  for (Storage storage : {Storage::kImage, Storage::kBuffer}) {
    for (int r = 0; r < o.chase_runs; ++r) {
      ChaseRun run;
      run.storage = storage;
      run.stride_x = table();
      run.stride_y = table();
      tables.insert(tables.end(), run.stride_x.begin(), run.stride_x.end());
      tables.insert(tables.end(), run.stride_y.begin(), run.stride_y.end());
      // Step II's walk, replayed: the kernel visits exactly these texels.
      tmmodel::Texel q{0, 0};
      for (int i = 0; i < o.chase_steps; ++i) {
        run.walk.push_back(q);
        const size_t t = (size_t(q.y) * n + q.x) * 4;
        q.x = (q.x + run.stride_x[static_cast<size_t>(st.chase_texels[t])]) & mask;
        q.y = (q.y + run.stride_y[static_cast<size_t>(st.chase_texels[t + 1])]) & mask;
      }
      runs.push_back(std::move(run));
    }
  }
  KILN_ASSIGN_OR_RETURN(vk::Buffer table_buffer, st.arena->create_buffer(tables.size() * 4));
  KILN_RETURN_IF_ERROR(st.transfer->upload(table_buffer, tables.data(), tables.size() * 4));

  // Repetitions interleaved (every run once, then every run again), so that
  // a burst of other load on the device slows one repetition of many runs
  // rather than every repetition of one, and the best of them filters it.
  std::vector<State::Dispatch> dispatches;
  std::vector<size_t> run_of;  // per dispatch
  for (bool image : {true, false}) {
    KILN_ASSIGN_OR_RETURN(vk::ComputePipeline * pipeline, st.pipeline(image, 0));
    std::vector<vk::DescriptorResource> res = {
        image ? vk::DescriptorResource::of(0, st.chase_image) : vk::DescriptorResource::of(0, st.chase_buffer),
        vk::DescriptorResource::of(1, table_buffer), vk::DescriptorResource::of(2, st.out_buffer)};
    ChasePush warm{{mask, mask}, 16, 0, 0};
    KILN_ASSIGN_OR_RETURN(auto sets, st.bind(*pipeline, res, vk::push_bytes(warm), {1, 1, 1}));
    for (int rep = 0; rep < o.repetitions; ++rep) {
      for (size_t r = 0; r < runs.size(); ++r) {
        if ((runs[r].storage == Storage::kImage) != image) continue;
        ChasePush push{{mask, mask}, o.chase_steps, static_cast<int32_t>(r * 2 * kSlots),
                       static_cast<int32_t>(dispatches.size() % 4096)};
        const auto bytes = vk::push_bytes(push);
        dispatches.push_back({pipeline, sets, std::vector<std::byte>(bytes.begin(), bytes.end()), {1, 1, 1}});
        run_of.push_back(r);
      }
    }
  }
  KILN_ASSIGN_OR_RETURN(std::vector<double> ns, st.time(dispatches));
  std::vector<double> best(runs.size(), INFINITY);
  for (size_t k = 0; k < ns.size(); ++k) best[run_of[k]] = std::min(best[run_of[k]], ns[k]);
  for (size_t r = 0; r < runs.size(); ++r) runs[r].ns_per_access = best[r] / o.chase_steps;
  return runs;
}

StatusOr<std::vector<StreamRun>> Microbench::stream() {
  State& st = *state_;
  const MicrobenchOptions& o = st.options;
  std::vector<StreamRun> runs;
  std::vector<State::Dispatch> configs;  // one per run
  for (bool image : {true, false}) {
    for (int g : o.group_sizes) {
      KILN_ASSIGN_OR_RETURN(vk::ComputePipeline * pipeline, st.pipeline(image, g));
      std::vector<vk::DescriptorResource> res = {
          image ? vk::DescriptorResource::of(0, st.stream_image) : vk::DescriptorResource::of(0, st.stream_buffer),
          vk::DescriptorResource::of(1, st.out_buffer)};
      StreamPush warm{o.stream_steps, 1, st.regions_per_row, st.stream_width};
      KILN_ASSIGN_OR_RETURN(auto sets, st.bind(*pipeline, res, vk::push_bytes(warm), {1, 1, 1}));
      for (tmmodel::AccessPattern pattern : tmmodel::kAccessPatterns) {
        for (int64_t wgs : o.work_groups) {
          StreamRun run;
          run.config = {image ? Storage::kImage : Storage::kBuffer, pattern, g, wgs, o.stream_steps};
          runs.push_back(run);
          StreamPush push{o.stream_steps, tmmodel::reuse_distance(pattern), st.regions_per_row, st.stream_width};
          const auto bytes = vk::push_bytes(push);
          configs.push_back({pipeline, sets, std::vector<std::byte>(bytes.begin(), bytes.end()),
                             {static_cast<uint32_t>(wgs), 1, 1}});
        }
      }
    }
  }
  // Repetitions interleaved, as for the chases.
  std::vector<State::Dispatch> dispatches;
  for (int rep = 0; rep < o.repetitions; ++rep) dispatches.insert(dispatches.end(), configs.begin(), configs.end());
  KILN_ASSIGN_OR_RETURN(std::vector<double> ns, st.time(dispatches));
  for (size_t r = 0; r < runs.size(); ++r) {
    runs[r].ns = INFINITY;
    for (int rep = 0; rep < o.repetitions; ++rep) runs[r].ns = std::min(runs[r].ns, ns[rep * runs.size() + r]);
  }
  return runs;
}

}  // namespace kiln::tune

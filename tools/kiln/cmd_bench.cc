// `kiln bench`: cold start and steady-state latency of one or more models,
// as a table on stdout and, on request, a versioned JSON document
// ("kiln-bench-cli-v1", documented in bench/README.md) and a CSV.
//
// Per model: import and pass times; the compile twice on the Vulkan backend,
// first against an empty on-disk kernel cache (a fresh temporary directory)
// and then against the cache that compile filled; the first run (which
// records the command buffer); then --warmup untimed runs and --iters (or
// --min-time seconds of) timed runs, each with host wall time and the GPU
// time of its command buffers; finally one run of a profiled compile for the
// per-kernel GPU times, bytes moved and FLOPs (with achieved GB/s, GFLOP/s
// and, given --peak-gbps/--peak-gflops, the fraction of the roofline).
// --ablation then re-imports the model once per prefix of the pass pipeline
// that ran (none, +first pass, ...) and times each, for the speed-up each
// pass adds. A model that fails is recorded with its error and the others
// still run; the exit code is then 1.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "engine/registry/default_pipeline.h"
#include "engine/runtime/reference_executor.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "frontends/onnx/onnx_importer.h"
#include "kiln/kiln.h"
#include "platform/vulkan/device.h"
#include "platform/vulkan/instance.h"
#include "platform/vulkan/kernel_cache.h"
#include "platform/vulkan/shader_compiler.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/model_runner.h"
#include "tools/kiln/pipeline_flags.h"

namespace kiln::cli {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

constexpr const char* kSchema = "kiln-bench-cli-v1";
constexpr double kNoisySpread = 0.25;   // (p90 - p10) / median above this: noisy
constexpr size_t kMaxTimedRuns = 100000;  // --min-time on a tiny model stops here

// ---- SHA-256 (FIPS 180-4), for the model hash ----------------------------

class Sha256 {
 public:
  void update(const uint8_t* data, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      block_[fill_++] = data[i];
      if (fill_ == 64) {
        compress();
        fill_ = 0;
      }
    }
    bits_ += static_cast<uint64_t>(n) * 8;
  }
  std::string hex() {
    const uint64_t bits = bits_;
    const uint8_t pad = 0x80, zero = 0;
    update(&pad, 1);
    while (fill_ != 56) update(&zero, 1);
    for (int i = 7; i >= 0; --i) {
      const uint8_t b = static_cast<uint8_t>(bits >> (8 * i));
      update(&b, 1);
    }
    std::string out;
    char buf[9];
    for (uint32_t v : h_) {
      std::snprintf(buf, sizeof(buf), "%08x", v);
      out += buf;
    }
    return out;
  }

 private:
  static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void compress() {
    static constexpr std::array<uint32_t, 64> k = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = (uint32_t{block_[4 * i]} << 24) | (uint32_t{block_[4 * i + 1]} << 16) |
             (uint32_t{block_[4 * i + 2]} << 8) | uint32_t{block_[4 * i + 3]};
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e, h_[5] += f, h_[6] += g, h_[7] += h;
  }
  std::array<uint32_t, 8> h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<uint8_t, 64> block_{};
  size_t fill_ = 0;
  uint64_t bits_ = 0;
};

StatusOr<std::string> file_sha256(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("cannot open model file '" + path + "'");
  Sha256 sha;
  std::vector<char> buf(1 << 16);
  while (f) {
    f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    sha.update(reinterpret_cast<const uint8_t*>(buf.data()), static_cast<size_t>(f.gcount()));
  }
  return sha.hex();
}

// ---- statistics ----------------------------------------------------------

struct Summary {
  size_t count = 0;
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0, mean = 0;
  bool noisy = false;
};

// Linear interpolation between order statistics, as numpy.percentile.
double percentile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

std::optional<Summary> summarize(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  Summary s;
  s.count = v.size();
  s.median = percentile(v, 0.5);
  s.p10 = percentile(v, 0.1);
  s.p90 = percentile(v, 0.9);
  s.min = v.front();
  s.max = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  s.noisy = s.median > 0 && (s.p90 - s.p10) / s.median > kNoisySpread;
  return s;
}

// ---- results -------------------------------------------------------------

struct CompileRecord {
  double wall_ms = 0;  // the whole compile call, as the host sees it
  bool has_details = false;  // Vulkan: the fields below are set
  runtime::VulkanCompileStats stats;
  vk::KernelCacheStats cache;
};

// One prefix of the pass pipeline in an --ablation run.
struct AblationRow {
  std::vector<std::string> passes;  // the prefix; empty = no passes
  std::string error;                // empty when it ran
  int64_t nodes = -1;
  size_t dispatches = 0;
  std::optional<Summary> wall, gpu;
  // The latency speed-ups compare: the GPU median where there is one (less
  // host noise), else the wall median.
  std::optional<double> median_ms() const {
    if (gpu) return gpu->median;
    if (wall) return wall->median;
    return std::nullopt;
  }
};

struct ModelResult {
  std::string path, model, sha256;
  std::string status = "error", error;
  std::vector<std::pair<std::string, std::string>> input_shapes;
  std::optional<double> import_ms, passes_ms, first_run_ms;
  std::vector<registry::PassRecord> passes;
  int64_t nodes = -1;
  std::optional<CompileRecord> cold, warm;
  size_t dispatches = 0, fallbacks = 0;
  std::vector<double> wall_ms, gpu_ms;
  std::vector<runtime::KernelTiming> kernels;
  std::optional<Summary> wall, gpu;
  std::vector<AblationRow> ablation;  // --ablation only
  // Zoo layouts (bench/zoo): max|Δ| of the first run's output against the
  // output.npy beside the model, when there is one and the input came
  // from the input.npy beside it.
  std::optional<double> reference_max_abs_diff;
  std::optional<Tensor> reference_output;
  // Vulkan: the first run's device memory (weights + activation memory +
  // staging), the activation memory, and its plan's arena, live-set bound
  // and no-reuse total.
  std::optional<runtime::VulkanRunStats> memory;
};

struct Settings {
  std::string backend;  // "vulkan" or "reference", after auto is resolved
  int warmup = 10;
  std::optional<int> iters;
  double min_time_s = 2.0;
  runtime::VulkanModelOptions options;
  std::string storage = "buffer", precision = "fp32", coopmat = "on", inplace = "on";
  // The device's peaks for the roofline; Vulkan does not report them.
  std::optional<double> peak_gbps, peak_gflops;
  bool ablation = false;
};

// The Vulkan objects shared by every model of one invocation.
struct VulkanContext {
  std::unique_ptr<vk::Instance> instance;
  std::unique_ptr<vk::Device> device;
  std::unique_ptr<vk::ShaderCompiler> compiler;
};

// The model's name in tables and JSON: the file's stem, or its directory's
// name when the stem is the generic "model" (zoo layouts such as
// resnet50/model.onnx, where every file has the same stem).
std::string model_name(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string stem = p.stem().string();
  const std::string dir = p.parent_path().filename().string();
  return stem == "model" && !dir.empty() ? dir : stem;
}

// A fresh, empty directory for the cold-compile kernel cache.
StatusOr<std::string> make_temp_dir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-bench-cache-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) return internal_error("cannot create a temporary cache directory: " + std::string(std::strerror(errno)));
  return tmpl;
}

// Removes the temporary cache directory on every way out of bench_vulkan.
struct TempDir {
  std::string path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

using RunFn = std::function<StatusOr<double>(const std::vector<Tensor>&)>;  // returns GPU ms or -1

// Warmup, then the timed runs (--iters N, or until --min-time has passed).
Status time_runs(const Settings& settings, const std::vector<Tensor>& inputs, const RunFn& run, ModelResult& r) {
  for (int i = 0; i < settings.warmup; ++i) KILN_RETURN_IF_ERROR(run(inputs).status());
  const auto t_start = Clock::now();
  for (size_t i = 0; i < kMaxTimedRuns; ++i) {
    if (settings.iters ? static_cast<int>(i) >= *settings.iters
                       : (i > 0 && ms_since(t_start) >= settings.min_time_s * 1000.0))
      break;
    const auto t0 = Clock::now();
    KILN_ASSIGN_OR_RETURN(double gpu, run(inputs));
    r.wall_ms.push_back(ms_since(t0));
    if (gpu >= 0) r.gpu_ms.push_back(gpu);
  }
  return Status();
}

// The inputs of a benchmark run. A zoo directory (bench/zoo: NAME/model.onnx
// with input.npy and output.npy) feeds its own input.npy to a one-input model
// unless --input or --shape say otherwise, and its output.npy then checks
// the first run (`reference`, left empty otherwise).
StatusOr<std::vector<Tensor>> bench_inputs(const ir::Graph& g, const Args& args, const std::string& path,
                                           std::optional<Tensor>* reference) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const bool zoo = args.all("input").empty() && args.all("shape").empty() && g.main().inputs.size() == 1 &&
                   std::filesystem::exists(dir / "input.npy");
  if (!zoo) return build_inputs(g, args, 0);
  KILN_ASSIGN_OR_RETURN(Tensor input, load_input_file((dir / "input.npy").string()));
  if (reference && std::filesystem::exists(dir / "output.npy")) {
    KILN_ASSIGN_OR_RETURN(*reference, load_input_file((dir / "output.npy").string()));
  }
  return std::vector<Tensor>{std::move(input)};
}

// max|a - b| over two tensors of one shape (NaN if any differs by NaN);
// nullopt when the shapes differ.
std::optional<double> max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return std::nullopt;
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = std::fabs(a.get_f64(i) - b.get_f64(i));
    if (!(d <= worst)) worst = d;  // NaN stays the worst
  }
  return worst;
}

Status bench_reference(const ir::Graph& g, const Settings& settings, const std::vector<Tensor>& inputs,
                       ModelResult& r) {
  const auto t0 = Clock::now();
  runtime::ReferenceExecutor executor(g);
  r.cold = CompileRecord{.wall_ms = ms_since(t0)};
  const RunFn run = [&](const std::vector<Tensor>& in) -> StatusOr<double> {
    KILN_RETURN_IF_ERROR(executor.run(in).status());
    return -1.0;
  };
  const auto t1 = Clock::now();
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> first, executor.run(inputs));
  r.first_run_ms = ms_since(t1);
  if (r.reference_output && first.size() == 1) r.reference_max_abs_diff = max_abs_diff(first[0], *r.reference_output);
  return time_runs(settings, inputs, run, r);
}

StatusOr<std::unique_ptr<runtime::VulkanModel>> timed_compile(VulkanContext& ctx, vk::KernelCache& cache,
                                                              const ir::Graph& g,
                                                              const runtime::VulkanModelOptions& options,
                                                              CompileRecord& rec) {
  const vk::KernelCacheStats before = cache.stats();
  const auto t0 = Clock::now();
  KILN_ASSIGN_OR_RETURN(auto model, runtime::VulkanModel::compile(*ctx.device, cache, g, options));
  rec.wall_ms = ms_since(t0);
  rec.has_details = true;
  rec.stats = model->compile_stats();
  const vk::KernelCacheStats after = cache.stats();
  rec.cache = after;
  rec.cache.memory_hits -= before.memory_hits;
  rec.cache.disk_hits -= before.disk_hits;
  rec.cache.compiles -= before.compiles;
  rec.cache.pipeline_hits -= before.pipeline_hits;
  rec.cache.pipelines_created -= before.pipelines_created;
  return model;
}

Status bench_vulkan(VulkanContext& ctx, const ir::Graph& g, const Settings& settings,
                    const std::vector<Tensor>& inputs, ModelResult& r) {
  TempDir dir;
  KILN_ASSIGN_OR_RETURN(dir.path, make_temp_dir());
  const vk::KernelCacheOptions cache_options{.directory = dir.path};
  {  // Cold: an empty cache directory; the cache is closed (and saved) after.
    KILN_ASSIGN_OR_RETURN(auto cache, vk::KernelCache::open(*ctx.device, *ctx.compiler, cache_options));
    CompileRecord cold;
    KILN_ASSIGN_OR_RETURN(auto model, timed_compile(ctx, *cache, g, settings.options, cold));
    r.cold = cold;
    (void)cache->save_pipeline_cache();
  }
  // Warm: a new cache object on the directory the cold compile filled.
  KILN_ASSIGN_OR_RETURN(auto cache, vk::KernelCache::open(*ctx.device, *ctx.compiler, cache_options));
  CompileRecord warm;
  KILN_ASSIGN_OR_RETURN(auto model, timed_compile(ctx, *cache, g, settings.options, warm));
  r.warm = warm;
  r.dispatches = model->plan().dispatch_count();
  r.fallbacks = model->plan().fallback_count();

  const RunFn run = [&](const std::vector<Tensor>& in) -> StatusOr<double> {
    runtime::VulkanRunStats s;
    KILN_RETURN_IF_ERROR(model->run(in, &s).status());
    return s.gpu_ms;
  };
  const auto t1 = Clock::now();
  runtime::VulkanRunStats first_stats;
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> first, model->run(inputs, &first_stats));
  r.first_run_ms = ms_since(t1);
  first_stats.kernels.clear();
  r.memory = std::move(first_stats);
  if (r.reference_output && first.size() == 1) r.reference_max_abs_diff = max_abs_diff(first[0], *r.reference_output);
  KILN_RETURN_IF_ERROR(time_runs(settings, inputs, run, r));

  // The per-kernel profile: a compile with timestamps around every dispatch
  // (served from the warm cache), kept apart from the timed runs above,
  // which the extra timestamps would perturb. Its second run is the one
  // kept: the first records the command buffer.
  runtime::VulkanModelOptions profiled = settings.options;
  profiled.profile = true;
  KILN_ASSIGN_OR_RETURN(auto pmodel, runtime::VulkanModel::compile(*ctx.device, *cache, g, profiled));
  runtime::VulkanRunStats s;
  KILN_RETURN_IF_ERROR(pmodel->run(inputs, &s).status());
  KILN_RETURN_IF_ERROR(pmodel->run(inputs, &s).status());
  r.kernels = std::move(s.kernels);
  return Status();
}

// Times the model with the pass-pipeline prefix row.passes (a fresh import,
// so every prefix starts from the same graph), with the --warmup and
// --iters/--min-time of the main measurement.
Status ablation_row(VulkanContext* ctx, vk::KernelCache* cache, const Args& args, const Settings& settings,
                    const std::string& path, AblationRow& row) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, onnx::import_model_file(path));
  if (!row.passes.empty()) {
    registry::PipelineOptions options;
    options.passes = row.passes;  // plugin warnings were printed by the main run
    registry::PipelineSetup setup;
    setup.plugin_files = args.all("plugin");
    KILN_RETURN_IF_ERROR(registry::run_default_pipeline(*graph, options, setup).status());
  }
  row.nodes = static_cast<int64_t>(graph->num_live_nodes());
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> inputs, bench_inputs(*graph, args, path, nullptr));
  ModelResult timed;
  if (ctx) {
    KILN_ASSIGN_OR_RETURN(auto model, runtime::VulkanModel::compile(*ctx->device, *cache, *graph, settings.options));
    row.dispatches = model->plan().dispatch_count();
    const RunFn run = [&](const std::vector<Tensor>& in) -> StatusOr<double> {
      runtime::VulkanRunStats s;
      KILN_RETURN_IF_ERROR(model->run(in, &s).status());
      return s.gpu_ms;
    };
    KILN_RETURN_IF_ERROR(run(inputs).status());  // records the command buffer
    KILN_RETURN_IF_ERROR(time_runs(settings, inputs, run, timed));
  } else {
    runtime::ReferenceExecutor executor(*graph);
    const RunFn run = [&](const std::vector<Tensor>& in) -> StatusOr<double> {
      KILN_RETURN_IF_ERROR(executor.run(in).status());
      return -1.0;
    };
    KILN_RETURN_IF_ERROR(time_runs(settings, inputs, run, timed));
  }
  row.wall = summarize(timed.wall_ms);
  row.gpu = summarize(timed.gpu_ms);
  return Status();
}

// One row per prefix of the passes that ran (r.passes, so plugins and
// --passes/--disable-pass count): none, then one pass added at a time. A
// prefix that fails is recorded with its error; the others still run.
Status run_ablation(VulkanContext* ctx, const Args& args, const Settings& settings, ModelResult& r) {
  TempDir dir;
  std::unique_ptr<vk::KernelCache> cache;
  if (ctx) {
    KILN_ASSIGN_OR_RETURN(dir.path, make_temp_dir());
    KILN_ASSIGN_OR_RETURN(cache, vk::KernelCache::open(*ctx->device, *ctx->compiler, {.directory = dir.path}));
  }
  for (size_t k = 0; k <= r.passes.size(); ++k) {
    AblationRow row;
    for (size_t i = 0; i < k; ++i) row.passes.push_back(r.passes[i].name);
    std::fprintf(stderr, "kiln:   ablation %zu/%zu (%s)\n", k + 1, r.passes.size() + 1,
                 k ? ("+" + row.passes.back()).c_str() : "no passes");
    if (Status s = ablation_row(ctx, cache.get(), args, settings, r.path, row); !s.ok()) row.error = s.to_string();
    r.ablation.push_back(std::move(row));
  }
  return Status();
}

Status bench_model(VulkanContext* ctx, const Args& args, const Settings& settings, ModelResult& r) {
  KILN_ASSIGN_OR_RETURN(r.sha256, file_sha256(r.path));
  const auto t_import = Clock::now();
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, onnx::import_model_file(r.path));
  r.import_ms = ms_since(t_import);
  const auto t_passes = Clock::now();
  KILN_ASSIGN_OR_RETURN(r.passes, run_pipeline_from_flags(args, *graph));
  r.passes_ms = ms_since(t_passes);
  r.nodes = static_cast<int64_t>(graph->num_live_nodes());
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> inputs, bench_inputs(*graph, args, r.path, &r.reference_output));
  for (size_t i = 0; i < inputs.size(); ++i)
    r.input_shapes.emplace_back(graph->value(graph->main().inputs[i]).name, shape_to_string(inputs[i].shape()));
  if (ctx) KILN_RETURN_IF_ERROR(bench_vulkan(*ctx, *graph, settings, inputs, r));
  else KILN_RETURN_IF_ERROR(bench_reference(*graph, settings, inputs, r));
  r.wall = summarize(r.wall_ms);
  r.gpu = summarize(r.gpu_ms);
  if (settings.ablation) KILN_RETURN_IF_ERROR(run_ablation(ctx, args, settings, r));
  return Status();
}

// ---- output --------------------------------------------------------------

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}
std::string num(const std::optional<double>& v) { return v ? num(*v) : "null"; }
std::string str(const std::string& s) { return "\"" + json_escape(s) + "\""; }

std::string summary_json(const std::optional<Summary>& s) {
  if (!s) return "null";
  return "{\"count\": " + std::to_string(s->count) + ", \"median_ms\": " + num(s->median) + ", \"p10_ms\": " +
         num(s->p10) + ", \"p90_ms\": " + num(s->p90) + ", \"min_ms\": " + num(s->min) + ", \"max_ms\": " +
         num(s->max) + ", \"mean_ms\": " + num(s->mean) + ", \"noisy\": " + (s->noisy ? "true" : "false") + "}";
}

std::string memory_json(const std::optional<runtime::VulkanRunStats>& s) {
  if (!s) return "null";
  return "{\"device_bytes\": " + std::to_string(s->device_bytes) + ", \"activation_bytes\": " +
         std::to_string(s->activation_bytes) + ", \"arena_bytes\": " + std::to_string(s->memory.arena_bytes) +
         ", \"live_lower_bound\": " + std::to_string(s->memory.live_lower_bound) + ", \"no_reuse_bytes\": " +
         std::to_string(s->memory.no_reuse_bytes) + "}";
}

std::string compile_json(const std::optional<CompileRecord>& c) {
  if (!c) return "null";
  std::string j = "{\"wall_ms\": " + num(c->wall_ms);
  if (c->has_details) {
    const runtime::VulkanCompileStats& s = c->stats;
    j += ", \"plan_ms\": " + num(s.plan_ms) + ", \"kernels_ms\": " + num(s.kernels_ms) + ", \"upload_ms\": " +
         num(s.upload_ms) + ", \"pipelines\": " + std::to_string(s.kernels) + ", \"shader_compiles\": " +
         std::to_string(c->cache.compiles) + ", \"shader_disk_hits\": " + std::to_string(c->cache.disk_hits) +
         ", \"shader_memory_hits\": " + std::to_string(c->cache.memory_hits) + ", \"pipelines_created\": " +
         std::to_string(c->cache.pipelines_created) + ", \"pipeline_cache_bytes_loaded\": " +
         std::to_string(c->cache.pipeline_cache_bytes_loaded) + ", \"weight_bytes\": " +
         std::to_string(s.weight_bytes);
  }
  return j + "}";
}

// Achieved rates of one kernel and its fraction of the roofline: achieved
// FLOP/s over the attainable min(peak FLOP/s, intensity x peak bandwidth),
// which equals max(GB/s / peak GB/s, GFLOP/s / peak GFLOP/s); with one peak
// given, that peak's ratio alone.
struct KernelRates {
  std::optional<double> gbps, gflops, roofline;
};

KernelRates kernel_rates(const runtime::KernelTiming& k, const Settings& settings) {
  KernelRates out;
  if (!(k.gpu_ms > 0)) return out;
  out.gbps = static_cast<double>(k.bytes) / (k.gpu_ms * 1e6);
  if (k.flops > 0) out.gflops = static_cast<double>(k.flops) / (k.gpu_ms * 1e6);
  if (settings.peak_gbps) out.roofline = *out.gbps / *settings.peak_gbps;
  if (settings.peak_gflops && out.gflops)
    out.roofline = std::max(out.roofline.value_or(0.0), *out.gflops / *settings.peak_gflops);
  return out;
}

// Per ablation row: the compared median and the speed-ups over the previous
// row and over the no-pass row; NaN where undefined (a failed row or its
// neighbour, the first row's speed-up).
struct AblationSpeedup {
  double ms = NAN, speedup = NAN, vs_none = NAN;
};

std::vector<AblationSpeedup> ablation_speedups(const ModelResult& r) {
  std::vector<AblationSpeedup> out(r.ablation.size());
  auto ratio = [](double base, double ms) { return std::isfinite(base) && ms > 0 ? base / ms : NAN; };
  for (size_t i = 0; i < r.ablation.size(); ++i) {
    const AblationRow& a = r.ablation[i];
    if (a.error.empty()) out[i].ms = a.median_ms().value_or(NAN);
    if (i) out[i].speedup = ratio(out[i - 1].ms, out[i].ms);
    out[i].vs_none = ratio(out[0].ms, out[i].ms);
  }
  return out;
}

std::string ablation_json(const ModelResult& r) {
  std::string out = "[";
  const std::vector<AblationSpeedup> speedups = ablation_speedups(r);
  for (size_t i = 0; i < r.ablation.size(); ++i) {
    const AblationRow& a = r.ablation[i];
    std::string passes;
    for (size_t p = 0; p < a.passes.size(); ++p) passes += std::string(p ? ", " : "") + str(a.passes[p]);
    out += std::string(i ? "," : "") + "\n        {\"added\": " + (a.passes.empty() ? "null" : str(a.passes.back())) +
           ", \"passes\": [" + passes + "], \"status\": " + str(a.error.empty() ? "ok" : "error") +
           ", \"error\": " + (a.error.empty() ? "null" : str(a.error)) + ", \"nodes\": " +
           (a.nodes < 0 ? "null" : std::to_string(a.nodes)) + ", \"dispatches\": " + std::to_string(a.dispatches) +
           ", \"wall\": " + summary_json(a.wall) + ", \"gpu\": " + summary_json(a.gpu) + ", \"median_ms\": " +
           num(speedups[i].ms) + ", \"speedup\": " + num(speedups[i].speedup) + ", \"speedup_vs_none\": " +
           num(speedups[i].vs_none) + "}";
  }
  return out + (r.ablation.empty() ? "" : "\n      ") + "]";
}

std::string model_json(const ModelResult& r, const Settings& settings) {
  std::string shapes;
  for (size_t i = 0; i < r.input_shapes.size(); ++i)
    shapes += std::string(i ? ", " : "") + str(r.input_shapes[i].first) + ": " + str(r.input_shapes[i].second);
  std::string kernels;
  double kernels_total = 0;
  for (size_t i = 0; i < r.kernels.size(); ++i) {
    const runtime::KernelTiming& k = r.kernels[i];
    const KernelRates rates = kernel_rates(k, settings);
    kernels += std::string(i ? "," : "") + "\n        {\"kernel\": " + str(k.kernel) + ", \"node\": " + str(k.node) +
               ", \"gpu_ms\": " + num(k.gpu_ms) + ", \"bytes\": " + std::to_string(k.bytes) + ", \"flops\": " +
               (k.flops ? std::to_string(k.flops) : "null") + ", \"gbps\": " + num(rates.gbps) +
               ", \"gflops\": " + num(rates.gflops) + ", \"roofline\": " + num(rates.roofline) + "}";
    kernels_total += r.kernels[i].gpu_ms;
  }
  const bool noisy = (r.wall && r.wall->noisy) || (r.gpu && r.gpu->noisy);
  return "    {\n      \"model\": " + str(r.model) + ",\n      \"path\": " + str(r.path) +
         ",\n      \"sha256\": " + (r.sha256.empty() ? "null" : str(r.sha256)) + ",\n      \"status\": " +
         str(r.status) + ",\n      \"error\": " + (r.error.empty() ? "null" : str(r.error)) +
         ",\n      \"input_shapes\": {" + shapes + "},\n      \"nodes\": " +
         (r.nodes < 0 ? "null" : std::to_string(r.nodes)) + ",\n      \"dispatches\": " +
         std::to_string(r.dispatches) + ",\n      \"fallbacks\": " + std::to_string(r.fallbacks) +
         ",\n      \"passes\": " + pass_records_json(r.passes, "      ") +
         ",\n      \"cold_start\": {\"import_ms\": " + num(r.import_ms) + ", \"passes_ms\": " + num(r.passes_ms) +
         ",\n        \"compile_cold\": " + compile_json(r.cold) + ",\n        \"compile_warm\": " +
         compile_json(r.warm) + ",\n        \"first_run_ms\": " + num(r.first_run_ms) + "},\n      \"wall\": " +
         summary_json(r.wall) + ",\n      \"gpu\": " + summary_json(r.gpu) + ",\n      \"noisy\": " +
         (noisy ? "true" : "false") + ",\n      \"kernels_gpu_ms\": " +
         (r.kernels.empty() ? "null" : num(kernels_total)) + ",\n      \"kernels\": [" + kernels +
         (r.kernels.empty() ? "" : "\n      ") + "],\n      \"ablation\": " +
         (settings.ablation ? ablation_json(r) : "null") + ",\n      \"reference_max_abs_diff\": " +
         num(r.reference_max_abs_diff) + ",\n      \"memory\": " + memory_json(r.memory) + "\n    }";
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

std::string environment_json(const VulkanContext* ctx, const Args& args, const Settings& settings) {
  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
#ifdef KILN_GIT_COMMIT
  const std::string commit = str(KILN_GIT_COMMIT);
#else
  const std::string commit = "null";
#endif
  std::string device = "null";
  if (ctx) {
    const vk::Capabilities& c = ctx->device->capabilities();
    char vendor[16];
    std::snprintf(vendor, sizeof(vendor), "0x%04x", c.vendor_id);
    char device_id[16];
    std::snprintf(device_id, sizeof(device_id), "0x%04x", c.device_id);
    device = "{\"name\": " + str(c.device_name) + ", \"vendor_id\": " + str(vendor) + ", \"device_id\": " +
             str(device_id) + ", \"driver_name\": " + str(c.driver_name) + ", \"driver_info\": " +
             str(c.driver_info) + ", \"driver_version\": " + std::to_string(c.driver_version) +
             ", \"api_version\": " + str(version_string(c.api_version)) + "}";
  }
  std::string disabled;
  for (const std::string& d : args.all("disable-pass")) disabled += std::string(disabled.empty() ? "" : ", ") + str(d);
  std::string plugins;
  for (const std::string& p : args.all("plugin")) plugins += std::string(plugins.empty() ? "" : ", ") + str(p);
  const bool vulkan = settings.backend == "vulkan";
  return "{\n    \"kiln_version\": " + str(kiln_version_string()) + ",\n    \"git_commit\": " + commit +
         ",\n    \"hostname\": " + str(host) + ",\n    \"backend\": " + str(settings.backend) +
         ",\n    \"device\": " + device + ",\n    \"precision\": " + (vulkan ? str(settings.precision) : "null") +
         ",\n    \"storage\": " + (vulkan ? str(settings.storage) : "null") + ",\n    \"coopmat\": " +
         (vulkan ? str(settings.coopmat) : "null") + ",\n    \"inplace\": " +
         (vulkan ? str(settings.inplace) : "null") + ",\n    \"pipeline\": " +
         str(args.has("passes") ? args.get("passes") : "default") + ",\n    \"disabled_passes\": [" + disabled +
         "],\n    \"plugins\": [" + plugins + "],\n    \"seed\": " + args.get("seed", "0") +
         ",\n    \"warmup\": " + std::to_string(settings.warmup) + ",\n    \"iters\": " +
         (settings.iters ? std::to_string(*settings.iters) : "null") + ",\n    \"min_time_s\": " +
         (settings.iters ? "null" : num(settings.min_time_s)) + ",\n    \"peak_gbps\": " + num(settings.peak_gbps) +
         ",\n    \"peak_gflops\": " + num(settings.peak_gflops) + ",\n    \"ablation\": " +
         (settings.ablation ? "true" : "false") + "\n  }";
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return out + "\"";
}

constexpr const char* kCsvHeader =
    "model,status,backend,device,precision,storage,import_ms,passes_ms,compile_cold_ms,compile_warm_ms,"
    "first_run_ms,wall_median_ms,wall_p10_ms,wall_p90_ms,wall_min_ms,wall_max_ms,wall_mean_ms,gpu_median_ms,"
    "gpu_p10_ms,gpu_p90_ms,iters,noisy,sha256,path,error";

std::string csv_row(const ModelResult& r, const Settings& settings, const std::string& device) {
  auto stat = [](const std::optional<Summary>& s, double Summary::*field) { return s ? num((*s).*field) : ""; };
  auto opt = [](const std::optional<double>& v) { return v ? num(*v) : ""; };
  const bool vulkan = settings.backend == "vulkan";
  const bool noisy = (r.wall && r.wall->noisy) || (r.gpu && r.gpu->noisy);
  return csv_field(r.model) + "," + r.status + "," + settings.backend + "," + csv_field(device) + "," +
         (vulkan ? settings.precision : "") + "," + (vulkan ? settings.storage : "") + "," + opt(r.import_ms) + "," +
         opt(r.passes_ms) + "," + (r.cold ? num(r.cold->wall_ms) : "") + "," + (r.warm ? num(r.warm->wall_ms) : "") +
         "," + opt(r.first_run_ms) + "," + stat(r.wall, &Summary::median) + "," + stat(r.wall, &Summary::p10) + "," +
         stat(r.wall, &Summary::p90) + "," + stat(r.wall, &Summary::min) + "," + stat(r.wall, &Summary::max) + "," +
         stat(r.wall, &Summary::mean) + "," + stat(r.gpu, &Summary::median) + "," + stat(r.gpu, &Summary::p10) +
         "," + stat(r.gpu, &Summary::p90) + "," + std::to_string(r.wall ? r.wall->count : 0) + "," +
         (noisy ? "1" : "0") + "," + r.sha256 + "," + csv_field(r.path) + "," + csv_field(r.error);
}

void print_table_header() {
  std::printf("%-24s %-6s %9s %11s %11s %9s %11s %11s %11s %7s  %s\n", "model", "status", "import", "cold cmp", "warm cmp",
              "1st run", "wall med", "wall p10", "wall p90", "gpu med", "runs");
}

void print_table_row(const ModelResult& r) {
  auto ms = [](const std::optional<double>& v) { return v ? num(*v) : std::string("-"); };
  const bool noisy = (r.wall && r.wall->noisy) || (r.gpu && r.gpu->noisy);
  if (r.status != "ok") {
    std::printf("%-24s %-6s %s\n", r.model.c_str(), r.status.c_str(), r.error.c_str());
  } else {
    std::printf("%-24s %-6s %9s %11s %11s %9s %11s %11s %11s %7s  %zu%s\n", r.model.c_str(), r.status.c_str(),
                ms(r.import_ms).c_str(), r.cold ? num(r.cold->wall_ms).c_str() : "-",
                r.warm ? num(r.warm->wall_ms).c_str() : "-", ms(r.first_run_ms).c_str(),
                num(r.wall->median).c_str(), num(r.wall->p10).c_str(), num(r.wall->p90).c_str(),
                r.gpu ? num(r.gpu->median).c_str() : "-", r.wall->count, noisy ? "  (noisy)" : "");
    if (r.reference_max_abs_diff)
      std::printf("%-24s max|d| vs output.npy %s\n", "", num(*r.reference_max_abs_diff).c_str());
  }
  std::fflush(stdout);
}

// The --ablation table under the model's row: per prefix the median the
// speed-ups compare (GPU where measured, else wall) and the speed-ups.
void print_ablation(const ModelResult& r) {
  if (r.ablation.empty()) return;
  const bool gpu =
      std::any_of(r.ablation.begin(), r.ablation.end(), [](const AblationRow& a) { return a.gpu.has_value(); });
  std::printf("  ablation of %s (%s median ms):\n  %-32s %11s %9s %9s %10s\n", r.model.c_str(), gpu ? "gpu" : "wall",
              "passes", "median", "speed-up", "vs none", "dispatches");
  const std::vector<AblationSpeedup> speedups = ablation_speedups(r);
  auto cell = [](double v, const char* unit) { return std::isfinite(v) ? num(v) + unit : std::string("-"); };
  for (size_t i = 0; i < r.ablation.size(); ++i) {
    const AblationRow& a = r.ablation[i];
    const std::string label = a.passes.empty() ? "none" : "+" + a.passes.back();
    if (!a.error.empty()) {
      std::printf("  %-32s error: %s\n", label.c_str(), a.error.c_str());
      continue;
    }
    std::printf("  %-32s %11s %9s %9s %10zu\n", label.c_str(), cell(speedups[i].ms, "").c_str(),
                cell(speedups[i].speedup, "x").c_str(), cell(speedups[i].vs_none, "x").c_str(), a.dispatches);
  }
  std::fflush(stdout);
}

Status write_file(const std::string& flag, const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) return not_found("--" + flag + ": cannot write '" + path + "'");
  f << text;
  f.close();
  if (!f) return internal_error("--" + flag + ": error writing '" + path + "'");
  return Status();
}

StatusOr<int> parse_int_flag(const Args& args, const std::string& flag, int fallback, int minimum) {
  if (!args.has(flag)) return fallback;
  const std::string s = args.get(flag);
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < minimum || v > 10000000)
    return invalid_argument("--" + flag + " expects an integer >= " + std::to_string(minimum) + ", got '" + s + "'");
  return static_cast<int>(v);
}

StatusOr<Settings> parse_settings(const Args& args) {
  Settings s;
  KILN_ASSIGN_OR_RETURN(s.warmup, parse_int_flag(args, "warmup", 10, 0));
  // The seed is echoed into the JSON as a number: it must be one.
  KILN_RETURN_IF_ERROR(parse_int_flag(args, "seed", 0, 0).status());
  if (args.has("iters") && args.has("min-time")) return invalid_argument("give --iters or --min-time, not both");
  if (args.has("iters")) {
    KILN_ASSIGN_OR_RETURN(int iters, parse_int_flag(args, "iters", 0, 1));
    s.iters = iters;
  }
  if (args.has("min-time")) {
    const std::string t = args.get("min-time");
    char* end = nullptr;
    s.min_time_s = std::strtod(t.c_str(), &end);
    if (t.empty() || *end != '\0' || !(s.min_time_s > 0) || s.min_time_s > 3600)
      return invalid_argument("--min-time expects seconds in (0, 3600], got '" + t + "'");
  }
  s.storage = args.get("storage", "buffer");
  if (s.storage == "image") s.options.plan.storage = planner::Storage::kImage;
  else if (s.storage != "buffer") return invalid_argument("--storage must be buffer or image, got '" + s.storage + "'");
  s.precision = args.get("precision", "fp32");
  if (s.precision == "fp16") s.options.plan.precision = planner::ElemType::kF16;
  else if (s.precision != "fp32") return invalid_argument("--precision must be fp32 or fp16, got '" + s.precision + "'");
  s.coopmat = args.get("coopmat", "on");
  if (s.coopmat == "off") s.options.plan.cooperative_matrix = false;
  else if (s.coopmat != "on") return invalid_argument("--coopmat must be on or off, got '" + s.coopmat + "'");
  s.inplace = args.get("inplace", "on");
  if (s.inplace == "off") s.options.plan.inplace = false;
  else if (s.inplace != "on") return invalid_argument("--inplace must be on or off, got '" + s.inplace + "'");
  for (const char* flag : {"peak-gbps", "peak-gflops"}) {
    if (!args.has(flag)) continue;
    const std::string v = args.get(flag);
    char* end = nullptr;
    const double peak = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(peak > 0) || !std::isfinite(peak))
      return invalid_argument("--" + std::string(flag) + " expects a positive number, got '" + v + "'");
    (std::string(flag) == "peak-gbps" ? s.peak_gbps : s.peak_gflops) = peak;
  }
  s.ablation = args.has("ablation");
  s.backend = args.get("backend", "auto");
  if (s.backend != "auto" && s.backend != "vulkan" && s.backend != "reference")
    return invalid_argument("unknown backend '" + s.backend + "' (expected auto, vulkan or reference)");
  return s;
}

// The Vulkan context for --backend vulkan|auto; null for the reference
// backend (auto falls back to it, saying so, when no device is usable).
StatusOr<std::unique_ptr<VulkanContext>> open_backend(const Args& args, Settings& settings) {
  if (settings.backend == "reference") return std::unique_ptr<VulkanContext>();
  auto ctx = std::make_unique<VulkanContext>();
  vk::InstanceOptions io;
  io.validation = args.has("validate") ? vk::Validation::kRequired : vk::Validation::kOff;
  Status status;
  if (auto instance = vk::Instance::create(io); instance.ok()) {
    ctx->instance = std::move(instance).value();
    if (auto device = vk::Device::create(*ctx->instance, {.selector = args.get("device", "")}); device.ok())
      ctx->device = std::move(device).value();
    else status = std::move(device).status();
  } else {
    status = std::move(instance).status();
  }
  if (!status.ok()) {
    if (settings.backend == "vulkan") return std::move(status).add_context("--backend vulkan");
    std::fprintf(stderr, "kiln: no usable Vulkan device (%s); benchmarking the reference executor\n",
                 status.to_string().c_str());
    settings.backend = "reference";
    return std::unique_ptr<VulkanContext>();
  }
  KILN_ASSIGN_OR_RETURN(ctx->compiler, vk::ShaderCompiler::create());
  settings.backend = "vulkan";
  return ctx;
}

const std::vector<std::string> kBenchValueFlags = {"warmup", "iters", "min-time", "json",      "csv",
                                                   "shape",  "input", "seed",     "peak-gbps", "peak-gflops"};

}  // namespace

int cmd_bench(const std::vector<std::string>& argv) {
  if (!argv.empty() && argv[0] == "compare")  // kiln bench compare: cmd_bench_compare.cc
    return cmd_bench_compare(std::vector<std::string>(argv.begin() + 1, argv.end()));
  std::vector<std::string> value_flags = kBenchValueFlags;
  value_flags.insert(value_flags.end(), kPipelineValueFlags.begin(), kPipelineValueFlags.end());
  value_flags.insert(value_flags.end(), runner_value_flags().begin(), runner_value_flags().end());
  auto args = Args::parse(argv, value_flags, {"validate", "ablation"});
  if (!args.ok()) return fail(args.status());
  if (args->positionals().empty()) return usage_error("kiln bench MODEL... [options]: no MODEL given");
  auto settings = parse_settings(*args);
  if (!settings.ok()) return fail(settings.status());
  auto ctx = open_backend(*args, *settings);
  if (!ctx.ok()) return fail(ctx.status());
  const std::string device_name = *ctx ? (*ctx)->device->capabilities().device_name : "cpu";

  std::fprintf(stderr, "kiln: benchmarking %zu model(s) on %s (%s)\n", args->positionals().size(),
               settings->backend.c_str(), device_name.c_str());
  print_table_header();
  std::vector<ModelResult> results;
  for (const std::string& path : args->positionals()) {
    ModelResult r;
    r.path = path;
    r.model = model_name(path);
    std::fprintf(stderr, "kiln: [%zu/%zu] %s...\n", results.size() + 1, args->positionals().size(), path.c_str());
    Status status = bench_model(ctx->get(), *args, *settings, r);
    if (status.ok()) {
      r.status = "ok";
    } else {
      r.error = std::move(status).add_context(path).to_string();
      r.kernels.clear();
      std::fprintf(stderr, "kiln: %s\n", r.error.c_str());
    }
    print_table_row(r);
    print_ablation(r);
    results.push_back(std::move(r));
  }

  std::string command = "[\"kiln\", \"bench\"";
  for (const std::string& a : argv) command += ", " + str(a);
  command += "]";
  int rc = 0;
  if (args->has("json")) {
    std::string doc = "{\n  \"schema\": " + str(kSchema) + ",\n  \"tool\": \"kiln bench\",\n  \"created_utc\": " +
                      str(utc_now()) + ",\n  \"command\": " + command + ",\n  \"environment\": " +
                      environment_json(ctx->get(), *args, *settings) + ",\n  \"models\": [\n";
    for (size_t i = 0; i < results.size(); ++i) doc += (i ? ",\n" : "") + model_json(results[i], *settings);
    doc += "\n  ]\n}\n";
    if (Status s = write_file("json", args->get("json"), doc); !s.ok()) rc = fail(s);
  }
  if (args->has("csv")) {
    std::string csv = std::string(kCsvHeader) + "\n";
    for (const ModelResult& r : results) csv += csv_row(r, *settings, device_name) + "\n";
    if (Status s = write_file("csv", args->get("csv"), csv); !s.ok()) rc = fail(s);
  }
  for (const ModelResult& r : results)
    if (r.status != "ok") rc = 1;
  // Under --validate a validation message is a failure, as in the tests.
  if (*ctx && (*ctx)->instance->error_count() > 0) {
    std::fprintf(stderr, "kiln: %llu Vulkan validation error(s) were reported\n",
                 static_cast<unsigned long long>((*ctx)->instance->error_count()));
    rc = 1;
  }
  return rc;
}

}  // namespace kiln::cli

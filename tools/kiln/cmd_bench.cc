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
// On the OpenCL backend plugin (--backend opencl) the same, with the
// plugin's program cache in a fresh $KILN_CACHE_DIR for the cold compile
// and OpenCL profiling events for the per-kernel times (no GPU time of the
// timed runs, bytes or memory: the plugin does not report them).
// --ablation then re-imports the model once per prefix of the pass pipeline
// that ran (none, +first pass, ...) and times each, for the speed-up each
// pass adds. A model that fails is recorded with its error and the others
// still run; the exit code is then 1.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>

#include "engine/base/json_writer.h"
#include "engine/base/status.h"
#include "kiln/kiln.hpp"
#include "tools/common/sha256.h"
#include "tools/kiln/bench_concurrent.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/inputs.h"
#include "tools/kiln/json_reader.h"
#include "tools/kiln/session_flags.h"

namespace kiln::cli {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

constexpr const char* kSchema = "kiln-bench-cli-v1";
constexpr double kNoisySpread = 0.25;   // (p90 - p10) / median above this: noisy
constexpr size_t kMaxTimedRuns = 100000;  // --min-time on a tiny model stops here

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
  double wall_ms = 0;  // the session's compile, as the host sees it (its pass pipeline left out)
  bool has_details = false;  // Vulkan: the fields below are set
  bool has_cache = false;    // a backend plugin's kernel cache counts (compiles, disk_hits, memory_hits)
  double plan_ms = 0, kernels_ms = 0, upload_ms = 0;
  double shaders_ms = 0, pipelines_ms = 0;  // of kernels_ms: the shader and pipeline batches
  uint64_t compile_threads = 0;             // threads those batches ran on
  std::string slowest_shader, slowest_pipeline;  // the entries that bound those batches, and their ms
  double slowest_shader_ms = 0, slowest_pipeline_ms = 0;
  uint64_t pipelines = 0, weight_bytes = 0;
  uint64_t compiles = 0, disk_hits = 0, memory_hits = 0, pipelines_created = 0, pipeline_cache_bytes_loaded = 0;
};

// One kernel of the profiled run (kiln_session_last_run_json's "kernels").
struct KernelRow {
  std::string kernel, node;
  double gpu_ms = 0;
  uint64_t bytes = 0, flops = 0;
  uint64_t bytes_read = 0, bytes_written = 0;  // `bytes` split
};

// The first run's device memory (weights + activation memory + staging),
// the activation memory, and its plan's arena, live-set bound and no-reuse
// total.
struct MemoryRecord {
  uint64_t device_bytes = 0, activation_bytes = 0, arena_bytes = 0, live_lower_bound = 0, no_reuse_bytes = 0;
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
  std::vector<std::string> pass_records;  // the session's pass records (JSON objects), as libkiln describes them
  std::vector<std::string> pass_names;    // in the order they ran
  // Static QDQ patterns as integer kernels or the float graph: the
  // session's choice, why, and how many convolutions/products fuse-qdq
  // rewrote (kiln_session_describe_json's "int8_kernels").
  std::optional<bool> int8_integer;
  std::string int8_reason;
  int64_t int8_rewritten = 0;
  int64_t nodes = -1;
  std::optional<CompileRecord> cold, warm;
  size_t dispatches = 0, fallbacks = 0;
  size_t fused_dispatches = 0;  // of the plan's dispatches, fused kernels
  // Global memory one run's dispatches moved (the first timed session's
  // first run; kiln_run_stats_t.bytes_read / bytes_written).
  uint64_t bytes_read = 0, bytes_written = 0;
  std::vector<double> wall_ms, gpu_ms;
  // Per timed run with a GPU time: wall minus GPU time, the host's share of
  // a run (input upload, command submission, the wait's wake-up, output
  // download): what a caller pays beyond the device's work.
  std::vector<double> host_overhead_ms;
  std::vector<KernelRow> kernels;
  std::optional<Summary> wall, gpu, host_overhead;
  std::vector<AblationRow> ablation;  // --ablation only
  // Zoo layouts (bench/zoo): max|Δ| of the first run's output against the
  // output.npy beside the model, when there is one and the input came
  // from the input.npy beside it.
  std::optional<double> reference_max_abs_diff;
  std::optional<api::Tensor> reference_output;
  std::optional<MemoryRecord> memory;  // Vulkan
  std::optional<ConcurrentResult> concurrent;  // --concurrent N
};

struct Settings {
  std::string backend;  // "vulkan", "reference" or "opencl", after auto is resolved
  int warmup = 10;
  std::optional<int> iters;
  double min_time_s = 2.0;
  std::string storage = "auto", precision = "fp32", coopmat = "on", int8_dot = "auto", inplace = "on";
  // The device's peaks for the roofline; Vulkan does not report them.
  std::optional<double> peak_gbps, peak_gflops;
  bool ablation = false;
  int concurrent = 0;  // --concurrent N: threads on one session with N run slots (0: off)
};

// An api::Error or "CODE: message" text as the tool's Status.
Status to_status(const api::Error& e) {
  return e ? Status(static_cast<StatusCode>(e.code()), e.message()) : Status();
}
Status text_status(const std::string& text) {
  for (int c = KILN_INVALID_ARGUMENT; c <= KILN_DATA_LOSS; ++c) {
    const std::string name = kiln_status_code_name(static_cast<kiln_status_code_t>(c));
    if (text.rfind(name + ": ", 0) == 0) return Status(static_cast<StatusCode>(c), text.substr(name.size() + 2));
  }
  return internal_error(text);
}
#define KILN_API_RETURN_IF_ERROR(expr)             \
  do {                                             \
    if (::kiln::api::Error e_ = (expr)) return to_status(e_); \
  } while (0)

// The libkiln sessions of one invocation: options from the flags, and the
// Vulkan devices (one per kernel cache directory) they run on.
class Bench {
 public:
  Bench(const Args& args, const Settings& settings) : args_(args), settings_(settings) {
    flags_.set_pipeline(args);
  }
  ~Bench() {
    if (validation_errors_ > 0)
      std::fprintf(stderr, "kiln: %llu Vulkan validation error(s) were reported\n",
                   static_cast<unsigned long long>(validation_errors_));
  }
  uint64_t validation_errors() const { return validation_errors_; }

  // A Vulkan device with its kernels cached in `cache_dir` ("" = memory only).
  Status open_device(const std::string& cache_dir, api::VulkanDevice& out) {
    kiln_vulkan_device_options_t o{};
    o.selector = selector_.c_str();
    o.kernel_cache_dir = cache_dir.c_str();
    o.validation = args_.has("validate");
    return to_status(api::VulkanDevice::create(o, out));
  }
  // Counts what the validation layers reported on `device` before it goes.
  void close_device(api::VulkanDevice& device) {
    validation_errors_ += device.validation_errors();
    device = api::VulkanDevice();
  }

  // Options for a session on `device` (null: the reference executor) with
  // the pass list `passes` (nullptr: the flags' pipeline).
  kiln_session_options_t options(const api::VulkanDevice* device, const char* passes, bool profile) const {
    kiln_session_options_t o = flags_.options();
    o.backend = device ? KILN_BACKEND_VULKAN : KILN_BACKEND_REFERENCE;
    o.vulkan_device = device ? device->get() : nullptr;
    if (settings_.backend == "opencl") {  // the OpenCL backend plugin (plugins/opencl)
      o.backend = KILN_BACKEND_PLUGIN;
      o.backend_plugin = "opencl";
    }
    o.storage = settings_.storage == "image"    ? KILN_STORAGE_IMAGE
                : settings_.storage == "buffer" ? KILN_STORAGE_BUFFER
                                                : KILN_STORAGE_AUTO;
    o.precision = settings_.precision == "fp16" ? KILN_PRECISION_FP16 : KILN_PRECISION_FP32;
    o.disable_cooperative_matrix = settings_.coopmat == "off";
    o.disable_integer_dot_product = settings_.int8_dot == "off";
    o.int8_kernels = settings_.int8_dot == "on"    ? KILN_INT8_KERNELS_ON
                     : settings_.int8_dot == "off" ? KILN_INT8_KERNELS_OFF
                                                   : KILN_INT8_KERNELS_AUTO;
    o.disable_inplace = settings_.inplace == "off";
    o.profile = profile;
    o.save_pipeline_cache = device != nullptr;
    if (passes) {
      o.passes = passes;
      o.disabled_passes = nullptr;
      o.log = nullptr;  // plugin warnings were printed by the main run
    }
    return o;
  }

  std::string selector_;

 private:
  const Args& args_;
  const Settings& settings_;
  SessionFlags flags_;
  uint64_t validation_errors_ = 0;
};

// A session and its description (kiln_session_describe_json), parsed.
struct Compiled {
  api::Session session;
  JsonValue description;
  double wall_ms = 0;    // the whole create call
  double passes_ms = 0;  // its pass pipeline
};

StatusOr<Compiled> compile(const api::Model& model, const kiln_session_options_t& options) {
  Compiled c;
  const auto t0 = Clock::now();
  KILN_API_RETURN_IF_ERROR(api::Session::create(model, options, c.session));
  c.wall_ms = ms_since(t0);
  std::string json;
  KILN_API_RETURN_IF_ERROR(c.session.describe_json(json));
  KILN_ASSIGN_OR_RETURN(c.description, parse_json(json));
  if (const double* p = c.description.get_number("passes_ms")) c.passes_ms = *p;
  return c;
}

double number(const JsonValue* object, const char* key) {
  const double* v = object ? object->get_number(key) : nullptr;
  return v ? *v : 0;
}
uint64_t count(const JsonValue* object, const char* key) { return static_cast<uint64_t>(number(object, key)); }

CompileRecord compile_record(const Compiled& c) {
  CompileRecord rec;
  rec.wall_ms = c.wall_ms - c.passes_ms;
  const JsonValue* s = c.description.get("compile");
  if (!s) return rec;
  if (!s->get("plan_ms")) {  // a backend plugin: its kernel cache, when it reports one
    const JsonValue* k = s->get("kernel_cache");
    rec.has_cache = k != nullptr;
    rec.compiles = count(k, "compiles");
    rec.disk_hits = count(k, "disk_hits");
    rec.memory_hits = count(k, "memory_hits");
    return rec;
  }
  rec.has_details = true;
  rec.plan_ms = number(s, "plan_ms");
  rec.kernels_ms = number(s, "kernels_ms");
  rec.upload_ms = number(s, "upload_ms");
  rec.shaders_ms = number(s, "shaders_ms");
  rec.pipelines_ms = number(s, "pipelines_ms");
  rec.compile_threads = count(s, "compile_threads");
  if (const std::string* v = s->get_string("slowest_shader")) {
    rec.slowest_shader = *v;
    rec.slowest_shader_ms = number(s, "slowest_shader_ms");
  }
  if (const std::string* v = s->get_string("slowest_pipeline")) {
    rec.slowest_pipeline = *v;
    rec.slowest_pipeline_ms = number(s, "slowest_pipeline_ms");
  }
  rec.pipelines = count(s, "pipelines");
  rec.weight_bytes = count(s, "weight_bytes");
  const JsonValue* k = s->get("kernel_cache");
  rec.compiles = count(k, "compiles");
  rec.disk_hits = count(k, "disk_hits");
  rec.memory_hits = count(k, "memory_hits");
  rec.pipelines_created = count(k, "pipelines_created");
  rec.pipeline_cache_bytes_loaded = count(k, "pipeline_cache_bytes_loaded");
  return rec;
}

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

using Inputs = std::vector<const api::Tensor*>;

// Runs once; returns the GPU ms of the run, or -1 without timestamps.
StatusOr<double> run_once(api::Session& session, const Inputs& inputs, size_t outputs_count,
                          std::vector<api::Tensor>* outputs = nullptr) {
  std::vector<api::Tensor> out;
  KILN_API_RETURN_IF_ERROR(session.run(inputs, outputs_count, outputs ? *outputs : out));
  kiln_run_stats_t s;
  KILN_API_RETURN_IF_ERROR(session.last_run_stats(s));
  return session.backend() != KILN_BACKEND_REFERENCE ? s.gpu_ms : -1.0;  // -1 unless measured
}

// Warmup, then the timed runs (--iters N, or until --min-time has passed).
Status time_runs(const Settings& settings, api::Session& session, const Inputs& inputs, size_t outputs_count,
                 ModelResult& r) {
  for (int i = 0; i < settings.warmup; ++i) KILN_RETURN_IF_ERROR(run_once(session, inputs, outputs_count).status());
  const auto t_start = Clock::now();
  for (size_t i = 0; i < kMaxTimedRuns; ++i) {
    if (settings.iters ? static_cast<int>(i) >= *settings.iters
                       : (i > 0 && ms_since(t_start) >= settings.min_time_s * 1000.0))
      break;
    const auto t0 = Clock::now();
    KILN_ASSIGN_OR_RETURN(double gpu, run_once(session, inputs, outputs_count));
    r.wall_ms.push_back(ms_since(t0));
    if (gpu >= 0) {
      r.gpu_ms.push_back(gpu);
      r.host_overhead_ms.push_back(std::max(0.0, r.wall_ms.back() - gpu));
    }
  }
  return Status();
}

// The inputs of a benchmark run. A zoo directory (bench/zoo: NAME/model.onnx
// with input.npy and output.npy) feeds its own input.npy to a one-input model
// unless --input or --shape say otherwise, and its output.npy then checks
// the first run (`reference`, left empty otherwise).
Status bench_inputs(const api::Model& model, const Args& args, const std::string& path,
                    std::vector<api::Tensor>& inputs, std::optional<api::Tensor>* reference) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const bool zoo = args.all("input").empty() && args.all("shape").empty() && model.input_count() == 1 &&
                   std::filesystem::exists(dir / "input.npy");
  if (!zoo) {
    std::string error;
    return build_inputs(model, args, 0, inputs, error) ? Status() : text_status(error);
  }
  inputs.clear();
  inputs.emplace_back();
  KILN_API_RETURN_IF_ERROR(api::Tensor::load((dir / "input.npy").string(), inputs.back()));
  if (reference && std::filesystem::exists(dir / "output.npy")) {
    api::Tensor out;
    KILN_API_RETURN_IF_ERROR(api::Tensor::load((dir / "output.npy").string(), out));
    *reference = std::move(out);
  }
  return Status();
}

Inputs pointers(const std::vector<api::Tensor>& inputs) {
  Inputs p;
  for (const api::Tensor& t : inputs) p.push_back(&t);
  return p;
}

// max|a - b| over two tensors of one shape (NaN if any differs by NaN);
// nullopt when the shapes differ.
std::optional<double> max_abs_diff(const api::Tensor& a, const api::Tensor& b) {
  if (a.shape() != b.shape()) return std::nullopt;
  double worst = 0;
  for (size_t i = 0, n = a.numel(); i < n; ++i) {
    const double d = std::fabs(a.get_f64(i) - b.get_f64(i));
    if (!(d <= worst)) worst = d;  // NaN stays the worst
  }
  return worst;
}

// The first run of a warm session (timed as r.first_run_ms, checked against
// the reference output when there is one, its bytes moved recorded), then
// the timed runs. Returns the first run's statistics (last_run_json).
StatusOr<JsonValue> first_and_timed_runs(const Settings& settings, api::Session& session, const Inputs& in,
                                         size_t outputs_count, ModelResult& r) {
  const auto t1 = Clock::now();
  std::vector<api::Tensor> first;
  KILN_RETURN_IF_ERROR(run_once(session, in, outputs_count, &first).status());
  r.first_run_ms = ms_since(t1);
  std::string run_json;
  KILN_API_RETURN_IF_ERROR(session.last_run_json(run_json));
  KILN_ASSIGN_OR_RETURN(JsonValue run, parse_json(run_json));
  r.bytes_read = count(&run, "bytes_read");
  r.bytes_written = count(&run, "bytes_written");
  if (r.reference_output && first.size() == 1) r.reference_max_abs_diff = max_abs_diff(first[0], *r.reference_output);
  KILN_RETURN_IF_ERROR(time_runs(settings, session, in, outputs_count, r));
  return run;
}


// The pass records, node count and pass time of the session the model's
// numbers come from.
void record_passes(const Compiled& c, ModelResult& r) {
  r.passes_ms = c.passes_ms;
  r.nodes = static_cast<int64_t>(number(&c.description, "nodes"));
  r.pass_names.clear();
  r.pass_records.clear();
  r.int8_integer.reset();
  if (const JsonValue* q = c.description.get("int8_kernels")) {
    const JsonValue* integer = q->get("integer");
    r.int8_integer = integer && integer->boolean;
    const std::string* reason = q->get_string("reason");
    r.int8_reason = reason ? *reason : "";
    r.int8_rewritten = static_cast<int64_t>(number(q, "rewritten"));
  }
  if (const JsonValue* passes = c.description.get("passes"))
    for (const JsonValue& p : passes->items) {
      const std::string* name = p.get_string("name");
      r.pass_names.push_back(name ? *name : "");
      JsonWriter w;
      w.begin_object().key("name").string(name ? *name : "").key("ms").number(number(&p, "ms"));
      const JsonValue* committed = p.get("committed");
      const JsonValue* skipped = p.get("skipped");
      w.key("committed").boolean(committed && committed->boolean).key("skipped").boolean(skipped && skipped->boolean);
      w.key("statistics").begin_object();
      if (const JsonValue* st = p.get("statistics"))
        for (const auto& [key, value] : st->members) w.key(key).number(static_cast<int64_t>(value.number));
      w.end_object().end_object();
      r.pass_records.push_back(w.take());
    }
}

Status bench_reference(Bench& bench, const api::Model& model, const std::vector<api::Tensor>& inputs,
                       const Settings& settings, ModelResult& r) {
  KILN_ASSIGN_OR_RETURN(Compiled c, compile(model, bench.options(nullptr, nullptr, false)));
  record_passes(c, r);
  r.cold = compile_record(c);
  const auto t1 = Clock::now();
  std::vector<api::Tensor> first;
  KILN_RETURN_IF_ERROR(run_once(c.session, pointers(inputs), model.output_count(), &first).status());
  r.first_run_ms = ms_since(t1);
  if (r.reference_output && first.size() == 1) r.reference_max_abs_diff = max_abs_diff(first[0], *r.reference_output);
  return time_runs(settings, c.session, pointers(inputs), model.output_count(), r);
}

// The per-kernel profile of a run (kiln_session_last_run_json's "kernels").
std::vector<KernelRow> kernel_rows(const JsonValue& run) {
  std::vector<KernelRow> rows;
  if (const JsonValue* kernels = run.get("kernels"))
    for (const JsonValue& k : kernels->items) {
      const std::string* kernel = k.get_string("kernel");
      const std::string* node = k.get_string("node");
      rows.push_back(KernelRow{kernel ? *kernel : "", node ? *node : "", number(&k, "gpu_ms"), count(&k, "bytes"),
                               count(&k, "flops"), count(&k, "bytes_read"), count(&k, "bytes_written")});
    }
  return rows;
}

Status bench_vulkan(Bench& bench, const api::Model& model, const std::vector<api::Tensor>& inputs,
                    const Settings& settings, ModelResult& r) {
  TempDir dir;
  KILN_ASSIGN_OR_RETURN(dir.path, make_temp_dir());
  {  // Cold: an empty cache directory; the device (and its cache) is closed after.
    api::VulkanDevice device;
    KILN_RETURN_IF_ERROR(bench.open_device(dir.path, device));
    KILN_ASSIGN_OR_RETURN(Compiled cold, compile(model, bench.options(&device, nullptr, false)));
    record_passes(cold, r);
    r.cold = compile_record(cold);
    cold.session = api::Session();
    bench.close_device(device);
  }
  // Warm: a new device on the directory the cold compile filled.
  api::VulkanDevice device;
  KILN_RETURN_IF_ERROR(bench.open_device(dir.path, device));
  KILN_ASSIGN_OR_RETURN(Compiled warm, compile(model, bench.options(&device, nullptr, false)));
  r.warm = compile_record(warm);
  r.dispatches = count(warm.description.get("compile"), "dispatches");
  r.fallbacks = count(warm.description.get("compile"), "fallbacks");
  r.fused_dispatches = count(warm.description.get("compile"), "fused_dispatches");

  const Inputs in = pointers(inputs);
  KILN_ASSIGN_OR_RETURN(JsonValue run, first_and_timed_runs(settings, warm.session, in, model.output_count(), r));
  const JsonValue* mem = run.get("memory");
  r.memory = MemoryRecord{count(&run, "device_bytes"), count(&run, "activation_bytes"), count(mem, "arena_bytes"),
                          count(mem, "live_lower_bound"), count(mem, "no_reuse_bytes")};
  warm.session = api::Session();

  // The per-kernel profile: a session with timestamps around every dispatch
  // (served from the warm cache), kept apart from the timed runs above,
  // which the extra timestamps would perturb. Its second run is the one
  // kept: the first records the command buffer.
  KILN_ASSIGN_OR_RETURN(Compiled profiled, compile(model, bench.options(&device, nullptr, true)));
  KILN_RETURN_IF_ERROR(run_once(profiled.session, in, model.output_count()).status());
  KILN_RETURN_IF_ERROR(run_once(profiled.session, in, model.output_count()).status());
  std::string run_json;
  KILN_API_RETURN_IF_ERROR(profiled.session.last_run_json(run_json));
  KILN_ASSIGN_OR_RETURN(run, parse_json(run_json));
  r.kernels = kernel_rows(run);
  profiled.session = api::Session();
  bench.close_device(device);
  return Status();
}

// Sets an environment variable for a scope and restores what was there.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnvironment() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The OpenCL backend plugin: as bench_vulkan, the plugin's program cache in
// a fresh $KILN_CACHE_DIR (cold, then warm from the files the cold compile
// wrote; the driver's own cache, PoCL's, is not the plugin's to empty), and
// the per-kernel times from a profiled session (OpenCL profiling events).
Status bench_opencl(Bench& bench, const api::Model& model, const std::vector<api::Tensor>& inputs,
                    const Settings& settings, ModelResult& r) {
  TempDir dir;
  KILN_ASSIGN_OR_RETURN(dir.path, make_temp_dir());
  const ScopedEnvironment cache_dir("KILN_CACHE_DIR", dir.path);
  {  // Cold; the session goes, and the plugin's device (its memory cache) with it.
    KILN_ASSIGN_OR_RETURN(Compiled cold, compile(model, bench.options(nullptr, nullptr, false)));
    record_passes(cold, r);
    r.cold = compile_record(cold);
  }
  KILN_ASSIGN_OR_RETURN(Compiled warm, compile(model, bench.options(nullptr, nullptr, false)));
  r.warm = compile_record(warm);
  r.dispatches = count(warm.description.get("compile"), "dispatches");
  r.fallbacks = count(warm.description.get("compile"), "fallbacks");
  const Inputs in = pointers(inputs);
  KILN_ASSIGN_OR_RETURN(JsonValue run, first_and_timed_runs(settings, warm.session, in, model.output_count(), r));
  r.fused_dispatches = count(&run, "fused_dispatches");
  // The profiled session, apart from the timed runs; its second run is kept
  // (the first launches each kernel for the first time, which PoCL pays for).
  KILN_ASSIGN_OR_RETURN(Compiled profiled, compile(model, bench.options(nullptr, nullptr, true)));
  KILN_RETURN_IF_ERROR(run_once(profiled.session, in, model.output_count()).status());
  std::string run_json;
  KILN_API_RETURN_IF_ERROR(profiled.session.last_run_json(run_json));
  KILN_ASSIGN_OR_RETURN(run, parse_json(run_json));
  r.kernels = kernel_rows(run);
  return Status();
}

// Times the model with the pass-pipeline prefix row.passes (each session
// starts from the imported graph), with the --warmup and --iters/--min-time
// of the main measurement.
Status ablation_row(Bench& bench, const api::VulkanDevice* device, const api::Model& model, const Args& args,
                    const Settings& settings, const std::string& path, AblationRow& row) {
  std::string passes;
  for (const std::string& p : row.passes) passes += (passes.empty() ? "" : ",") + p;
  if (passes.empty()) passes = "none";
  KILN_ASSIGN_OR_RETURN(Compiled c, compile(model, bench.options(device, passes.c_str(), false)));
  row.nodes = static_cast<int64_t>(number(&c.description, "nodes"));
  row.dispatches = count(c.description.get("compile"), "dispatches");
  std::vector<api::Tensor> inputs;
  KILN_RETURN_IF_ERROR(bench_inputs(model, args, path, inputs, nullptr));
  const Inputs in = pointers(inputs);
  ModelResult timed;
  if (device) KILN_RETURN_IF_ERROR(run_once(c.session, in, model.output_count()).status());  // records the command buffer
  KILN_RETURN_IF_ERROR(time_runs(settings, c.session, in, model.output_count(), timed));
  row.wall = summarize(timed.wall_ms);
  row.gpu = summarize(timed.gpu_ms);
  return Status();
}

// One row per prefix of the passes that ran (r.passes, so plugins and
// --passes/--disable-pass count): none, then one pass added at a time. A
// prefix that fails is recorded with its error; the others still run.
Status run_ablation(Bench& bench, const api::Model& model, const Args& args, const Settings& settings,
                    ModelResult& r) {
  TempDir dir;
  api::VulkanDevice device;
  const bool vulkan = settings.backend == "vulkan";
  if (vulkan) {
    KILN_ASSIGN_OR_RETURN(dir.path, make_temp_dir());
    KILN_RETURN_IF_ERROR(bench.open_device(dir.path, device));
  }
  for (size_t k = 0; k <= r.pass_names.size(); ++k) {
    AblationRow row;
    for (size_t i = 0; i < k; ++i) row.passes.push_back(r.pass_names[i]);
    std::fprintf(stderr, "kiln:   ablation %zu/%zu (%s)\n", k + 1, r.pass_names.size() + 1,
                 k ? ("+" + row.passes.back()).c_str() : "no passes");
    if (Status s = ablation_row(bench, vulkan ? &device : nullptr, model, args, settings, r.path, row); !s.ok())
      row.error = s.to_string();
    r.ablation.push_back(std::move(row));
  }
  if (vulkan) bench.close_device(device);
  return Status();
}

std::string num(double v);  // %.6g (below, with the output)

// --concurrent N: one session with N run slots, N threads with inputs of
// their own (seeds --seed + 1000 + t), checked against single runs
// (bench_concurrent.h). Its own device with a memory-only kernel cache:
// compile time is not what this measures.
Status bench_concurrent(Bench& bench, const api::Model& model, const Args& args, const Settings& settings,
                        ModelResult& r) {
  if (settings.backend != "vulkan") return invalid_argument("--concurrent needs the Vulkan backend");
  std::vector<std::vector<api::Tensor>> variants(static_cast<size_t>(settings.concurrent));
  for (size_t t = 0; t < variants.size(); ++t) {
    std::string error;
    if (!build_inputs(model, args, 1000 + static_cast<int>(t), variants[t], error))
      return text_status(error).add_context("--concurrent: inputs of thread " + std::to_string(t));
  }
  api::VulkanDevice device;
  KILN_RETURN_IF_ERROR(bench.open_device("", device));
  kiln_session_options_t options = bench.options(&device, nullptr, false);
  options.max_concurrent_runs = static_cast<uint32_t>(settings.concurrent);
  Status status;
  {
    StatusOr<Compiled> c = compile(model, options);
    if (!c.ok()) {
      status = c.status();
    } else {
      ConcurrentResult result;
      const double tolerance = settings.precision == "fp16" ? 1e-2 : 1e-4;
      status = run_concurrent(c->session, variants, model.output_count(), settings.iters.value_or(20),
                              std::max(settings.warmup, 1), tolerance, result);
      if (status.ok()) r.concurrent = std::move(result);
    }
  }
  bench.close_device(device);
  KILN_RETURN_IF_ERROR(status);
  if (r.concurrent->mismatches > 0)
    return data_loss("--concurrent: " + std::to_string(r.concurrent->mismatches) +
                     " concurrent or sequential run(s) differ from the single-run reference by more than " +
                     num(r.concurrent->tolerance) + " (max|d| " + num(r.concurrent->max_abs_diff) + ")");
  return Status();
}

Status bench_model(Bench& bench, const Args& args, const Settings& settings, ModelResult& r) {
  std::string error;
  if (!tools::file_sha256(r.path, r.sha256, error)) return text_status(error);
  const auto t_import = Clock::now();
  api::Model model;
  KILN_API_RETURN_IF_ERROR(api::Model::load(r.path, model));
  r.import_ms = ms_since(t_import);
  std::vector<api::Tensor> inputs;
  KILN_RETURN_IF_ERROR(bench_inputs(model, args, r.path, inputs, &r.reference_output));
  for (size_t i = 0; i < inputs.size(); ++i) r.input_shapes.emplace_back(model.input_name(i), shape_text(inputs[i].shape()));
  if (settings.backend == "vulkan") KILN_RETURN_IF_ERROR(bench_vulkan(bench, model, inputs, settings, r));
  else if (settings.backend == "opencl") KILN_RETURN_IF_ERROR(bench_opencl(bench, model, inputs, settings, r));
  else KILN_RETURN_IF_ERROR(bench_reference(bench, model, inputs, settings, r));
  r.wall = summarize(r.wall_ms);
  r.gpu = summarize(r.gpu_ms);
  r.host_overhead = summarize(r.host_overhead_ms);
  if (settings.ablation) KILN_RETURN_IF_ERROR(run_ablation(bench, model, args, settings, r));
  if (settings.concurrent > 0) KILN_RETURN_IF_ERROR(bench_concurrent(bench, model, args, settings, r));
  return Status();
}

// ---- output --------------------------------------------------------------

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}
// JSON numbers as %.6g (null when not finite), as the schema has always had them.
void number(JsonWriter& w, double v) {
  if (std::isfinite(v)) w.raw(num(v));
  else w.null();
}
void number(JsonWriter& w, const std::optional<double>& v) {
  if (v) number(w, *v);
  else w.null();
}
// A string, or null when empty.
void string_or_null(JsonWriter& w, const std::string& s) {
  if (s.empty()) w.null();
  else w.string(s);
}

void summary_json(JsonWriter& w, const std::optional<Summary>& s) {
  if (!s) {
    w.null();
    return;
  }
  w.begin_object().key("count").number(static_cast<uint64_t>(s->count));
  w.key("median_ms"), number(w, s->median);
  w.key("p10_ms"), number(w, s->p10);
  w.key("p90_ms"), number(w, s->p90);
  w.key("min_ms"), number(w, s->min);
  w.key("max_ms"), number(w, s->max);
  w.key("mean_ms"), number(w, s->mean);
  w.key("noisy").boolean(s->noisy).end_object();
}

void memory_json(JsonWriter& w, const std::optional<MemoryRecord>& s) {
  if (!s) {
    w.null();
    return;
  }
  w.begin_object().key("device_bytes").number(s->device_bytes).key("activation_bytes").number(s->activation_bytes);
  w.key("arena_bytes").number(s->arena_bytes).key("live_lower_bound").number(s->live_lower_bound);
  w.key("no_reuse_bytes").number(s->no_reuse_bytes).end_object();
}

void compile_json(JsonWriter& w, const std::optional<CompileRecord>& c) {
  if (!c) {
    w.null();
    return;
  }
  w.begin_object().key("wall_ms"), number(w, c->wall_ms);
  if (c->has_details) {
    w.key("plan_ms"), number(w, c->plan_ms);
    w.key("kernels_ms"), number(w, c->kernels_ms);
    w.key("upload_ms"), number(w, c->upload_ms);
    w.key("shaders_ms"), number(w, c->shaders_ms);
    w.key("pipelines_ms"), number(w, c->pipelines_ms);
    w.key("compile_threads").number(c->compile_threads);
    if (!c->slowest_shader.empty()) {
      w.key("slowest_shader").string(c->slowest_shader);
      w.key("slowest_shader_ms"), number(w, c->slowest_shader_ms);
    }
    if (!c->slowest_pipeline.empty()) {
      w.key("slowest_pipeline").string(c->slowest_pipeline);
      w.key("slowest_pipeline_ms"), number(w, c->slowest_pipeline_ms);
    }
    w.key("pipelines").number(c->pipelines).key("shader_compiles").number(c->compiles);
    w.key("shader_disk_hits").number(c->disk_hits).key("shader_memory_hits").number(c->memory_hits);
    w.key("pipelines_created").number(c->pipelines_created);
    w.key("pipeline_cache_bytes_loaded").number(c->pipeline_cache_bytes_loaded);
    w.key("weight_bytes").number(c->weight_bytes);
  } else if (c->has_cache) {
    w.key("shader_compiles").number(c->compiles);
    w.key("shader_disk_hits").number(c->disk_hits).key("shader_memory_hits").number(c->memory_hits);
  }
  w.end_object();
}

// Achieved rates of one kernel and its fraction of the roofline: achieved
// FLOP/s over the attainable min(peak FLOP/s, intensity x peak bandwidth),
// which equals max(GB/s / peak GB/s, GFLOP/s / peak GFLOP/s); with one peak
// given, that peak's ratio alone.
struct KernelRates {
  std::optional<double> gbps, gflops, roofline;
};

KernelRates kernel_rates(const KernelRow& k, const Settings& settings) {
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

void ablation_json(JsonWriter& w, const ModelResult& r) {
  const std::vector<AblationSpeedup> speedups = ablation_speedups(r);
  w.begin_array();
  for (size_t i = 0; i < r.ablation.size(); ++i) {
    const AblationRow& a = r.ablation[i];
    w.newline().begin_object().key("added");
    string_or_null(w, a.passes.empty() ? "" : a.passes.back());
    w.key("passes").begin_array();
    for (const std::string& p : a.passes) w.string(p);
    w.end_array().key("status").string(a.error.empty() ? "ok" : "error").key("error");
    string_or_null(w, a.error);
    w.key("nodes");
    if (a.nodes < 0) w.null();
    else w.number(a.nodes);
    w.key("dispatches").number(static_cast<uint64_t>(a.dispatches)).key("wall");
    summary_json(w, a.wall);
    w.key("gpu");
    summary_json(w, a.gpu);
    w.key("median_ms"), number(w, speedups[i].ms);
    w.key("speedup"), number(w, speedups[i].speedup);
    w.key("speedup_vs_none"), number(w, speedups[i].vs_none);
    w.end_object();
  }
  if (!r.ablation.empty()) w.newline();
  w.end_array();
}

void model_json(JsonWriter& w, const ModelResult& r, const Settings& settings) {
  w.newline().begin_object();
  w.newline().key("model").string(r.model);
  w.newline().key("path").string(r.path);
  w.newline().key("sha256"), string_or_null(w, r.sha256);
  w.newline().key("status").string(r.status);
  w.newline().key("error"), string_or_null(w, r.error);
  w.newline().key("input_shapes").begin_object();
  for (const auto& [name, shape] : r.input_shapes) w.key(name).string(shape);
  w.end_object();
  w.newline().key("nodes");
  if (r.nodes < 0) w.null();
  else w.number(r.nodes);
  w.newline().key("dispatches").number(static_cast<uint64_t>(r.dispatches));
  w.newline().key("fallbacks").number(static_cast<uint64_t>(r.fallbacks));
  w.newline().key("fused_dispatches").number(static_cast<uint64_t>(r.fused_dispatches));
  w.newline().key("bytes_read").number(r.bytes_read).key("bytes_written").number(r.bytes_written);
  w.newline().key("passes").begin_array();
  for (const std::string& record : r.pass_records) w.newline().raw(record);
  if (!r.pass_records.empty()) w.newline();
  w.end_array();
  w.newline().key("cold_start").begin_object().key("import_ms"), number(w, r.import_ms);
  w.key("passes_ms"), number(w, r.passes_ms);
  w.newline().key("compile_cold"), compile_json(w, r.cold);
  w.newline().key("compile_warm"), compile_json(w, r.warm);
  w.newline().key("first_run_ms"), number(w, r.first_run_ms);
  w.end_object();
  w.newline().key("wall"), summary_json(w, r.wall);
  w.newline().key("gpu"), summary_json(w, r.gpu);
  w.newline().key("noisy").boolean((r.wall && r.wall->noisy) || (r.gpu && r.gpu->noisy));
  w.newline().key("host_overhead"), summary_json(w, r.host_overhead);
  double kernels_total = 0;
  for (const KernelRow& k : r.kernels) kernels_total += k.gpu_ms;
  w.newline().key("kernels_gpu_ms");
  if (r.kernels.empty()) w.null();
  else number(w, kernels_total);
  w.newline().key("kernels").begin_array();
  for (const KernelRow& k : r.kernels) {
    const KernelRates rates = kernel_rates(k, settings);
    w.newline().begin_object().key("kernel").string(k.kernel).key("node").string(k.node);
    w.key("gpu_ms"), number(w, k.gpu_ms);
    w.key("bytes").number(k.bytes).key("bytes_read").number(k.bytes_read);
    w.key("bytes_written").number(k.bytes_written).key("flops");
    if (k.flops) w.number(k.flops);
    else w.null();
    w.key("gbps"), number(w, rates.gbps);
    w.key("gflops"), number(w, rates.gflops);
    w.key("roofline"), number(w, rates.roofline);
    w.end_object();
  }
  if (!r.kernels.empty()) w.newline();
  w.end_array();
  w.newline().key("ablation");
  if (settings.ablation) ablation_json(w, r);
  else w.null();
  w.newline().key("reference_max_abs_diff"), number(w, r.reference_max_abs_diff);
  w.newline().key("int8_kernels");
  if (r.int8_integer) {
    w.begin_object().key("integer").boolean(*r.int8_integer).key("reason").string(r.int8_reason);
    w.key("rewritten").number(r.int8_rewritten).end_object();
  } else {
    w.null();
  }
  w.newline().key("memory"), memory_json(w, r.memory);
  w.newline().key("concurrent");  // --concurrent only (bench_concurrent.h)
  if (r.concurrent) w.raw(concurrent_json(*r.concurrent));
  else w.null();
  w.newline().end_object();
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The environment: the build, the host, the device (from libkiln's
// capabilities JSON) and the settings.
void environment_json(JsonWriter& w, const std::string& device_json, const Args& args, const Settings& settings) {
  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
  w.begin_object();
  w.newline().key("kiln_version").string(kiln_version_string());
#ifdef KILN_GIT_COMMIT
  w.newline().key("git_commit").string(KILN_GIT_COMMIT);
#else
  w.newline().key("git_commit").null();
#endif
  w.newline().key("hostname").string(host);
  w.newline().key("backend").string(settings.backend);
  w.newline().key("device");
  auto caps = parse_json(device_json);
  if (caps.ok() && caps->is_object()) {
    auto text = [&](const char* key) {
      const std::string* v = caps->get_string(key);
      return v ? *v : std::string();
    };
    const double* driver_version = caps->get_number("driver_version");
    w.begin_object().key("name").string(text("device_name")).key("vendor_id").string(text("vendor_id"));
    w.key("device_id").string(text("device_id")).key("driver_name").string(text("driver_name"));
    w.key("driver_info").string(text("driver_info"));
    w.key("driver_version").number(driver_version ? static_cast<uint64_t>(*driver_version) : uint64_t{0});
    w.key("api_version").string(text("api_version")).end_object();
  } else {
    w.null();
  }
  const bool vulkan = settings.backend == "vulkan";
  auto vulkan_only = [&](const char* key, const std::string& value) {
    w.newline().key(key);
    if (vulkan) w.string(value);
    else w.null();
  };
  const bool device = settings.backend != "reference";  // Vulkan or OpenCL
  w.newline().key("precision");
  if (device) w.string(settings.precision);
  else w.null();
  w.newline().key("storage");
  if (device) w.string(settings.storage);
  else w.null();
  vulkan_only("coopmat", settings.coopmat);
  w.newline().key("int8_dot").string(settings.int8_dot);  // the QDQ choice holds on every backend
  vulkan_only("inplace", settings.inplace);
  w.newline().key("pipeline").string(args.has("passes") ? args.get("passes") : "default");
  w.newline().key("disabled_passes").begin_array();
  for (const std::string& d : args.all("disable-pass")) w.string(d);
  w.end_array();
  w.newline().key("plugins").begin_array();
  for (const std::string& p : args.all("plugin")) w.string(p);
  w.end_array();
  w.newline().key("seed").raw(args.get("seed", "0"));  // checked to be an integer
  w.newline().key("warmup").number(settings.warmup);
  w.newline().key("iters");
  if (settings.iters) w.number(*settings.iters);
  else w.null();
  w.newline().key("min_time_s");
  if (settings.iters) w.null();
  else number(w, settings.min_time_s);
  w.newline().key("peak_gbps"), number(w, settings.peak_gbps);
  w.newline().key("peak_gflops"), number(w, settings.peak_gflops);
  w.newline().key("ablation").boolean(settings.ablation);
  w.newline().end_object();
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
  const bool on_device = settings.backend != "reference";  // Vulkan or OpenCL
  const bool noisy = (r.wall && r.wall->noisy) || (r.gpu && r.gpu->noisy);
  return csv_field(r.model) + "," + r.status + "," + settings.backend + "," + csv_field(device) + "," +
         (on_device ? settings.precision : "") + "," + (on_device ? settings.storage : "") + "," + opt(r.import_ms) + "," +
         opt(r.passes_ms) + "," + (r.cold ? num(r.cold->wall_ms) : "") + "," + (r.warm ? num(r.warm->wall_ms) : "") +
         "," + opt(r.first_run_ms) + "," + stat(r.wall, &Summary::median) + "," + stat(r.wall, &Summary::p10) + "," +
         stat(r.wall, &Summary::p90) + "," + stat(r.wall, &Summary::min) + "," + stat(r.wall, &Summary::max) + "," +
         stat(r.wall, &Summary::mean) + "," + stat(r.gpu, &Summary::median) + "," + stat(r.gpu, &Summary::p10) +
         "," + stat(r.gpu, &Summary::p90) + "," + std::to_string(r.wall ? r.wall->count : 0) + "," +
         (noisy ? "1" : "0") + "," + r.sha256 + "," + csv_field(r.path) + "," + csv_field(r.error);
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
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
    if (r.dispatches > 0)
      std::printf("%-24s dispatches %zu (fused %zu), bytes moved %s per run (read %s, written %s)\n", "",
                  r.dispatches, r.fused_dispatches, human_bytes(r.bytes_read + r.bytes_written).c_str(),
                  human_bytes(r.bytes_read).c_str(), human_bytes(r.bytes_written).c_str());
    if (r.reference_max_abs_diff)
      std::printf("%-24s max|d| vs output.npy %s\n", "", num(*r.reference_max_abs_diff).c_str());
    // Which path a quantized model took: shown where fuse-qdq rewrote
    // something, or where it did not run (so a QDQ model's row says why;
    // a float model's row then says it too, as a note).
    if (r.int8_integer && (r.int8_rewritten > 0 || !*r.int8_integer))
      std::printf("%-24s int8 kernels: %s, %lld QDQ conv/matmul rewritten (%s)\n", "",
                  *r.int8_integer ? "integer" : "float graph", static_cast<long long>(r.int8_rewritten),
                  r.int8_reason.c_str());
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
  s.storage = args.get("storage", "auto");
  if (s.storage != "auto" && s.storage != "image" && s.storage != "buffer")
    return invalid_argument("--storage must be auto, buffer or image, got '" + s.storage + "'");
  s.precision = args.get("precision", "fp32");
  if (s.precision != "fp16" && s.precision != "fp32") return invalid_argument("--precision must be fp32 or fp16, got '" + s.precision + "'");
  s.coopmat = args.get("coopmat", "on");
  if (s.coopmat != "off" && s.coopmat != "on") return invalid_argument("--coopmat must be on or off, got '" + s.coopmat + "'");
  s.int8_dot = args.get("int8-dot", "auto");
  if (s.int8_dot != "off" && s.int8_dot != "on" && s.int8_dot != "auto")
    return invalid_argument("--int8-dot must be auto, on or off, got '" + s.int8_dot + "'");
  s.inplace = args.get("inplace", "on");
  if (s.inplace != "off" && s.inplace != "on") return invalid_argument("--inplace must be on or off, got '" + s.inplace + "'");
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
  KILN_ASSIGN_OR_RETURN(s.concurrent, parse_int_flag(args, "concurrent", 0, 1));
  if (s.concurrent > 64) return invalid_argument("--concurrent expects 1 to 64 threads (run slots), got " + std::to_string(s.concurrent));
  s.backend = args.get("backend", "auto");
  if (s.backend != "auto" && s.backend != "vulkan" && s.backend != "reference" && s.backend != "opencl")
    return invalid_argument("unknown backend '" + s.backend + "' (expected auto, vulkan, reference or opencl)");
  return s;
}

// Resolves --backend auto: Vulkan when a device can be created (its
// capabilities JSON in `device_json`), else the reference executor, saying so.
Status open_backend(Bench& bench, Settings& settings, std::string& device_json) {
  if (settings.backend == "reference" || settings.backend == "opencl") return Status();  // opencl: the plugin opens it
  api::VulkanDevice device;
  Status status = bench.open_device("", device);
  if (!status.ok()) {
    if (settings.backend == "vulkan") return std::move(status).add_context("--backend vulkan");
    std::fprintf(stderr, "kiln: no usable Vulkan device (%s); benchmarking the reference executor\n",
                 status.to_string().c_str());
    settings.backend = "reference";
    return Status();
  }
  KILN_API_RETURN_IF_ERROR(device.describe_json(device_json));
  bench.close_device(device);
  settings.backend = "vulkan";
  return Status();
}

const std::vector<std::string> kBenchValueFlags = {"warmup", "iters", "min-time", "json",      "csv",
                                                   "shape",  "input", "seed",     "peak-gbps", "peak-gflops",
                                                   "concurrent"};

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
  Bench bench(*args, *settings);
  bench.selector_ = args->get("device", "");
  std::string device_json;
  if (Status s = open_backend(bench, *settings, device_json); !s.ok()) return fail(s);
  std::string device_name = settings->backend == "opencl" ? "OpenCL device (kiln info)" : "cpu";
  if (auto caps = parse_json(device_json); caps.ok())
    if (const std::string* name = caps->get_string("device_name")) device_name = *name;

  std::fprintf(stderr, "kiln: benchmarking %zu model(s) on %s (%s)\n", args->positionals().size(),
               settings->backend.c_str(), device_name.c_str());
  print_table_header();
  std::vector<ModelResult> results;
  for (const std::string& path : args->positionals()) {
    ModelResult r;
    r.path = path;
    r.model = model_name(path);
    std::fprintf(stderr, "kiln: [%zu/%zu] %s...\n", results.size() + 1, args->positionals().size(), path.c_str());
    Status status = bench_model(bench, *args, *settings, r);
    if (status.ok()) {
      r.status = "ok";
    } else {
      r.error = std::move(status).add_context(path).to_string();
      r.kernels.clear();
      std::fprintf(stderr, "kiln: %s\n", r.error.c_str());
    }
    print_table_row(r);
    print_ablation(r);
    if (r.concurrent) std::printf("%s", concurrent_text(*r.concurrent).c_str());
    results.push_back(std::move(r));
  }

  int rc = 0;
  if (args->has("json")) {
    JsonWriter w;
    w.begin_object();
    w.newline().key("schema").string(kSchema);
    w.newline().key("tool").string("kiln bench");
    w.newline().key("created_utc").string(utc_now());
    w.newline().key("command").begin_array().string("kiln").string("bench");
    for (const std::string& a : argv) w.string(a);
    w.end_array();
    w.newline().key("environment"), environment_json(w, device_json, *args, *settings);
    w.newline().key("models").begin_array();
    for (const ModelResult& r : results) model_json(w, r, *settings);
    w.newline().end_array().newline().end_object();
    if (Status s = write_file("json", args->get("json"), w.str() + "\n"); !s.ok()) rc = fail(s);
  }
  if (args->has("csv")) {
    std::string csv = std::string(kCsvHeader) + "\n";
    for (const ModelResult& r : results) csv += csv_row(r, *settings, device_name) + "\n";
    if (Status s = write_file("csv", args->get("csv"), csv); !s.ok()) rc = fail(s);
  }
  for (const ModelResult& r : results)
    if (r.status != "ok") rc = 1;
  // Under --validate a validation message is a failure, as in the tests.
  if (bench.validation_errors() > 0) rc = 1;  // reported when `bench` goes
  return rc;
}

}  // namespace kiln::cli

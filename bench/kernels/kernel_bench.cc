// Per-op micro-benchmarks (issue 16): each case of kernel_cases.h as a
// one-op model through the public API on a Vulkan device, timed on the GPU
// (the kernels' timestamps, so neither the host nor the submission is
// counted), reporting achieved TFLOP/s (GEMM-shaped ops) or GB/s (the bytes
// the engine's own accounting says the dispatches moved), and the fraction
// of the device's peak when given one.
//
//   kiln_kernel_bench [--smoke] [--steady] [--precision=fp32,fp16] [--device=SEL]
//                     [--peak-tflops=T] [--peak-gbs=G] [--validate]
//                     [--list-cases] [Google Benchmark flags...]
//
// --steady builds each case's operands on the device and returns one float
// (case_model's steady harness), so runs go back to back: without it every
// run uploads and downloads the operands through the host, and a GPU that
// idles through that host work lowers its clocks (an H100 timed 4096^3 2.2
// ms that way against 0.85 ms steady). Only the op's kernels are timed.
//
// --peak-tflops applies to fp16 runs, --peak-tflops-fp32 to fp32 ones.
// Exits nonzero when a case fails or (with --validate) the validation layers
// reported anything.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/kernels/kernel_cases.h"
#include "kiln/kiln.hpp"

namespace kiln::bench {
namespace {

using api::Error;
using api::Model;
using api::Session;
using api::Tensor;
using api::VulkanDevice;

struct Options {
  bool smoke = false, list = false, validate = false, steady = false;
  std::vector<std::string> precisions = {"fp32", "fp16"};
  std::string device;
  double peak_tflops_fp16 = 0, peak_tflops_fp32 = 0, peak_gbs = 0;
};

bool g_failed = false;

// Takes our flags out of argv, leaving Google Benchmark's.
Options parse_options(int& argc, char** argv) {
  Options o;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      const size_t n = std::strlen(flag);
      return a.compare(0, n, flag) == 0 && a.size() > n && a[n] == '=' ? argv[i] + n + 1 : nullptr;
    };
    if (a == "--smoke") {
      o.smoke = true;
    } else if (a == "--steady") {
      o.steady = true;
    } else if (a == "--list-cases") {
      o.list = true;
    } else if (a == "--validate") {
      o.validate = true;
    } else if (const char* v = value("--precision")) {
      o.precisions.clear();
      for (std::string s = v; !s.empty();) {
        const size_t comma = s.find(',');
        o.precisions.push_back(s.substr(0, comma));
        s = comma == std::string::npos ? "" : s.substr(comma + 1);
      }
    } else if (const char* d = value("--device")) {
      o.device = d;
    } else if (const char* t = value("--peak-tflops")) {
      o.peak_tflops_fp16 = std::atof(t);
    } else if (const char* t32 = value("--peak-tflops-fp32")) {
      o.peak_tflops_fp32 = std::atof(t32);
    } else if (const char* g = value("--peak-gbs")) {
      o.peak_gbs = std::atof(g);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return o;
}

constexpr double kLargeInputBytes = 16.0 * (1 << 20);
constexpr int kLargeCaseRuns = 30;

double input_bytes(const KernelCase& c) {
  double bytes = 0;
  for (const Shape& s : c.inputs) {
    double n = 4;  // host tensors are fp32
    for (int64_t d : s) n *= static_cast<double>(d);
    bytes += n;
  }
  return bytes;
}

// One case at one precision, compiled once and run per iteration.
class CaseRunner {
 public:
  CaseRunner(const VulkanDevice& device, KernelCase c, kiln_precision_t precision, bool steady)
      : device_(device), case_(std::move(c)), precision_(precision), steady_(steady) {}

  void run(benchmark::State& state) {
    if (!prepared_) {
      if (Error e = prepare()) {
        fail(state, e.to_string());
        return;
      }
      prepared_ = true;
    }
    if (steady_ && op_dispatches_ == 0) {
      fail(state, "no kernel of '" + case_.name + "' left to time: the steady harness's nodes took it in");
      return;
    }
    double gpu_s = 0, bytes = 0;
    uint32_t dispatches = 0;
    for (auto _ : state) {
      double run_ms = 0, run_bytes = 0;
      if (Error e = run_once(run_ms, run_bytes, dispatches)) {
        fail(state, e.to_string());
        return;
      }
      state.SetIterationTime(run_ms / 1e3);
      gpu_s += run_ms / 1e3;
      bytes += run_bytes;
    }
    if (gpu_s <= 0) return;
    const double iterations = static_cast<double>(state.iterations());
    if (case_.flops > 0) state.counters["TFLOPs"] = case_.flops * iterations / gpu_s / 1e12;
    state.counters["GBs"] = bytes / gpu_s / 1e9;
    state.counters["dispatches"] = dispatches;
    if (peak_tflops_ > 0 && case_.flops > 0) {
      state.counters["peak_frac"] = case_.flops * iterations / gpu_s / 1e12 / peak_tflops_;
    } else if (peak_gbs_ > 0 && case_.flops == 0) {
      state.counters["peak_frac"] = bytes / gpu_s / 1e9 / peak_gbs_;
    }
  }

  void set_peaks(double tflops, double gbs) {
    peak_tflops_ = tflops;
    peak_gbs_ = gbs;
  }

 private:
  static void fail(benchmark::State& state, const std::string& why) {
    g_failed = true;
    state.SkipWithError(why.c_str());
  }

  Error prepare() {
    const std::string bytes = case_model(case_, steady_);
    if (Error e = Model::load_from_memory(bytes.data(), bytes.size(), model_)) return e;
    kiln_session_options_t opts{};
    opts.struct_size = sizeof(opts);
    opts.backend = KILN_BACKEND_VULKAN;
    opts.vulkan_device = device_.get();
    opts.precision = precision_;
    opts.profile = 1;
    if (Error e = Session::create(model_, opts, session_)) return e;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const std::vector<Shape> shapes = steady_ ? std::vector<Shape>{{1}} : case_.inputs;
    for (const Shape& shape : shapes) {
      Tensor t;
      if (Error e = Tensor::create(KILN_DTYPE_FLOAT32, shape, t)) return e;
      float* data = t.data<float>();
      for (size_t i = 0; i < t.numel(); ++i) data[i] = dist(rng);
      inputs_.push_back(std::move(t));
    }
    // Two untimed runs: the first records the commands, the second is warm.
    double ms = 0, b = 0;
    uint32_t d = 0;
    for (int i = 0; i < 2; ++i)
      if (Error e = run_once(ms, b, d)) return e;
    op_dispatches_ = d;
    return Error();
  }

  Error run_once(double& gpu_ms, double& bytes, uint32_t& dispatches) {
    std::vector<const Tensor*> in;
    for (const Tensor& t : inputs_) in.push_back(&t);
    std::vector<Tensor> out;
    if (Error e = session_.run(in, 1, out)) return e;
    kiln_run_stats_t stats{};
    stats.struct_size = sizeof(stats);
    if (Error e = session_.last_run_stats(stats)) return e;
    gpu_ms = bytes = 0;
    dispatches = 0;
    for (size_t i = 0; i < stats.kernel_timings; ++i) {
      kiln_kernel_timing_t k{};
      k.struct_size = sizeof(k);
      if (Error e = session_.kernel_timing(i, k)) return e;
      // The steady harness's own kernels (its inputs' Adds, the final sum).
      if (steady_ && std::strncmp(k.node, kSteadyPrefix, std::strlen(kSteadyPrefix)) == 0) continue;
      ++dispatches;
      gpu_ms += k.gpu_ms;
      bytes += static_cast<double>(k.bytes_read + k.bytes_written);
    }
    return Error();
  }

  const VulkanDevice& device_;
  KernelCase case_;
  kiln_precision_t precision_;
  bool steady_ = false;
  uint32_t op_dispatches_ = 0;  // the op's own dispatches (steady: without the harness's)
  double peak_tflops_ = 0, peak_gbs_ = 0;
  bool prepared_ = false;
  Model model_;
  Session session_;
  std::vector<Tensor> inputs_;
};

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) {
  using namespace kiln::bench;
  Options options = parse_options(argc, argv);
  std::vector<KernelCase> cases = kernel_cases(options.smoke);
  if (options.list) {
    std::fputs(cases_json(cases).c_str(), stdout);
    return 0;
  }
  kiln_vulkan_device_options_t dev_opts{};
  dev_opts.struct_size = sizeof(dev_opts);
  dev_opts.selector = options.device.c_str();
  dev_opts.validation = options.validate ? 1u : 0u;
  kiln::api::VulkanDevice device;
  if (kiln::api::Error e = kiln::api::VulkanDevice::create(dev_opts, device)) {
    std::fprintf(stderr, "kiln_kernel_bench: %s\n", e.to_string().c_str());
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::AddCustomContext("device", device.name());

  std::vector<std::unique_ptr<CaseRunner>> runners;
  for (const std::string& p : options.precisions) {
    if (p != "fp32" && p != "fp16") {
      std::fprintf(stderr, "kiln_kernel_bench: --precision takes fp32 and fp16, not '%s'\n", p.c_str());
      return 2;
    }
    const bool half = p == "fp16";
    for (const KernelCase& c : cases) {
      runners.push_back(
          std::make_unique<CaseRunner>(device, c, half ? KILN_PRECISION_FP16 : KILN_PRECISION_FP32, options.steady));
      runners.back()->set_peaks(half ? options.peak_tflops_fp16 : options.peak_tflops_fp32, options.peak_gbs);
      CaseRunner* runner = runners.back().get();
      benchmark::internal::Benchmark* b =
          benchmark::RegisterBenchmark((c.name + "/" + p).c_str(), [runner](benchmark::State& s) { runner->run(s); })
              ->UseManualTime()
              ->Unit(benchmark::kMicrosecond);
      // Each iteration uploads the inputs and reads the output back through
      // the host API while only the GPU time counts: for a 64 MiB tensor that
      // is ~120 ms of host work per 0.1 ms measured (H100 machine), so
      // min-time would take minutes. Large cases take a fixed number of runs.
      if (!options.steady && input_bytes(c) > kLargeInputBytes) b->Iterations(kLargeCaseRuns);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  runners.clear();
  if (options.validate && device.validation_errors() > 0) {
    std::fprintf(stderr, "kiln_kernel_bench: the validation layers reported %llu messages\n",
                 static_cast<unsigned long long>(device.validation_errors()));
    return 1;
  }
  return g_failed ? 1 : 0;
}

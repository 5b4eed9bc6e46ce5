// The kiln command-line tool: run models, inspect devices and graphs.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/crash_report.h"

namespace kiln::cli {

int fail(const Status& status) {
  std::fprintf(stderr, "kiln: %s\n", status.to_string().c_str());
  return 1;
}

int fail(const api::Error& error) {
  std::fprintf(stderr, "kiln: %s\n", error.to_string().c_str());
  return 1;
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "kiln: %s\n(run `kiln help` for usage)\n", message.c_str());
  return 2;
}

}  // namespace kiln::cli

namespace {

constexpr const char* kUsage = R"(kiln — a Vulkan-first neural-network inference engine

usage:
  kiln info [--json]
      Vulkan devices and their capabilities; the devices of backend plugins (OpenCL).
  kiln info --model [PROFILE.json] [--svg FILE.svg]
      The device model `kiln tune` fitted (PROFILE, else the newest cached profile): its
      parameters, and with --svg a chart of the measurements against the model's predictions.
  kiln run MODEL [--backend auto|vulkan|reference|opencl] [--device N|NAME]
                 [--storage auto|buffer|image] [--precision fp32|fp16] [--coopmat on|off] [--inplace on|off]
                 [--int8-dot auto|on|off] [--profile] [--validate] [--input NAME=FILE.npy|FILE.pb ...] [--shape NAME=AxBxC ...] [--seed N]
                 [--output NAME=FILE.npy ...] [--stats FILE.json]
                 [--passes a,b,c|none] [--disable-pass NAME ...] [--plugin FILE.so ...]
                 [--then [--input ...] [--shape ...] [--output ...]] ...
      Runs MODEL (ONNX). The default backend (auto) is Vulkan when a device
      exists, else the CPU reference executor; opencl is the OpenCL backend
      plugin (plugins/opencl, when built). --storage auto (the default)
      lets the layout pass choose per tensor for the device; buffer or image
      force storage buffers or images used as 2.5D texture memory; --precision
      fp16 stores tensors as fp16 (fp32 accumulation); --coopmat off keeps
      fp16 GEMMs off the tensor cores (cooperative matrices); --int8-dot
      on runs static QDQ models (DequantizeLinear -> Conv/MatMul ->
      QuantizeLinear) as integer kernels, off as their float graph with
      integer GEMMs off packed int8 dot products, auto (the default) as
      integer kernels where the device has int8 cooperative matrices
      (tensor cores), else as their float graph, measured faster there
      (--stats: "int8_kernels"); --inplace off
      gives every elementwise output its own memory instead of writing it
      over an input that dies there. --profile records
      per-kernel GPU times into --stats; --validate enables the Khronos
      validation layer. Without --input, inputs are seeded random tensors
      (dynamic dims need --shape). Without --output, prints a summary of each
      output (shape, first values, top-5 for classifiers). --then separates
      further runs of the same compiled model, possibly with other shapes
      (a new shape records new commands but compiles no shader).
      Before compiling, the pass pipeline (plugins) optimizes the graph.
  kiln graph MODEL [--dot FILE] [--text FILE] [--full-constants] [--passes ...|none] [--plugin FILE.so ...]
                   [--int8-dot auto|on|off]
      Writes the graph after the pass pipeline (--passes none: as imported)
      as Graphviz (--dot) or Kiln's text IR (--text; '-' for stdout). Large
      constants are elided unless --full-constants. The pipeline runs for
      no device, so static QDQ stays the float graph unless --int8-dot on.
  kiln bench MODEL... [--backend ...] [--device ...] [--storage ...] [--precision ...] [--coopmat ...] [--inplace ...]
                 [--int8-dot ...] [--passes ...|none] [--disable-pass NAME ...] [--plugin FILE.so ...]
                 [--warmup N] [--iters N | --min-time S] [--shape NAME=AxB ...] [--input NAME=FILE ...]
                 [--seed N] [--json FILE] [--csv FILE] [--validate]
                 [--peak-gbps X] [--peak-gflops Y] [--ablation] [--concurrent N]
      Benchmarks each MODEL (options as for kiln run): import, pass and
      compile times (the Vulkan compile twice: with an empty kernel cache,
      then with the cache it filled) and the first run; then --warmup runs
      (default 10) and --iters runs (or --min-time seconds, default 2) with
      wall and GPU time (median, p10, p90, min, max, mean; "noisy" when
      (p90 - p10) / median > 0.25); then one profiled run for per-kernel GPU
      times, bytes moved and FLOPs (GB/s, GFLOP/s, and the roofline fraction
      against --peak-gbps/--peak-gflops). --backend opencl: the OpenCL plugin,
      its program cache cold then warm, per-kernel times from OpenCL
      profiling events. --ablation times every prefix of
      the pass pipeline and prints the speed-up each pass adds. One line per
      model on stdout; --json writes the kiln-bench-cli-v1 document
      (bench/README.md), --csv one row per model. A failing model is
      recorded as an error and the others still run. --concurrent N (Vulkan)
      then runs one session with N run slots from N threads, each with its
      own random inputs (--iters runs per thread, default 20), checks every
      output against a single run of the same inputs, and reports throughput
      against the same runs from one thread and, from each run's calibrated
      GPU timestamps, the share of device time with >= 2 runs in flight.
  kiln bench compare FILE.json... [--out DIR] [--baseline N]
      Compares kiln bench documents (and bench/'s kiln-bench-v1 peer files,
      e.g. PyTorch): a table of medians and ratios to the baseline series,
      and compare.md + compare.svg (bars per model, one colour per series).
  kiln tune [--device SEL] [--short] [--out FILE] [--no-cache] [--validation] [--seed N]
      Characterizes the device for the tmmodel pass (plugins/tmmodel): TMModel's
      micro-benchmarks, the fitted latency model and held-out rank correlations;
      writes the profile to FILE and to the cache ($KILN_CACHE_DIR/tmmodel, ...).
  kiln tune --exhaustive MODEL --profile FILE [--repeat N] [--json OUT]
      Times every GEMM tile of the menu on each GEMM node of MODEL and compares
      the tmmodel pass's pick (and the planner's) with the best (python3).
  kiln passes [--plugin FILE.so ...]
      Loaded plugins (in-tree, $KILN_PLUGIN_PATH, --plugin), their passes and
      the facts each requires and invalidates, and the default pipeline.
  kiln version
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  kiln::cli::install_crash_report();
  const std::string cmd = argv[1];
  std::vector<std::string> rest(argv + 2, argv + argc);
  if (cmd == "run") return kiln::cli::cmd_run(rest);
  if (cmd == "info") return kiln::cli::cmd_info(rest);
  if (cmd == "graph") return kiln::cli::cmd_graph(rest);
  if (cmd == "passes") return kiln::cli::cmd_passes(rest);
  if (cmd == "bench") return kiln::cli::cmd_bench(rest);
  if (cmd == "tune") return kiln::cli::cmd_tune(rest);
  if (cmd == "version" || cmd == "--version") {
    std::printf("kiln %s\n", kiln_version_string());
    return 0;
  }
  return kiln::cli::usage_error("unknown command '" + cmd + "'");
}

// Node-test cases on Vulkan in crash-isolated worker processes; see vulkan_runner.h.
#include "tests/onnx_node/vulkan_runner.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include "engine/registry/default_pipeline.h"
#include "engine/runtime/vulkan/plugin_target.h"
#include "engine/runtime/vulkan/vulkan_model.h"
#include "frontends/onnx/onnx_importer.h"
#include "platform/vulkan/device.h"
#include "platform/vulkan/instance.h"
#include "platform/vulkan/kernel_cache.h"
#include "platform/vulkan/shader_compiler.h"
#include "tests/onnx_node/node_case.h"

namespace fs = std::filesystem;

namespace kiln::node_test {
namespace {

// ---- The pipe protocol: one line per message, fields separated by tabs.
//   D <device name>                         the worker has its device
//   S <reason>                              no device: skip everything
//   X <reason>                              a device but no validation layer: fail
//   R <case> <kind> <errors> <warnings> <ops> <message> <first warning>
//   E <errors> <messages>                   teardown done

std::string sanitize(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  return s;
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return out;
    start = tab + 1;
  }
}

std::string error_text(const vk::Instance& instance) {
  std::string out;
  for (const vk::DebugMessage& m : instance.messages())
    if (m.is_error()) out += " [" + m.id_name + "] " + m.text;
  return out;
}

// The first warning, as an example of what the layer said.
std::string first_warning(const vk::Instance& instance) {
  for (const vk::DebugMessage& m : instance.messages())
    if (!m.is_error()) return "[" + m.id_name + "] " + m.text.substr(0, 400);
  return "";
}

std::string join(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : "+") + n;
  return out;
}

std::string op_name(const ir::Node& node) { return node.domain.empty() ? node.op : node.domain + "." + node.op; }

// ---- Worker side.


VulkanCaseResult run_case(const fs::path& case_dir, const VulkanConfig& config, vk::Device& device,
                          vk::KernelCache& cache, const registry::PluginRegistry* plugins) {
  VulkanCaseResult r;
  auto graph = onnx::import_model_file((case_dir / "model.onnx").string());
  if (!graph.ok()) {
    r.message = "import: " + graph.status().to_string();
    return r;
  }
  std::set<std::string> ops;
  for (ir::NodeId id : (*graph)->main().nodes) ops.insert(op_name((*graph)->node(id)));
  r.ops = join(ops);
  std::vector<DataSet> sets;
  if (std::string e = load_data_sets(case_dir, sets); !e.empty()) {
    r.message = e;
    return r;
  }
  if (plugins) {
    registry::PipelineOptions pipeline;
    pipeline.target = runtime::plugin_target_info(device, true, KILN_STORAGE_MODE_AUTO);  // as `kiln run --storage auto`
    // Static QDQ as `kiln run --int8-dot auto` runs it on this device.
    pipeline.integer_qdq = runtime::choose_int8_kernels(runtime::Int8Kernels::kAuto, &device, true).integer;
    auto passes = registry::run_pipeline(*plugins, **graph, pipeline);
    if (!passes.ok()) {
      r.message = "pass pipeline: " + passes.status().to_string();
      return r;
    }
  }
  runtime::VulkanModelOptions options;
  options.plan.storage = config.storage;
  options.plan.precision = config.precision;
  auto model = runtime::VulkanModel::compile(device, cache, **graph, options);
  if (!model.ok()) {
    r.message = "compile: " + model.status().to_string();
    return r;
  }
  for (const DataSet& set : sets) {
    auto outputs = (*model)->run(set.inputs);
    if (!outputs.ok()) {
      r.message = set.name + ": run: " + outputs.status().to_string();
      return r;
    }
    const Tolerance tol = config.precision == planner::ElemType::kF16 ? kFp16Tolerance : kFp32Tolerance;
    if (std::string diff = compare_outputs(*outputs, set, tol); !diff.empty()) {
      r.message = diff;
      return r;
    }
  }
  const planner::ExecutionPlan& plan = (*model)->plan();
  if (plan.fallback_count() > 0) {
    std::set<std::string> host_ops;
    for (const planner::PlanStep& s : plan.steps)
      if (s.kind == planner::PlanStep::Kind::kFallback) host_ops.insert(op_name((*graph)->node(s.node)));
    r.kind = VulkanCaseResult::Kind::kFallback;
    r.ops = join(host_ops);
    for (const std::string& reason : plan.fallback_reasons) r.message += (r.message.empty() ? "" : "; ") + reason;
    return r;
  }
  r.kind = VulkanCaseResult::Kind::kPass;
  return r;
}

// Creates the validated device, runs cases [first, end) and reports each on
// `fd`, then tears the device down and reports what validation said.
[[noreturn]] void worker_main(const std::vector<fs::path>& cases, size_t first, const VulkanConfig& config,
                              int fd) {
  vk::InstanceOptions instance_options;
  instance_options.application_name = "kiln_onnx_node_test";
  instance_options.validation = vk::Validation::kRequired;
  instance_options.synchronization_validation = true;
  auto instance = vk::Instance::create(instance_options);
  if (!instance.ok()) {
    // No loader is a skip; a loader without the validation layer is an
    // error (the suite promises validated runs), as in vk_test_env.cc.
    const bool no_layer = instance.status().message().find("validation") != std::string::npos;
    write_all(fd, std::string(no_layer ? "X" : "S") + "\tno validated Vulkan instance: " +
                      sanitize(instance.status().to_string()) + "\n");
    ::_exit(0);
  }
  auto device = vk::Device::create(**instance);
  if (!device.ok()) {
    write_all(fd, "S\tno Vulkan device: " + sanitize(device.status().to_string()) + "\n");
    ::_exit(0);
  }
  auto compiler = vk::ShaderCompiler::create();
  if (!compiler.ok()) {
    write_all(fd, "S\tno shader compiler: " + sanitize(compiler.status().to_string()) + "\n");
    ::_exit(0);
  }
  // Memory only: every run compiles its shaders, as a fresh CI machine does.
  vk::KernelCacheOptions cache_options;
  cache_options.use_disk = false;
  auto cache = vk::KernelCache::open(**device, **compiler, cache_options);
  if (!cache.ok()) {
    write_all(fd, "S\tno kernel cache: " + sanitize(cache.status().to_string()) + "\n");
    ::_exit(0);
  }
  // Auto storage: the in-tree passes only, whatever the machine has installed.
  std::unique_ptr<registry::PluginRegistry> plugins;
  if (config.auto_storage) {
    plugins = std::make_unique<registry::PluginRegistry>();
    registry::PipelineSetup setup;
    setup.load_environment = false;
    if (Status s = registry::load_standard_plugins(*plugins, setup, {}); !s.ok()) {
      write_all(fd, "X\tno pass pipeline for --storage auto: " + sanitize(s.to_string()) + "\n");
      ::_exit(0);
    }
  }
  write_all(fd, "D\t" + sanitize((*device)->capabilities().device_name) + "\n");
  vk::Instance& inst = **instance;
  inst.clear_messages();
  for (size_t i = first; i < cases.size(); ++i) {
    VulkanCaseResult r = run_case(cases[i], config, **device, **cache, plugins.get());
    r.validation_errors = inst.error_count();
    r.validation_warnings = inst.warning_count();
    if (r.validation_warnings > 0) r.warning = first_warning(inst);
    if (r.validation_errors > 0) {
      r.message = "validation:" + error_text(inst) + (r.message.empty() ? "" : "; then: " + r.message);
      r.kind = VulkanCaseResult::Kind::kFail;
    }
    inst.clear_messages();
    std::ostringstream line;
    line << "R\t" << i << "\t" << static_cast<int>(r.kind) << "\t" << r.validation_errors << "\t"
         << r.validation_warnings << "\t" << sanitize(r.ops) << "\t" << sanitize(r.message) << "\t"
         << sanitize(r.warning) << "\n";
    write_all(fd, line.str());
  }
  cache->reset();
  compiler->reset();
  device->reset();
  write_all(fd, "E\t" + std::to_string(inst.error_count()) + "\t" + sanitize(error_text(inst)) + "\n");
  ::_exit(0);
}

// ---- Parent side.

enum class WorkerEnd { kDone, kCrashed, kTimedOut, kSkipped };

// Starts a worker at case `first` and collects its lines into `run` until it
// ends; returns how, with `next` = the first case without a result.
WorkerEnd supervise_worker(const std::vector<fs::path>& cases, size_t first, const VulkanConfig& config,
                           VulkanRun& run, size_t& next, std::string& end_detail) {
  next = first;
  int fds[2];
  if (::pipe(fds) != 0) {
    end_detail = "pipe failed: " + std::string(std::strerror(errno));
    return WorkerEnd::kCrashed;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    end_detail = "fork failed: " + std::string(std::strerror(errno));
    return WorkerEnd::kCrashed;
  }
  if (pid == 0) {
    ::close(fds[0]);
    worker_main(cases, first, config, fds[1]);
  }
  ::close(fds[1]);
  ++run.workers;
  std::string buffer;
  bool finished = false, skipped = false, timed_out = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(config.timeout_s);
  while (!finished) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      timed_out = true;
      break;
    }
    char chunk[4096];
    const ssize_t n = ::read(fds[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the worker is gone
    buffer.append(chunk, static_cast<size_t>(n));
    for (size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
      const std::vector<std::string> f = split_tabs(buffer.substr(0, nl));
      buffer.erase(0, nl + 1);
      if (f[0] == "D" && f.size() >= 2) {
        run.device = f[1];
      } else if ((f[0] == "S" || f[0] == "X") && f.size() >= 2) {
        (f[0] == "S" ? run.skip_reason : run.setup_error) = f[1];
        skipped = true;
      } else if (f[0] == "R" && f.size() >= 8) {
        const size_t i = std::stoul(f[1]);
        VulkanCaseResult& r = run.results[i];
        r.kind = static_cast<VulkanCaseResult::Kind>(std::stoi(f[2]));
        r.validation_errors = std::stoull(f[3]);
        r.validation_warnings = std::stoull(f[4]);
        r.ops = f[5];
        r.message = f[6];
        r.warning = f[7];
        next = i + 1;
        deadline = std::chrono::steady_clock::now() + std::chrono::seconds(config.timeout_s);
      } else if (f[0] == "E" && f.size() >= 3) {
        run.teardown_errors += std::stoull(f[1]);
        run.teardown_messages += f[2];
        finished = true;
      }
    }
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (skipped) return WorkerEnd::kSkipped;
  if (finished) return WorkerEnd::kDone;
  if (timed_out) {
    end_detail = "timed out after " + std::to_string(config.timeout_s) + " s";
    return WorkerEnd::kTimedOut;
  }
  end_detail = WIFSIGNALED(status) ? "crashed with signal " + std::to_string(WTERMSIG(status)) + " (" +
                                         strsignal(WTERMSIG(status)) + ")"
                                   : "the worker exited (status " + std::to_string(status) + ") without a result";
  return WorkerEnd::kCrashed;
}

}  // namespace

VulkanRun run_on_vulkan(const std::vector<fs::path>& cases, const VulkanConfig& config) {
  VulkanRun run;
  run.results.resize(cases.size());
  size_t first = 0;
  while (first < cases.size()) {
    size_t next = first;
    std::string detail;
    const WorkerEnd end = supervise_worker(cases, first, config, run, next, detail);
    if (end == WorkerEnd::kSkipped) return run;
    if (end == WorkerEnd::kDone) break;
    // The case after the last reported one took the worker down.
    if (next >= cases.size()) {
      ++run.teardown_errors;
      run.teardown_messages += " destroying the device: " + detail;
      break;
    }
    run.results[next].kind = VulkanCaseResult::Kind::kFail;
    run.results[next].message = detail;
    first = next + 1;
  }
  return run;
}

}  // namespace kiln::node_test

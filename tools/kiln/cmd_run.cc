// `kiln run`: load a model once, run it one or more times (runs separated by
// --then, each with its own inputs and possibly other shapes), write outputs
// as .npy or print a short summary, and optionally write timing stats.
// A client of libkiln through kiln.hpp only: the session, tensor files and
// the --stats fields all come from the public API.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include "engine/base/json_writer.h"
#include "kiln/kiln.hpp"
#include "tools/kiln/cli_args.h"
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

const std::vector<std::string> kRunValueFlags = {"input", "output", "shape", "seed"};
const std::vector<std::string> kGlobalValueFlags = {"stats"};

void print_summary(const std::string& name, const api::Tensor& t) {
  const std::vector<int64_t> shape = t.shape();
  std::printf("output '%s': %s%s\n", name.c_str(), kiln_dtype_name(t.dtype()), shape_text(shape).c_str());
  const size_t n = t.numel();
  std::printf("  first values:");
  for (size_t i = 0; i < std::min<size_t>(n, 8); ++i) std::printf(" %.6g", t.get_f64(i));
  std::printf("\n");
  // Classifier-looking outputs ([1, K] or [K], K >= 10): top-5.
  const bool classifier =
      is_float(t.dtype()) && n >= 10 && (shape.size() == 1 || (shape.size() == 2 && shape[0] == 1));
  if (classifier) {
    std::vector<size_t> idx(n);
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::partial_sort(idx.begin(), idx.begin() + 5, idx.end(),
                      [&](size_t a, size_t b) { return t.get_f64(a) > t.get_f64(b); });
    std::printf("  top-5:");
    for (size_t i = 0; i < 5; ++i) std::printf(" %zu (%.4f)", idx[i], t.get_f64(idx[i]));
    std::printf("\n");
  }
}

// One line for the terminal from the session's description ("vulkan on
// llvmpipe (buffer, fp32): 41 dispatches, ...").
std::string summary(const JsonValue& session) {
  const std::string* device = session.get_string("device");
  const JsonValue* compile = session.get("compile");
  const std::string* backend = session.get_string("backend");
  auto num = [&](const char* key) {
    const double* v = compile ? compile->get_number(key) : nullptr;
    return v ? *v : 0.0;
  };
  if (backend && *backend != "vulkan" && *backend != "reference") {
    char buf[384];
    int n = std::snprintf(buf, sizeof(buf), "%s backend (plugin): dispatches %.0f, %.0f host fallbacks", backend->c_str(),
                          num("dispatches"), num("fallbacks"));
    if (const JsonValue* cache = compile ? compile->get("kernel_cache") : nullptr; cache && n > 0) {
      auto count = [&](const char* key) {
        const double* v = cache->get_number(key);
        return v ? *v : 0.0;
      };
      std::snprintf(buf + n, sizeof(buf) - static_cast<size_t>(n),
                    "; kernels: %.0f compiled, %.0f from the disk cache, %.0f in memory, %.0f cache files rejected",
                    count("compiles"), count("disk_hits"), count("memory_hits"), count("corrupt_files"));
    }
    return buf;
  }
  if (!device || !compile) return "reference executor (CPU)";
  const std::string* storage = session.get_string("storage");
  const std::string* precision = session.get_string("precision");
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "vulkan on %s (%s, %s): dispatches %.0f (fused %.0f), %.0f host fallbacks; compiled in %.1f ms (%.0f "
                "shaders compiled, %.0f from cache, %.0f compile threads)",
                device->c_str(), storage ? storage->c_str() : "", precision ? precision->c_str() : "",
                num("dispatches"), num("fused_dispatches"), num("fallbacks"),
                num("plan_ms") + num("kernels_ms") + num("upload_ms"), num("shader_compiles"),
                num("shader_cache_hits"), num("compile_threads"));
  return buf;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t u = 0;
  while (bytes >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

// What a run's dispatches did, from kiln_session_last_run_json: "dispatches
// 41 (fused 3), bytes moved 12.3 MiB (read 8.1 MiB, written 4.2 MiB)"; empty
// for the reference backend, which dispatches nothing.
std::string run_traffic(const JsonValue& run) {
  const double* dispatches = run.get_number("dispatches");
  const double* fused = run.get_number("fused_dispatches");
  const double* read = run.get_number("bytes_read");
  const double* written = run.get_number("bytes_written");
  if (!dispatches || !fused || !read || !written || *dispatches == 0) return "";
  char buf[256];
  std::snprintf(buf, sizeof(buf), "dispatches %.0f (fused %.0f), bytes moved %s (read %s, written %s)", *dispatches,
                *fused, human_bytes(*read + *written).c_str(), human_bytes(*read).c_str(),
                human_bytes(*written).c_str());
  return buf;
}

int fail_text(const std::string& error) {
  std::fprintf(stderr, "kiln: %s\n", error.c_str());
  return 1;
}

}  // namespace

int cmd_run(const std::vector<std::string>& argv) {
  auto segments = split_on_then(argv);
  std::vector<std::string> first_value_flags = kRunValueFlags;
  first_value_flags.insert(first_value_flags.end(), kGlobalValueFlags.begin(), kGlobalValueFlags.end());
  first_value_flags.insert(first_value_flags.end(), kPipelineValueFlags.begin(), kPipelineValueFlags.end());
  first_value_flags.insert(first_value_flags.end(), runner_value_flags().begin(), runner_value_flags().end());
  auto first = Args::parse(segments[0], first_value_flags, runner_bool_flags());
  if (!first.ok()) return fail(first.status());
  if (first->positionals().size() != 1) return usage_error("kiln run MODEL [options]: expected exactly one MODEL");
  const std::string model_path = first->positionals()[0];
  const std::string stats_path = first->get("stats");

  SessionFlags flags;
  flags.set_pipeline(*first);
  if (std::string error = flags.set_backend(*first); !error.empty()) return fail_text(error);

  const auto t_load = Clock::now();
  api::Model model;
  if (api::Error e = api::Model::load(model_path, model)) return fail(e);
  const double load_ms = ms_since(t_load);

  // The session: the pass pipeline (every optimization is a plugin;
  // --passes none skips it) on a copy of the model, then the backend.
  const auto t_compile = Clock::now();
  api::Session session;
  if (api::Error e = api::Session::create(model, flags.options(), session)) return fail(e);
  const double create_ms = ms_since(t_compile);
  std::string session_json;
  if (api::Error e = session.describe_json(session_json)) return fail(e);
  auto described = parse_json(session_json);
  if (!described.ok()) return fail(described.status());
  const double* passes_ms = described->get_number("passes_ms");
  const std::string backend = session.backend() == KILN_BACKEND_VULKAN   ? "vulkan"
                              : session.backend() == KILN_BACKEND_PLUGIN ? flags.options().backend_plugin
                                                                         : "reference";
  std::fprintf(stderr, "kiln: %s\n", summary(*described).c_str());

  JsonWriter stats;
  stats.begin_object();
  stats.newline().key("model").string(model_path);
  stats.newline().key("load_ms").number(load_ms);
  stats.newline().key("compile_ms").number(create_ms - (passes_ms ? *passes_ms : 0));
  stats.newline().members(session_json);
  stats.newline().key("runs").begin_array();

  for (size_t run = 0; run < segments.size(); ++run) {
    StatusOr<Args> args = run == 0 ? std::move(first) : Args::parse(segments[run], kRunValueFlags, {});
    if (!args.ok()) return fail(std::move(args).status().add_context("run " + std::to_string(run + 1)));
    if (run > 0 && !args->positionals().empty())
      return usage_error("unexpected '" + args->positionals()[0] + "' after --then (the model is given once)");
    std::vector<api::Tensor> inputs;
    std::string error;
    if (!build_inputs(model, *args, static_cast<int>(run), inputs, error)) return fail_text(error);
    std::vector<const api::Tensor*> input_ptrs;
    for (const api::Tensor& t : inputs) input_ptrs.push_back(&t);
    const auto t_run = Clock::now();
    std::vector<api::Tensor> outputs;
    if (api::Error e = session.run(input_ptrs, model.output_count(), outputs)) return fail(e);
    const double run_ms = ms_since(t_run);
    std::string run_json;
    if (api::Error e = session.last_run_json(run_json)) return fail(e);

    std::map<std::string, std::string> out_files;
    for (const std::string& spec : args->all("output")) {
      std::pair<std::string, std::string> kv;
      if (!split_assignment("output", spec, kv, error)) return fail_text(error);
      out_files[kv.first] = kv.second;
    }
    std::string traffic;
    if (auto parsed = parse_json(run_json); parsed.ok()) traffic = run_traffic(*parsed);
    std::printf("run %zu: %.3f ms (%s backend)%s\n", run + 1, run_ms, backend.c_str(),
                traffic.empty() ? "" : ("; " + traffic).c_str());
    stats.newline().begin_object().key("run_ms").number(run_ms).members(run_json);
    stats.key("inputs").begin_object();
    for (size_t i = 0; i < inputs.size(); ++i) stats.key(model.input_name(i)).string(shape_text(inputs[i].shape()));
    stats.end_object().key("outputs").begin_object();
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string name = model.output_name(i);
      const api::Tensor& t = outputs[i];
      if (auto it = out_files.find(name); it != out_files.end()) {
        if (api::Error e = t.save_npy(it->second))
          return fail_text(std::string(kiln_status_code_name(e.code())) + ": --output " + name + ": " + e.message());
        out_files.erase(it);
      } else if (args->all("output").empty()) {
        print_summary(name, t);
      }
      stats.key(name).string(shape_text(t.shape()));
    }
    stats.end_object().end_object();
    if (!out_files.empty())
      return fail_text("INVALID_ARGUMENT: --output: the model has no output named '" + out_files.begin()->first + "'");
  }
  stats.newline().end_array().newline().end_object();
  if (!stats_path.empty()) {
    std::ofstream f(stats_path);
    if (!f) return fail_text("NOT_FOUND: --stats: cannot write '" + stats_path + "'");
    f << stats.str() << "\n";
  }
  return 0;
}

}  // namespace kiln::cli

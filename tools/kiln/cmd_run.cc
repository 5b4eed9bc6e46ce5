// `kiln run`: load a model once, run it one or more times (runs separated by
// --then, each with its own inputs and possibly other shapes), write outputs
// as .npy or print a short summary, and optionally write timing stats.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "engine/base/npy.h"
#include "frontends/onnx/onnx_importer.h"
#include "tools/kiln/cli_args.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/model_runner.h"
#include "tools/kiln/pipeline_flags.h"

namespace kiln::cli {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

const std::vector<std::string> kRunValueFlags = {"input", "output", "shape", "seed"};
const std::vector<std::string> kGlobalValueFlags = {"stats"};

// "NAME=VALUE" -> {NAME, VALUE}.
StatusOr<std::pair<std::string, std::string>> split_assignment(const std::string& flag, const std::string& s) {
  auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    return invalid_argument("--" + flag + " expects NAME=VALUE, got '" + s + "'");
  return std::make_pair(s.substr(0, eq), s.substr(eq + 1));
}

StatusOr<Shape> parse_shape_text(const std::string& s) {
  Shape shape;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, 'x')) {
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0) return invalid_argument("bad shape '" + s + "' (expected e.g. 1x3x224x224)");
    shape.push_back(v);
  }
  return shape;
}

Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937_64& rng) {
  Tensor t = Tensor::allocate(dtype, shape).value();
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> small(0, 9);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype_is_float(dtype)) t.set_f64(i, real(rng));
    else if (dtype == DType::kBool) t.set_f64(i, static_cast<double>(rng() & 1u));
    else t.set_f64(i, static_cast<double>(small(rng)));
  }
  return t;
}

}  // namespace

StatusOr<Tensor> load_input_file(const std::string& path) {
  if (path.size() > 3 && path.substr(path.size() - 3) == ".pb") return onnx::load_tensor_proto_file(path);
  return read_npy(path);
}

// Builds the inputs of one run: files first (they bind symbols), then
// --shape overrides, then random tensors for whatever is left.
StatusOr<std::vector<Tensor>> build_inputs(const ir::Graph& g, const Args& args, int run_index) {
  std::map<std::string, Tensor> given;
  for (const std::string& spec : args.all("input")) {
    KILN_ASSIGN_OR_RETURN(auto kv, split_assignment("input", spec));
    if (g.find_value(kv.first) == ir::kNoValue) return invalid_argument("--input: the model has no input named '" + kv.first + "'");
    auto t = load_input_file(kv.second);
    if (!t.ok()) return std::move(t).status().add_context("--input " + kv.first);
    given[kv.first] = std::move(t).value();
  }
  std::map<std::string, Shape> shapes;
  for (const std::string& spec : args.all("shape")) {
    KILN_ASSIGN_OR_RETURN(auto kv, split_assignment("shape", spec));
    KILN_ASSIGN_OR_RETURN(Shape s, parse_shape_text(kv.second));
    shapes[kv.first] = std::move(s);
  }
  // Symbols bound by given inputs and explicit shapes.
  std::map<std::string, int64_t> bindings;
  for (ir::ValueId id : g.main().inputs) {
    const ir::Value& v = g.value(id);
    const Shape* concrete = nullptr;
    if (auto it = given.find(v.name); it != given.end()) concrete = &it->second.shape();
    else if (auto sit = shapes.find(v.name); sit != shapes.end()) concrete = &sit->second;
    if (!concrete || !v.shape.has_rank || static_cast<int64_t>(concrete->size()) != v.shape.rank()) continue;
    for (size_t i = 0; i < concrete->size(); ++i)
      if (v.shape.dims[i].is_symbol()) bindings.emplace(v.shape.dims[i].symbol_name(), (*concrete)[i]);
  }
  std::mt19937_64 rng(static_cast<uint64_t>(std::strtoll(args.get("seed", "0").c_str(), nullptr, 10)) + static_cast<uint64_t>(run_index));
  std::vector<Tensor> inputs;
  for (ir::ValueId id : g.main().inputs) {
    const ir::Value& v = g.value(id);
    if (auto it = given.find(v.name); it != given.end()) {
      inputs.push_back(it->second);
      continue;
    }
    Shape shape;
    if (auto sit = shapes.find(v.name); sit != shapes.end()) {
      shape = sit->second;
    } else {
      if (!v.shape.has_rank) return invalid_argument("input '" + v.name + "' has unknown rank: give --input or --shape");
      for (const ir::Dim& d : v.shape.dims) {
        auto value = d.evaluate(bindings);
        if (!value)
          return invalid_argument("input '" + v.name + "' has dynamic shape " + v.shape.to_string() +
                                  ": give --shape " + v.name + "=AxBx... or --input " + v.name + "=FILE.npy");
        shape.push_back(*value);
      }
    }
    inputs.push_back(random_tensor(v.dtype == DType::kUndefined ? DType::kFloat32 : v.dtype, shape, rng));
  }
  return inputs;
}

namespace {

void print_summary(const std::string& name, const Tensor& t) {
  std::printf("output '%s': %s%s\n", name.c_str(), std::string(dtype_name(t.dtype())).c_str(),
              shape_to_string(t.shape()).c_str());
  std::printf("  first values:");
  for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 8); ++i) std::printf(" %.6g", t.get_f64(i));
  std::printf("\n");
  // Classifier-looking outputs ([1, K] or [K], K >= 10): top-5.
  const bool classifier = dtype_is_float(t.dtype()) && t.numel() >= 10 &&
                          (t.rank() == 1 || (t.rank() == 2 && t.dim(0) == 1));
  if (classifier) {
    std::vector<int64_t> idx(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
    std::partial_sort(idx.begin(), idx.begin() + 5, idx.end(),
                      [&](int64_t a, int64_t b) { return t.get_f64(a) > t.get_f64(b); });
    std::printf("  top-5:");
    for (int i = 0; i < 5; ++i) std::printf(" %lld (%.4f)", static_cast<long long>(idx[static_cast<size_t>(i)]), t.get_f64(idx[static_cast<size_t>(i)]));
    std::printf("\n");
  }
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

  const auto t_load = Clock::now();
  auto graph = onnx::import_model_file(model_path);
  if (!graph.ok()) return fail(graph.status());
  const double load_ms = ms_since(t_load);

  // The engine session: the pass pipeline (every optimization is a plugin;
  // --passes none skips it) on a copy of the model, then the backend.
  const auto t_compile = Clock::now();
  auto runner = ModelRunner::create(*first, **graph);
  if (!runner.ok()) return fail(runner.status());
  const double passes_ms = (*runner)->session().pipeline_ms();
  const double compile_ms = ms_since(t_compile) - passes_ms;
  const ir::Graph& g = (*runner)->session().graph();
  const std::vector<registry::PassRecord>& pass_records = (*runner)->session().pass_records();
  const std::string backend = (*runner)->name();
  std::fprintf(stderr, "kiln: %s\n", (*runner)->summary().c_str());

  std::string stats = "{\n  \"model\": \"" + json_escape(model_path) + "\",\n  \"backend\": \"" + backend +
                      "\",\n  \"load_ms\": " + std::to_string(load_ms) + ",\n  \"passes_ms\": " +
                      std::to_string(passes_ms) + ",\n  \"compile_ms\": " + std::to_string(compile_ms) +
                      ",\n  \"nodes\": " + std::to_string(g.num_live_nodes()) + (*runner)->compile_json() +
                      ",\n  \"passes\": " + pass_records_json(pass_records, "  ") + ",\n  \"runs\": [";

  for (size_t run = 0; run < segments.size(); ++run) {
    StatusOr<Args> args = run == 0 ? std::move(first) : Args::parse(segments[run], kRunValueFlags, {});
    if (!args.ok()) return fail(std::move(args).status().add_context("run " + std::to_string(run + 1)));
    if (run > 0 && !args->positionals().empty())
      return usage_error("unexpected '" + args->positionals()[0] + "' after --then (the model is given once)");
    auto inputs = build_inputs(g, *args, static_cast<int>(run));
    if (!inputs.ok()) return fail(inputs.status());
    const auto t_run = Clock::now();
    std::string run_json;
    auto outputs = (*runner)->run(*inputs, &run_json);
    const double run_ms = ms_since(t_run);
    if (!outputs.ok()) return fail(outputs.status());

    std::map<std::string, std::string> out_files;
    for (const std::string& spec : args->all("output")) {
      auto kv = split_assignment("output", spec);
      if (!kv.ok()) return fail(kv.status());
      out_files[kv->first] = kv->second;
    }
    std::printf("run %zu: %.3f ms (%s backend)\n", run + 1, run_ms, backend.c_str());
    std::string out_json;
    for (size_t i = 0; i < outputs->size(); ++i) {
      const std::string& name = g.value(g.main().outputs[i]).name;
      const Tensor& t = (*outputs)[i];
      if (auto it = out_files.find(name); it != out_files.end()) {
        Status s = write_npy(it->second, t);
        if (!s.ok()) return fail(std::move(s).add_context("--output " + name));
        out_files.erase(it);
      } else if (args->all("output").empty()) {
        print_summary(name, t);
      }
      out_json += std::string(i ? ", " : "") + "\"" + json_escape(name) + "\": \"" + shape_to_string(t.shape()) + "\"";
    }
    if (!out_files.empty()) return fail(invalid_argument("--output: the model has no output named '" + out_files.begin()->first + "'"));
    std::string in_json;
    for (size_t i = 0; i < inputs->size(); ++i)
      in_json += std::string(i ? ", " : "") + "\"" + json_escape(g.value(g.main().inputs[i]).name) + "\": \"" +
                 shape_to_string((*inputs)[i].shape()) + "\"";
    stats += std::string(run ? "," : "") + "\n    {\"run_ms\": " + std::to_string(run_ms) + run_json +
             ", \"inputs\": {" + in_json + "}, \"outputs\": {" + out_json + "}}";
  }
  stats += "\n  ]\n}\n";
  if (!stats_path.empty()) {
    std::ofstream f(stats_path);
    if (!f) return fail(not_found("--stats: cannot write '" + stats_path + "'"));
    f << stats;
  }
  return 0;
}

}  // namespace kiln::cli

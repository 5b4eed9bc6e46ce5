// ONNX node-test cases on the OpenCL backend plugin, through the engine
// session (the path `kiln run --backend opencl` takes), compared with
// ONNX's expected outputs by the node suite's rule (tests/onnx_node/
// node_case.h).
//
//   kiln_opencl_node_test --data DIR --cases FILE   every case FILE lists
//       (one name a line, '#' comments) must match; the CI gate
//   kiln_opencl_node_test --data DIR --all          every case of DIR; prints
//       the pass rate and each failure's reason (what the README reports)
//   kiln_opencl_node_test --zoo DIR MODEL...         zoo models (DIR/MODEL/
//       model.onnx, input.npy, output.npy from PyTorch) must match as in
//       tests/models: max|d| <= 1e-3 * max(1, max|ref|)
//   --storage buffer|image|auto (first, before the others): where the
//       activations live (image: image2d_t where they fit; auto: the layout
//       pass's per-tensor choice for the OpenCL device); buffer by default
//
// Exit 77 (skipped) when the machine has no OpenCL platform (1 where one is
// required: KILN_REQUIRE_OPENCL=1 or CI=true, cl_test_requirement.h). One process
// runs every case: the plugin caches built programs per process, and PoCL
// compiles each with LLVM.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "engine/base/npy.h"
#include "engine/session/session.h"
#include "frontends/onnx/onnx_importer.h"
#include "plugins/opencl/cl_test_requirement.h"
#include "tests/onnx_node/node_case.h"

namespace {

namespace fs = std::filesystem;
using kiln::session::BackendChoice;
using kiln::session::Session;
using kiln::session::SessionOptions;

enum class Outcome { kPass, kFail, kUnsupported, kNotImported };

// The session options of every case and model (--storage).
SessionOptions g_options = [] {
  SessionOptions o;
  o.backend = BackendChoice::kPlugin;
  o.backend_plugin = "opencl";
  return o;
}();

bool set_storage(const std::string& storage) {
  g_options.storage_auto = storage == "auto";
  g_options.vulkan.plan.storage = storage == "image" ? kiln::planner::Storage::kImage : kiln::planner::Storage::kBuffer;
  return storage == "buffer" || storage == "image" || storage == "auto";
}

struct Result {
  Outcome outcome = Outcome::kFail;
  std::string message;
};

// One case: import, compile on the plugin, run every data set.
Result run_case(const fs::path& dir) {
  auto graph = kiln::onnx::import_model_file((dir / "model.onnx").string());
  if (!graph.ok()) return {Outcome::kNotImported, graph.status().to_string()};
  std::vector<kiln::node_test::DataSet> sets;
  if (std::string e = kiln::node_test::load_data_sets(dir, sets); !e.empty()) return {Outcome::kNotImported, e};
  auto session = Session::create(**graph, g_options);
  if (!session.ok()) {
    const kiln::Status& s = session.status();
    const bool unsupported = s.code() == kiln::StatusCode::kUnimplemented;
    return {unsupported ? Outcome::kUnsupported : Outcome::kFail, s.to_string()};
  }
  for (const kiln::node_test::DataSet& set : sets) {
    auto outputs = (*session)->run(set.inputs);
    if (!outputs.ok()) {
      const bool unsupported = outputs.status().code() == kiln::StatusCode::kUnimplemented;
      return {unsupported ? Outcome::kUnsupported : Outcome::kFail, set.name + ": " + outputs.status().to_string()};
    }
    if (std::string e = kiln::node_test::compare_outputs(*outputs, set); !e.empty())
      return {Outcome::kFail, set.name + ": " + e};
  }
  return {Outcome::kPass, ""};
}

// One zoo model on the plugin against PyTorch's output; "" when it matches.
std::string run_zoo_model(const fs::path& dir) {
  auto graph = kiln::onnx::import_model_file((dir / "model.onnx").string());
  if (!graph.ok()) return "import: " + graph.status().to_string();
  auto input = kiln::read_npy((dir / "input.npy").string());
  auto expected = kiln::read_npy((dir / "output.npy").string());
  if (!input.ok() || !expected.ok()) return "no input.npy/output.npy";
  auto session = Session::create(**graph, g_options);
  if (!session.ok()) return session.status().to_string();
  auto outputs = (*session)->run({*input});
  if (!outputs.ok()) return outputs.status().to_string();
  const kiln::Tensor& got = (*outputs)[0];
  if (got.shape() != expected->shape() || got.dtype() != kiln::DType::kFloat32) return "output shape or dtype differs";
  double max_diff = 0, max_ref = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double e = expected->data<float>()[i];
    max_diff = std::max(max_diff, std::abs(static_cast<double>(got.data<float>()[i]) - e));
    max_ref = std::max(max_ref, std::abs(e));
  }
  std::printf("%s: max|d| = %.3g, max|ref| = %.3g\n", dir.filename().c_str(), max_diff, max_ref);
  if (!(max_diff <= 1e-3 * std::max(1.0, max_ref))) return "outputs differ: max|d| = " + std::to_string(max_diff);
  return "";
}

int run_zoo(const std::string& dir, const std::vector<std::string>& models) {
  int failed = 0;
  for (const std::string& m : models) {
    const std::string e = run_zoo_model(fs::path(dir) / m);
    if (e.find("no OpenCL platform") != std::string::npos) {
      if (kiln::opencl::opencl_required()) {
        std::cout << "FAIL: " << kiln::opencl::opencl_required_failure(e) << "\n";
        return 1;
      }
      std::cout << "SKIPPED: " << e << "\n";
      return 77;
    }
    if (!e.empty()) {
      std::printf("FAIL %s: %s\n", m.c_str(), e.c_str());
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}

std::vector<std::string> read_case_list(const std::string& file) {
  std::vector<std::string> names;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    line.erase(std::remove_if(line.begin(), line.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
               line.end());
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data, cases_file, results_file;
  bool all = false;
  if (argc >= 3 && std::string(argv[1]) == "--storage") {
    if (!set_storage(argv[2])) {
      std::cerr << "--storage takes buffer, image or auto, not '" << argv[2] << "'\n";
      return 2;
    }
    argv += 2;
    argc -= 2;
  }
  if (argc >= 3 && std::string(argv[1]) == "--zoo") return run_zoo(argv[2], std::vector<std::string>(argv + 3, argv + argc));
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--data") data = value();
    else if (a == "--cases") cases_file = value();
    else if (a == "--results") results_file = value();
    else if (a == "--all") all = true;
    else {
      std::cerr << "usage: kiln_opencl_node_test [--storage S] --data DIR (--cases FILE | --all) [--results FILE]\n"
                   "       kiln_opencl_node_test [--storage S] --zoo DIR MODEL...\n";
      return 2;
    }
  }
  const fs::path node_dir = fs::path(data) / "node";
  if (data.empty() || !fs::is_directory(node_dir)) {
    std::cerr << "no node-test data in '" << data << "' (tests/onnx_node/generate_data.py writes it)\n";
    return 1;
  }
  std::vector<std::string> names;
  if (all) {
    for (const auto& e : fs::directory_iterator(node_dir))
      if (e.is_directory()) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
  } else {
    names = read_case_list(cases_file);
    if (names.empty()) {
      std::cerr << "no cases in '" << cases_file << "'\n";
      return 1;
    }
  }
  std::map<Outcome, int> counts;
  std::vector<std::string> failures;
  std::ofstream results;
  if (!results_file.empty()) results.open(results_file);
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& name : names) {
    const fs::path dir = node_dir / name;
    if (!fs::is_directory(dir)) {
      failures.push_back(name + ": no such case");
      ++counts[Outcome::kFail];
      continue;
    }
    const Result r = run_case(dir);
    // No platform at all: nothing can pass on this machine.
    if (r.message.find("no OpenCL platform") != std::string::npos) {
      if (kiln::opencl::opencl_required()) {
        std::cout << "FAIL: " << kiln::opencl::opencl_required_failure(r.message) << "\n";
        return 1;
      }
      std::cout << "SKIPPED: " << r.message << "\n";
      return 77;
    }
    ++counts[r.outcome];
    static const char* const labels[] = {"PASS", "FAIL", "UNSUPPORTED", "NOT-IMPORTED"};
    const std::string line = std::string(labels[static_cast<int>(r.outcome)]) + " " + name +
                             (r.message.empty() ? "" : ": " + r.message.substr(0, 400));
    if (results.is_open()) results << line << "\n";
    if (r.outcome == Outcome::kFail || (!all && r.outcome != Outcome::kPass)) failures.push_back(line);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int ran = counts[Outcome::kPass] + counts[Outcome::kFail] + counts[Outcome::kUnsupported];
  std::printf("opencl node tests: %d passed, %d failed, %d unsupported (of %d the engine imports; %d not imported) in %.1f s\n",
              counts[Outcome::kPass], counts[Outcome::kFail], counts[Outcome::kUnsupported], ran,
              counts[Outcome::kNotImported], seconds);
  for (const std::string& f : failures) std::printf("  %s\n", f.c_str());
  if (all) return 0;
  return failures.empty() ? 0 : 1;
}

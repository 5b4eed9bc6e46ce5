// ONNX node-test cases on the OpenCL backend plugin, through the engine
// session (the path `kiln run --backend opencl` takes), compared with
// ONNX's expected outputs by the node suite's rule (tests/onnx_node/
// node_case.h).
//
//   kiln_opencl_node_test --data DIR --cases FILE   every case FILE lists
//       (one name a line, '#' comments) must match; the CI gate
//   kiln_opencl_node_test --data DIR --all          every case of DIR; prints
//       the pass rate and each failure's reason (what the README reports)
//
// Exit 77 (skipped) when the machine has no OpenCL platform. One process
// runs every case: the plugin caches built programs per process, and PoCL
// compiles each with LLVM.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "engine/session/session.h"
#include "frontends/onnx/onnx_importer.h"
#include "tests/onnx_node/node_case.h"

namespace {

namespace fs = std::filesystem;
using kiln::session::BackendChoice;
using kiln::session::Session;
using kiln::session::SessionOptions;

enum class Outcome { kPass, kFail, kUnsupported, kNotImported };

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
  SessionOptions options;
  options.backend = BackendChoice::kPlugin;
  options.backend_plugin = "opencl";
  auto session = Session::create(**graph, options);
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
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--data") data = value();
    else if (a == "--cases") cases_file = value();
    else if (a == "--results") results_file = value();
    else if (a == "--all") all = true;
    else {
      std::cerr << "usage: kiln_opencl_node_test --data DIR (--cases FILE | --all) [--results FILE]\n";
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

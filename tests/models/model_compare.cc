// Whole-model check: Kiln's reference executor against PyTorch.
//
// Reads the directory export_zoo.py wrote (manifest.txt, then per model
// model.onnx, input.npy, output.npy), imports each model, runs it on the
// reference executor and requires max|Δ| <= 1e-3 * max(1, max|ref|) (and a
// reference that is not vanishingly small, or the check would be empty). This is
// the end-to-end test of the importer and the reference kernels on real
// networks; the GPU backends are later compared against the same outputs.
//
// Usage: kiln_model_compare DIR [MODEL ...]   (default: the models in DIR/manifest.txt)
// Exit status: 0 if every model matches, 1 if any fails, 2 on usage errors.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "engine/base/npy.h"
#include "engine/runtime/reference_executor.h"
#include "frontends/onnx/onnx_importer.h"

namespace kiln {
namespace {

constexpr double kRelTolerance = 1e-3;
// Below this the reference output says nothing (a random network whose
// activations vanished); such a comparison would pass whatever Kiln computes.
constexpr double kMinReferenceMagnitude = 1e-3;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Compares one model; returns "" on success or what failed. Prints a line.
std::string check_model(const std::string& dir, const std::string& name) {
  const std::string base = dir + "/" + name + "/";
  const auto t0 = std::chrono::steady_clock::now();
  auto graph = onnx::import_model_file(base + "model.onnx");
  if (!graph.ok()) return "import: " + graph.status().to_string();
  const double import_s = seconds_since(t0);
  auto input = read_npy(base + "input.npy");
  if (!input.ok()) return input.status().to_string();
  auto expected = read_npy(base + "output.npy");
  if (!expected.ok()) return expected.status().to_string();

  runtime::ReferenceExecutor executor(**graph);
  const auto t1 = std::chrono::steady_clock::now();
  auto outputs = executor.run({*input});
  if (!outputs.ok()) return "run: " + outputs.status().to_string();
  const double run_s = seconds_since(t1);
  if (outputs->empty()) return "the model produced no outputs";
  const Tensor& actual = (*outputs)[0];
  if (actual.shape() != expected->shape())
    return "output shape " + shape_to_string(actual.shape()) + ", PyTorch gives " + shape_to_string(expected->shape());
  double max_ref = 0.0, max_diff = 0.0;
  int64_t worst = 0;
  for (int64_t i = 0; i < expected->numel(); ++i) {
    const double e = expected->get_f64(i), a = actual.get_f64(i);
    max_ref = std::max(max_ref, std::abs(e));
    const double d = std::abs(a - e);
    if (!(d <= max_diff)) {  // NaN counts as worst
      max_diff = std::isnan(d) ? INFINITY : d;
      worst = i;
    }
  }
  if (!(max_ref >= kMinReferenceMagnitude))
    return "the reference output is degenerate (max|ref| = " + std::to_string(max_ref) +
           "); re-export it (export_zoo.py calibrates BatchNorm statistics so outputs are O(1))";
  const double limit = kRelTolerance * std::max(1.0, max_ref);
  char line[320];
  std::snprintf(line, sizeof(line), "%-22s max|d| %.3g (limit %.3g, max|ref| %.3g)  import %.2f s, run %.2f s  %s",
                name.c_str(), max_diff, limit, max_ref, import_s, run_s, max_diff <= limit ? "ok" : "MISMATCH");
  std::cout << line << std::endl;
  if (max_diff > limit) {
    std::snprintf(line, sizeof(line), "max|d| %.4g exceeds %.4g at element %lld (kiln %.6g, pytorch %.6g)", max_diff,
                  limit, static_cast<long long>(worst), actual.get_f64(worst), expected->get_f64(worst));
    return line;
  }
  return "";
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " DIR [MODEL ...]\n";
    return 2;
  }
  const std::string dir = argv[1];
  std::vector<std::string> models(argv + 2, argv + argc);
  if (models.empty()) {
    std::ifstream manifest(dir + "/manifest.txt");
    if (!manifest) {
      std::cerr << "cannot read '" << dir << "/manifest.txt' (run tests/models/export_zoo.py " << dir << ")\n";
      return 2;
    }
    for (std::string line; std::getline(manifest, line);)
      if (!line.empty()) models.push_back(line);
  }
  if (models.empty()) {
    std::cerr << "no models to compare\n";
    return 2;
  }
  int failed = 0;
  for (const std::string& name : models) {
    const std::string error = kiln::check_model(dir, name);
    if (!error.empty()) {
      ++failed;
      std::cout << "FAIL " << name << ": " << error << std::endl;
    }
  }
  std::cout << "models: " << models.size() - static_cast<size_t>(failed) << " of " << models.size() << " match PyTorch"
            << std::endl;
  return failed == 0 ? 0 : 1;
}

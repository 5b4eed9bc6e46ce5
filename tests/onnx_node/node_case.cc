// Reading and comparing ONNX node-test cases; see node_case.h.
#include "tests/onnx_node/node_case.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "frontends/onnx/onnx_importer.h"

namespace fs = std::filesystem;

namespace kiln::node_test {
namespace {

// Numbered files "prefix_<i>.pb" in index order.
std::vector<fs::path> numbered_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, fs::path>> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || entry.path().extension() != ".pb") continue;
    const std::string index = name.substr(prefix.size(), name.size() - prefix.size() - 3);
    if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos) continue;
    found.emplace_back(std::stoi(index), entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& [i, p] : found) out.push_back(p);
  return out;
}

std::string load_tensors(const fs::path& dir, const std::string& prefix, std::vector<Tensor>& out) {
  for (const fs::path& p : numbered_files(dir, prefix)) {
    auto t = onnx::load_tensor_proto_file(p.string());
    if (!t.ok()) return "loading " + p.filename().string() + ": " + t.status().to_string();
    out.push_back(std::move(t).value());
  }
  return "";
}

}  // namespace

std::string load_data_sets(const fs::path& case_dir, std::vector<DataSet>& out) {
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(case_dir))
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  if (dirs.empty()) return "no test_data_set_* directory";
  for (const fs::path& dir : dirs) {
    DataSet set;
    set.name = dir.filename().string();
    if (std::string e = load_tensors(dir, "input_", set.inputs); !e.empty()) return e;
    if (std::string e = load_tensors(dir, "output_", set.expected); !e.empty()) return e;
    out.push_back(std::move(set));
  }
  return "";
}

std::string compare(const Tensor& actual, const Tensor& expected, size_t index, Tolerance tol) {
  const std::string where = "output " + std::to_string(index);
  if (actual.dtype() != expected.dtype())
    return where + ": dtype " + std::string(dtype_name(actual.dtype())) + ", expected " +
           std::string(dtype_name(expected.dtype()));
  if (actual.shape() != expected.shape())
    return where + ": shape " + shape_to_string(actual.shape()) + ", expected " + shape_to_string(expected.shape());
  const bool is_float = dtype_is_float(expected.dtype());
  int64_t bad = 0;
  int64_t first_bad = -1;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    bool ok = false;
    if (is_float) {
      const double a = actual.get_f64(i), e = expected.get_f64(i);
      if (std::isnan(e)) ok = std::isnan(a);
      else if (std::isinf(e)) ok = a == e;
      else ok = std::abs(a - e) <= tol.atol + tol.rtol * std::abs(e);
    } else if (expected.dtype() == DType::kUInt64) {
      ok = actual.data<uint64_t>()[i] == expected.data<uint64_t>()[i];
    } else {
      ok = actual.get_i64(i) == expected.get_i64(i);
    }
    if (!ok) {
      if (first_bad < 0) first_bad = i;
      ++bad;
    }
  }
  if (bad == 0) return "";
  std::ostringstream msg;
  msg.precision(9);
  msg << where << ": " << bad << " of " << expected.numel() << " elements differ; first at " << first_bad << ": got "
      << actual.get_f64(first_bad) << ", expected " << expected.get_f64(first_bad);
  return msg.str();
}

std::string compare_outputs(const std::vector<Tensor>& outputs, const DataSet& set, Tolerance tol) {
  if (outputs.size() != set.expected.size())
    return set.name + ": produced " + std::to_string(outputs.size()) + " outputs, expected " +
           std::to_string(set.expected.size());
  for (size_t i = 0; i < set.expected.size(); ++i) {
    std::string diff = compare(outputs[i], set.expected[i], i, tol);
    if (!diff.empty()) return set.name + ": " + diff;
  }
  return "";
}

}  // namespace kiln::node_test

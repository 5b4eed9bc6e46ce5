// One ONNX node-test case on disk: its data sets and how outputs are compared.
//
// Shared by the reference-executor run and the Vulkan run of the suite, so
// both read the same data and judge it by the same rule (ONNX's backend test:
// floats |a-e| <= atol + rtol*|e|, NaN matches NaN, infinities match exactly;
// ints and bools exactly).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "engine/base/tensor.h"

namespace kiln::node_test {

// Floats match when |a-e| <= atol + rtol*|e|.
struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-5;
};
// ONNX's bar, for fp32 (both backends).
constexpr Tolerance kFp32Tolerance{1e-3, 1e-5};
// fp16 storage on the device (11-bit mantissa, rounding at every tensor):
// the model suite's fp16 bound, 2e-2 relative, with a matching absolute floor.
constexpr Tolerance kFp16Tolerance{2e-2, 2e-3};

// One test_data_set_* directory: the inputs and ONNX's expected outputs.
struct DataSet {
  std::string name;  // "test_data_set_0"
  std::vector<Tensor> inputs;
  std::vector<Tensor> expected;
};

// Reads every data set of `case_dir` in name order. Returns "" and fills
// `out`, or says what could not be read.
std::string load_data_sets(const std::filesystem::path& case_dir, std::vector<DataSet>& out);

// Compares `actual` with `expected` (output `index`); "" when they match,
// else the first mismatch and how many elements differ.
std::string compare(const Tensor& actual, const Tensor& expected, size_t index, Tolerance tol = kFp32Tolerance);

// Compares a run's outputs with a data set's expected outputs; "" when all match.
std::string compare_outputs(const std::vector<Tensor>& outputs, const DataSet& set, Tolerance tol = kFp32Tolerance);

}  // namespace kiln::node_test

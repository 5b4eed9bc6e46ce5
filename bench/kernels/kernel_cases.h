// The per-op micro-benchmark cases (issue 16): one ONNX op each, at the
// shapes that matter for the zoo (batch-1 transformer GEMMs, resnet50 and
// mobilenet_v2 convolutions, depthwise, softmax, layernorm) and at sizes that
// show a device's peak (GEMM 4096^3, elementwise on 64 MiB).
#ifndef KILN_BENCH_KERNELS_KERNEL_CASES_H_
#define KILN_BENCH_KERNELS_KERNEL_CASES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::bench {

using Shape = std::vector<int64_t>;

struct KernelCase {
  std::string name;               // "gemm_m197_n768_k768", unique
  std::string op;                 // ONNX op type, or "Attention" (a graph)
  std::vector<Shape> inputs;      // graph inputs, in the op's input order
  std::vector<Shape> weights;     // initializers after the inputs (random)
  std::map<std::string, std::vector<int64_t>> ints;  // integer(-list) attributes
  double flops = 0;               // multiply-adds x 2; 0 for memory-bound ops
  bool smoke = false;             // small enough for CI on lavapipe
};

// Every case; `smoke_only` keeps those small enough for a CPU device.
std::vector<KernelCase> kernel_cases(bool smoke_only);

// Names of the steady harness's nodes and values (case_model).
inline constexpr const char* kSteadyPrefix = "steady_";

// Serialized ONNX ModelProto (opset 17) running the case's one op, inputs
// named in0, in1, ..., weights w0, w1, ..., the output `out`; the
// "Attention" case is a small graph instead (inputs q, k, v: Transpose,
// MatMul, Mul by the scale, Softmax, MatMul).
//
// `steady`: the operands never cross the host boundary, so runs go back to
// back at the GPU's working clocks. The graph's one input is steady_x
// (shape [1]); each of the op's inputs is ConstantOfShape(its shape) +
// steady_x, built on the device, and the one output steady_sum is
// ReduceSum(out). Every harness node's name starts with kSteadyPrefix.
std::string case_model(const KernelCase& c, bool steady = false);

// The case list as JSON (for bench/kernels/torch_kernels.py, which runs the
// same cases in PyTorch).
std::string cases_json(const std::vector<KernelCase>& cases);

}  // namespace kiln::bench

#endif  // KILN_BENCH_KERNELS_KERNEL_CASES_H_

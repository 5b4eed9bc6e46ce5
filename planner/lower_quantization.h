// Registration of the quantized ops' lowerings (lower_quantize.cc,
// lower_integer_linalg.cc), declared apart from lowering.h's family list so
// that adding the family does not touch that widely included header, and
// the pieces both files share.
//
// Integer tensors live on the device as int32 (kernel.h), so int8 and uint8
// operands need no 8-bit storage extension: kernels read them as `int` and
// accumulate exactly in int32 (wrapping as ONNX's int32 arithmetic does);
// nothing goes through fp32 except the requantization, which rounds as the
// reference does (shaders/quantize.glsl).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "planner/lowering.h"

namespace kiln::planner {

void register_quantize_lowerings(LoweringRegistry& r);        // QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
void register_integer_linalg_lowerings(LoweringRegistry& r);  // MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv,
                                                              // com.microsoft QGemm, MatMulIntegerToFloat
void register_qlinear_contrib_lowerings(LoweringRegistry& r);  // com.microsoft QLinearAdd, QLinearMul, ... (lower_qlinear_contrib.cc)

namespace quant {

// How a kernel reads one quantization parameter (a scale or a zero point):
// a GLSL literal when it is a one-value constant, else an accessor `name`
// indexed by the caller. Constant float parameters are uploaded as fp32 even
// under --precision fp16 (a scale rounded to fp16 moves results by whole
// quantization steps); integers are int32 as always.
struct Param {
  std::string literal;                 // set for a one-value constant
  std::optional<KernelTensor> tensor;  // else the bound tensor, named `name`
  std::string name;
  // The value at the parameter's coordinates `coords` (GLSL expressions,
  // one per axis of the parameter; ignored for a literal).
  std::string at(const std::vector<std::string>& coords) const;
};

// Binds node input `input` as parameter `name`.
Param bind_param(LoweringContext& ctx, size_t input, const std::string& name);

// Appends the parameter's tensor (if any) to `tensors`.
void add_tensor(const Param& p, std::vector<KernelTensor>& tensors);

// DynamicQuantizeLinear's range pass over node input `input`: emits the
// kernels that write its uint8 scale and zero point to a new fp32 scratch
// buffer [scale, zero point] (returned), and, when asked, to the node's
// outputs 1 (scale) and 2 (zero point), which must be buffers.
StatusOr<TensorId> emit_dynamic_quant_params(LoweringContext& ctx, size_t input, bool scale_out, bool zero_out);

}  // namespace quant
}  // namespace kiln::planner

// Op family 'quantization': QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul and
// QLinearConv — schemas, shape inference and reference kernels bit-exact
// with the ONNX definitions (quantize_linear.cc, integer_linalg.cc) — and
// ONNX Runtime's com.microsoft quantized ops (qlinear_contrib.cc; QGemm,
// MatMulIntegerToFloat and DynamicQuantizeMatMul in integer_linalg.cc).
//
// The rules every quantized op shares live here so that the reference
// kernels and the device lowerings (planner/lower_quantize.cc,
// planner/lower_integer_linalg.cc) read them from one place:
//
// * Quantization types: int8 and uint8 everywhere; int16 and uint16 for
//   QuantizeLinear/DequantizeLinear (opset 21). Other types (int4, float8)
//   are refused naming the type.
// * Rounding: round half to even (numpy.rint), then saturation to the
//   type's range.
// * Where a quantization parameter applies: one value for the whole tensor
//   (a scalar or a one-element 1-D tensor), one per slice along `axis`
//   (a 1-D tensor, opset 13), or one per block of `block_size` consecutive
//   elements along `axis` (same rank as x, opset 21).
#pragma once

#include <cstdint>
#include <string>

#include "engine/base/dtype.h"
#include "engine/base/status.h"
#include "engine/ir/dim.h"
#include "engine/ir/graph.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops {

void register_quantization_ops(OpRegistry& r);

// The domain of ONNX Runtime's contrib ops (QLinearAdd, QGemm, ...; see
// qlinear_contrib.cc and integer_linalg.cc).
inline constexpr const char* kMicrosoftDomain = "com.microsoft";

// DynamicQuantizeLinear's uint8 parameters of `n` float32 values (the
// formulas in quantize_linear.cc), shared with DynamicQuantizeMatMul.
struct DynamicQuant {
  float scale = 1.0f;
  int64_t zero_point = 0;
  // saturate(rint(x / scale) + zero_point) in uint8.
  uint8_t quantize(float x) const;
};
DynamicQuant dynamic_quant_params(const float* x, int64_t n);

// Whether `t` is a type the quantized ops store values in; `wide` admits
// int16/uint16 (QuantizeLinear/DequantizeLinear only).
bool is_quant_type(DType t, bool wide);
// The saturation range of a quantized type (int8: -128..127, ...).
int64_t quant_min(DType t);
int64_t quant_max(DType t);

// How a scale (and its zero point) of QuantizeLinear/DequantizeLinear maps
// onto the elements of x.
struct QuantGranularity {
  enum class Kind : uint8_t { kPerTensor, kPerAxis, kBlocked };
  Kind kind = Kind::kPerTensor;
  int64_t axis = 0;        // normalized; per-axis and blocked
  int64_t block_size = 0;  // blocked only
};

// Decides the granularity from the node's `axis` / `block_size` attributes
// and the shapes of x and the scale (symbolic dims are checked where they
// are constants). Errors name the node and what does not match.
StatusOr<QuantGranularity> resolve_granularity(const ir::Node& node, const ir::SymShape& x, const ir::SymShape& scale);

}  // namespace kiln::ops

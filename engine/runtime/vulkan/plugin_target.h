// The device as the plugin ABI shows it to passes (kiln_target_info_t):
// the planner's view of it (target_info) and its identity. Shared by the
// engine session and the tools that run the pass pipeline themselves (the
// ONNX node runner), so that both describe a device the same way.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/kiln_plugin.h"
#include "platform/vulkan/device.h"

namespace kiln::runtime {

// `cooperative_matrix`: whether the session lets kernels use the device's
// cooperative matrices; `storage_mode`: the session's storage option.
kiln_target_info_t plugin_target_info(const vk::Device& device, bool cooperative_matrix, kiln_storage_mode_t storage_mode);

// Static QDQ graphs (DequantizeLinear -> Conv/MatMul/Gemm -> QuantizeLinear)
// run either as written (dequantize, float op, quantize: fusion folds the
// maps into their neighbours) or as integer kernels (kiln.canonicalize's
// fuse-qdq: QLinearConv/QLinearMatMul/QLinearAdd on int8 tensor cores or
// dot products). kAuto takes the integer kernels where they pay: on a
// device with int8 cooperative matrices (an H100: faster than the float
// graph and than fp16); not on packed dot products alone, accelerated or
// not (slower than the float graph on an H100; lavapipe emulates them, and
// there the float graph measured about twice as fast,
// plugins/canonicalize/README.md).
// kOn and kOff override (`--int8-dot on|off`, kiln_session_options_t).
enum class Int8Kernels { kAuto, kOn, kOff };

struct Int8KernelsChoice {
  bool integer = false;  // fuse-qdq joins the default pipeline
  std::string reason;    // for --stats and kiln bench: why
};

// `device` null: the pipeline runs for no device (the reference executor,
// a plugin backend), where kAuto keeps the float graph. `dot_products`,
// `cooperative_matrix`: whether the session lets the planner use the
// device's dot products, its cooperative matrices.
Int8KernelsChoice choose_int8_kernels(Int8Kernels mode, const vk::Device* device, bool dot_products,
                                      bool cooperative_matrix = true);

}  // namespace kiln::runtime

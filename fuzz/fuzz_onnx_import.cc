// libFuzzer target: the ONNX importer (frontends/onnx/onnx_importer.h) on
// arbitrary bytes — protobuf parsing, opset upgrades, initializer
// conversion, registry checks and shape inference. External data is
// refused (no base directory), so the target touches no file. Any status is
// fine; crashes, hangs, sanitizer reports and runaway memory are findings.
#include <cstdint>

#include "engine/ir/verifier.h"
#include "frontends/onnx/onnx_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto graph = kiln::onnx::import_model_bytes(data, size, /*base_dir=*/"");
  // What the importer returns must be a well-formed graph.
  if (graph.ok() && !kiln::ir::verify_graph(**graph).ok()) __builtin_trap();
  return 0;
}

// The backend interface: what the engine session, the C API and the tools
// see of a backend. A Backend compiles a graph into a CompiledModel; a
// CompiledModel runs it. The reference executor (reference_backend.h) and the
// Vulkan runtime (vulkan/vulkan_backend.h) implement it; a backend plugin
// (OpenCL) will reach it through the plugin ABI's named interfaces.
//
// Backend-specific abilities (the Vulkan runtime's zero-copy buffer
// bindings) stay on the concrete types; this interface holds what every
// backend can do.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/graph.h"
#include "engine/runtime/run_stats.h"

namespace kiln::runtime {

class CompiledModel {
 public:
  virtual ~CompiledModel() = default;
  // "reference", "vulkan".
  virtual std::string_view backend() const = 0;
  // Runs with inputs in the order of the graph's inputs and returns its
  // outputs. `stats` may be null. Thread-safe. Errors: kInvalidArgument for
  // a wrong input count, dtype or shape (naming the input), kernel errors
  // naming the node, kDeviceLost.
  virtual StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, RunStats* stats) const = 0;
  // Kernel dispatches and host fallbacks in the compiled plan (0 for the
  // reference executor, which has no plan).
  virtual size_t dispatch_count() const { return 0; }
  virtual size_t fallback_count() const { return 0; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Compiles `graph` (borrowed: it must outlive the compiled model and not
  // change). Errors: the backend's compile errors, naming the node.
  virtual StatusOr<std::unique_ptr<CompiledModel>> compile(const ir::Graph& graph) = 0;
};

}  // namespace kiln::runtime

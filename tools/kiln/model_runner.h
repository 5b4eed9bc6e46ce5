// The backends `kiln run` can execute a model on, behind one interface.
//
// `--backend auto` (the default) picks Vulkan when a Vulkan device can be
// created and the reference executor otherwise, saying so on stderr. Each
// runner reports what it did as JSON fragments for `--stats`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/graph.h"
#include "tools/kiln/cli_args.h"

namespace kiln::cli {

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  // Runs once. `run_json` receives extra per-run fields (", \"gpu_ms\": 1.2").
  virtual StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, std::string* run_json) = 0;
  virtual std::string name() const = 0;  // "vulkan" or "reference"
  // Extra top-level --stats fields (", \"device\": ..."), after compile.
  virtual std::string compile_json() const = 0;
  // One line for the terminal ("vulkan on llvmpipe, buffer, fp32: 41 dispatches").
  virtual std::string summary() const = 0;
};

// The value flags the runners read (--backend, --device, --storage, --precision).
const std::vector<std::string>& runner_value_flags();
// Boolean flags (--profile, --validate).
const std::vector<std::string>& runner_bool_flags();

// Compiles `graph` (borrowed; must outlive the runner) for the backend the
// flags choose. Errors: unknown flag values, no Vulkan device when
// `--backend vulkan` was asked for, compile errors.
StatusOr<std::unique_ptr<ModelRunner>> make_runner(const Args& args, const ir::Graph& graph);

}  // namespace kiln::cli

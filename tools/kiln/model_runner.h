// `kiln run`'s model: the engine session (engine/session/session.h) — the
// same pipeline, plugins and backends libkiln runs — configured from the
// command line, and reported as JSON fragments for `--stats`.
//
// `--backend auto` (the default) picks Vulkan when a Vulkan device can be
// created and the reference executor otherwise, saying so on stderr.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/graph.h"
#include "engine/session/session.h"
#include "tools/kiln/cli_args.h"

namespace kiln::cli {

class ModelRunner {
 public:
  // Runs the pipeline the flags select (--passes, --disable-pass, --plugin)
  // on a copy of `model` and compiles it for the backend the flags choose.
  // Errors: unknown flag values, pipeline errors, no Vulkan device when
  // `--backend vulkan` was asked for, compile errors.
  static StatusOr<std::unique_ptr<ModelRunner>> create(const Args& args, const ir::Graph& model);
  ~ModelRunner();

  // Runs once. `run_json` receives extra per-run fields (", \"gpu_ms\": 1.2").
  StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, std::string* run_json);
  std::string name() const { return std::string(session_->backend()); }  // "vulkan" or "reference"
  // Extra top-level --stats fields (", \"device\": ..."), after compile.
  std::string compile_json() const;
  // One line for the terminal ("vulkan on llvmpipe, buffer, fp32: 41 dispatches").
  std::string summary() const;
  const session::Session& session() const { return *session_; }

 private:
  ModelRunner() = default;
  std::unique_ptr<session::Session> session_;
  std::string storage_, precision_;
};

// The value flags the runner reads (--backend, --device, --storage, --precision, ...).
const std::vector<std::string>& runner_value_flags();
// Boolean flags (--profile, --validate).
const std::vector<std::string>& runner_bool_flags();

}  // namespace kiln::cli

// The reference executor behind the backend interface (backend.h): compiling
// is building an executor over the graph; runs report their wall time.
#pragma once

#include "engine/runtime/backend.h"

namespace kiln::runtime {

class ReferenceBackend : public Backend {
 public:
  std::string_view name() const override { return "reference"; }
  StatusOr<std::unique_ptr<CompiledModel>> compile(const ir::Graph& graph) override;
};

}  // namespace kiln::runtime

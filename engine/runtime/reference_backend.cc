// ReferenceBackend (see reference_backend.h).
#include "engine/runtime/reference_backend.h"

#include <chrono>
#include <new>

#include "engine/runtime/reference_executor.h"

namespace kiln::runtime {
namespace {

class ReferenceModel : public CompiledModel {
 public:
  explicit ReferenceModel(const ir::Graph& graph) : executor_(graph) {}
  std::string_view backend() const override { return "reference"; }
  StatusOr<std::vector<Tensor>> run(const std::vector<Tensor>& inputs, RunStats* stats) const override {
    const auto t0 = std::chrono::steady_clock::now();
    auto out = executor_.run(inputs);
    if (stats) {
      *stats = RunStats{};
      stats->wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    return out;
  }

 private:
  ReferenceExecutor executor_;
};

}  // namespace

StatusOr<std::unique_ptr<CompiledModel>> ReferenceBackend::compile(const ir::Graph& graph) {
  auto model = std::unique_ptr<CompiledModel>(new (std::nothrow) ReferenceModel(graph));
  if (!model) return out_of_memory("out of memory");
  return model;
}

}  // namespace kiln::runtime

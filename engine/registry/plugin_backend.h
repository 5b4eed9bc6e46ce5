// A backend a plugin provides (kiln_backend_v1_t, kiln_plugin.h) behind the
// engine's backend interface (engine/runtime/backend.h): the engine session
// compiles and runs on it exactly as on the reference executor or Vulkan.
// The plugin must stay loaded (its PluginRegistry alive) while the backend
// and its compiled models live.
#pragma once

#include <optional>

#include "engine/registry/host_api.h"
#include "engine/runtime/backend.h"
#include "kiln/kiln_plugin.h"

namespace kiln::registry {

class PluginBackend : public runtime::Backend {
 public:
  // `backend` is borrowed (the plugin's); `log` receives the plugin's log
  // messages during compile. `options` (precision, storage, profiling) go to
  // a plugin that takes them (ABI 1.5 compile_with_options); an older one
  // compiles with its defaults, which is refused when `options` asks for
  // fp16, image storage or profiling.
  PluginBackend(const kiln_backend_v1_t& backend, LogFn log, const kiln_backend_options_t& options = default_options())
      : backend_(backend), log_(std::move(log)), options_(options) {}
  static kiln_backend_options_t default_options() {
    return {sizeof(kiln_backend_options_t), KILN_PLUGIN_PRECISION_FP32, KILN_PLUGIN_STORAGE_AUTO, 0};
  }
  std::string_view name() const override { return backend_.name; }
  // Errors: the plugin's compile status, prefixed with the backend's name.
  StatusOr<std::unique_ptr<runtime::CompiledModel>> compile(const ir::Graph& graph) override;
  // What the last compile did to the plugin's kernel cache (ABI 1.5
  // model_compile_stats); nullopt when the plugin does not say.
  const std::optional<kiln_backend_compile_stats_t>& compile_stats() const { return compile_stats_; }
  // The device the plugin compiles for, as passes see a target (ABI 1.6
  // target_info; storage_mode left AUTO for the caller to set); nullopt
  // when the plugin does not say. Errors: the plugin's status (no device),
  // prefixed with the backend's name.
  static StatusOr<std::optional<kiln_target_info_t>> target_info(const kiln_backend_v1_t& backend);

 private:
  const kiln_backend_v1_t& backend_;
  LogFn log_;
  kiln_backend_options_t options_;
  std::optional<kiln_backend_compile_stats_t> compile_stats_;
};

}  // namespace kiln::registry

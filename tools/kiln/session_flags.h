// The command-line flags that become libkiln session options, shared by
// `kiln run`, `kiln graph` and `kiln passes`: the pass pipeline (--passes
// a,b,c|none, --disable-pass NAME, --plugin FILE) and the backend (--backend,
// --device, --storage, --precision, --coopmat, --int8-dot, --inplace, --profile,
// --validate). Everything goes through kiln.hpp: the tool has no engine.
//
// `--backend auto` (the default) runs on Vulkan when a device can be
// created, and on the reference executor otherwise, saying so on stderr; a
// model that does not compile for an existing device is an error, not a
// silent fallback.
#pragma once

#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "tools/kiln/cli_args.h"

namespace kiln::cli {

inline const std::vector<std::string> kPipelineValueFlags = {"passes", "disable-pass", "plugin"};
// The backend's value flags (--backend, --device, --storage, ...) and boolean
// flags (--profile, --validate).
const std::vector<std::string>& runner_value_flags();
const std::vector<std::string>& runner_bool_flags();

// kiln_session_options_t and what its pointers point at. Fill in place: the
// options point into the object, so it is neither copied nor moved.
class SessionFlags {
 public:
  SessionFlags();
  SessionFlags(const SessionFlags&) = delete;
  SessionFlags& operator=(const SessionFlags&) = delete;
  // Destroys the device and reports the validation layers' errors on stderr.
  ~SessionFlags();

  // --passes, --disable-pass, --plugin; warnings of the pipeline and the
  // plugins go to stderr.
  void set_pipeline(const Args& args);
  // The backend flags; creates the Vulkan device (the fallback to the
  // reference executor is announced on stderr). Returns "" or the error
  // ("--storage must be auto, buffer or image, got 'texture'").
  std::string set_backend(const Args& args);

  const kiln_session_options_t& options() const { return options_; }
  const std::string& storage() const { return storage_; }
  const std::string& precision() const { return precision_; }

 private:
  kiln_session_options_t options_{};
  api::VulkanDevice device_;
  std::string passes_, disabled_, selector_, storage_ = "auto", precision_ = "fp32";
  std::vector<std::string> plugin_paths_;
  std::vector<const char*> plugin_files_;
};

}  // namespace kiln::cli

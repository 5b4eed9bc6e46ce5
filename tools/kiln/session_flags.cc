// Session flags for the kiln tool; see session_flags.h.
#include "tools/kiln/session_flags.h"

#include <cstdio>

namespace kiln::cli {

const std::vector<std::string>& runner_value_flags() {
  static const std::vector<std::string> flags = {"backend", "device",   "storage", "precision",
                                                 "coopmat", "int8-dot", "inplace"};
  return flags;
}

const std::vector<std::string>& runner_bool_flags() {
  static const std::vector<std::string> flags = {"profile", "validate"};
  return flags;
}

SessionFlags::SessionFlags() { options_.struct_size = sizeof(options_); }

SessionFlags::~SessionFlags() {
  const uint64_t errors = device_.validation_errors();
  device_ = api::VulkanDevice();
  if (errors > 0)
    std::fprintf(stderr, "kiln: %llu Vulkan validation error(s) were reported\n",
                 static_cast<unsigned long long>(errors));
}

void SessionFlags::set_pipeline(const Args& args) {
  passes_ = args.get("passes");
  options_.passes = passes_.c_str();
  for (const std::string& name : args.all("disable-pass")) disabled_ += (disabled_.empty() ? "" : ",") + name;
  options_.disabled_passes = disabled_.c_str();
  plugin_paths_ = args.all("plugin");
  for (const std::string& path : plugin_paths_) plugin_files_.push_back(path.c_str());
  options_.plugin_files = plugin_files_.data();
  options_.plugin_file_count = plugin_files_.size();
  options_.log = [](void*, kiln_message_level_t level, const char* message) {
    if (level >= KILN_MESSAGE_WARNING) std::fprintf(stderr, "kiln: %s\n", message);
  };
}

std::string SessionFlags::set_backend(const Args& args) {
  // --int8-dot: static QDQ patterns as integer kernels (on) or the float
  // graph (off; Vulkan's integer GEMMs also stay off the dot products), or
  // the device's choice (auto: integer where it has int8 cooperative
  // matrices). The QDQ choice is the pipeline's, so it holds on every backend.
  const std::string int8_dot = args.get("int8-dot", "auto");
  if (int8_dot != "auto" && int8_dot != "on" && int8_dot != "off")
    return "INVALID_ARGUMENT: --int8-dot must be auto, on or off, got '" + int8_dot + "'";
  options_.int8_kernels = int8_dot == "on" ? KILN_INT8_KERNELS_ON : int8_dot == "off" ? KILN_INT8_KERNELS_OFF : KILN_INT8_KERNELS_AUTO;
  options_.disable_integer_dot_product = int8_dot == "off";
  const std::string backend = args.get("backend", "auto");
  if (backend == "reference") {
    options_.backend = KILN_BACKEND_REFERENCE;
    for (const char* flag : {"device", "storage", "precision", "coopmat", "inplace"})
      if (args.has(flag)) std::fprintf(stderr, "kiln: note: --%s applies to the Vulkan backend only\n", flag);
    return "";
  }
  if (backend != "vulkan" && backend != "auto" && backend != "opencl")
    return "INVALID_ARGUMENT: unknown backend '" + backend + "' (expected auto, vulkan, reference or opencl)";
  storage_ = args.get("storage", "auto");
  if (storage_ != "auto" && storage_ != "buffer" && storage_ != "image")
    return "INVALID_ARGUMENT: --storage must be auto, buffer or image, got '" + storage_ + "'";
  options_.storage = storage_ == "image"    ? KILN_STORAGE_IMAGE
                     : storage_ == "buffer" ? KILN_STORAGE_BUFFER
                                            : KILN_STORAGE_AUTO;
  precision_ = args.get("precision", "fp32");
  if (precision_ != "fp32" && precision_ != "fp16")
    return "INVALID_ARGUMENT: --precision must be fp32 or fp16, got '" + precision_ + "'";
  options_.precision = precision_ == "fp16" ? KILN_PRECISION_FP16 : KILN_PRECISION_FP32;
  options_.profile = args.has("profile");
  if (backend == "opencl") {
    // The OpenCL backend plugin (plugins/opencl), loaded from the plugin
    // directory like Kiln's other plugins; it takes --storage, --precision
    // and --profile (and says which it cannot honour).
    options_.backend = KILN_BACKEND_PLUGIN;
    options_.backend_plugin = "opencl";
    for (const char* flag : {"device", "coopmat", "inplace"})
      if (args.has(flag)) std::fprintf(stderr, "kiln: note: --%s applies to the Vulkan backend only\n", flag);
    return "";
  }
  const std::string coopmat = args.get("coopmat", "on");
  if (coopmat != "on" && coopmat != "off")
    return "INVALID_ARGUMENT: --coopmat must be on or off, got '" + coopmat + "'";
  options_.disable_cooperative_matrix = coopmat == "off";
  const std::string inplace = args.get("inplace", "on");
  if (inplace != "on" && inplace != "off")
    return "INVALID_ARGUMENT: --inplace must be on or off, got '" + inplace + "'";
  options_.disable_inplace = inplace == "off";
  options_.save_pipeline_cache = 1;

  kiln_vulkan_device_options_t device{};
  selector_ = args.get("device", "");
  device.selector = selector_.c_str();
  device.validation = args.has("validate");
  if (api::Error e = api::VulkanDevice::create(device, device_)) {
    if (backend == "vulkan") return std::string(kiln_status_code_name(e.code())) + ": --backend vulkan: " + e.message();
    std::fprintf(stderr, "kiln: no usable Vulkan device (%s); running on the reference executor\n",
                 e.to_string().c_str());
    options_.backend = KILN_BACKEND_REFERENCE;
    return "";
  }
  options_.backend = KILN_BACKEND_VULKAN;
  options_.vulkan_device = device_.get();
  return "";
}

}  // namespace kiln::cli

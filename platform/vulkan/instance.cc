// Vulkan instance creation and wrapping; see instance.h.
#include "platform/vulkan/instance.h"

#include <algorithm>
#include <cstring>

#include "platform/vulkan/vk_status.h"

namespace kiln::vk {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";
constexpr size_t kMaxKeptMessages = 256;

bool has_extension(const std::vector<VkExtensionProperties>& list, const char* name) {
  return std::any_of(list.begin(), list.end(),
                     [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

StatusOr<std::vector<VkExtensionProperties>> instance_extensions(const LoaderTable& loader, const char* layer) {
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(
      vk_status(loader.vkEnumerateInstanceExtensionProperties(layer, &count, nullptr), "vkEnumerateInstanceExtensionProperties"));
  std::vector<VkExtensionProperties> list(count);
  KILN_RETURN_IF_ERROR(vk_status(loader.vkEnumerateInstanceExtensionProperties(layer, &count, list.data()),
                                 "vkEnumerateInstanceExtensionProperties"));
  list.resize(count);
  return list;
}

// The layer's specVersion, or 0 when it is not installed.
StatusOr<uint32_t> layer_version(const LoaderTable& loader, const char* name) {
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(vk_status(loader.vkEnumerateInstanceLayerProperties(&count, nullptr), "vkEnumerateInstanceLayerProperties"));
  std::vector<VkLayerProperties> layers(count);
  KILN_RETURN_IF_ERROR(
      vk_status(loader.vkEnumerateInstanceLayerProperties(&count, layers.data()), "vkEnumerateInstanceLayerProperties"));
  layers.resize(count);
  for (const VkLayerProperties& l : layers) {
    if (std::strcmp(l.layerName, name) == 0) return l.specVersion;
  }
  return 0u;
}

}  // namespace

StatusOr<std::unique_ptr<Instance>> Instance::create(const InstanceOptions& options) {
  KILN_ASSIGN_OR_RETURN(const LoaderTable* loader, system_loader());
  uint32_t loader_version = VK_API_VERSION_1_0;
  if (loader->vkEnumerateInstanceVersion != nullptr) {
    KILN_RETURN_IF_ERROR(vk_status(loader->vkEnumerateInstanceVersion(&loader_version), "vkEnumerateInstanceVersion"));
  }
  if (loader_version < VK_API_VERSION_1_1) {
    return unavailable("the Vulkan loader supports only Vulkan " + api_version_string(loader_version) +
                       "; Kiln needs 1.1 or newer");
  }
  if (options.max_api_version < VK_API_VERSION_1_1) {
    return invalid_argument("InstanceOptions::max_api_version " + api_version_string(options.max_api_version) +
                            " is below Vulkan 1.1, which Kiln needs");
  }
  // Request major.minor only; the patch level is not part of the contract.
  uint32_t api_version = std::min(VK_MAKE_API_VERSION(0, VK_API_VERSION_MAJOR(loader_version),
                                                      VK_API_VERSION_MINOR(loader_version), 0),
                                  options.max_api_version);

  std::unique_ptr<Instance> self(new Instance());
  self->api_version_ = api_version;
  self->on_message_ = options.on_message;

  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  KILN_ASSIGN_OR_RETURN(std::vector<VkExtensionProperties> available, instance_extensions(*loader, nullptr));
  bool validation_features = false;
  if (options.validation != Validation::kOff) {
    KILN_ASSIGN_OR_RETURN(uint32_t layer_spec, layer_version(*loader, kValidationLayer));
    const bool present = layer_spec != 0;
    if (!present && options.validation == Validation::kRequired) {
      return unavailable(std::string("validation was required but the layer ") + kValidationLayer +
                         " is not installed (Debian: vulkan-validationlayers)");
    }
    if (present) {
      layers.push_back(kValidationLayer);
      KILN_ASSIGN_OR_RETURN(std::vector<VkExtensionProperties> layer_ext, instance_extensions(*loader, kValidationLayer));
      available.insert(available.end(), layer_ext.begin(), layer_ext.end());
      validation_features = has_extension(available, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
      if (validation_features && options.synchronization_validation) {
        extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
      } else {
        validation_features = false;
      }
    }
  }
  bool debug_utils = !layers.empty() && has_extension(available, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  if (debug_utils) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  VkInstanceCreateFlags flags = 0;
  if (has_extension(available, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    // Lets portability drivers (MoltenVK) be enumerated; harmless elsewhere.
    extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = options.application_name.c_str();
  app.pEngineName = "kiln";
  app.engineVersion = VK_MAKE_API_VERSION(0, 0, 1, 0);
  app.apiVersion = api_version;

  // Chained into the create info too, so messages about instance creation
  // and destruction are recorded as well.
  VkDebugUtilsMessengerCreateInfoEXT messenger_info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger_info.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info.pfnUserCallback = &Instance::debug_callback;
  messenger_info.pUserData = self.get();

  VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;

  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.flags = flags;
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  const void* chain = nullptr;
  if (debug_utils) {
    messenger_info.pNext = chain;
    chain = &messenger_info;
  }
  if (validation_features) {
    features.pNext = chain;
    chain = &features;
  }
  info.pNext = chain;

  VkInstance instance = VK_NULL_HANDLE;
  KILN_RETURN_IF_ERROR(vk_status(loader->vkCreateInstance(&info, nullptr, &instance), "vkCreateInstance"));
  self->instance_ = instance;
  self->validation_enabled_ = !layers.empty();
  if (self->validation_enabled_) {
    KILN_ASSIGN_OR_RETURN(self->validation_layer_version_, layer_version(*loader, kValidationLayer));
  }
  Status loaded = load_instance_table(instance, loader->vkGetInstanceProcAddr, &self->fn_);
  if (!loaded.ok()) {
    auto destroy = reinterpret_cast<PFN_vkDestroyInstance>(loader->vkGetInstanceProcAddr(instance, "vkDestroyInstance"));
    if (destroy != nullptr) destroy(instance, nullptr);
    self->instance_ = VK_NULL_HANDLE;
    return loaded;
  }
  if (debug_utils && self->fn_.vkCreateDebugUtilsMessengerEXT != nullptr) {
    messenger_info.pNext = nullptr;
    KILN_RETURN_IF_ERROR(vk_status(
        self->fn_.vkCreateDebugUtilsMessengerEXT(instance, &messenger_info, nullptr, &self->messenger_),
        "vkCreateDebugUtilsMessengerEXT"));
  }
  return self;
}

StatusOr<std::unique_ptr<Instance>> Instance::wrap(VkInstance instance, PFN_vkGetInstanceProcAddr gipa,
                                                   uint32_t api_version) {
  std::unique_ptr<Instance> self(new Instance());
  self->borrowed_ = true;
  self->api_version_ = api_version == 0 ? VK_API_VERSION_1_1 : api_version;
  if (self->api_version_ < VK_API_VERSION_1_1) {
    return invalid_argument("the host instance was created for Vulkan " + api_version_string(api_version) +
                            "; Kiln needs apiVersion >= 1.1");
  }
  KILN_RETURN_IF_ERROR_CTX(load_instance_table(instance, gipa, &self->fn_), "wrapping the host VkInstance");
  self->instance_ = instance;
  return self;
}

Instance::~Instance() {
  if (instance_ == VK_NULL_HANDLE) return;
  if (messenger_ != VK_NULL_HANDLE && fn_.vkDestroyDebugUtilsMessengerEXT != nullptr) {
    fn_.vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  }
  if (!borrowed_) fn_.vkDestroyInstance(instance_, nullptr);
}

StatusOr<std::vector<VkPhysicalDevice>> Instance::physical_devices() const {
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(vk_status(fn_.vkEnumeratePhysicalDevices(instance_, &count, nullptr), "vkEnumeratePhysicalDevices"));
  std::vector<VkPhysicalDevice> devices(count);
  VkResult r = fn_.vkEnumeratePhysicalDevices(instance_, &count, devices.data());
  KILN_RETURN_IF_ERROR(vk_status(r, "vkEnumeratePhysicalDevices"));
  devices.resize(count);
  return devices;
}

VKAPI_ATTR VkBool32 VKAPI_CALL Instance::debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                        VkDebugUtilsMessageTypeFlagsEXT /*types*/,
                                                        const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                        void* user_data) {
  auto* self = static_cast<Instance*>(user_data);
  DebugMessage message;
  message.severity = severity;
  if (data != nullptr) {
    message.id_number = data->messageIdNumber;
    if (data->pMessageIdName != nullptr) message.id_name = data->pMessageIdName;
    if (data->pMessage != nullptr) message.text = data->pMessage;
  }
  self->record(std::move(message));
  return VK_FALSE;  // never abort the call that triggered the message
}

void Instance::record(DebugMessage message) {
  {
    std::lock_guard<std::mutex> lock(messages_mutex_);
    if (message.is_error()) {
      ++error_count_;
    } else {
      ++warning_count_;
    }
    if (messages_.size() < kMaxKeptMessages) messages_.push_back(message);
  }
  if (on_message_) on_message_(message);
}

std::vector<DebugMessage> Instance::messages() const {
  std::lock_guard<std::mutex> lock(messages_mutex_);
  return messages_;
}

uint64_t Instance::error_count() const {
  std::lock_guard<std::mutex> lock(messages_mutex_);
  return error_count_;
}

uint64_t Instance::warning_count() const {
  std::lock_guard<std::mutex> lock(messages_mutex_);
  return warning_count_;
}

void Instance::clear_messages() {
  std::lock_guard<std::mutex> lock(messages_mutex_);
  messages_.clear();
  error_count_ = 0;
  warning_count_ = 0;
}

}  // namespace kiln::vk

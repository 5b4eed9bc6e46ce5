// The C API's Vulkan side (kiln.h's kiln_vulkan_device_*, kiln_session_
// device_dtype/unbind and kiln_vulkan.h): Kiln-created and wrapped devices,
// and zero-copy bindings of inputs and outputs to host VkBuffers.
//
// The platform headers come first: they include volk, which must see
// <vulkan/vulkan.h> before anyone includes it with prototypes.
#include "api/kiln_c_api_internal.h"
#include "planner/device_data.h"
#include "kiln/kiln_vulkan.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <new>
#include <string>
#include <vector>

using kiln::capi::make_status;
using kiln::capi::null_arg;
using kiln::capi::to_c;

extern "C" {

kiln_status_t* kiln_vulkan_device_create(const kiln_vulkan_device_options_t* options,
                                         kiln_vulkan_device_t** out_device) {
  if (!out_device) return null_arg("out_device");
  const char* selector = nullptr;
  const char* cache_dir = nullptr;
  kiln::vk::Validation validation = kiln::vk::Validation::kOff;
  if (options) {
    auto has = [&](size_t offset, size_t size) { return options->struct_size >= offset + size; };
    if (!has(offsetof(kiln_vulkan_device_options_t, selector), sizeof(options->selector)))
      return make_status(KILN_INVALID_ARGUMENT, "kiln_vulkan_device_options_t.struct_size is too small");
    selector = options->selector;
    if (has(offsetof(kiln_vulkan_device_options_t, kernel_cache_dir), sizeof(options->kernel_cache_dir)))
      cache_dir = options->kernel_cache_dir;
    if (has(offsetof(kiln_vulkan_device_options_t, validation), sizeof(options->validation)) && options->validation)
      validation = kiln::vk::Validation::kRequired;
  }
  kiln::runtime::VulkanContextOptions co;
  co.validation = validation;
  co.selector = selector ? selector : "";
  if (cache_dir) co.kernel_cache_dir = std::string(cache_dir);
  auto d = std::unique_ptr<kiln_vulkan_device_t>(new (std::nothrow) kiln_vulkan_device_t);
  if (!d) return make_status(KILN_OUT_OF_MEMORY, "out of memory");
  auto context = kiln::runtime::VulkanContext::create(co);
  if (!context.ok()) return to_c(context.status());
  d->context = std::move(context).value();
  *out_device = d.release();
  return nullptr;
}

kiln_status_t* kiln_vulkan_device_wrap(const kiln_vulkan_host_device_t* host, kiln_vulkan_device_t** out_device) {
  if (!host) return null_arg("host");
  if (!out_device) return null_arg("out_device");
  if (host->struct_size < offsetof(kiln_vulkan_host_device_t, queue_index) + sizeof(host->queue_index))
    return make_status(KILN_INVALID_ARGUMENT, "kiln_vulkan_host_device_t.struct_size is too small");
  if (host->instance == VK_NULL_HANDLE) return null_arg("kiln_vulkan_host_device_t.instance");
  if (!host->get_instance_proc_addr) return null_arg("kiln_vulkan_host_device_t.get_instance_proc_addr");
  if (host->physical_device == VK_NULL_HANDLE) return null_arg("kiln_vulkan_host_device_t.physical_device");
  if (host->device == VK_NULL_HANDLE) return null_arg("kiln_vulkan_host_device_t.device");
  kiln::vk::HostVulkanHandles h;
  h.instance = host->instance;
  h.instance_api_version = host->instance_api_version;
  h.get_instance_proc_addr = host->get_instance_proc_addr;
  h.physical_device = host->physical_device;
  h.device = host->device;
  h.queue_family_index = host->queue_family_index;
  h.queue_index = host->queue_index;
  auto has = [&](size_t offset, size_t size) { return host->struct_size >= offset + size; };
  if (has(offsetof(kiln_vulkan_host_device_t, enabled_features), sizeof(host->enabled_features)))
    h.enabled_features = host->enabled_features;
  if (has(offsetof(kiln_vulkan_host_device_t, enabled_extension_count), sizeof(host->enabled_extension_count)) &&
      host->enabled_extension_count > 0) {
    if (!host->enabled_extensions) return null_arg("kiln_vulkan_host_device_t.enabled_extensions");
    for (uint32_t i = 0; i < host->enabled_extension_count; ++i) {
      if (!host->enabled_extensions[i])
        return make_status(KILN_INVALID_ARGUMENT, "enabled_extensions[" + std::to_string(i) + "] is NULL");
      h.enabled_extensions.emplace_back(host->enabled_extensions[i]);
    }
  }
  auto d = std::unique_ptr<kiln_vulkan_device_t>(new (std::nothrow) kiln_vulkan_device_t);
  if (!d) return make_status(KILN_OUT_OF_MEMORY, "out of memory");
  // Kernels of a wrapped device stay in memory: a host that wants them on
  // disk creates sessions on a Kiln-created device or caches them itself.
  auto context = kiln::runtime::VulkanContext::wrap(h);
  if (!context.ok()) return to_c(context.status());
  d->context = std::move(context).value();
  *out_device = d.release();
  return nullptr;
}

void kiln_vulkan_device_retain(kiln_vulkan_device_t* device) {
  if (device) device->refs.fetch_add(1, std::memory_order_relaxed);
}

void kiln_vulkan_device_release(kiln_vulkan_device_t* device) {
  if (device && device->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete device;
}

const char* kiln_vulkan_device_name(const kiln_vulkan_device_t* device) {
  return device ? device->context->device().capabilities().device_name.c_str() : "";
}

uint64_t kiln_vulkan_device_validation_errors(const kiln_vulkan_device_t* device) {
  return device ? device->context->validation_errors() : 0;
}

kiln_status_t* kiln_session_device_dtype(const kiln_session_t* session, const char* name, kiln_dtype_t* out_dtype) {
  if (!session) return null_arg("session");
  if (!name) return null_arg("name");
  if (!out_dtype) return null_arg("out_dtype");
  if (!session->vulkan_model())
    return make_status(KILN_FAILED_PRECONDITION, "the session runs on the reference backend, not on a Vulkan device");
  auto layout = session->vulkan_model()->io_layout(name);
  if (!layout.ok()) return to_c(layout.status());
  switch (layout->type) {
    case kiln::planner::ElemType::kF32: *out_dtype = KILN_DTYPE_FLOAT32; break;
    case kiln::planner::ElemType::kF16: *out_dtype = KILN_DTYPE_FLOAT16; break;
    case kiln::planner::ElemType::kI32: *out_dtype = KILN_DTYPE_INT32; break;
  }
  return nullptr;
}

kiln_status_t* kiln_session_bind_vulkan_buffer(kiln_session_t* session, const char* name,
                                               const kiln_vulkan_buffer_binding_t* binding) {
  if (!session) return null_arg("session");
  if (!name) return null_arg("name");
  if (!binding) return null_arg("binding");
  if (binding->struct_size < offsetof(kiln_vulkan_buffer_binding_t, rank) + sizeof(binding->rank))
    return make_status(KILN_INVALID_ARGUMENT, "kiln_vulkan_buffer_binding_t.struct_size is too small");
  if (!session->vulkan_model())
    return make_status(KILN_FAILED_PRECONDITION,
                       "cannot bind '" + std::string(name) +
                           "' to a Vulkan buffer: the session runs on the reference backend");
  auto layout = session->vulkan_model()->io_layout(name);
  if (!layout.ok()) return to_c(layout.status());
  const std::string what = "'" + std::string(name) + "'";
  if (binding->buffer == VK_NULL_HANDLE)
    return make_status(KILN_INVALID_ARGUMENT, "the buffer bound to " + what + " is VK_NULL_HANDLE");
  if (layout->storage == kiln::planner::Storage::kImage)
    return make_status(KILN_FAILED_PRECONDITION,
                       what + " is stored in an image (KILN_STORAGE_IMAGE); only buffer-stored tensors can be bound "
                              "to a Vulkan buffer");
  const VkDeviceSize align = std::max<VkDeviceSize>(
      session->vulkan_context()->device().capabilities().min_storage_buffer_offset_alignment, 1);
  if (binding->offset % align != 0)
    return make_status(KILN_INVALID_ARGUMENT, "the range bound to " + what + " starts at offset " +
                                                  std::to_string(binding->offset) +
                                                  ", not a multiple of the device's minStorageBufferOffsetAlignment (" +
                                                  std::to_string(align) + ")");
  if (binding->rank > 0 && !binding->shape) return null_arg("kiln_vulkan_buffer_binding_t.shape");

  kiln::runtime::ExternalBuffer e;
  e.buffer = binding->buffer;
  e.offset = binding->offset;
  e.size = binding->size;
  const kiln::ir::Graph& g = session->engine->graph();
  const kiln::ir::Value* input = nullptr;
  for (kiln::ir::ValueId v : g.main().inputs)
    if (g.value(v).name == name) input = &g.value(v);
  // The shape whose size can be checked now: the input's, or an output's
  // declared static shape (others are checked by the run).
  kiln::Shape shape;
  bool known = false;
  if (input) {
    const kiln::ir::SymShape& declared = input->shape;
    if (binding->shape) {
      e.shape.assign(binding->shape, binding->shape + binding->rank);
      bool fits = !declared.has_rank || declared.dims.size() == e.shape.size();
      for (size_t k = 0; fits && declared.has_rank && k < e.shape.size(); ++k)
        fits = e.shape[k] >= 0 && (!declared.dims[k].is_const() || declared.dims[k].value() == e.shape[k]);
      if (!fits)
        return make_status(KILN_INVALID_ARGUMENT, "input " + what + " has shape " + declared.to_string() +
                                                      "; the binding gives " + kiln::shape_to_string(e.shape));
    } else if (declared.is_static()) {
      e.shape = declared.concrete();
    } else {
      return make_status(KILN_INVALID_ARGUMENT, "input " + what + " has shape " + declared.to_string() +
                                                    " with symbolic dims; give kiln_vulkan_buffer_binding_t.shape");
    }
    shape = e.shape;
    known = true;
  } else {
    for (kiln::ir::ValueId v : g.main().outputs)
      if (g.value(v).name == name && g.value(v).shape.is_static()) {
        shape = g.value(v).shape.concrete();
        known = true;
      }
  }
  if (known) {
    const size_t need = kiln::planner::device_bytes(*layout, shape);
    if (need > binding->size)
      return make_status(KILN_INVALID_ARGUMENT, what + " needs " + std::to_string(need) + " bytes (shape " +
                                                    kiln::shape_to_string(shape) + " of " +
                                                    kiln::planner::elem_type_name(layout->type) +
                                                    "), the bound range has " + std::to_string(binding->size));
  }
  std::lock_guard<std::mutex> lock(session->bindings_mutex);
  session->bindings[name] = std::move(e);
  return nullptr;
}

void kiln_session_forget_vulkan_buffer(kiln_session_t* session, VkBuffer buffer) {
  if (!session || buffer == VK_NULL_HANDLE) return;
  session->erase_bindings_if([&](const kiln::runtime::ExternalBuffer& b) { return b.buffer == buffer; });
  if (session->vulkan_model()) session->vulkan_model()->forget_buffer(buffer);
}

kiln_status_t* kiln_session_unbind(kiln_session_t* session, const char* name) {
  if (!session) return null_arg("session");
  if (!name) return null_arg("name");
  std::lock_guard<std::mutex> lock(session->bindings_mutex);
  if (session->bindings.erase(name) == 0)
    return make_status(KILN_NOT_FOUND, "'" + std::string(name) + "' is not bound to a Vulkan buffer");
  return nullptr;
}

void kiln_session_unbind_all(kiln_session_t* session) {
  if (!session) return;
  std::lock_guard<std::mutex> lock(session->bindings_mutex);
  session->bindings.clear();
}

}  // extern "C"

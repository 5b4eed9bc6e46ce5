/* volk, compiled into Kiln with hidden visibility.
 *
 * volk's own volkLoadDeviceTable() resolves functions through the *global*
 * vkGetDeviceProcAddr, which is only correct for the one instance volk last
 * loaded. Kiln can hold its own instance and a host's borrowed one (possibly
 * from a different loader) at the same time, so it fills VolkDeviceTable
 * through each device's own vkGetDeviceProcAddr instead. volk's generated
 * table loader is a static function, hence the #include of volk.c here. Kiln
 * never uses volk's global function pointers. */
#include <volk.c>

#include "platform/vulkan/volk_impl.h"

struct kiln_volk_device_context {
  VkDevice device;
  PFN_vkGetDeviceProcAddr get_device_proc_addr;
};

static PFN_vkVoidFunction kiln_volk_device_stub(void* context, const char* name) {
  struct kiln_volk_device_context* c = (struct kiln_volk_device_context*)context;
  return c->get_device_proc_addr(c->device, name);
}

void kiln_volk_load_device_table(struct VolkDeviceTable* table, VkDevice device,
                                 PFN_vkGetDeviceProcAddr get_device_proc_addr) {
  struct kiln_volk_device_context context;
  context.device = device;
  context.get_device_proc_addr = get_device_proc_addr;
  volkGenLoadDeviceTable(table, &context, kiln_volk_device_stub);
}

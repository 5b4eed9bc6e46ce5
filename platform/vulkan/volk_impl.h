/* The entry point Kiln adds on top of volk (see volk_impl.c): a device table
 * filled through a given vkGetDeviceProcAddr. Internal to platform/vulkan. */
#pragma once

#include <volk.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fills every entry of `table` through `get_device_proc_addr(device, ...)`;
 * entries the device does not expose are left NULL. */
void kiln_volk_load_device_table(struct VolkDeviceTable* table, VkDevice device,
                                 PFN_vkGetDeviceProcAddr get_device_proc_addr);

#ifdef __cplusplus
}
#endif

/* Static registration entry of the in-tree kiln.layout plugin (SmartMem's
 * layout selection by reduction dimension and the per-tensor buffer/image
 * choice, pass `layout`): the host links kiln_layout and passes this
 * function to PluginRegistry::load_static, through the same ABI checks as a
 * .so. */
#ifndef KILN_PLUGINS_LAYOUT_H_
#define KILN_PLUGINS_LAYOUT_H_

#include "kiln/kiln_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

const kiln_plugin_t* kiln_layout_plugin_query(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* KILN_PLUGINS_LAYOUT_H_ */

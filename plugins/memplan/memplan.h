/* Static registration entry of the in-tree kiln.memplan plugin: the host
 * links kiln_memplan and passes this function to PluginRegistry::load_static,
 * going through the same ABI checks as a .so (see plugins/canonicalize). */
#ifndef KILN_PLUGINS_MEMPLAN_H_
#define KILN_PLUGINS_MEMPLAN_H_

#include "kiln/kiln_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

const kiln_plugin_t* kiln_memplan_plugin_query(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* KILN_PLUGINS_MEMPLAN_H_ */

/* Static registration entry of the in-tree kiln.fusion plugin (AGO
 * partitioning with DNNFusion legality, pass `fusion`): the host links
 * kiln_fusion and passes this function to PluginRegistry::load_static,
 * through the same ABI checks as a .so. */
#ifndef KILN_PLUGINS_FUSION_H_
#define KILN_PLUGINS_FUSION_H_

#include "kiln/kiln_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

const kiln_plugin_t* kiln_fusion_plugin_query(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* KILN_PLUGINS_FUSION_H_ */

// What kiln_plugin.h gives plugins so they need not re-implement the engine:
// dtype numbers and sizes that match engine/base/dtype.h.
#include <gtest/gtest.h>

#include "engine/base/dtype.h"
#include "kiln/kiln_plugin.h"

namespace {

TEST(PluginDtype, NumbersAndSizesAreTheEngines) {
  for (int32_t d = KILN_PLUGIN_DTYPE_FLOAT32; d <= KILN_PLUGIN_DTYPE_UINT64; ++d) {
    SCOPED_TRACE(d);
    EXPECT_EQ(kiln_plugin_dtype_size(d), kiln::dtype_size(static_cast<kiln::DType>(d)));
  }
  EXPECT_EQ(kiln_plugin_dtype_size(KILN_PLUGIN_DTYPE_UNDEFINED), 0u);
  EXPECT_EQ(kiln_plugin_dtype_size(99), 0u);
  EXPECT_EQ(kiln_plugin_dtype_size(-1), 0u);
  EXPECT_TRUE(kiln_plugin_dtype_is_int(KILN_PLUGIN_DTYPE_INT64));
  EXPECT_TRUE(kiln_plugin_dtype_is_int(KILN_PLUGIN_DTYPE_UINT16));
  EXPECT_FALSE(kiln_plugin_dtype_is_int(KILN_PLUGIN_DTYPE_BOOL));
  EXPECT_FALSE(kiln_plugin_dtype_is_int(KILN_PLUGIN_DTYPE_FLOAT16));
}

}  // namespace

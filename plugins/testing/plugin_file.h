// The check every in-tree plugin's test makes of its loadable build: the
// .so loads through the ABI and registers its pass. Header-only, so a test
// that does not use the golden harness needs no extra library for it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "engine/base/status.h"
#include "engine/registry/plugin_loader.h"

namespace kiln::plugin_testing {

// Loads the plugin library at `path` into `reg` and checks that it
// registered the pass `pass`; use as ASSERT_TRUE(load_plugin_file(...)).
// The failure names the file and the loader's message or the missing pass.
inline ::testing::AssertionResult load_plugin_file(registry::PluginRegistry& reg, const std::string& path,
                                                   const std::string& pass) {
  Status s = reg.load_file(path);
  if (!s.ok()) return ::testing::AssertionFailure() << "loading " << path << ": " << s.message();
  if (reg.find_pass(pass) == nullptr)
    return ::testing::AssertionFailure() << path << " loaded but registered no pass \"" << pass << "\"";
  return ::testing::AssertionSuccess();
}

}  // namespace kiln::plugin_testing

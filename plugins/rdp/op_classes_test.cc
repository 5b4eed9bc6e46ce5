// The dynamism table covers every op the engine registers, and no entry
// names an op that does not exist (a typo would leave an op unclassified).
#include <gtest/gtest.h>

#include "engine/ops/op_registry.h"
#include "plugins/rdp/op_classes.h"

namespace kiln_rdp {
namespace {

TEST(OpClasses, EveryBuiltinOpHasAClass) {
  for (const kiln::ops::OpSchema* s : kiln::ops::OpRegistry::builtin().all())
    EXPECT_NE(find_op_class(s->domain, s->name), nullptr)
        << (s->domain.empty() ? "" : s->domain + "::") << s->name << " has no dynamism class";
}

TEST(OpClasses, EveryEntryIsARegisteredOp) {
  for (const OpClass& c : op_class_table()) {
    std::string key = c.key, domain;
    if (size_t at = key.find("::"); at != std::string::npos) domain = key.substr(0, at), key = key.substr(at + 2);
    EXPECT_NE(kiln::ops::OpRegistry::builtin().find(domain, key), nullptr) << c.key;
  }
}

TEST(OpClasses, PaperExamples) {
  EXPECT_EQ(find_op_class("", "Shape")->cls, DynClass::kISDO);
  EXPECT_EQ(find_op_class("", "Conv")->cls, DynClass::kISDOS);
  EXPECT_EQ(find_op_class("", "MatMul")->cls, DynClass::kISDOS);
  EXPECT_EQ(find_op_class("", "Reshape")->cls, DynClass::kISVDOS);
  EXPECT_EQ(find_op_class("", "Range")->cls, DynClass::kISVDOS);
  EXPECT_EQ(find_op_class("", "If")->cls, DynClass::kEDO);
  EXPECT_EQ(find_op_class("", "NonZero")->cls, DynClass::kEDO);
  EXPECT_EQ(find_op_class("", "NoSuchOp"), nullptr);
  // Value inputs agree with the engine's schema where it lists them.
  for (const OpClass& c : op_class_table()) {
    if (c.cls != DynClass::kISVDOS) continue;
    std::string key = c.key;
    const kiln::ops::OpSchema* s = kiln::ops::OpRegistry::builtin().find("", key);
    ASSERT_NE(s, nullptr) << key;
    for (int i : c.value_inputs)
      EXPECT_TRUE(s->max_inputs < 0 || i < s->max_inputs) << key << " has no input " << i;
  }
}

}  // namespace
}  // namespace kiln_rdp

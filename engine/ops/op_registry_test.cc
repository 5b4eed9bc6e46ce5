// The op registry's per-op metadata: every built-in op states its DNNFusion
// mapping type (plugins/fusion decides what may fuse from it), and the
// families are classified the way the fusion rules expect.
#include <gtest/gtest.h>

#include "engine/ops/op_registry.h"

namespace kiln::ops {
namespace {

TEST(OpRegistryMapping, EveryOpHasOne) {
  const OpRegistry& r = OpRegistry::builtin();
  EXPECT_TRUE(r.registration_errors().empty());
  ASSERT_GT(r.all().size(), 100u);
  for (const OpSchema* s : r.all())
    EXPECT_NE(s->mapping, MappingType::kUnset) << (s->domain.empty() ? "" : s->domain + ".") << s->name;
}

TEST(OpRegistryMapping, FamiliesAreClassified) {
  const OpRegistry& r = OpRegistry::builtin();
  const auto mapping = [&](const char* op, const char* domain = "") {
    const OpSchema* s = r.find(domain, op);
    return s ? s->mapping : MappingType::kUnset;
  };
  for (const char* op : {"Add", "Relu", "Sigmoid", "Clip", "Where", "Cast", "PRelu", "Identity"})
    EXPECT_EQ(mapping(op), MappingType::kOneToOne) << op;
  for (const char* op : {"Expand", "Tile", "Resize"}) EXPECT_EQ(mapping(op), MappingType::kOneToMany) << op;
  for (const char* op : {"Conv", "ConvTranspose", "MatMul", "Gemm", "MaxPool", "GlobalAveragePool", "ReduceMean",
                         "Softmax", "LayerNormalization", "BatchNormalization", "InstanceNormalization"})
    EXPECT_EQ(mapping(op), MappingType::kManyToMany) << op;
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Concat"})
    EXPECT_EQ(mapping(op), MappingType::kReorganize) << op;
  for (const char* op : {"Transpose", "DepthToSpace", "SpaceToDepth"})
    EXPECT_EQ(mapping(op), MappingType::kShuffle) << op;
  for (const char* op : {"If", "Loop", "Shape", "Gather", "ConstantOfShape", "NonZero"})
    EXPECT_EQ(mapping(op), MappingType::kOther) << op;
  EXPECT_STREQ(mapping_type_name(MappingType::kManyToMany), "many-to-many");
}

}  // namespace
}  // namespace kiln::ops

// Tests for the checks protobuf parsing lets through (onnx_checks.h): each
// malformed form is an error naming where it is, what was expected and what
// was found, and the well-formed model still imports.
#include "frontends/onnx/onnx_checks.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>

#include "frontends/onnx/onnx_importer.h"

namespace kiln::onnx {
namespace {

namespace pb = ::onnx;

std::string varint(uint64_t v) {
  std::string out;
  do {
    out += static_cast<char>((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
    v >>= 7;
  } while (v != 0);
  return out;
}

// x[2,3] -> Op(attribute) -> y, opset 17.
pb::ModelProto model_with(const std::string& op, const pb::AttributeProto* attr, int inputs = 1) {
  pb::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  pb::GraphProto* g = m.mutable_graph();
  g->set_name("g");
  for (const char* name : {"x", "y"}) {
    pb::ValueInfoProto* v = std::string(name) == "x" ? g->add_input() : g->add_output();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(pb::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(2);
    t->mutable_shape()->add_dim()->set_dim_value(3);
  }
  pb::NodeProto* n = g->add_node();
  n->set_name("n1");
  n->set_op_type(op);
  for (int i = 0; i < inputs; ++i) n->add_input("x");
  n->add_output("y");
  if (attr) *n->add_attribute() = *attr;
  return m;
}

StatusOr<std::unique_ptr<ir::Graph>> import(const std::string& bytes) {
  return import_model_bytes(bytes.data(), bytes.size(), "");
}

TEST(OnnxChecks, AttributeOfTheWrongTypeNamesNodeAttributeAndTypes) {
  pb::AttributeProto alpha;
  alpha.set_name("alpha");
  alpha.set_type(pb::AttributeProto::FLOAT);
  alpha.set_f(0.5f);
  ASSERT_TRUE(import(model_with("LeakyRelu", &alpha).SerializeAsString()).ok());

  alpha.set_type(pb::AttributeProto::STRING);
  alpha.set_s("0.5");
  auto g = import(model_with("LeakyRelu", &alpha).SerializeAsString());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  for (const char* part : {"'n1'", "LeakyRelu", "attribute 'alpha' must be FLOAT", "gives STRING"})
    EXPECT_NE(g.status().message().find(part), std::string::npos) << part << " in " << g.status().to_string();

  // IR < 3 models leave the type out: it is taken from the value field.
  pb::AttributeProto untyped;
  untyped.set_name("alpha");
  untyped.add_ints(1);
  g = import(model_with("LeakyRelu", &untyped).SerializeAsString());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("must be FLOAT (opset 17), but the model gives INTS"), std::string::npos)
      << g.status().to_string();
}

TEST(OnnxChecks, InputCountsOutsideTheSchemaAreErrors) {
  auto g = import(model_with("Relu", nullptr, 2).SerializeAsString());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("has 2 inputs, but Relu (opset 17) takes 1"), std::string::npos)
      << g.status().to_string();
}

TEST(OnnxChecks, WrongWireTypeAndOutOfRangeEnumAreErrors) {
  // NodeProto field 1 (input, a string) sent as a varint.
  pb::ModelProto m = model_with("Relu", nullptr);
  pb::NodeProto node;
  ASSERT_TRUE(node.ParseFromString(m.graph().node(0).SerializeAsString() + varint(1 << 3 | 0) + varint(5)));
  *m.mutable_graph()->mutable_node(0) = node;
  auto g = import(m.SerializeAsString());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("graph 'g'.node[0] 'n1': field 'input'"), std::string::npos)
      << g.status().to_string();
  EXPECT_NE(g.status().message().find("wire type varint"), std::string::npos) << g.status().to_string();

  // AttributeProto field 20 (type, an enum) with the value 99.
  pb::AttributeProto attr;
  attr.set_name("alpha");
  attr.set_f(0.5f);
  pb::AttributeProto bad;
  ASSERT_TRUE(bad.ParseFromString(attr.SerializeAsString() + varint(20 << 3 | 0) + varint(99)));
  g = import(model_with("LeakyRelu", &bad).SerializeAsString());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("attribute[0] 'alpha': field 'type' has value 99, which is not a valid "
                                      "AttributeType"),
            std::string::npos)
      << g.status().to_string();

  // A field number this ONNX does not know (a newer ONNX's field) is allowed.
  pb::ModelProto newer = model_with("Relu", nullptr);
  ASSERT_TRUE(newer.ParseFromString(newer.SerializeAsString() + varint(900 << 3 | 0) + varint(1)));
  EXPECT_TRUE(check_wire_types(newer, "model").ok());
}

}  // namespace
}  // namespace kiln::onnx

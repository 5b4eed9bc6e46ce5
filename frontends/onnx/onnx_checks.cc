// Wire-type, enum and schema checks on parsed ONNX protobufs; see onnx_checks.h.
#include "frontends/onnx/onnx_checks.h"

#include <onnx/defs/schema.h>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/unknown_field_set.h>

#include <limits>
#include <vector>

namespace kiln::onnx {
namespace {

namespace pb = google::protobuf;
using ::onnx::AttributeProto;

const char* wire_type_name(pb::UnknownField::Type type) {
  switch (type) {
    case pb::UnknownField::TYPE_VARINT: return "varint";
    case pb::UnknownField::TYPE_FIXED32: return "fixed32";
    case pb::UnknownField::TYPE_FIXED64: return "fixed64";
    case pb::UnknownField::TYPE_LENGTH_DELIMITED: return "length-delimited";
    case pb::UnknownField::TYPE_GROUP: return "group";
  }
  return "unknown";
}

// "graph.node[2] 'conv1'": a message's place, with its name when it has one.
std::string element_path(const std::string& parent, const pb::FieldDescriptor& field, int index,
                         const pb::Message& element) {
  std::string path = parent + "." + field.name();
  if (index >= 0) path += "[" + std::to_string(index) + "]";
  const pb::FieldDescriptor* name = element.GetDescriptor()->FindFieldByName("name");
  if (name != nullptr && name->type() == pb::FieldDescriptor::TYPE_STRING && !name->is_repeated()) {
    const std::string value = element.GetReflection()->GetString(element, name);
    if (!value.empty()) path += " '" + value + "'";
  }
  return path;
}

// Why `unknown`, which has a field number the message declares, was not
// parsed into that field.
Status misparsed_field(const std::string& where, const pb::FieldDescriptor& field, const pb::UnknownField& unknown) {
  if (field.type() == pb::FieldDescriptor::TYPE_ENUM && unknown.type() == pb::UnknownField::TYPE_VARINT)
    return invalid_argument(where + ": field '" + field.name() + "' has value " +
                            std::to_string(static_cast<int64_t>(unknown.varint())) + ", which is not a valid " +
                            field.enum_type()->name());
  return invalid_argument(where + ": field '" + field.name() + "' (number " + std::to_string(field.number()) +
                          ", " + field.type_name() + ") was sent with wire type " + wire_type_name(unknown.type()) +
                          "; the protobuf is malformed");
}

}  // namespace

Status check_wire_types(const pb::Message& message, const std::string& where) {
  const pb::Reflection* reflection = message.GetReflection();
  const pb::Descriptor* descriptor = message.GetDescriptor();
  const pb::UnknownFieldSet& unknown = reflection->GetUnknownFields(message);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const pb::FieldDescriptor* field = descriptor->FindFieldByNumber(unknown.field(i).number());
    if (field != nullptr) return misparsed_field(where, *field, unknown.field(i));
  }
  std::vector<const pb::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        const pb::Message& element = reflection->GetRepeatedMessage(message, field, i);
        KILN_RETURN_IF_ERROR(check_wire_types(element, element_path(where, *field, i, element)));
      }
    } else {
      const pb::Message& element = reflection->GetMessage(message, field);
      KILN_RETURN_IF_ERROR(check_wire_types(element, element_path(where, *field, -1, element)));
    }
  }
  return ok_status();
}

AttributeProto::AttributeType effective_attribute_type(const AttributeProto& attr) {
  if (attr.type() != AttributeProto::UNDEFINED) return attr.type();
  if (attr.has_f()) return AttributeProto::FLOAT;
  if (attr.has_i()) return AttributeProto::INT;
  if (attr.has_s()) return AttributeProto::STRING;
  if (attr.has_t()) return AttributeProto::TENSOR;
  if (attr.has_g()) return AttributeProto::GRAPH;
  if (attr.floats_size() > 0) return AttributeProto::FLOATS;
  if (attr.ints_size() > 0) return AttributeProto::INTS;
  if (attr.strings_size() > 0) return AttributeProto::STRINGS;
  return AttributeProto::UNDEFINED;
}

Status check_node_against_schema(const ::onnx::NodeProto& node, int64_t opset, const std::string& desc) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") return ok_status();
  const int version = static_cast<int>(opset);
  const ::onnx::OpSchema* schema = ::onnx::OpSchemaRegistry::Schema(node.op_type(), version, "");
  if (schema == nullptr) return ok_status();
  for (const AttributeProto& attr : node.attribute()) {
    auto declared = schema->attributes().find(attr.name());
    if (declared == schema->attributes().end()) continue;
    const AttributeProto::AttributeType expected = declared->second.type;
    const AttributeProto::AttributeType actual = effective_attribute_type(attr);
    if (actual != expected)
      return invalid_argument(desc + ": attribute '" + attr.name() + "' must be " +
                              AttributeProto::AttributeType_Name(expected) + " (opset " + std::to_string(opset) +
                              "), but the model gives " +
                              (actual == AttributeProto::UNDEFINED ? std::string("no value")
                                                                   : AttributeProto::AttributeType_Name(actual)));
  }
  // Input and output counts change between opsets (opset 18 moved Reduce
  // axes to an input), so they are checked only for opsets libonnx knows.
  const auto& known = ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto range = known.find("");
  if (range == known.end() || version > range->second.second) return ok_status();
  auto check_count = [&](const char* what, int count, int min, int max) -> Status {
    if (count >= min && count <= max) return ok_status();
    return invalid_argument(desc + ": has " + std::to_string(count) + " " + what + "s, but " + node.op_type() +
                            " (opset " + std::to_string(opset) + ") takes " +
                            (min == max                ? std::to_string(min)
                             : max == std::numeric_limits<int>::max() ? "at least " + std::to_string(min)
                                                                      : std::to_string(min) + " to " + std::to_string(max)));
  };
  KILN_RETURN_IF_ERROR(check_count("input", node.input_size(), schema->min_input(), schema->max_input()));
  KILN_RETURN_IF_ERROR(check_count("output", node.output_size(), schema->min_output(), schema->max_output()));
  return ok_status();
}

}  // namespace kiln::onnx

// What the ONNX checker validates and protobuf parsing lets through: fields
// sent with the wrong wire type, enum values out of range, attributes of the
// wrong type and nodes with more or fewer inputs than their operator takes.
//
// protobuf (proto2, as ONNX uses it) does not fail on a field whose wire
// type disagrees with the schema, nor on an enum value it does not know: it
// moves them to the message's unknown fields, so the model reads as if the
// field were absent. An attribute of the wrong type (`pads` as a string) is
// likewise read by the ops as "no such attribute" and its default is used.
// Either way the model runs with a meaning its author did not write. These
// checks turn both into errors naming the field or node, what was expected
// and what was found.
//
// Thread-safety: re-entrant (libonnx's schema registry is read-only after its
// first, thread-safe, initialization).
#pragma once

#include <cstdint>
#include <string>

#include <google/protobuf/message.h>
#include <onnx/onnx_pb.h>

#include "engine/base/status.h"

namespace kiln::onnx {

// INVALID_ARGUMENT naming the path to the first field (e.g.
// "graph.node[2] 'conv1'.attribute[0] 'pads': field 'type' ...") that was
// sent with a wire type other than its declared one, or an enum value that
// is not one of the enum's values. Unknown field numbers (fields of a newer
// ONNX) are allowed. `where` prefixes the path ("model").
Status check_wire_types(const google::protobuf::Message& message, const std::string& where);

// The attribute's type: its `type` field, or for IR < 3 models (which leave
// it out) the type of the one value field that is set; UNDEFINED when
// neither says.
::onnx::AttributeProto::AttributeType effective_attribute_type(const ::onnx::AttributeProto& attr);

// Checks a default-domain node against ONNX's operator schema for `opset`
// (libonnx's registry): every attribute the schema declares must have the
// declared type, and, when libonnx knows `opset`, the input and output counts
// must be within the schema's range. Ops the registry does not know pass
// (Kiln's own registry reports them). `desc` names the node in errors.
Status check_node_against_schema(const ::onnx::NodeProto& node, int64_t opset, const std::string& desc);

}  // namespace kiln::onnx

// SoD²'s classification of operators by dynamism degree (§3, Table 2), for
// every op Kiln registers. The class says what an op's output shape (and
// value) can be derived from before execution:
//   ISDO   Input Shape Determined Output: the output *values* follow from the
//          input shapes (Shape, Size, EyeLike, Constant);
//   ISDOS  Input Shape Determined Output Shape (Conv, Add, MatMul, Concat...);
//   ISVDOS Input Shape & Value Determined Output Shape: some inputs' values
//          decide the output shape (Reshape, Range, Slice, Expand...);
//   EDO    Execution Determined Output: the shape is known only after the op
//          ran (If, Loop, NonZero).
// A node of an ISVDOS op whose shape-deciding inputs are all known moves to
// ISDOS (the paper's "Discussion": constant propagation lowers dynamism).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln_rdp {

enum class DynClass { kISDO, kISDOS, kISVDOS, kEDO };

struct OpClass {
  const char* key;  // op name; "domain::name" outside the default domain
  DynClass cls;
  // ISVDOS: the inputs whose values decide the output shape.
  std::vector<int> value_inputs;
};

// Short name used in annotations ("ISDOS").
const char* class_name(DynClass c);
// The whole table, in no particular order (tests walk it).
const std::vector<OpClass>& op_class_table();
// The entry of (domain, op), or nullptr for an op the table does not know.
const OpClass* find_op_class(std::string_view domain, std::string_view op);

}  // namespace kiln_rdp

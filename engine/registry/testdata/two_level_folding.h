// A graph the default pipeline folds in two levels, shared by the pipeline
// and session tests: Pad's pads come from a Where that only constant folding
// resolves; only then does Pad's output shape become static, so only then
// can Shape(%p), and after it ConstantOfShape, fold. Folded, it is Pad + Add.
#pragma once

namespace kiln::registry::testdata {

inline constexpr const char* kTwoLevelFolding = R"(graph @g opset 17 {
  input %x : f32[1,2]
  const %cond : bool[4] = dense<[1,1,0,0]>
  const %a : i64[4] = dense<[0,1,0,0]>
  const %b : i64[4] = dense<[0,0,0,2]>
  %pads = Where(%cond, %a, %b) : i64[4]
  %p = Pad(%x, %pads) {mode = "constant"} : f32[?,?]
  %s = Shape(%p) : i64[2]
  %c = ConstantOfShape(%s) {value = dense<f32[1] [0.5]>} : f32[?,?]
  %y = Add(%p, %c) : f32[?,?]
  return %y
}
)";

}  // namespace kiln::registry::testdata

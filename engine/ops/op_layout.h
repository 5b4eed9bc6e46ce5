// SmartMem's operator layout classes (smartmem.txt §3.1, Tables 3-4) and the
// reduction dimensions each op reads its inputs along (§3.2.2), as the op
// registry knows them. The layout plugin (plugins/layout) reads both through
// the ABI 1.4 host function op_layout to pick each tensor's packed axis and
// storage; nothing in the engine depends on them.
//
// The class is derived from the op's DNNFusion mapping type (OpSchema::mapping,
// which every registration sets), with the exceptions the paper's Table 3
// draws: many-to-many ops (Conv, MatMul, Softmax, LayerNorm, reductions) are
// input-layout dependent with a customizable output (ILD-Variable);
// elementwise and broadcasting ops are ILI-Variable; Reshape, Transpose,
// Flatten, Squeeze, Unsqueeze, DepthToSpace and SpaceToDepth are ILD-Fixed
// (their output order is defined by their input's); selections and
// placements (Slice, Gather, Concat, Split, Pad, shape computations) are
// ILI-Fixed. Ops whose layout the classification cannot speak for (If, Loop,
// the recurrent scans) are kUnknown.
//
// Thread-safety: pure functions over immutable data.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ops/op_registry.h"

namespace kiln::ops {

// The numbering is kiln_layout_class_t's in kiln/kiln_plugin.h.
enum class LayoutClass : uint8_t {
  kUnknown = 0,
  kIldVariable = 1,
  kIliVariable = 2,
  kIldFixed = 3,
  kIliFixed = 4,
};

// "ILD-Variable", "ILI-Fixed", ... ("unknown").
const char* layout_class_name(LayoutClass c);

// The SmartMem class of a registered op.
LayoutClass layout_class(const OpSchema& schema);

// The axes of input `input` of `node` (0-based, counted in that input's own
// rank, ascending, no duplicates) along which the op aggregates or reads a
// window: MatMul's A along its last axis and B along axis -2; Gemm's K by
// transA/transB; Conv's data input along its channels and spatial window and
// its weights along all but the output channels; pooling along the window;
// Reduce*/ArgMax/CumSum/TopK along their axes (attribute or constant input);
// Softmax/LogSoftmax/Hardmax and LayerNormalization from `axis` on (opset <
// 13 Softmax flattens from `axis`); Instance/Group/LpNormalization and
// MeanVarianceNormalization along their normalized axes; the recurrent ops
// along the feature axis. Empty for elementwise ops, layout transforms,
// parameters (biases, scales, zero points), an input of unknown rank, axes
// given by a non-constant input, and ops the registry does not know.
std::vector<int> reduction_axes(const ir::Graph& graph, const ir::Node& node, size_t input);

}  // namespace kiln::ops

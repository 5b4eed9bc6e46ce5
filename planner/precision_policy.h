// Mixed precision for fp16 plans: which float tensors stay fp32 on the device.
//
// With PlanOptions::precision = kF16 the planner stores float activations and
// weights as fp16 (kernels compute in fp32 through the accessors). Storing
// *everything* as fp16 is too coarse for some networks: on resnet50 and
// resnext50_32x4d (torchvision, random weights, BatchNorm calibrated and
// folded into the convolutions) it misses PyTorch fp32 by 1.42x and 1.12x the
// fp16 bound 2e-2 * max(1, max|ref|). Measured by rounding classes of
// tensors to fp16 in a replay of the ONNX graph with fp32 arithmetic
// (tests/models/fp16_storage_error.py --policy prints the rows "everything
// fp16", "activations fp16, weights fp32" and "this policy"; the others are
// the same replay keeping other tensors), as fractions of the bound:
//
//                                      resnet50  resnext50_32x4d
//   everything fp16                      1.42        1.12
//   weights fp16, activations fp32       1.19
//   everything but the residual stream   1.40
//   activations fp16, weights fp32       0.76        0.63
//   this policy                          0.74        0.64
//   this policy, Kiln on lavapipe        0.85        0.60
//
// (The max error of these networks is chaotic: a 1e-6 relative input
// perturbation moves the policy row between 0.74 and 0.91 for resnet50, the
// first row between 1.15 and 1.48; see tests/models/README.md.)
//
// Weight rounding dominates: a weight's error is the same at every output
// pixel, so unlike per-element activation rounding it does not average out
// (in later convolutions or the final global pool), and the earlier the layer
// the more of the network amplifies it (resnet50 with only one stage's
// weights fp16: stem+layer1 0.95, layer2 0.24, layer3 0.06, layer4 0.02). The
// residual stream in fp32 does not help. Every weight's fp16 rounding error
// is the ordinary 2^-11 relative (no subnormals), so "large rounding error"
// does not single any out; where it sits in the network does.
//
// The policy: a Conv or ConvTranspose whose weight has no more elements than
// one image of its output keeps its constant weight and bias in fp32. Those
// are the early, high-resolution layers (and depthwise convolutions), exactly
// the ones whose errors travel furthest, and for them the fp32 copy costs at
// most what writing the output once in fp16 costs: resnet50 keeps 21 of 53
// convolutions' weights in fp32, +1.96 MB over 51.1 MB of fp16 weights;
// resnext50_32x4d 31 convolutions, +4.2 MB. The bias goes with the weight:
// the folded BatchNorm shift is as coherent an error as the weight's (weight
// alone in fp32: 1.01 and 1.19). Activations stay fp16: their error is what
// remains (0.74 / 0.64 of the bound), and they are most of the traffic.
// Symbolic output dims count as 1, so a model with a symbolic image size
// keeps its weights fp16 (the cost cannot be shown small at plan time).
// On a device with fp16 cooperative matrices a GEMM that reads such an fp32
// weight takes the scalar kernel (emit_gemm), which keeps it fp32.
//
// The float input of a QuantizeLinear or DynamicQuantizeLinear stays fp32 as
// well: it is about to be rounded to whole quantization steps, and an input
// rounded to fp16 first lands on the other side of a .5 now and then (one
// step off in 3 of the 10 ONNX node tests of these ops under fp16).
#pragma once

#include <vector>

#include "engine/ir/dim.h"
#include "engine/ir/graph.h"
#include "planner/kernel.h"

namespace kiln::planner {

// Whether a convolution with weight shape `weight` and output shape `output`
// ([N, C, spatial...]) keeps its constant weight and bias in fp32 in an fp16
// plan: the weight has at most as many elements as one image of the output
// (C times the spatial dims; symbolic dims count as 1).
bool conv_weights_stay_f32(const std::vector<ir::Dim>& weight, const std::vector<ir::Dim>& output);

// The device float type of every value of `graph` (indexed by ValueId) in a
// plan of float precision `precision`: `precision`, except the constants the
// policy above keeps fp32 when `precision` is kF16. Entries of non-float
// values are `precision` too (device_elem_type maps them to kI32). `shapes`
// are the planner's value shapes, one per value (symbols for unknown dims).
// The graph is borrowed for the call only; erased nodes are ignored.
std::vector<ElemType> choose_float_types(const ir::Graph& graph, const std::vector<std::vector<ir::Dim>>& shapes,
                                         ElemType precision);

}  // namespace kiln::planner

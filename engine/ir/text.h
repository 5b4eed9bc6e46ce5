// The textual form of the graph IR: prints and parses back, so that passes
// are tested with golden text files and graphs can be read by people.
//
//   graph @name opset 17 {
//     input %x : f32[1,3,h,w]
//     const %w : f32[2] = dense<[0.5,1.5]>
//     %y = Mul(%x, %w) : f32[1,3,h,w] loc("mul1")
//     %a, %b = Split(%y, %s) {axis = 1} : f32[1,1,h,w], f32[1,2,h,w]
//     %r = If(%c) {else_branch = region { return %b }, then_branch = region { return %a }} : f32[*]
//     return %y, %r
//   }
//
// Attribute values: 1 (int), 1.0 (float), "s" (string), [1,2] / [1.0] /
// ["a"] (lists; empty lists are typed: ints[], floats[], strings[]),
// dense<f32[2] [1,2]> (tensor), region { ... } (sub-graph). Value names that
// are not plain ([A-Za-z0-9_./-]) are quoted: %"onnx::Conv_1".
//
// Annotations (the free-form string facts passes attach) follow what they
// annotate as `#{key = "value", ...}`: a node's after its attributes, a
// value's after its type:
//
//   input %x : f32[1,3,h,w] #{kiln.layout = "nhwc"}
//   %y = "kiln"::Silu(%x) #{kiln.fusion_group = "2"} : f32[1,3,h,w] #{kiln.storage = "image"}
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "engine/base/status.h"
#include "engine/ir/graph.h"

namespace kiln::ir {

struct PrintOptions {
  // Constants with more elements than this print as `dense<f32[..] elided>`;
  // -1 prints every element (needed to parse back).
  int64_t elide_constants_over = -1;
  // Constants with more elements than this print as
  // `dense<external(ID)>`, ID their value id in the printed graph: a reader
  // that can fetch the bytes another way (a backend plugin, through the
  // plugin ABI's value_constant) is spared printing and parsing them. -1:
  // none.
  int64_t external_constants_over = -1;
  bool print_locations = true;  // loc("node name")
};

std::string print_graph(const Graph& graph, const PrintOptions& options = {});

struct ParseOptions {
  // Accept `elided` constants (filled with zeros) instead of failing.
  bool allow_elided_constants = false;
  // The data of a `dense<external(ID)>` constant, for its declared dtype and
  // shape; the parser checks what it returns. Unset: `external` is an error.
  std::function<StatusOr<Tensor>(int64_t id, DType dtype, const Shape& shape)> external_constant;
};

// Parses the textual form. Errors name the line and column.
StatusOr<std::unique_ptr<Graph>> parse_graph(std::string_view text, const ParseOptions& options = {});

}  // namespace kiln::ir

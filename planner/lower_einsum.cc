// Einsum: one map kernel over the output, each element looping over the
// summed index space and accumulating the product of the inputs in float
// (int for integer tensors) — the reference kernel's loop nest
// (engine/ops/linalg_einsum.cc), with its equation parser
// (engine/ops/einsum_equation.h), on the device.
//
// Every axis of the loop nest is a GLSL variable: an output axis is its
// harness coordinate oc<k>, a summed axis (a label missing from the output,
// or a '...' axis when the output has no '...') is a loop counter s<k>. An
// input axis reads with the variable of its label, so a label repeated in
// one term walks the diagonal; an input axis of size 1 reads index 0
// (numpy's size-1 broadcasting of labels and '...' axes). Loop bounds are
// GLSL expressions of the inputs' dims (the largest of an axis's
// occurrences), so symbolic dims need nothing special. Batched matmuls stay
// on this kernel too: Einsum's speed is not what it is for.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "engine/ops/einsum_equation.h"
#include "planner/glsl_codegen.h"
#include "planner/lower_util.h"
#include "planner/lowering.h"

namespace kiln::planner {
namespace {

using ops::einsum::kEllipsis;

// One occurrence of a loop axis in an input: tensor name, axis, dim.
struct Use {
  std::string tensor;
  size_t axis;
  ir::Dim dim;
};

// The GLSL extent of a summed axis: the largest of its occurrences' dims
// (equal or 1 by shape inference); constants fold, and a constant > 1 is
// the extent outright.
std::string extent_expr(const std::vector<Use>& uses) {
  std::string e;
  for (const Use& u : uses)
    if (u.dim.is_const() && u.dim.value() != 1) return std::to_string(u.dim.value());
  for (const Use& u : uses) {
    if (u.dim.is_const()) continue;  // a constant 1 adds nothing
    const std::string d = u.tensor + "_D" + std::to_string(u.axis);
    e = e.empty() ? d : "max(" + e + ", " + d + ")";
  }
  return e.empty() ? "1" : e;
}

// The coordinate an input axis of `dim` reads for loop variable `var`.
std::string read_coord(const std::string& tensor, size_t axis, const ir::Dim& dim, const std::string& var) {
  if (dim.is_const()) return dim.value() == 1 ? "0" : var;
  return "(" + tensor + "_D" + std::to_string(axis) + " == 1 ? 0 : " + var + ")";
}

Status lower_einsum(LoweringContext& ctx) {
  const size_t n = ctx.num_inputs();
  if (n == 0) return ctx.error("Einsum needs at least one input");
  for (size_t i = 0; i < n; ++i)
    if (!ctx.has_input(i)) return ctx.error("input " + std::to_string(i) + " is missing");
  KILN_ASSIGN_OR_RETURN(const ops::einsum::Equation e, ops::einsum::parse_equation(ctx.node(), n));

  // Ellipsis ranks, and E: the rank of the broadcast '...' axes.
  std::vector<int64_t> er(n);
  int64_t E = 0;
  for (size_t i = 0; i < n; ++i) {
    KILN_ASSIGN_OR_RETURN(er[i], ops::einsum::ellipsis_rank(ctx.node(), i, e.inputs[i],
                                                            static_cast<int64_t>(ctx.input_shape(i).size())));
    E = std::max(E, er[i]);
  }
  // Loop-axis ids: a label's char, or 256 + j for '...' axis j.
  std::vector<std::string> names(n);
  std::array<std::vector<Use>, 256 + 64> uses;
  if (E > 64) return ctx.unsupported("more than 64 '...' axes");
  std::vector<std::vector<int>> axis_ids(n);  // per input axis: its loop-axis id
  for (size_t i = 0; i < n; ++i) {
    names[i] = "A" + std::to_string(i);
    const std::vector<ir::Dim>& s = ctx.input_shape(i);
    size_t axis = 0;
    for (int l : e.inputs[i]) {
      if (l == kEllipsis) {
        for (int64_t j = 0; j < er[i]; ++j, ++axis) axis_ids[i].push_back(256 + static_cast<int>(E - er[i] + j));
      } else {
        axis_ids[i].push_back(l);
        ++axis;
      }
    }
    for (size_t k = 0; k < axis_ids[i].size(); ++k)
      uses[static_cast<size_t>(axis_ids[i][k])].push_back({names[i], k, s[k]});
  }

  // Output axes take the harness coordinates; the rest are summed.
  std::array<std::string, 256 + 64> var;
  size_t out_rank = 0;
  for (int l : e.output) {
    if (l == kEllipsis) {
      for (int64_t j = 0; j < E; ++j) var[256 + static_cast<size_t>(j)] = "oc" + std::to_string(out_rank++);
    } else {
      var[static_cast<size_t>(l)] = "oc" + std::to_string(out_rank++);
    }
  }
  if (out_rank != ctx.output_shape(0).size())
    return ctx.error("the output rank " + std::to_string(ctx.output_shape(0).size()) + " does not match equation '" +
                     ctx.node().attr_string("equation", "") + "'");
  std::string loops;
  int summed = 0;
  for (size_t id = 0; id < uses.size(); ++id) {
    if (uses[id].empty() || !var[id].empty()) continue;
    const std::string s = "s" + std::to_string(summed++);
    var[id] = s;
    loops += "for (int " + s + " = 0; " + s + " < " + extent_expr(uses[id]) + "; ++" + s + ")\n";
  }

  std::vector<KernelTensor> tensors;
  bool integer = false;
  std::string product;
  for (size_t i = 0; i < n; ++i) {
    tensors.push_back(ctx.bind(names[i], ctx.input(i)));
    if (i == 0) integer = !is_float(tensors.back().layout.type);  // shape inference: one dtype for all
    const std::vector<ir::Dim>& s = ctx.input_shape(i);
    std::vector<std::string> coords;
    for (size_t k = 0; k < s.size(); ++k)
      coords.push_back(read_coord(names[i], k, s[k], var[static_cast<size_t>(axis_ids[i][k])]));
    if (coords.empty()) coords.push_back("0");  // rank 0 reads as shape [1]
    product += (i ? " * " : "") + names[i] + "_at(" + join_args(coords) + ")";
  }
  KernelTensor y = ctx.bind("Y", ctx.output(0), true);
  if (integer != !is_float(y.layout.type)) return ctx.unsupported("the output's element type differs from the inputs'");
  tensors.push_back(std::move(y));
  const std::string A = integer ? "int" : "float";
  std::string body = A + " acc = " + A + "(0);\n" + loops + "  acc += " + product + ";\nv = acc;\n";
  ctx.emit(map_kernel("einsum", std::move(tensors), std::move(body)));
  return ok_status();
}

}  // namespace

void register_einsum_lowerings(LoweringRegistry& r) { r.add("", "Einsum", lower_einsum); }

}  // namespace kiln::planner

// The Einsum equation parser of the reference kernel (linalg_einsum.cc),
// shared with the planner's device lowering (planner/lower_einsum.cc) so
// that both read an equation the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/base/status.h"
#include "engine/ir/graph.h"

namespace kiln::ops::einsum {

// A term's entry for '...'; labels are their ASCII codes.
constexpr int kEllipsis = -1;

struct Equation {
  std::vector<std::vector<int>> inputs;  // per input term: label chars, kEllipsis for '...'
  std::vector<int> output;               // explicit, or numpy's implicit output
  bool any_ellipsis = false;
};

// Parses `node`'s equation attribute for `num_inputs` inputs. Errors
// (kInvalidArgument, naming the node): empty equation, bad characters,
// two '...' in a term, term count != num_inputs, an output label missing
// from the inputs or repeated.
StatusOr<Equation> parse_equation(const ir::Node& node, size_t num_inputs);

// Number of axes the '...' of `term` covers for an input of `rank`; an error
// when the rank does not fit the term.
StatusOr<int64_t> ellipsis_rank(const ir::Node& node, size_t input, const std::vector<int>& term, int64_t rank);

}  // namespace kiln::ops::einsum

// Einsum: equation parsing, symbolic shape inference and a reference kernel;
// see linalg_internal.h.
//
// Semantics are numpy.einsum's (what the ONNX reference runs): labels are
// ASCII letters, '...' stands for broadcast axes, a label repeated within a
// term takes a diagonal, labels missing from the output are summed, and
// without '->' the output is '...' followed by the labels used exactly once
// in ASCII order. Labelled axes of size 1 broadcast like numpy's.
//
// The kernel is a direct loop over the full index space (output axes, then
// summed axes) with incrementally updated input offsets: O(output x summed)
// work, accumulated in double (floats) or modular 64-bit integers (ints).
#include <algorithm>
#include <array>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/ops/broadcast.h"
#include "engine/ops/einsum_equation.h"
#include "engine/ops/linalg_internal.h"

namespace kiln::ops {

namespace einsum {
namespace {

bool is_label(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string term_to_string(const std::vector<int>& term) {
  std::string s;
  for (int l : term) s += l == kEllipsis ? std::string("...") : std::string(1, static_cast<char>(l));
  return s;
}

StatusOr<std::vector<int>> parse_term(const std::string& term, const ir::Node& node) {
  std::vector<int> out;
  bool seen_ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (is_label(c)) {
      out.push_back(static_cast<unsigned char>(c));
    } else if (c == '.' && term.compare(i, 3, "...") == 0) {
      if (seen_ellipsis)
        return invalid_argument(node.describe() + ": term '" + term + "' has more than one '...'");
      seen_ellipsis = true;
      out.push_back(kEllipsis);
      i += 2;
    } else {
      return invalid_argument(node.describe() + ": invalid character '" + std::string(1, c) + "' in einsum term '" +
                              term + "' (labels are letters; '...' broadcasts)");
    }
  }
  return out;
}

}  // namespace

StatusOr<Equation> parse_equation(const ir::Node& node, size_t num_inputs) {
  std::string eq;
  for (char c : node.attr_string("equation", "")) {
    if (c != ' ') eq += c;
  }
  if (eq.empty()) return invalid_argument(node.describe() + ": the equation attribute is missing or empty");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  Equation e;
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    KILN_ASSIGN_OR_RETURN(std::vector<int> term, parse_term(lhs.substr(start, comma - start), node));
    for (int l : term) e.any_ellipsis |= l == kEllipsis;
    e.inputs.push_back(std::move(term));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (e.inputs.size() != num_inputs)
    return invalid_argument(node.describe() + ": equation '" + eq + "' has " + std::to_string(e.inputs.size()) +
                            " input terms but the node has " + std::to_string(num_inputs) + " inputs");
  std::array<int, 256> count{};
  for (const auto& term : e.inputs)
    for (int l : term)
      if (l != kEllipsis) ++count[static_cast<size_t>(l)];
  if (arrow != std::string::npos) {
    KILN_ASSIGN_OR_RETURN(e.output, parse_term(eq.substr(arrow + 2), node));
    std::array<bool, 256> used{};
    for (int l : e.output) {
      if (l == kEllipsis) continue;
      if (count[static_cast<size_t>(l)] == 0)
        return invalid_argument(node.describe() + ": output label '" + std::string(1, static_cast<char>(l)) +
                                "' does not appear in any input term of '" + eq + "'");
      if (used[static_cast<size_t>(l)])
        return invalid_argument(node.describe() + ": output label '" + std::string(1, static_cast<char>(l)) +
                                "' appears twice in '" + eq + "'");
      used[static_cast<size_t>(l)] = true;
    }
  } else {
    if (e.any_ellipsis) e.output.push_back(kEllipsis);
    for (int l = 0; l < 256; ++l)
      if (count[static_cast<size_t>(l)] == 1) e.output.push_back(l);
  }
  return e;
}

// Number of axes the ellipsis of `term` covers for an input of `rank`, or
// an error when the rank does not fit the term.
StatusOr<int64_t> ellipsis_rank(const ir::Node& node, size_t input, const std::vector<int>& term, int64_t rank) {
  const bool has_ellipsis = std::find(term.begin(), term.end(), kEllipsis) != term.end();
  const int64_t letters = static_cast<int64_t>(term.size()) - (has_ellipsis ? 1 : 0);
  if (has_ellipsis ? rank < letters : rank != letters)
    return invalid_argument(node.describe() + ": input " + std::to_string(input) + " has rank " +
                            std::to_string(rank) + " but its term '" + term_to_string(term) + "' has " +
                            std::to_string(letters) + " labels" + (has_ellipsis ? " and '...'" : ""));
  return rank - letters;
}

}  // namespace einsum

using einsum::ellipsis_rank;
using einsum::Equation;
using einsum::kEllipsis;
using einsum::parse_equation;

Status infer_einsum(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.error("input " + std::to_string(i) + " is missing");
    if (ctx.input_dtype(i) != dt)
      return ctx.error("input " + std::to_string(i) + " has dtype " + std::string(dtype_name(ctx.input_dtype(i))) +
                       " but input 0 has dtype " + std::string(dtype_name(dt)));
  }
  if (dt == DType::kBool) return ctx.error("dtype bool is not supported");
  KILN_ASSIGN_OR_RETURN(const Equation e, parse_equation(ctx.node(), ctx.num_inputs()));

  std::array<ir::Dim, 256> label_dim;
  std::array<bool, 256> label_seen{};
  ir::SymShape ell = ir::SymShape(std::vector<ir::Dim>{});
  bool ell_known = true;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const std::vector<int>& term = e.inputs[i];
    const ir::SymShape& s = ctx.input_shape(i);
    if (!s.has_rank) {
      // Labels of an unranked input say nothing about sizes.
      for (int l : term) {
        if (l == kEllipsis) {
          ell_known = false;
        } else if (!label_seen[static_cast<size_t>(l)]) {
          label_seen[static_cast<size_t>(l)] = true;
          label_dim[static_cast<size_t>(l)] = ir::Dim();
        }
      }
      continue;
    }
    KILN_ASSIGN_OR_RETURN(const int64_t er, ellipsis_rank(ctx.node(), i, term, s.rank()));
    size_t axis = 0;
    for (int l : term) {
      if (l == kEllipsis) {
        ir::SymShape part(std::vector<ir::Dim>(s.dims.begin() + static_cast<int64_t>(axis),
                                               s.dims.begin() + static_cast<int64_t>(axis) + er));
        auto merged = broadcast_shapes(ell, part);
        if (!merged.ok())
          return ctx.error("the '...' axes of input " + std::to_string(i) + " " + s.to_string() +
                           " do not broadcast with the other inputs'");
        ell = std::move(merged).value();
        axis += static_cast<size_t>(er);
        continue;
      }
      const ir::Dim& d = s.dims[axis++];
      const size_t li = static_cast<size_t>(l);
      if (!label_seen[li]) {
        label_seen[li] = true;
        label_dim[li] = d;
        continue;
      }
      auto merged = broadcast_dim(label_dim[li], d);
      if (!merged.ok())
        return ctx.error("label '" + std::string(1, static_cast<char>(l)) + "' has sizes " +
                         label_dim[li].to_string() + " and " + d.to_string() + " (input " + std::to_string(i) + " " +
                         s.to_string() + ")");
      label_dim[li] = std::move(merged).value();
    }
  }
  std::vector<ir::Dim> out;
  for (int l : e.output) {
    if (l != kEllipsis) {
      out.push_back(label_dim[static_cast<size_t>(l)]);
    } else if (!ell_known) {
      ctx.set_output(0, dt, ir::SymShape::unranked());
      return ok_status();
    } else {
      out.insert(out.end(), ell.dims.begin(), ell.dims.end());
    }
  }
  ctx.set_output(0, dt, ir::SymShape(std::move(out)));
  return ok_status();
}

namespace {

template <typename T>
double as_f64(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<double>(v);
  }
}

// The loop nest: axes with sizes, and per input the element stride of each
// axis (0 where the input lacks or broadcasts the axis; summed strides for
// a repeated label, which walks the diagonal).
struct EinsumPlan {
  std::vector<int64_t> sizes;                 // output axes first, then summed axes
  size_t num_out_axes = 0;
  std::vector<std::vector<int64_t>> strides;  // [input][axis]
};

StatusOr<EinsumPlan> make_plan(const KernelContext& ctx, const Equation& e, const Shape& out_shape) {
  // Sizes of labels and of the broadcast '...' axes.
  std::array<int64_t, 256> label_size;
  label_size.fill(-1);
  Shape ell;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const Shape& s = ctx.input(i).shape();
    KILN_ASSIGN_OR_RETURN(const int64_t er, ellipsis_rank(ctx.node(), i, e.inputs[i], static_cast<int64_t>(s.size())));
    size_t axis = 0;
    for (int l : e.inputs[i]) {
      if (l == kEllipsis) {
        KILN_ASSIGN_OR_RETURN(ell, broadcast_shapes(ell, Shape(s.begin() + static_cast<int64_t>(axis),
                                                               s.begin() + static_cast<int64_t>(axis) + er)));
        axis += static_cast<size_t>(er);
        continue;
      }
      int64_t& size = label_size[static_cast<size_t>(l)];
      const int64_t d = s[axis++];
      if (size < 0 || size == 1) size = d;
    }
  }
  EinsumPlan plan;
  // Axis ids: '...' axes are 256 + j, labels their char.
  std::vector<int> axes;
  for (int l : e.output) {
    if (l == kEllipsis) {
      for (size_t j = 0; j < ell.size(); ++j) axes.push_back(256 + static_cast<int>(j));
    } else {
      axes.push_back(l);
    }
  }
  plan.num_out_axes = axes.size();
  const bool out_has_ellipsis = std::find(e.output.begin(), e.output.end(), kEllipsis) != e.output.end();
  if (!out_has_ellipsis)
    for (size_t j = 0; j < ell.size(); ++j) axes.push_back(256 + static_cast<int>(j));
  for (int l = 0; l < 256; ++l)
    if (label_size[static_cast<size_t>(l)] >= 0 && std::find(axes.begin(), axes.end(), l) == axes.end())
      axes.push_back(l);
  for (int a : axes)
    plan.sizes.push_back(a >= 256 ? ell[static_cast<size_t>(a - 256)] : label_size[static_cast<size_t>(a)]);
  if (plan.num_out_axes != out_shape.size())
    return internal_error(ctx.node().describe() + ": einsum output rank disagrees with shape inference");

  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const Shape& s = ctx.input(i).shape();
    const std::vector<int64_t> in_strides = shape_strides(s);
    std::vector<int64_t> st(axes.size(), 0);
    const int64_t er = static_cast<int64_t>(s.size()) - static_cast<int64_t>(e.inputs[i].size()) + 1;
    size_t axis = 0;
    for (int l : e.inputs[i]) {
      if (l == kEllipsis) {
        // Right-aligned onto the broadcast '...' axes.
        for (int64_t j = 0; j < er; ++j, ++axis) {
          const int id = 256 + static_cast<int>(static_cast<int64_t>(ell.size()) - er + j);
          const size_t pos = static_cast<size_t>(std::find(axes.begin(), axes.end(), id) - axes.begin());
          if (s[axis] != 1) st[pos] += in_strides[axis];
        }
        continue;
      }
      const size_t pos = static_cast<size_t>(std::find(axes.begin(), axes.end(), l) - axes.begin());
      if (s[axis] != 1) st[pos] += in_strides[axis];
      ++axis;
    }
    plan.strides.push_back(std::move(st));
  }
  return plan;
}

template <typename T>
void run_einsum(const EinsumPlan& plan, const std::vector<const T*>& in, T* out) {
  const size_t n_axes = plan.sizes.size(), n_in = in.size();
  int64_t out_count = 1, sum_count = 1;
  for (size_t a = 0; a < n_axes; ++a) (a < plan.num_out_axes ? out_count : sum_count) *= plan.sizes[a];
  std::vector<int64_t> counter(n_axes, 0), offset(n_in, 0);
  // Advances the odometer over axes [first, last), wrapping to all zeros.
  auto step = [&](size_t first, size_t last) {
    for (size_t a = last; a-- > first;) {
      for (size_t i = 0; i < n_in; ++i) offset[i] += plan.strides[i][a];
      if (++counter[a] < plan.sizes[a]) return;
      for (size_t i = 0; i < n_in; ++i) offset[i] -= plan.strides[i][a] * counter[a];
      counter[a] = 0;
    }
  };
  for (int64_t o = 0; o < out_count; ++o) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Half>) {
      double acc = 0.0;
      for (int64_t s = 0; s < sum_count; ++s) {
        double p = 1.0;
        for (size_t i = 0; i < n_in; ++i) p *= as_f64(in[i][offset[i]]);
        acc += p;
        step(plan.num_out_axes, n_axes);
      }
      if constexpr (std::is_same_v<T, Half>) {
        out[o] = Half(static_cast<float>(acc));
      } else {
        out[o] = static_cast<T>(acc);
      }
    } else {
      uint64_t acc = 0;
      for (int64_t s = 0; s < sum_count; ++s) {
        uint64_t p = 1;
        for (size_t i = 0; i < n_in; ++i) p *= static_cast<uint64_t>(in[i][offset[i]]);
        acc += p;
        step(plan.num_out_axes, n_axes);
      }
      out[o] = static_cast<T>(acc);
    }
    step(0, plan.num_out_axes);
  }
}

}  // namespace

Status einsum_kernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(const Equation e, parse_equation(ctx.node(), ctx.num_inputs()));
  KILN_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0));
  KILN_ASSIGN_OR_RETURN(const EinsumPlan plan, make_plan(ctx, e, y->shape()));
  if (y->numel() == 0) return ok_status();
  bool done = visit_dtype(y->dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      std::vector<const T*> in;
      for (size_t i = 0; i < ctx.num_inputs(); ++i) in.push_back(ctx.input(i).data<T>());
      run_einsum<T>(plan, in, y->data<T>());
    }
  });
  if (!done) return ctx.error("unsupported dtype");
  return ok_status();
}

}  // namespace kiln::ops

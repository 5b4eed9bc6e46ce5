// Index views: composition, compilation to a coordinate program, and its
// host evaluation and GLSL text (see index_view.h).
#include "planner/index_view.h"

#include <algorithm>
#include <bit>
#include <numeric>

#include "planner/lower_util.h"
#include "planner/lowering.h"

namespace kiln::planner {

using ir::Dim;

namespace {

bool is_one(const Dim& d) { return d.is_const() && d.value() == 1; }

// Rank 0 is seen as shape [1], as the accessors see it.
std::vector<Dim> norm(const std::vector<Dim>& s) { return s.empty() ? std::vector<Dim>{Dim(1)} : s; }

Dim product(const std::vector<Dim>& s, size_t begin, size_t end) {
  Dim p(1);
  for (size_t k = begin; k < end; ++k) p = p * s[k];
  return p;
}

bool power_of_two(const Dim& d) { return d.is_const() && d.value() > 0 && std::has_single_bit(static_cast<uint64_t>(d.value())); }

class Compiler {
 public:
  CoordProgram run(const IndexView& view) {
    const std::vector<Dim> shape = norm(view.shape);
    p_.view_rank = shape.size();
    std::vector<int> cur;
    for (size_t k = 0; k < shape.size(); ++k) cur.push_back(push({CoordOp::Kind::kCoord, -1, -1, 0, static_cast<int>(k)}));
    for (auto it = view.steps.rbegin(); it != view.steps.rend(); ++it) cur = step(*it, cur);
    p_.outputs = cur;
    return std::move(p_);
  }

 private:
  int push(CoordOp op) {
    p_.ops.push_back(op);
    return static_cast<int>(p_.ops.size() - 1);
  }
  bool is_const(int r, int64_t v) const { return p_.ops[r].kind == CoordOp::Kind::kConst && p_.ops[r].value == v; }
  int konst(int64_t v) {
    for (size_t i = 0; i < p_.ops.size(); ++i)
      if (is_const(static_cast<int>(i), v)) return static_cast<int>(i);
    return push({CoordOp::Kind::kConst, -1, -1, v, 0});
  }
  // A dim as a register: 0 and 1 literally, anything else a parameter (a
  // specialization or push constant), so that the text does not depend on
  // the shape's values.
  int dim(const Dim& d) {
    if (d.is_const() && (d.value() == 0 || d.value() == 1)) return konst(d.value());
    size_t j = 0;
    while (j < p_.params.size() && !p_.params[j].same_as(d)) ++j;
    if (j == p_.params.size()) p_.params.push_back(d);
    for (size_t i = 0; i < p_.ops.size(); ++i)
      if (p_.ops[i].kind == CoordOp::Kind::kParam && p_.ops[i].index == static_cast<int>(j)) return static_cast<int>(i);
    return push({CoordOp::Kind::kParam, -1, -1, 0, static_cast<int>(j)});
  }
  int add(int a, int b) {
    if (is_const(a, 0)) return b;
    if (is_const(b, 0)) return a;
    return push({CoordOp::Kind::kAdd, a, b});
  }
  int mul(int a, int b) {
    if (is_const(a, 0) || is_const(b, 0)) return konst(0);
    if (is_const(a, 1)) return b;
    if (is_const(b, 1)) return a;
    return push({CoordOp::Kind::kMul, a, b});
  }
  int div(int a, const Dim& d) {
    if (is_one(d) || is_const(a, 0)) return a;
    if (power_of_two(d)) return push({CoordOp::Kind::kShr, a, dim(Dim(std::countr_zero(static_cast<uint64_t>(d.value()))))});
    return push({CoordOp::Kind::kDiv, a, dim(d)});
  }
  // a mod n for 0 <= a < 2n.
  int wrap(int a, const Dim& d) {
    if (power_of_two(d)) return push({CoordOp::Kind::kAnd, a, dim(Dim(d.value() - 1))});
    return push({CoordOp::Kind::kWrap, a, dim(d)});
  }
  int mod(int a, const Dim& d) {
    if (is_one(d) || is_const(a, 0)) return konst(0);
    if (power_of_two(d)) return push({CoordOp::Kind::kAnd, a, dim(Dim(d.value() - 1))});
    return push({CoordOp::Kind::kMod, a, dim(d)});
  }

  std::vector<int> step(const ViewStep& s, const std::vector<int>& out) {
    const std::vector<Dim> in_shape = norm(s.in_shape), out_shape = norm(s.out_shape);
    std::vector<int> in(in_shape.size(), -1);
    switch (s.kind) {
      case ViewStep::Kind::kTranspose:
        if (s.perm.empty()) return out;
        for (size_t k = 0; k < s.perm.size(); ++k) in[static_cast<size_t>(s.perm[k])] = out[k];
        return in;
      case ViewStep::Kind::kSlice:
        for (size_t k = 0; k < in.size(); ++k) {
          const int64_t st = k < s.steps.size() ? s.steps[k] : 1;
          const Dim start = k < s.starts.size() ? s.starts[k] : Dim(0);
          in[k] = add(dim(start), mul(out[k], konst(st)));
        }
        return in;
      case ViewStep::Kind::kRotate:
        for (size_t k = 0; k < in.size(); ++k) {
          const bool rotated = k < s.starts.size() && !(s.starts[k].is_const() && s.starts[k].value() == 0);
          in[k] = rotated ? wrap(add(out[k], dim(s.starts[k])), in_shape[k]) : out[k];
        }
        return in;
      case ViewStep::Kind::kBroadcast: {
        const size_t off = out.size() - in.size();
        for (size_t k = 0; k < in.size(); ++k) in[k] = is_one(in_shape[k]) ? konst(0) : out[k + off];
        return in;
      }
      case ViewStep::Kind::kReshape: return reshape(in_shape, out_shape, out);
    }
    return in;
  }

  // Split the non-unit axes of both sides into the smallest consecutive
  // groups of equal extent products; each group maps on its own.
  std::vector<int> reshape(const std::vector<Dim>& a, const std::vector<Dim>& b, const std::vector<int>& out) {
    std::vector<size_t> ia, ib;  // non-unit axes of the input and the output
    for (size_t k = 0; k < a.size(); ++k)
      if (!is_one(a[k])) ia.push_back(k);
    for (size_t k = 0; k < b.size(); ++k)
      if (!is_one(b[k])) ib.push_back(k);
    std::vector<Dim> av, bv;
    for (size_t k : ia) av.push_back(a[k]);
    for (size_t k : ib) bv.push_back(b[k]);
    std::vector<std::pair<std::pair<size_t, size_t>, std::pair<size_t, size_t>>> groups;
    size_t i = 0, j = 0;
    while (i < av.size() && j < bv.size()) {
      size_t gi = av.size(), gj = bv.size();
      bool found = false;
      const size_t most = (av.size() - i) + (bv.size() - j);
      for (size_t total = 2; total <= most && !found; ++total)
        for (size_t di = 1; di < total && !found; ++di) {
          const size_t dj = total - di;
          if (i + di > av.size() || j + dj > bv.size()) continue;
          if (product(av, i, i + di).same_as(product(bv, j, j + dj))) gi = i + di, gj = j + dj, found = true;
        }
      groups.push_back({{i, gi}, {j, gj}});
      i = gi, j = gj;
    }
    if (i != av.size() || j != bv.size()) {
      // Groups matched on one side only (extents the plan cannot compare):
      // one group over everything is always right.
      groups.clear();
      if (!av.empty() || !bv.empty()) groups.push_back({{0, av.size()}, {0, bv.size()}});
    }
    std::vector<int> in(a.size(), -1);
    for (size_t k = 0; k < a.size(); ++k)
      if (is_one(a[k])) in[k] = konst(0);
    for (const auto& [ga, gb] : groups) {
      // The group's linear index over the output axes (a merge when the
      // input side is one axis)...
      int lin = gb.first < gb.second ? out[ib[gb.first]] : konst(0);
      for (size_t q = gb.first + 1; q < gb.second; ++q) lin = add(mul(lin, dim(bv[q])), out[ib[q]]);
      // ...decomposed over the input axes (a split when the output side is one).
      for (size_t q = ga.second; q-- > ga.first;) {
        if (q == ga.first) {
          in[ia[q]] = lin;
        } else {
          in[ia[q]] = mod(lin, av[q]);
          lin = div(lin, av[q]);
        }
      }
    }
    for (int& r : in)
      if (r < 0) r = konst(0);  // a group with no input axes (all ones)
    return in;
  }

  CoordProgram p_;
};

}  // namespace

IndexView IndexView::identity(std::vector<Dim> shape) {
  IndexView v;
  v.source_shape = shape;
  v.shape = std::move(shape);
  return v;
}

void IndexView::transpose(const std::vector<int>& perm) {
  bool identity = true;
  for (size_t k = 0; k < perm.size(); ++k) identity = identity && perm[k] == static_cast<int>(k);
  std::vector<Dim> out;
  for (int p : perm) out.push_back(shape[static_cast<size_t>(p)]);
  if (identity) return;
  if (!steps.empty() && steps.back().kind == ViewStep::Kind::kTranspose) {
    // out2[k] = out1[p2[k]] = in1[p1[p2[k]]].
    ViewStep& last = steps.back();
    std::vector<int> composed;
    for (int p : perm) composed.push_back(last.perm[static_cast<size_t>(p)]);
    last.perm = composed;
    last.out_shape = out;
    shape = out;
    bool id = true;
    for (size_t k = 0; k < composed.size(); ++k) id = id && composed[k] == static_cast<int>(k);
    if (id) steps.pop_back();
    return;
  }
  ViewStep s;
  s.kind = ViewStep::Kind::kTranspose;
  s.in_shape = shape;
  s.out_shape = out;
  s.perm = perm;
  steps.push_back(std::move(s));
  shape = std::move(out);
}

void IndexView::reshape(std::vector<Dim> new_shape) {
  if (same_shape(new_shape, shape)) return;
  if (!steps.empty() && steps.back().kind == ViewStep::Kind::kReshape) {
    // A reshape of a reshape is one reshape (both row-major).
    steps.back().out_shape = new_shape;
    if (same_shape(steps.back().in_shape, new_shape)) steps.pop_back();
    shape = std::move(new_shape);
    return;
  }
  ViewStep s;
  s.kind = ViewStep::Kind::kReshape;
  s.in_shape = shape;
  s.out_shape = new_shape;
  steps.push_back(std::move(s));
  shape = std::move(new_shape);
}

void IndexView::slice(std::vector<Dim> starts, std::vector<int64_t> step_sizes, std::vector<Dim> new_shape) {
  ViewStep s;
  s.kind = ViewStep::Kind::kSlice;
  s.in_shape = shape;
  s.out_shape = new_shape;
  s.starts = std::move(starts);
  s.steps = std::move(step_sizes);
  steps.push_back(std::move(s));
  shape = std::move(new_shape);
}

void IndexView::broadcast(std::vector<Dim> new_shape) {
  if (same_shape(new_shape, shape)) return;
  ViewStep s;
  s.kind = ViewStep::Kind::kBroadcast;
  s.in_shape = shape;
  s.out_shape = new_shape;
  steps.push_back(std::move(s));
  shape = std::move(new_shape);
}

void IndexView::rotate(int axis, int64_t shift) {
  ViewStep s;
  s.kind = ViewStep::Kind::kRotate;
  s.in_shape = shape;
  s.out_shape = shape;
  s.starts.assign(shape.size(), Dim(0));
  s.starts[static_cast<size_t>(axis)] = Dim(shift);
  steps.push_back(std::move(s));
}

void IndexView::append(const IndexView& next) {
  for (const ViewStep& st : next.steps) {
    if (st.kind == ViewStep::Kind::kTranspose) {
      transpose(st.perm);
    } else if (st.kind == ViewStep::Kind::kReshape) {
      reshape(st.out_shape);
    } else {
      steps.push_back(st);
      shape = st.out_shape;
    }
  }
}

namespace {

// The product of the constant extents of dims[from..] that follow the last
// symbolic one (a suffix of trailing axes is a contiguous block too).
int64_t trailing_block(const std::vector<ir::Dim>& dims, size_t from) {
  int64_t p = 1;
  for (size_t k = dims.size(); k-- > from;) {
    if (!dims[k].is_const()) break;
    p *= dims[k].value();
  }
  return p;
}

}  // namespace

int64_t contiguous_run(const IndexView& view) {
  int64_t run = trailing_block(view.shape, 0);
  for (auto step = view.steps.rbegin(); step != view.steps.rend() && run > 1; ++step) {
    const std::vector<ir::Dim>& out = step->out_shape;
    size_t first = 0;  // the first of the trailing axes the step leaves alone
    switch (step->kind) {
      case ViewStep::Kind::kReshape:
        continue;
      case ViewStep::Kind::kTranspose:
        first = out.size();
        while (first > 0 && step->perm[first - 1] == static_cast<int>(first - 1)) --first;
        break;
      case ViewStep::Kind::kSlice:
      case ViewStep::Kind::kRotate: {
        for (size_t k = 0; k < out.size(); ++k) {
          const bool touched = step->kind == ViewStep::Kind::kRotate
                                   ? !(step->starts[k].is_const() && step->starts[k].value() == 0)
                                   : !(step->starts[k].is_const() && step->starts[k].value() == 0 &&
                                       step->steps[k] == 1 && out[k].same_as(step->in_shape[k]));
          if (touched) first = k + 1;
        }
        // A slice of steps 1 along its last touched axis k with constant
        // extents keeps runs across k too: blocks of P * gcd(out_k, start_k,
        // in_k) elements, P the product of the axes after k.
        const size_t k = first - 1;
        const int64_t p = trailing_block(out, first);
        if (step->kind == ViewStep::Kind::kSlice && first > 0 && step->steps[k] == 1 && out[k].is_const() &&
            step->in_shape[k].is_const() && step->starts[k].is_const() &&
            std::all_of(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
                        [](const ir::Dim& d) { return d.is_const(); })) {
          const int64_t g = std::gcd(std::gcd(out[k].value(), step->starts[k].value()), step->in_shape[k].value());
          run = std::gcd(run, p * g);
          continue;
        }
        break;
      }
      case ViewStep::Kind::kBroadcast:
        for (size_t k = 0; k < out.size(); ++k)
          if (!out[k].same_as(step->in_shape[k])) first = k + 1;
        break;
    }
    run = std::gcd(run, trailing_block(out, first));
  }
  return std::max<int64_t>(run, 1);
}

std::string IndexView::describe() const {
  std::string out;
  for (const ViewStep& s : steps) {
    const char* name = s.kind == ViewStep::Kind::kTranspose ? "transpose"
                       : s.kind == ViewStep::Kind::kReshape ? "reshape"
                       : s.kind == ViewStep::Kind::kSlice   ? "slice"
                       : s.kind == ViewStep::Kind::kRotate  ? "roll"
                                                            : "expand";
    out += (out.empty() ? "" : "_") + std::string(name);
  }
  return out.empty() ? "identity" : out;
}

bool is_view_op(const std::string& domain, const std::string& op) {
  if (!domain.empty()) return false;
  for (const char* v : {"Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Slice", "Expand", "Gather",
                        "DepthToSpace", "SpaceToDepth"})
    if (op == v) return true;
  return false;
}

namespace {

// The part [begin, end) of its input that a Slice node producing `v` keeps
// along its one axis (steps 1, constant bounds normalized into [0, n], a
// static extent n).
struct AxisRange {
  ir::ValueId data = ir::kNoValue;
  int64_t axis = 0, begin = 0, end = 0, extent = 0;
};

std::optional<AxisRange> axis_range(const ir::Graph& g, ir::ValueId v) {
  const ir::NodeId p = g.value(v).producer;
  if (p == ir::kNoNode) return std::nullopt;
  const ir::Node& s = g.node(p);
  if (s.erased || !s.domain.empty() || s.op != "Slice" || s.inputs.size() < 3 || s.inputs[0] == ir::kNoValue)
    return std::nullopt;
  const auto one = [&](size_t i) -> std::optional<int64_t> {
    if (i >= s.inputs.size() || s.inputs[i] == ir::kNoValue) return std::nullopt;
    const ir::Value& c = g.value(s.inputs[i]);
    if (!c.is_constant() || !dtype_is_integer(c.constant.dtype()) || c.constant.numel() != 1 || c.constant.rank() != 1)
      return std::nullopt;
    return c.constant.to_i64_vector()[0];
  };
  const auto start = one(1), end = one(2);
  const auto axis = s.inputs.size() > 3 && s.inputs[3] != ir::kNoValue ? one(3) : std::optional<int64_t>(0);
  const auto step = s.inputs.size() > 4 && s.inputs[4] != ir::kNoValue ? one(4) : std::optional<int64_t>(1);
  const ir::SymShape& x = g.value(s.inputs[0]).shape;
  if (!start || !end || !axis || !step || *step != 1 || !x.has_rank) return std::nullopt;
  const auto a = normalize_axis(*axis, x.rank());
  if (!a || !x.dims[static_cast<size_t>(*a)].is_const()) return std::nullopt;
  const int64_t n = x.dims[static_cast<size_t>(*a)].value();
  const auto clamp = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  return AxisRange{s.inputs[0], *a, clamp(*start), clamp(*end), n};
}

}  // namespace

std::optional<Roll> roll_of(const ir::Graph& graph, const ir::Node& concat) {
  if (!concat.domain.empty() || concat.op != "Concat" || concat.inputs.size() != 2 || concat.outputs.size() != 1 ||
      concat.inputs[0] == ir::kNoValue || concat.inputs[1] == ir::kNoValue)
    return std::nullopt;
  const auto a = axis_range(graph, concat.inputs[0]), b = axis_range(graph, concat.inputs[1]);
  if (!a || !b || a->data != b->data || a->axis != b->axis) return std::nullopt;
  const auto axis = normalize_axis(concat.attr_int("axis", 0), graph.value(a->data).shape.rank());
  if (!axis || *axis != a->axis) return std::nullopt;
  // [s, n) then [0, s).
  if (a->end != a->extent || b->begin != 0 || a->begin != b->end || a->begin <= 0 || a->begin >= a->extent)
    return std::nullopt;
  return Roll{a->data, static_cast<int>(a->axis), a->begin};
}

bool is_view_node(const ir::Graph& graph, const ir::Node& node) {
  if (roll_of(graph, node)) return true;
  if (!is_view_op(node.domain, node.op)) return false;
  if (node.op != "Gather") return true;
  if (node.inputs.size() != 2 || node.inputs[1] == ir::kNoValue) return false;
  const ir::Value& index = graph.value(node.inputs[1]);
  return index.is_constant() && index.constant.numel() == 1 && dtype_is_integer(index.constant.dtype()) &&
         index.constant.rank() <= 1;
}

namespace {

// DepthToSpace and SpaceToDepth as ONNX defines them: a reshape that splits
// the blocks out of an axis, a transpose that moves them, a reshape that
// merges them into the others. Composed so, the view compiles to split and
// merge maps (a shift and a mask per block index for a power-of-two
// blocksize) and merges with reshapes and transposes around it.
Status append_depth_space(IndexView& view, LoweringContext& ctx, const std::vector<Dim>& in,
                          const std::vector<Dim>& out) {
  const ir::Node& node = ctx.node();
  const int64_t b = node.attr_int("blocksize", 0);
  if (b <= 0) return ctx.error("blocksize must be positive, got " + std::to_string(b));
  if (in.size() != 4 || out.size() != 4) return ctx.error("input must be 4-D [N,C,H,W]");
  const Dim block(b);
  if (node.op == "SpaceToDepth") {
    // [N, C, H/b, b, W/b, b] -> [N, b, b, C, H/b, W/b].
    view.reshape({in[0], in[1], out[2], block, out[3], block});
    view.transpose({0, 3, 5, 1, 2, 4});
  } else {
    const std::string mode = node.attr_string("mode", "DCR");
    if (mode == "DCR") {
      // [N, b, b, C/b^2, H, W] -> [N, C/b^2, H, b, W, b].
      view.reshape({in[0], block, block, out[1], in[2], in[3]});
      view.transpose({0, 3, 4, 1, 5, 2});
    } else if (mode == "CRD") {
      // [N, C/b^2, b, b, H, W] -> [N, C/b^2, H, b, W, b].
      view.reshape({in[0], out[1], block, block, in[2], in[3]});
      view.transpose({0, 1, 4, 2, 5, 3});
    } else {
      return ctx.error("mode must be DCR or CRD, got '" + mode + "'");
    }
  }
  view.reshape(out);
  return ok_status();
}

}  // namespace

Status append_view_node(IndexView& view, LoweringContext& ctx) {
  const ir::Node& node = ctx.node();
  const auto refuse = [&](const std::string& why) {
    return unimplemented(node.describe() + " cannot be read through an index view: " + why);
  };
  if (!is_view_op(node.domain, node.op)) return refuse("it is not a data-movement op");
  if (ctx.num_outputs() != 1 || !ctx.has_output(0) || !ctx.has_input(0)) return ctx.error("a view op has one input and one output");
  const std::vector<Dim>& in = ctx.input_shape(0);
  const std::vector<Dim>& out = ctx.output_shape(0);
  if (!same_shape(in, view.shape)) return ctx.error("the input's shape is not the view's");
  const std::string& op = node.op;
  if (op == "Transpose") {
    const size_t rank = in.size();
    std::vector<int64_t> perm = node.attr_ints("perm");
    if (!node.attr("perm"))
      for (size_t k = 0; k < rank; ++k) perm.push_back(static_cast<int64_t>(rank - 1 - k));
    if (perm.size() != rank) return ctx.error("perm does not match the input's rank");
    std::vector<int> p;
    std::vector<bool> seen(rank, false);
    for (int64_t x : perm) {
      if (x < 0 || x >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(x)]) return ctx.error("perm is not a permutation");
      seen[static_cast<size_t>(x)] = true;
      p.push_back(static_cast<int>(x));
    }
    view.transpose(p);
  } else if (op == "Slice") {
    const auto rank = static_cast<int64_t>(in.size());
    auto starts = ctx.input_dims_value(1);
    if (!starts) return refuse("its starts are not known at plan time");
    std::vector<int64_t> axes, steps(starts->size(), 1);
    if (ctx.has_input(3)) {
      auto a = constant_ints(ctx, 3);
      if (!a) return refuse("its axes are not constants");
      axes = *a;
    } else {
      for (size_t i = 0; i < starts->size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    if (ctx.has_input(4)) {
      auto s = constant_ints(ctx, 4);
      if (!s) return refuse("its steps are not constants");
      steps = *s;
    }
    if (axes.size() != starts->size() || steps.size() != starts->size())
      return ctx.error("starts, axes and steps differ in length");
    std::vector<Dim> first(in.size(), Dim(0));
    std::vector<int64_t> step(in.size(), 1);
    for (size_t i = 0; i < axes.size(); ++i) {
      auto a = normalize_axis(axes[i], rank);
      if (!a) return ctx.error("axis " + std::to_string(axes[i]) + " is out of range");
      if (steps[i] == 0) return ctx.error("steps must be non-zero");
      const auto k = static_cast<size_t>(*a);
      // |step| beyond the dim reads one element; clamping keeps the literal valid.
      step[k] = std::clamp<int64_t>(steps[i], -(int64_t{1} << 30), int64_t{1} << 30);
      first[k] = slice_start((*starts)[i], steps[i], in[k]);
    }
    view.slice(std::move(first), std::move(step), out);
  } else if (op == "Gather") {
    // A one-element index is a Slice of one element along the axis, then
    // (a scalar index) the axis squeezed away.
    const Tensor* index = ctx.input_constant(1);
    if (!index || index->numel() != 1 || !dtype_is_integer(index->dtype()) || index->rank() > 1)
      return refuse("its indices are not a constant of one element");
    auto axis = normalize_axis(node.attr_int("axis", 0), static_cast<int64_t>(in.size()));
    if (!axis) return ctx.error("axis is out of range");
    const auto a = static_cast<size_t>(*axis);
    int64_t i = index->get_i64(0);
    if (i < 0) {
      if (!in[a].is_const()) return refuse("a negative index into the symbolic axis " + in[a].to_string());
      i += in[a].value();
    }
    if (i < 0 || (in[a].is_const() && i >= in[a].value()))
      return refuse("index " + std::to_string(index->get_i64(0)) + " is outside the axis");
    std::vector<Dim> first(in.size(), Dim(0)), one = in;
    one[a] = Dim(1);
    first[a] = Dim(i);
    view.slice(std::move(first), std::vector<int64_t>(in.size(), 1), one);
    view.reshape(out);
  } else if (op == "Expand") {
    if (out.size() < in.size()) return ctx.error("Expand's output has a lower rank than its input");
    const size_t off = out.size() - in.size();
    for (size_t k = 0; k < in.size(); ++k)
      if (!is_one(in[k]) && !in[k].same_as(out[k + off]))
        return refuse("dim " + std::to_string(k) + " (" + in[k].to_string() +
                               ") may or may not be broadcast");
    view.broadcast(out);
  } else if (op == "DepthToSpace" || op == "SpaceToDepth") {
    KILN_RETURN_IF_ERROR(append_depth_space(view, ctx, in, out));
  } else {
    view.reshape(out);  // Reshape, Flatten, Squeeze, Unsqueeze, Identity: row-major order kept
  }
  return ok_status();
}

CoordProgram compile_view(const IndexView& view) { return Compiler().run(view); }

StatusOr<std::vector<int64_t>> evaluate_coord_program(const CoordProgram& program, const std::vector<int64_t>& coords,
                                                      const std::map<std::string, int64_t>& bindings) {
  std::vector<int64_t> params;
  for (const Dim& d : program.params) {
    auto v = d.evaluate(bindings);
    if (!v) return invalid_argument("index view parameter " + d.to_string() + " is not bound");
    params.push_back(*v);
  }
  std::vector<int64_t> r(program.ops.size(), 0);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const CoordOp& op = program.ops[i];
    const int64_t a = op.a >= 0 ? r[static_cast<size_t>(op.a)] : 0, b = op.b >= 0 ? r[static_cast<size_t>(op.b)] : 0;
    switch (op.kind) {
      case CoordOp::Kind::kCoord:
        if (static_cast<size_t>(op.index) >= coords.size()) return invalid_argument("too few view coordinates");
        r[i] = coords[static_cast<size_t>(op.index)];
        break;
      case CoordOp::Kind::kConst: r[i] = op.value; break;
      case CoordOp::Kind::kParam: r[i] = params[static_cast<size_t>(op.index)]; break;
      case CoordOp::Kind::kAdd: r[i] = a + b; break;
      case CoordOp::Kind::kMul: r[i] = a * b; break;
      case CoordOp::Kind::kDiv:
      case CoordOp::Kind::kMod:
        if (b == 0) return invalid_argument("index view divides by zero");
        r[i] = op.kind == CoordOp::Kind::kDiv ? a / b : a % b;
        break;
      case CoordOp::Kind::kShr: r[i] = a >> b; break;
      case CoordOp::Kind::kAnd: r[i] = a & b; break;
      case CoordOp::Kind::kWrap: r[i] = a < b ? a : a - b; break;
    }
  }
  std::vector<int64_t> out;
  for (int o : program.outputs) out.push_back(r[static_cast<size_t>(o)]);
  return out;
}

std::string coord_program_glsl(const CoordProgram& program, const std::vector<std::string>& param_names,
                               std::vector<std::string>* source_coords) {
  std::vector<std::string> name(program.ops.size());
  std::string s;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const CoordOp& op = program.ops[i];
    const std::string a = op.a >= 0 ? name[static_cast<size_t>(op.a)] : "", b = op.b >= 0 ? name[static_cast<size_t>(op.b)] : "";
    std::string e;
    switch (op.kind) {
      case CoordOp::Kind::kCoord: name[i] = "c" + std::to_string(op.index); continue;
      case CoordOp::Kind::kConst: name[i] = glsl_int(op.value); continue;
      case CoordOp::Kind::kParam: name[i] = param_names[static_cast<size_t>(op.index)]; continue;
      case CoordOp::Kind::kAdd: e = a + " + " + b; break;
      case CoordOp::Kind::kMul: e = a + " * " + b; break;
      case CoordOp::Kind::kDiv: e = a + " / " + b; break;
      case CoordOp::Kind::kMod: e = a + " % " + b; break;
      case CoordOp::Kind::kShr: e = a + " >> " + b; break;
      case CoordOp::Kind::kAnd: e = a + " & " + b; break;
      case CoordOp::Kind::kWrap: e = a + " < " + b + " ? " + a + " : " + a + " - " + b; break;
    }
    name[i] = "r" + std::to_string(i);
    s += "  int " + name[i] + " = " + e + ";\n";
  }
  source_coords->clear();
  for (int o : program.outputs) source_coords->push_back(name[static_cast<size_t>(o)]);
  return s;
}

}  // namespace kiln::planner

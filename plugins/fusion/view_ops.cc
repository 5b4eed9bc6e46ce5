// Which nodes the planner reads through an index view (see view_ops.h).
#include "plugins/fusion/view_ops.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string>

namespace kiln_fusion {

using kiln::plugin::GraphView;

bool is_view_op(const GraphView& g, kiln_node_id_t n) {
  static const std::set<std::string> kViews = {"Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                               "Identity",  "Slice",   "Expand",  "Gather",  "Concat",
                                               "DepthToSpace", "SpaceToDepth"};
  auto info = g.node(n);
  return info && info->domain.empty() && kViews.count(info->op) > 0;
}

bool reads_only_dims(const GraphView& g, kiln_node_id_t n) {
  auto info = g.node(n);
  return info && info->domain.empty() && (info->op == "Shape" || info->op == "Size");
}

std::optional<std::vector<int64_t>> constant_ints(const GraphView& g, kiln_value_id_t v) {
  if (v == KILN_NO_ID) return std::nullopt;
  auto info = g.value(v);
  if (!info || !info->is_constant) return std::nullopt;
  size_t bytes = 0;
  const void* data = g.constant_data(v, &bytes);
  if (!data && bytes != 0) return std::nullopt;
  std::vector<int64_t> out;
  if (info->dtype == KILN_PLUGIN_DTYPE_INT64) {
    out.resize(bytes / sizeof(int64_t));
    if (!out.empty()) std::memcpy(out.data(), data, out.size() * sizeof(int64_t));
  } else if (info->dtype == KILN_PLUGIN_DTYPE_INT32) {
    std::vector<int32_t> narrow(bytes / sizeof(int32_t));
    if (!narrow.empty()) std::memcpy(narrow.data(), data, narrow.size() * sizeof(int32_t));
    out.assign(narrow.begin(), narrow.end());
  } else {
    return std::nullopt;
  }
  return out;
}

bool gather_is_view(const GraphView& g, kiln_node_id_t n) {
  const auto in = g.inputs(n);
  if (in.size() != 2 || in[0] == KILN_NO_ID || in[1] == KILN_NO_ID) return false;
  auto index = g.value(in[1]);
  const auto values = constant_ints(g, in[1]);
  const auto shape = g.static_shape(in[0]);
  if (!index || index->rank > 1 || !values || values->size() != 1 || !shape) return false;
  const int64_t rank = static_cast<int64_t>(shape->size());
  int64_t axis = g.attr_int(n, "axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  const int64_t extent = (*shape)[static_cast<size_t>(axis)];
  return (*values)[0] >= -extent && (*values)[0] < extent;
}

namespace {

// The part [begin, end) of x that the Slice producing `v` keeps along its
// one axis, bounds normalized into [0, extent] as Slice does.
struct AxisRange {
  kiln_value_id_t data = KILN_NO_ID;
  int64_t axis = 0, begin = 0, end = 0, extent = 0;
};

std::optional<AxisRange> axis_range(const GraphView& g, kiln_value_id_t v) {
  auto vi = g.value(v);
  if (!vi || vi->producer == KILN_NO_ID) return std::nullopt;
  auto info = g.node(vi->producer);
  const auto s = g.inputs(vi->producer);
  if (!info || !info->domain.empty() || info->op != "Slice" || s.size() < 3 || s[0] == KILN_NO_ID ||
      s[1] == KILN_NO_ID || s[2] == KILN_NO_ID)
    return std::nullopt;
  const auto one = [&](size_t i, int64_t fallback) -> std::optional<int64_t> {
    if (i >= s.size() || s[i] == KILN_NO_ID) return fallback;
    auto c = constant_ints(g, s[i]);
    if (!c || c->size() != 1) return std::nullopt;
    return (*c)[0];
  };
  const auto start = one(1, 0), end = one(2, 0), axis = one(3, 0), step = one(4, 1);
  const auto shape = g.static_shape(s[0]);
  if (!start || !end || !axis || !step || *step != 1 || !shape) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(shape->size());
  const int64_t a = *axis < 0 ? *axis + rank : *axis;
  if (a < 0 || a >= rank) return std::nullopt;
  const int64_t extent = (*shape)[static_cast<size_t>(a)];
  const auto clamp = [extent](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + extent : i, 0, extent); };
  return AxisRange{s[0], a, clamp(*start), clamp(*end), extent};
}

}  // namespace

bool is_roll(const GraphView& g, kiln_node_id_t n) {
  auto info = g.node(n);
  const auto in = g.inputs(n);
  if (!info || !info->domain.empty() || info->op != "Concat" || in.size() != 2 || in[0] == KILN_NO_ID ||
      in[1] == KILN_NO_ID)
    return false;
  const auto a = axis_range(g, in[0]), b = axis_range(g, in[1]);
  if (!a || !b || a->data != b->data || a->axis != b->axis) return false;
  const int64_t rank = static_cast<int64_t>(g.static_shape(a->data)->size());
  int64_t axis = g.attr_int(n, "axis", 0);
  if (axis < 0) axis += rank;
  // [s, n) then [0, s).
  return axis == a->axis && a->end == a->extent && b->begin == 0 && a->begin == b->end && a->begin > 0 &&
         a->begin < a->extent;
}

}  // namespace kiln_fusion

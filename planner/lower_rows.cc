// Workgroup-per-row kernel pieces (see lower_rows.h). This file registers no
// lowering; it is compiled with the lower_*.cc families it serves.
#include "planner/lower_rows.h"

#include <algorithm>

#include "planner/dispatch_grid.h"
#include "planner/glsl_codegen.h"
#include "planner/shader_template.h"

namespace kiln::planner::rows {
namespace {

std::string dim(const std::string& t, size_t k) { return t + "_D" + std::to_string(k); }

// The extent GLSL iterates for axis k: in blocks of four on the lane axis.
std::string extent(const RowSpace& s, const std::string& t, size_t k) {
  return s.blocked(k) ? "((" + dim(t, k) + " + 3) >> 2)" : dim(t, k);
}

ir::Dim blocked_dim(const ir::Dim& d) { return ir::Dim::ceil_div(d, ir::Dim(4)); }

}  // namespace

int vec_axis(const KernelTensor& t) {
  if (t.layout.storage == Storage::kImage) return t.layout.packed_axis;
  return std::max<int>(1, static_cast<int>(t.shape.size())) - 1;
}

ir::Dim RowSpace::groups() const {
  ir::Dim n(1);
  for (size_t k = 0; k < shape.size(); ++k)
    if (!region[k]) n = n * (blocked(k) ? blocked_dim(shape[k]) : shape[k]);
  return n;
}

ir::Dim RowSpace::items() const {
  ir::Dim n(1);
  for (size_t k = 0; k < shape.size(); ++k)
    if (region[k]) n = n * (blocked(k) ? blocked_dim(shape[k]) : shape[k]);
  return n;
}

ir::Dim RowSpace::row_size() const {
  ir::Dim n(1);
  for (size_t k = 0; k < shape.size(); ++k)
    if (region[k]) n = n * shape[k];
  return n;
}

std::string coords(size_t rank, const std::string& prefix) {
  std::string out;
  for (size_t k = 0; k < std::max<size_t>(rank, 1); ++k) out += (k ? ", " : "") + prefix + std::to_string(k);
  return out;
}

std::string group_coords(const RowSpace& s, const std::string& t) {
  std::string out = "  int kiln_r = kiln_group;\n";
  for (size_t k = s.shape.size(); k-- > 0;) {
    if (s.region[k]) continue;
    const std::string e = extent(s, t, k);
    out += "  int g" + std::to_string(k) + " = kiln_r % " + e + "; kiln_r /= " + e + ";\n";
  }
  if (s.lane_axis >= 0 && !s.lanes_in_row()) out += "  g" + std::to_string(s.lane_axis) + " *= 4;\n";
  return out;
}

std::string item_coords(const RowSpace& s, const std::string& t, const std::string& item) {
  std::string out = "    int kiln_q = " + item + ";\n";
  for (size_t k = s.shape.size(); k-- > 0;) {
    if (!s.region[k]) continue;
    const std::string e = extent(s, t, k);
    out += "    int c" + std::to_string(k) + " = kiln_q % " + e + "; kiln_q /= " + e + ";\n";
  }
  if (s.lanes_in_row()) out += "    c" + std::to_string(s.lane_axis) + " *= 4;\n";
  for (size_t k = 0; k < s.shape.size(); ++k)
    if (!s.region[k]) out += "    int c" + std::to_string(k) + " = g" + std::to_string(k) + ";\n";
  return out;
}

std::string load4_helper(const KernelTensor& x, int lane_axis, const std::string& fn) {
  const size_t rank = std::max<size_t>(1, x.shape.size());
  const std::string S = glsl_scalar(x.layout.type);
  const std::string V = glsl_vec4(x.layout.type);
  std::string params;
  for (size_t k = 0; k < rank; ++k) params += (k ? ", int c" : "int c") + std::to_string(k);
  std::string out = V + " kiln_" + fn + "(" + params + ") {\n";
  const std::string at = x.name + "_at(";
  if (lane_axis < 0) {
    out += "  return " + V + "(" + at + coords(rank) + "), " + S + "(0), " + S + "(0), " + S + "(0));\n";
  } else if (vec_axis(x) == lane_axis) {
    out += "  return " + x.name + "_load4(" + coords(rank) + ");\n";
  } else {
    // Lanes along an axis that is not the tensor's vector axis: one load each.
    const std::string l = std::to_string(lane_axis);
    out += "  int m = " + x.name + "_D" + l + " - c" + l + ";\n";
    auto lane = [&](int d) {
      std::string args;
      for (size_t k = 0; k < rank; ++k) {
        args += k ? ", " : "";
        args += "c" + std::to_string(k);
        if (static_cast<int>(k) == lane_axis && d > 0) args += " + " + std::to_string(d);
      }
      return at + args + ")";
    };
    out += "  return " + V + "(" + lane(0) + ", m > 1 ? " + lane(1) + " : " + S + "(0), m > 2 ? " + lane(2) + " : " +
           S + "(0), m > 3 ? " + lane(3) + " : " + S + "(0));\n";
  }
  out += "}\n";
  return out;
}

std::string lane_ok(const RowSpace& s, const std::string& t) {
  if (!s.lanes_in_row()) return "bvec4(true)";
  const std::string l = std::to_string(s.lane_axis);
  return "lessThan(ivec4(c" + l + ") + ivec4(0, 1, 2, 3), ivec4(" + t + "_D" + l + "))";
}

std::string minmax_helpers(bool integer) {
  return fill_shader("rows_minmax.glsl", ShaderArgs().flag("INTEGER", integer));
}

std::vector<std::string> subgroup_extensions() {
  return {"GL_KHR_shader_subgroup_basic", "GL_KHR_shader_subgroup_arithmetic"};
}

std::string workgroup_helpers(const std::vector<Combine>& combines, bool integer, uint32_t local, bool subgroups) {
  const std::string V = integer ? "ivec4" : "vec4";
  std::string out = "shared " + V + " kiln_red[" + std::to_string(local) + "];\n";
  for (Combine c : combines) {
    std::string name, op, sg;
    switch (c) {
      case Combine::kSum: name = "sum", op = "a + b", sg = "subgroupAdd"; break;
      case Combine::kProd: name = "prod", op = "a * b", sg = "subgroupMul"; break;
      case Combine::kMax: name = "max", op = "kiln_max4(a, b)", sg = "subgroupMax"; break;
      case Combine::kMin: name = "min", op = "kiln_min4(a, b)", sg = "subgroupMin"; break;
    }
    // Subgroup max/min leave NaN implementation-defined; it is carried explicitly.
    const bool nan_carry = !integer && (c == Combine::kMax || c == Combine::kMin);
    out += fill_shader("rows_workgroup.glsl", ShaderArgs()
                                                  .set("V", V)
                                                  .set("NAME", name)
                                                  .set("OP", op)
                                                  .set("SG_OP", sg)
                                                  .set("HALF", local / 2)
                                                  .flag("SUBGROUPS", subgroups)
                                                  .flag("NAN_CARRY", nan_carry));
  }
  return out;
}

std::string arg_reduce(bool integer, uint32_t local) {
  return fill_shader("rows_arg_reduce.glsl", ShaderArgs().set("V", integer ? "ivec4" : "vec4").set("HALF", local / 2));
}

uint32_t choose_local_size(const ir::Dim& items, const TargetInfo& target) {
  uint32_t local = 128;
  if (items.is_const()) {
    const int64_t half = (std::max<int64_t>(items.value(), 1) + 1) / 2;
    local = 32;
    while (local < 256 && local < half) local *= 2;
  }
  while (local > 1 && local > target.max_workgroup_invocations) local /= 2;
  return local;
}

KernelDesc row_kernel(std::string name, const RowSpace& s, uint32_t local, const TargetInfo& target) {
  KernelDesc d;
  d.name = std::move(name);
  d.family = KernelDesc::Family::kCustom;
  d.local_size = {local, 1, 1};
  const ir::Dim groups = s.groups();
  d.groups = dispatch_grid_2d(groups, target.max_workgroup_count_x);
  d.params.push_back({"KILN_GROUPS", groups});
  d.params.push_back({"KILN_ITEMS", s.items()});
  d.params.push_back({"KILN_ROW", s.row_size()});
  return d;
}

std::string row_main(const RowSpace& s, const std::string& t, const std::string& body) {
  return fill_shader("rows_main.comp", ShaderArgs().set("GROUP_COORDS", group_coords(s, t)).set("BODY", body));
}

std::string item_loop(const RowSpace& s, const std::string& t, uint32_t local) {
  return "  for (int kiln_j = kiln_tid; kiln_j < KILN_ITEMS; kiln_j += " + std::to_string(local) + ") {\n" +
         item_coords(s, t, "kiln_j");
}

int cached_items(const RowSpace& s, uint32_t local) {
  const ir::Dim items = s.items();
  if (!items.is_const() || local == 0) return 0;
  const int64_t per_invocation = (items.value() + local - 1) / local;
  return per_invocation <= kMaxCachedItems ? static_cast<int>(per_invocation) : 0;
}

std::string cached_item_loop(const RowSpace& s, const std::string& t, uint32_t local, int cached) {
  return "  for (int kiln_k = 0; kiln_k < " + std::to_string(cached) + "; ++kiln_k) {\n"
         "    int kiln_j = kiln_tid + kiln_k * " + std::to_string(local) + ";\n"
         "    if (kiln_j >= KILN_ITEMS) break;\n" +
         item_coords(s, t, "kiln_j");
}

}  // namespace kiln::planner::rows

// GLSL-text helpers shared by the lowerings (see lower_util.h).
#include "planner/lower_util.h"

#include <cctype>

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <limits>

namespace kiln::planner {

std::string glsl_float(double v) {
  const float f = static_cast<float>(v);
  if (std::isnan(f)) return "uintBitsToFloat(0x7fc00000u)";
  if (std::isinf(f)) return f > 0 ? "uintBitsToFloat(0x7f800000u)" : "uintBitsToFloat(0xff800000u)";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(f));
  std::string s(buf);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string glsl_int(int64_t v) {
  constexpr int64_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (v <= kMin) return "(-2147483647 - 1)";
  if (v > kMax) v = kMax;
  return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v);
}

std::string coord_list(size_t rank, std::string_view prefix) {
  std::string s;
  for (size_t k = 0; k < std::max<size_t>(rank, 1); ++k) {
    if (k) s += ", ";
    s += std::string(prefix) + std::to_string(k);
  }
  return s;
}

std::vector<std::string> row_major_coords(const std::string& t, size_t first, size_t count, const std::string& index) {
  std::vector<std::string> coords(count);
  std::string inner;  // the extents of the axes after axis i
  for (size_t i = count; i-- > 0;) {
    const std::string d = t + "_D" + std::to_string(first + i);
    coords[i] = inner.empty() ? index : "(" + index + " / (" + inner + "))";
    if (i > 0) coords[i] += " % " + d;
    inner = inner.empty() ? d : inner + " * " + d;
  }
  return coords;
}

std::string join_args(const std::vector<std::string>& args) {
  std::string s;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i) s += ", ";
    s += args[i];
  }
  return s;
}

std::vector<std::string> broadcast_coords(std::string_view name, const std::vector<ir::Dim>& in,
                                          const std::vector<ir::Dim>& out) {
  if (in.empty()) return {"0"};
  std::vector<std::string> c;
  const size_t lead = out.size() >= in.size() ? out.size() - in.size() : 0;
  for (size_t k = 0; k < in.size(); ++k) {
    const size_t j = k + lead;
    const std::string oc = "oc" + std::to_string(j);
    const ir::Dim& d = in[k];
    if (j >= out.size() || (d.is_const() && d.value() == 1)) {
      c.push_back("0");
    } else if (d.same_as(out[j])) {
      c.push_back(oc);
    } else {
      c.push_back("(" + std::string(name) + "_D" + std::to_string(k) + " == 1 ? 0 : " + oc + ")");
    }
  }
  return c;
}

bool same_shape(const std::vector<ir::Dim>& a, const std::vector<ir::Dim>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!a[k].same_as(b[k])) return false;
  return true;
}

std::string broadcast_load(const KernelTensor& t, const std::vector<ir::Dim>& out) {
  if (t.layout.storage == Storage::kBuffer && same_shape(t.shape, out)) return t.name + "_ld(oi)";
  return t.name + "_at(" + join_args(broadcast_coords(t.name, t.shape, out)) + ")";
}

ir::Dim slice_start(const ir::Dim& start, int64_t step, const ir::Dim& dim) {
  using ir::Dim;
  if (!start.is_const()) return step > 0 ? start : Dim::min(start, dim - Dim(1));
  const int64_t v = start.value();
  if (v < 0) {
    if (dim.is_const()) return Dim(std::max<int64_t>(dim.value() + v, 0));
    return Dim::max(dim + Dim(v), Dim(0));
  }
  if (step > 0) return Dim(std::min<int64_t>(v, std::numeric_limits<int32_t>::max()));
  if (dim.is_const()) return Dim(std::min<int64_t>(v, dim.value() - 1));
  return Dim::min(Dim(std::min<int64_t>(v, std::numeric_limits<int32_t>::max())), dim - Dim(1));
}

std::optional<std::vector<int64_t>> constant_ints(const LoweringContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  if (const Tensor* t = ctx.input_constant(i)) {
    if (!dtype_is_integer(t->dtype())) return std::nullopt;
    return t->to_i64_vector();
  }
  auto dims = ctx.input_dims_value(i);
  if (!dims) return std::nullopt;
  std::vector<int64_t> out;
  for (const ir::Dim& d : *dims) {
    if (!d.is_const()) return std::nullopt;
    out.push_back(d.value());
  }
  return out;
}

StatusOr<std::vector<int64_t>> host_ints(const HostParamInputs& in, size_t i, std::string_view what) {
  if (i >= in.values.size()) return std::vector<int64_t>{};
  const Tensor* t = in.values[i];
  if (!t) return internal_error(std::string(what) + " is not on the host");
  if (!dtype_is_integer(t->dtype())) return invalid_argument(std::string(what) + " must be integers");
  return t->to_i64_vector();
}

bool inputs_on_host(const LoweringContext& ctx, size_t first, size_t last) {
  for (size_t i = first; i <= last; ++i)
    if (ctx.has_input(i) && !ctx.input_on_host(i)) return false;
  return true;
}

std::optional<int64_t> normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

KernelDesc map_kernel(std::string name, std::vector<KernelTensor> tensors, std::string body, std::string helpers) {
  KernelDesc d;
  d.name = std::move(name);
  d.family = KernelDesc::Family::kMap;
  d.tensors = std::move(tensors);
  d.body = "{\n" + body + "\n}";
  d.helpers = std::move(helpers);
  return d;
}

bool glsl_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string find_tensor_identifier(const std::string& text, const std::string& name,
                                   const std::function<bool(const std::string& suffix)>& match) {
  const std::string prefix = name + "_";
  for (size_t i = 0; i < text.size();) {
    if (!glsl_ident_char(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && glsl_ident_char(text[j])) ++j;
    const std::string token = text.substr(i, j - i);
    i = j;
    if (token.compare(0, prefix.size(), prefix) == 0 && match(token.substr(prefix.size()))) return token;
  }
  return {};
}

void erase_all(std::string& s, const std::string& what) {
  if (what.empty()) return;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at)) s.erase(at, what.size());
}

std::string lower_case(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace kiln::planner

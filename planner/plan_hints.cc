// Planner hooks read from annotations (see plan_hints.h).
#include "planner/plan_hints.h"

#include <cctype>
#include <charconv>
#include <string_view>
#include <vector>

namespace kiln::planner {
namespace {

std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    const size_t at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) break;
    s.remove_prefix(at + 1);
  }
  return out;
}

bool one_of(int v, std::initializer_list<int> allowed) {
  for (int a : allowed)
    if (v == a) return true;
  return false;
}

}  // namespace

StatusOr<StorageHint> storage_hint(const ir::Value& value) {
  StorageHint hint;
  const std::string what = "value '" + value.name + "'";
  if (auto it = value.annotations.find(kStorageKey); it != value.annotations.end()) {
    if (it->second == "buffer") hint.storage = Storage::kBuffer;
    else if (it->second == "image") hint.storage = Storage::kImage;
    else return invalid_argument(what + ": " + kStorageKey + " must be buffer or image, got '" + it->second + "'");
  }
  if (auto it = value.annotations.find(kPackedAxisKey); it != value.annotations.end()) {
    const std::optional<int> axis = parse_int(it->second);
    const int rank = value.shape.has_rank ? static_cast<int>(value.shape.rank()) : -1;
    if (!axis || *axis < 0 || (rank >= 0 && *axis >= rank))
      return invalid_argument(what + ": " + kPackedAxisKey + " '" + it->second + "' is not an axis of its rank " +
                              std::to_string(rank));
    hint.packed_axis = *axis;
  }
  return hint;
}

StatusOr<KernelHint> kernel_hint(const ir::Node& node) {
  KernelHint hint;
  auto it = node.annotations.find(kKernelKey);
  if (it == node.annotations.end()) return hint;
  const auto bad = [&](const std::string& why) {
    return invalid_argument(node.describe() + ": " + kKernelKey + " '" + it->second + "': " + why);
  };
  for (std::string_view item : split(it->second, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return bad("expected key=value items");
    const std::string_view key = item.substr(0, eq), val = item.substr(eq + 1);
    if (key == "tile") {
      const auto mn = split(val, 'x');
      const std::optional<int> m = mn.size() == 2 ? parse_int(mn[0]) : std::nullopt;
      const std::optional<int> n = mn.size() == 2 ? parse_int(mn[1]) : std::nullopt;
      if (!m || !n || !one_of(*m, {16, 32, 64, 128}) || !one_of(*n, {16, 32, 64}) || (*m == 128 && *n != 64))
        return bad("tile must be MxN with M in 16, 32, 64 (or 128x64) and N in 16, 32, 64");
      hint.tile_m = *m;
      hint.tile_n = *n;
    } else if (key == "split_k") {
      const std::optional<int> k = parse_int(val);
      if (!k || *k < 1 || *k > 16) return bad("split_k must be 1 to 16");
      hint.split_k = *k;
    } else if (key == "splitk_reduce") {
      if (val == "separate") {
        hint.splitk_reduce = SplitKReduce::kSeparate;
      } else if (val == "fused") {
        hint.splitk_reduce = SplitKReduce::kFused;
      } else if (val == "atomic") {
        hint.splitk_reduce = SplitKReduce::kAtomic;
      } else {
        return bad("splitk_reduce must be separate, fused or atomic");
      }
    } else if (key == "coopmat") {
      if (val != "on" && val != "off") return bad("coopmat must be on or off");
      hint.coopmat = val == "on";
    } else if (key == "int8_dot") {
      if (val != "on" && val != "off") return bad("int8_dot must be on or off");
      hint.int8_dot = val == "on";
    } else if (key == "attention_rows") {
      const std::optional<int> rows = parse_int(val);
      if (!rows || !one_of(*rows, {8, 16, 32, 64})) return bad("attention_rows must be 8, 16, 32 or 64");
      hint.attention_rows = *rows;
    } else if (key == "gemv_columns") {
      const std::optional<int> columns = parse_int(val);
      if (!columns || !one_of(*columns, {8, 16, 32})) return bad("gemv_columns must be 8, 16 or 32");
      hint.gemv_columns = *columns;
    } else {
      return bad("unknown key '" + std::string(key) +
                 "' (tile, split_k, splitk_reduce, coopmat, int8_dot, attention_rows, gemv_columns)");
    }
  }
  return hint;
}

StatusOr<std::optional<std::string>> fusion_group_hint(const ir::Node& node) {
  auto it = node.annotations.find(kFusionGroupKey);
  if (it == node.annotations.end()) return std::optional<std::string>();
  const std::string& id = it->second;
  bool valid = !id.empty() && id.size() <= 64;
  for (char c : id)
    valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':' || c == '-');
  if (!valid)
    return invalid_argument(node.describe() + ": " + kFusionGroupKey + " '" + id +
                            "' must be 1 to 64 letters, digits or _.:-");
  return std::optional<std::string>(id);
}

Status check_plan_hints(const ir::Graph& graph) {
  for (size_t i = 0; i < graph.num_values(); ++i)
    KILN_RETURN_IF_ERROR(storage_hint(graph.value(static_cast<ir::ValueId>(i))).status());
  for (size_t i = 0; i < graph.num_nodes(); ++i) {
    const ir::Node& node = graph.node(static_cast<ir::NodeId>(i));
    if (node.erased) continue;
    KILN_RETURN_IF_ERROR(kernel_hint(node).status());
    KILN_RETURN_IF_ERROR(fusion_group_hint(node).status());
  }
  return ok_status();
}

}  // namespace kiln::planner

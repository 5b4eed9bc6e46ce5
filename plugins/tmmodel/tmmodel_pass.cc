// The in-tree 'kiln.tmmodel' plugin: the `tmmodel` pass chooses the tile of
// every tiled GEMM (MatMul, Gemm, Conv lowered as a GEMM) with TMModel's
// analytic model (gemm_choice.h) from the device's profile, and records it
// as the node annotation kiln.kernel = "tile=BMxBN" (planner/plan_hints.h),
// which the planner honours. Opt in with --passes ...,tmmodel; without the
// pass the planner's own tiles apply (the ablation).
//
// The profile: $KILN_TMMODEL_PROFILE names a file (a bad one is an error
// naming it); otherwise the newest profile `kiln tune` cached for this
// device (model.h: profile_directory). Without one the pass changes nothing
// and says so (statistic profile-missing, and a log line).
//
// $KILN_TMMODEL_TILE=BMxBN (one of the menu) puts that tile on every GEMM
// instead, profile or not: the exhaustive baseline (exhaustive.py) times
// each tile this way.
//
// Left alone: nodes that already carry a kiln.kernel annotation (a user's
// or another pass's choice), GEMVs (M <= 4: no tiles), depthwise Convs (a
// map kernel), and every GEMM on a device where the planner may use
// cooperative matrices (a tile hint selects the scalar kernel, and the
// tensor-core kernel is outside the model's space).
//
// Written against the plugin ABI only; built as a loadable shared library.
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/kiln_plugin.hpp"
#include "plugins/tmmodel/gemm_choice.h"
#include "plugins/tmmodel/model.h"

namespace {

using kiln::plugin::GraphView;
using kiln::plugin::Rewriter;
namespace tm = kiln::tmmodel;

constexpr int64_t kBatchHint = 1;   // as plugins/memplan: batch-like symbols
constexpr int64_t kOtherHint = 64;  // every other symbol

struct LoadedProfile {
  std::optional<tm::Profile> profile;
  std::string path;
};

std::string read_text(const std::string& path, bool* ok) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  *ok = static_cast<bool>(f) || f.eof();
  return s.str();
}

// The newest cached profile for `device` (any driver and Kiln version: the
// file name carries both, and a stale one is still a better guess than none).
std::string cached_profile_path(const std::string& device) {
  const std::string dir = tm::profile_directory();
  if (dir.empty()) return {};
  const std::string prefix = tm::sanitized(device) + "-drv";
  std::error_code ec;
  std::string best;
  std::filesystem::file_time_type newest{};
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.size() < 5 || name.substr(name.size() - 5) != ".json") continue;
    const auto t = entry.last_write_time(ec);
    if (ec) continue;
    if (best.empty() || t > newest) best = entry.path().string(), newest = t;
  }
  return best;
}

class TmmodelPass : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    const std::optional<kiln_target_info_t> target = g.target_info();
    const std::optional<tm::GemmTile> forced = forced_tile();
    const LoadedProfile loaded = forced ? LoadedProfile{tm::Profile{}, "KILN_TMMODEL_TILE"} : load(target, rw);
    if (!loaded.profile) return;
    const tm::Profile& profile = *loaded.profile;
    if (!forced && target && profile.device_name != target->device_name) {
      rw.log(KILN_LOG_WARNING, "tmmodel: the profile " + loaded.path + " is for '" + profile.device_name +
                                   "', not this device ('" + target->device_name + "'); using it as given");
    }
    const bool coopmat = target && target->cooperative_matrix == 1;
    const uint32_t max_invocations = target ? target->max_workgroup_invocations : 0;
    const uint64_t shared = target ? target->shared_memory_bytes : 0;
    hints_ = batch_hints(g);
    for (kiln_node_id_t n : g.nodes(0)) {
      auto shape = gemm_shape(g, n);
      if (!shape) continue;
      rw.add_statistic("gemm-nodes", 1);
      if (shape->m <= 4) continue;  // a GEMV: no tiles to choose
      if (g.node_annotation(n, KILN_ANNOTATION_KERNEL)) {
        rw.add_statistic("kept-existing", 1);
        continue;
      }
      if (coopmat) {
        rw.add_statistic("skipped-coopmat-device", 1);
        continue;
      }
      tm::GemmChoice choice;
      if (forced) {
        const bool fits = (max_invocations == 0 || uint32_t(tm::tile_invocations(*forced)) <= max_invocations) &&
                          (shared == 0 || uint64_t(tm::tile_shared_bytes(*forced)) <= shared);
        choice = {*forced, 0, fits};
      } else {
        choice = tm::choose_gemm_tile(profile, *shape, max_invocations, shared);
      }
      if (!choice.ok) continue;
      rw.annotate_node(n, KILN_ANNOTATION_KERNEL,
                       "tile=" + std::to_string(choice.tile.bm) + "x" + std::to_string(choice.tile.bn));
      rw.add_statistic("annotated", 1);
      const std::string tile_stat = "tile-" + std::to_string(choice.tile.bm) + "x" + std::to_string(choice.tile.bn);
      rw.add_statistic(tile_stat.c_str(), 1);
    }
  }

 private:
  // $KILN_TMMODEL_TILE; an entry outside the menu is an error naming it.
  static std::optional<tm::GemmTile> forced_tile() {
    const char* env = std::getenv("KILN_TMMODEL_TILE");
    if (env == nullptr || *env == '\0') return std::nullopt;
    for (tm::GemmTile t : tm::kGemmTiles)
      if (std::to_string(t.bm) + "x" + std::to_string(t.bn) == env) return t;
    std::string menu;
    for (tm::GemmTile t : tm::kGemmTiles) menu += (menu.empty() ? "" : ", ") + std::to_string(t.bm) + "x" + std::to_string(t.bn);
    throw kiln::plugin::Error("tmmodel: KILN_TMMODEL_TILE='" + std::string(env) + "' is not a tile of the menu (" + menu + ")",
                              KILN_PLUGIN_INVALID_ARGUMENT);
  }

  LoadedProfile load(const std::optional<kiln_target_info_t>& target, Rewriter& rw) {
    LoadedProfile out;
    const char* env = std::getenv("KILN_TMMODEL_PROFILE");
    const bool explicit_path = env != nullptr && *env != '\0';
    out.path = explicit_path ? env : (target ? cached_profile_path(target->device_name) : std::string());
    if (out.path.empty()) {
      rw.add_statistic("profile-missing", 1);
      rw.log(KILN_LOG_INFO, std::string("tmmodel: no device profile (set KILN_TMMODEL_PROFILE or run `kiln tune`") +
                                (target ? " on '" + std::string(target->device_name) + "'" : "") +
                                "); kernel configurations left to the planner");
      return out;
    }
    bool ok = false;
    const std::string text = read_text(out.path, &ok);
    std::string error = "cannot be read";
    if (ok) out.profile = tm::parse_profile(text, &error);
    if (!out.profile) {
      const std::string message = "tmmodel: the profile " + out.path + " is not usable: " + error;
      if (explicit_path) throw kiln::plugin::Error(message + " (KILN_TMMODEL_PROFILE)", KILN_PLUGIN_INVALID_ARGUMENT);
      rw.add_statistic("profile-invalid", 1);
      rw.log(KILN_LOG_WARNING, message + "; kernel configurations left to the planner (run `kiln tune` again)");
    } else {
      rw.add_statistic("profile-loaded", 1);
    }
    return out;
  }

  static std::map<std::string, int64_t> batch_hints(const GraphView& g) {
    std::map<std::string, int64_t> hints;
    for (kiln_value_id_t in : g.region_inputs(0)) {
      auto dims = g.shape(in);
      if (dims && dims->size() >= 2 && !(*dims)[0].is_const && !(*dims)[0].is_unknown) hints[(*dims)[0].expr] = kBatchHint;
    }
    return hints;
  }

  std::optional<std::vector<int64_t>> extents(const GraphView& g, kiln_value_id_t v) const {
    if (v == KILN_NO_ID) return std::nullopt;
    auto dims = g.shape(v);
    if (!dims) return std::nullopt;
    std::vector<int64_t> out;
    for (const kiln::plugin::Dim& d : *dims) {
      if (d.is_const) out.push_back(d.value);
      else if (d.is_unknown) out.push_back(kOtherHint);
      else if (auto e = kiln::plugin::DimExpr::parse(d.expr)) out.push_back(e->evaluate(hints_, kOtherHint).value_or(kOtherHint));
      else out.push_back(hints_.count(d.expr) ? hints_.at(d.expr) : kOtherHint);
    }
    return out;
  }

  // M, N, K and batch as the planner's lowerings form them (lower_linalg.cc,
  // lower_conv.cc); nullopt for other nodes and unknown ranks.
  std::optional<tm::GemmShape> gemm_shape(const GraphView& g, kiln_node_id_t n) const {
    auto info = g.node(n);
    if (!info || !info->domain.empty()) return std::nullopt;
    const std::vector<kiln_value_id_t> in = g.inputs(n), out = g.outputs(n);
    if (in.size() < 2 || out.empty()) return std::nullopt;
    auto a = extents(g, in[0]), b = extents(g, in[1]), y = extents(g, out[0]);
    if (!a || !b || !y) return std::nullopt;
    tm::GemmShape s;
    if (info->op == "MatMul" && a->size() >= 2 && b->size() >= 2 && y->size() >= 2) {  // 1-D operands: GEMVs
      s.m = (*y)[y->size() - 2];
      s.n = y->back();
      s.k = a->back();
      for (size_t i = 0; i + 2 < y->size(); ++i) s.batch *= (*y)[i];
      return s;
    }
    if (info->op == "Gemm" && a->size() == 2 && y->size() == 2) {
      s.m = (*y)[0];
      s.n = (*y)[1];
      s.k = g.attr_int(n, "transA", 0) ? (*a)[0] : (*a)[1];
      return s;
    }
    if (info->op == "Conv" && b->size() >= 3 && y->size() >= 3) {
      const int64_t group = std::max<int64_t>(g.attr_int(n, "group", 1), 1);
      if ((*b)[1] == 1) return std::nullopt;  // one input channel per group: the depthwise map kernel
      s.batch = (*y)[0] * group;
      s.m = 1;
      for (size_t i = 2; i < y->size(); ++i) s.m *= (*y)[i];
      s.n = (*b)[0] / group;
      s.k = (*b)[1];
      for (size_t i = 2; i < b->size(); ++i) s.k *= (*b)[i];
      return s;
    }
    return std::nullopt;
  }

  std::map<std::string, int64_t> hints_;
};

TmmodelPass tmmodel_pass;

const kiln_pass_t kTmmodel = kiln::plugin::make_pass(
    tmmodel_pass, "tmmodel",
    "chooses GEMM tiles with TMModel's analytic model from the device profile of `kiln tune`; annotates kiln.kernel",
    KILN_FACT_SHAPES, 0, false, KILN_FACT_KERNEL_CONFIGS);

const kiln_pass_t* const kPasses[] = {&kTmmodel};
const kiln_plugin_t kPlugin = kiln::plugin::make_plugin("kiln.tmmodel", "1.0", kPasses, 1);

}  // namespace

KILN_PLUGIN_DEFINE_QUERY(kiln_plugin_query, kPlugin)

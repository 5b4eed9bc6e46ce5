// kiln.layout, pass `layout`: SmartMem's layout selection by reduction
// dimension and the per-tensor buffer/image choice (README.md,
// layout_policy.h). The pass only annotates float activations of the main
// graph with kiln.storage and kiln.packed_axis (planner/plan_hints.h), which
// the planner honours within the device's limits; the graph itself never
// changes, so the pass cannot change results. Layout-transform elimination
// by index maps is kiln.fusion's (plugins/fusion/README.md), not redone here.
//
// The session's storage option arrives through target_info (ABI 1.4):
// auto: storage and packed axis per tensor; image (forced): the packed axis
// only; buffer (forced): nothing. Without a device (`kiln graph`, the test
// runners that plan later) the packed axes only, as for image.
#include "plugins/layout/layout.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "kiln/kiln_plugin.hpp"
#include "plugins/layout/layout_policy.h"

namespace kiln_layout {
namespace {

using kiln::plugin::GraphView;
using kiln::plugin::Rewriter;

// The dtypes an image can hold (f64 stays a buffer).
bool is_float(int32_t dtype) { return dtype == KILN_PLUGIN_DTYPE_FLOAT32 || dtype == KILN_PLUGIN_DTYPE_FLOAT16; }

// Layout transforms that keep the element order (ILD-Fixed reorganize).
bool is_reshape(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
}

// Ops whose spatial axes a packing cannot serve (see wanted_axes): a short
// sliding window, or a global pool's whole extent — the pool reads every
// element once whatever the packing, and with the channels packed each
// texel feeds four of its outputs. Letting a global pool vote for a spatial
// axis cost efficientnet_b0 on lavapipe its texel depthwise kernels: the
// SiLU output its squeeze-excite pools was packed along H, and the
// depthwise convolutions producing it fell back from the texel kernel to
// scalar image reads (89 ms against 50 over 16 of them; session 20).
bool is_stencil(const std::string& op) {
  for (const char* s : {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool", "LpPool",
                        "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"})
    if (op == s) return true;
  return false;
}

// A Reduce* over exactly the spatial axes of an NCHW tensor is a global pool
// written out (shufflenet_v2's final ReduceMean over H and W) and counts as
// one: left to vote, it packed shufflenet's last convolution output along W,
// which that convolution cannot store to directly (a copy kernel followed).
bool is_global_reduce(const std::string& op, uint64_t reduction_axes, int rank) {
  return op.rfind("Reduce", 0) == 0 && rank == 4 && reduction_axes == 0b1100;
}

// Without a device (`kiln graph`, a pipeline run before a storage is
// chosen) only packed axes are chosen: the storage stays the planner's
// global option, and an image then uses the chosen axis.
Mode mode_of(const std::optional<kiln_target_info_t>& target) {
  if (!target) return Mode::kImage;
  if (target->storage_mode == KILN_STORAGE_MODE_BUFFER) return Mode::kBuffer;
  if (target->storage_mode == KILN_STORAGE_MODE_IMAGE) return Mode::kImage;
  return Mode::kAuto;
}

class Selector {
 public:
  Selector(GraphView& g, Rewriter& rw) : g_(g), rw_(rw) {
    const std::optional<kiln_target_info_t> target = g.target_info();
    device_.mode = mode_of(target);
    if (target) {
      device_.kind = device_kind(target->device_type);
      device_.max_image_dimension_2d = target->max_image_dimension_2d;
    }
  }

  void run() {
    if (device_.mode == Mode::kBuffer) {
      rw_.add_statistic("storage-forced-buffer", 1);
      return;
    }
    for (kiln_value_id_t v : g_.region_inputs()) io_.insert(v);
    for (kiln_value_id_t v : g_.region_outputs()) io_.insert(v);
    for (kiln_value_id_t v : g_.region_inputs()) decide(v, KILN_NO_ID);
    for (kiln_node_id_t n : g_.nodes())
      for (kiln_value_id_t v : g_.outputs(n)) decide(v, n);
    for (const auto& [key, count] : stats_) rw_.add_statistic(key.c_str(), count);
  }

 private:
  std::optional<TensorFacts> facts(kiln_value_id_t v, kiln_node_id_t producer) {
    const auto info = g_.value(v);
    if (!info || info->is_constant || !is_float(info->dtype) || info->rank < 1) return std::nullopt;
    const auto shape = g_.shape(v);
    if (!shape) return std::nullopt;
    TensorFacts t;
    t.rank = info->rank;
    t.is_float = true;
    t.graph_io = io_.count(v) > 0;
    for (const kiln::plugin::Dim& d : *shape) t.dims.push_back(d.is_const ? d.value : -1);
    std::vector<int> identity(static_cast<size_t>(t.rank));
    for (int a = 0; a < t.rank; ++a) identity[static_cast<size_t>(a)] = a;
    add_consumers(v, identity, 0, t);
    if (producer != KILN_NO_ID) {
      t.producer_packed_axis = producer_axis(producer, t.rank);
      t.producer_natural_axis = natural_axis(producer, t.rank);
    }
    return t;
  }

  // The readers of `v`, whose axis k is axis source_axis[k] of the tensor
  // decided (-1: none). Through a Transpose, a Reshape/Flatten/Squeeze/
  // Unsqueeze or a DepthToSpace/SpaceToDepth (kiln.fusion's index views, or
  // copy kernels; either way they read the tensor) the readers of their
  // output count, their axes mapped back through the perm, the reshape's
  // split and merge map (reshape_axis_map, static shapes only) or axis for
  // axis: SmartMem's layout selection looks through eliminated layout
  // transforms, up to four deep.
  void add_consumers(kiln_value_id_t v, const std::vector<int>& source_axis, int depth, TensorFacts& t) {
    constexpr int kMaxViews = 4;
    const int rank = static_cast<int>(source_axis.size());
    for (const kiln::plugin::Use& use : g_.uses(v)) {
      if (use.node == KILN_NO_ID) continue;
      const auto node = g_.node(use.node);
      if (!node) continue;
      if (node->domain.empty() && is_reshape(node->op) && depth < kMaxViews && use.index == 0) {
        // Each output axis reads along reshape_axis_map's input axis.
        const auto in = g_.static_shape(v);
        const std::vector<kiln_value_id_t> outs = g_.outputs(use.node);
        const auto out = outs.empty() ? std::nullopt : g_.static_shape(outs[0]);
        if (!in || !out || static_cast<int>(in->size()) != rank) continue;
        const std::vector<int> map = reshape_axis_map(*in, *out);
        if (map.empty()) continue;
        std::vector<int> mapped;
        for (int k : map) mapped.push_back(k < 0 ? -1 : source_axis[static_cast<size_t>(k)]);
        add_consumers(outs[0], mapped, depth + 1, t);
        continue;
      }
      if (node->domain.empty() && (node->op == "DepthToSpace" || node->op == "SpaceToDepth") && depth < kMaxViews &&
          rank == 4) {
        // Each output axis reads along the input axis of the same index: the
        // blocks move between channels and space, the axes keep their roles.
        for (kiln_value_id_t out : g_.outputs(use.node)) add_consumers(out, source_axis, depth + 1, t);
        continue;
      }
      if (node->domain.empty() && node->op == "Transpose" && depth < kMaxViews) {
        std::vector<int64_t> perm = g_.attr_ints(use.node, "perm");
        if (perm.empty())
          for (int a = rank - 1; a >= 0; --a) perm.push_back(a);
        if (static_cast<int>(perm.size()) != rank) continue;
        std::vector<int> mapped;
        for (int64_t p : perm) {
          if (p < 0 || p >= rank) break;
          mapped.push_back(source_axis[static_cast<size_t>(p)]);
        }
        if (static_cast<int>(mapped.size()) != rank) continue;
        for (kiln_value_id_t out : g_.outputs(use.node)) add_consumers(out, mapped, depth + 1, t);
        continue;
      }
      kiln_op_layout_t layout{};
      layout.struct_size = sizeof(layout);
      if (!g_.host()->op_layout(g_.raw(), use.node, use.index, &layout)) continue;
      const bool stencil =
          is_stencil(node->op) || (depth == 0 && is_global_reduce(node->op, layout.reduction_axes, rank));
      if (depth == 0) {
        t.consumers.push_back({layout.layout_class, layout.reduction_axes, stencil});
        continue;
      }
      // Only the channel bits of a stencil op count (wanted_axes); mapped
      // here, before the axes move.
      const uint64_t wanted = stencil ? layout.reduction_axes & uint64_t{0x3} : layout.reduction_axes;
      uint64_t axes = 0;
      for (int a = 0; a < rank && a < 64; ++a) {
        const int source = source_axis[static_cast<size_t>(a)];
        if (wanted >> a & 1 && source >= 0 && source < 64) axes |= uint64_t{1} << source;
      }
      t.consumers.push_back({layout.layout_class, axes, false});
      ++stats_["reads-through-views"];
    }
  }

  // The order a GEMM-lowered producer writes images in without a copy.
  std::optional<int> natural_axis(kiln_node_id_t producer, int rank) {
    const auto node = g_.node(producer);
    if (!node || !node->domain.empty()) return std::nullopt;
    if (node->op == "Conv" || node->op == "ConvTranspose") return rank >= 2 ? std::optional<int>(1) : std::nullopt;
    if (node->op == "MatMul" || node->op == "Gemm") return rank - 1;
    return std::nullopt;
  }

  // An elementwise producer passes on the packed axis of its first
  // activation input of the same rank that is an image.
  std::optional<int> producer_axis(kiln_node_id_t producer, int rank) {
    kiln_op_layout_t layout{};
    layout.struct_size = sizeof(layout);
    if (!g_.host()->op_layout(g_.raw(), producer, 0, &layout) ||
        layout.layout_class != KILN_LAYOUT_CLASS_ILI_VARIABLE)
      return std::nullopt;
    for (kiln_value_id_t in : g_.inputs(producer)) {
      auto it = chosen_.find(in);
      if (it != chosen_.end() && it->second.rank == rank && it->second.image) return it->second.axis;
    }
    return std::nullopt;
  }

  void decide(kiln_value_id_t v, kiln_node_id_t producer) {
    const std::optional<TensorFacts> t = facts(v, producer);
    if (!t) return;
    const PackChoice pack = choose_packed_axis(*t);
    const char* reasons[] = {"packed-by-reduction", "packed-by-producer", "packed-default"};
    if (pack.conflict) ++stats_["reduction-conflicts"];
    if (pack.overridden) ++stats_["producer-order-kept"];
    const int planner_default = t->rank == 4 ? 1 : t->rank - 1;
    bool image = true;
    if (device_.mode == Mode::kAuto) {
      const StorageChoice storage = choose_storage(*t, device_, pack.axis);
      image = storage.image;
      if (storage.reason == StorageReason::kGraphIo) ++stats_["graph-io-buffers"];
      if (storage.reason == StorageReason::kTooLarge) ++stats_["too-large-for-image"];
      if (storage.reason == StorageReason::kSymbolic) ++stats_["symbolic-kept-buffer"];
      rw_.annotate_value(v, KILN_ANNOTATION_STORAGE, image ? "image" : "buffer");
      if (!image) rw_.remove_value_annotation(v, KILN_ANNOTATION_PACKED_AXIS);
    } else if (!image_fits(t->dims, pack.axis, device_.max_image_dimension_2d)) {
      ++stats_["too-large-for-image"];  // forced image: the planner keeps it a buffer
      image = false;
    }
    ++stats_[image ? "tensors-image" : "tensors-buffer"];
    if (image || device_.mode == Mode::kImage) {
      rw_.annotate_value(v, KILN_ANNOTATION_PACKED_AXIS, std::to_string(pack.axis));
      ++stats_[reasons[static_cast<int>(pack.reason)]];
      if (pack.axis != planner_default) ++stats_["packed-not-planner-default"];
    }
    chosen_[v] = {t->rank, pack.axis, image};
  }

  struct Chosen {
    int rank = 0, axis = 0;
    bool image = false;
  };
  GraphView& g_;
  Rewriter& rw_;
  DeviceFacts device_;
  std::set<kiln_value_id_t> io_;
  std::map<kiln_value_id_t, Chosen> chosen_;
  std::map<std::string, int64_t> stats_;
};

class LayoutPass : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    if (!KILN_PLUGIN_HAS_FIELD(g.host(), kiln_host_api_t, op_layout) || !g.host()->op_layout ||
        !rw.can_remove_annotations())
      throw kiln::plugin::Error("kiln.layout needs a host of plugin ABI 1.4 or newer", KILN_PLUGIN_UNIMPLEMENTED);
    Selector(g, rw).run();
  }
};

LayoutPass layout_pass;
const kiln_pass_t kLayout = kiln::plugin::make_pass(
    layout_pass, "layout",
    "SmartMem layout selection: packed axis by the consumers' reduction dimensions, buffer or image per tensor "
    "(--storage auto): annotates kiln.storage and kiln.packed_axis",
    KILN_FACT_SHAPES, KILN_FACT_LAYOUTS, false, KILN_FACT_LAYOUTS);
const kiln_pass_t* const kPasses[] = {&kLayout};
const kiln_plugin_t kPlugin = kiln::plugin::make_plugin("kiln.layout", "1.0", kPasses, 1);

}  // namespace
}  // namespace kiln_layout

KILN_PLUGIN_DEFINE_QUERY(kiln_layout_plugin_query, kiln_layout::kPlugin)
#ifdef KILN_LAYOUT_SHARED
KILN_PLUGIN_DEFINE_QUERY(kiln_plugin_query, kiln_layout::kPlugin)
#endif

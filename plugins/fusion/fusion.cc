// The in-tree 'kiln.fusion' plugin: one pass, `fusion`, that partitions the
// main graph into fusion groups with AGO's weighted, cycle-free clustering
// (ago.txt Eq. 1, Definitions 2-3, Theorem 1, Algorithm 1) and keeps the
// groups the planner can run as one kernel, judged by DNNFusion's mapping
// types (the host's op registry, read through op_mapping, ABI 1.3):
//   (a) elementwise DAGs (one-to-one and broadcast ops) with one output;
//   (b) one many-to-many anchor (Conv, MatMul, Gemm, pooling, Reduce*,
//       Softmax, the normalizations) followed by elementwise nodes it feeds;
//   (c) FCM's DWPW: depthwise Conv -> elementwise -> 1x1 Conv -> elementwise,
//       when FusePlanner (fuse_planner.h) says fusing pays, with the
//       device's shared memory and compute units (target_info, ABI 1.3);
//   (d) attention, MatMul -> scale/mask -> Softmax -> MatMul, found before
//       the clustering, which then leaves its nodes alone (attention_pattern.h);
//   (e) an anchor (or a (b) group) whose output reaches elementwise nodes
//       through a Reshape/Transpose chain read only there: the anchor
//       stores through the chain (add_store_views);
//   (f) a MatMul/Gemm (or the (b) or (e) group it heads) -> LayerNorm of its
//       output over the last axis (add_row_norms);
//   (g) a (b) group of a 1x1 Conv whose first tail node adds the output of
//       another 1x1 Conv in no group (a projection shortcut): the second
//       conv joins, one GEMM over both convs' channels (add_conv_sums);
//   (h) a group of a LayerNormalization and its view prologues whose views
//       read a depthwise Conv in no group (ConvNeXt's dwconv -> Transpose
//       -> LayerNorm): the conv joins, computed inside the norm's row
//       kernel (add_dw_norms);
//   (i) a GlobalAveragePool in no group whose output only a 1x1 Conv reads,
//       whose (b) group's output only another 1x1 Conv reads: the pool and
//       both convs' groups, squeeze-and-excitation as the pool's kernel and
//       one more for both convs (add_squeeze_excites);
//   (j) a Mul in no group of a feature map by one value per channel, read
//       only by a 1x1 Conv heading a (b) group: it joins, and the conv's
//       GEMM reads its input times the scale (add_scaled_convs);
//   (k) on request (KILN_FUSION_NORM_GEMM=on: measured slower so far), a
//       LayerNormalization over the last axis (alone, or with the view
//       prologues it reads through) whose output only a MatMul with a
//       constant 2-D weight reads, heading an anchor (b) group or alone: the
//       groups merge, and the MatMul's GEMM normalizes the rows it stages
//       (add_norm_gemms);
//   and, at the start of (a), (b) and (d) groups or with a lone consumer (also
//   a Concat), data-movement nodes (Transpose, Reshape, Slice, Gather of one
//   constant index, ...) the consumer reads through an index view instead
//   of a copy (add_view_prologues); a view read by several groups is cloned
//   into each (view_clones.h).
// Every member is annotated kiln.fusion_group = "fg<N>"; the planner does the
// rest (planner/fusion.h). The pass owns fusion groups: it drops the ones an
// earlier run left before it partitions again. Nodes inside If/Loop bodies,
// nodes the planner runs on the host (shape arithmetic, all-constant inputs)
// and nodes with several outputs are never grouped.
//
// Written against the plugin ABI only; built as a static library
// (kiln_fusion_plugin_query) and as a loadable shared library.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kiln/kiln_plugin.hpp"
#include "plugins/fusion/attention_pattern.h"
#include "plugins/fusion/fuse_planner.h"
#include "plugins/fusion/fusion.h"
#include "plugins/fusion/partition.h"
#include "plugins/fusion/view_clones.h"
#include "plugins/fusion/view_ops.h"

namespace kiln_fusion {
namespace {

using kiln::fusion::Dag;
using kiln::fusion::GroupKind;
using kiln::fusion::Role;
using kiln::plugin::GraphView;
using kiln::plugin::Rewriter;

// A symbolic dim's loop extent in Eq. 1.
constexpr int64_t kNominalExtent = 64;
// The data-movement ops an anchor may store through (planner/fusion_store_views.h).
const std::set<std::string> kStoreViewOps = {"Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                             "DepthToSpace", "SpaceToDepth"};
// Td: a group weighs less than this many times the heaviest node.
constexpr double kThresholdFactor = 8.0;
// Devices with fewer compute units (CPU devices) get dw-norm groups and
// squeeze-excite groups of any size (add_dw_norms, add_squeeze_excites);
// the planner's dw-norm kernel reads register spans there (the same bound
// as planner/fusion_dw_norm.cc's).
constexpr uint32_t kFewComputeUnits = 16;
// The most weights (both 1x1 convs') of a squeeze-excite group on other devices.
constexpr int64_t kSqueezeExciteMaxWeights = 20480;
// What the planner keeps on the host among graph inputs (execution_plan.h).
constexpr int64_t kHostInputMaxElements = 64;

bool is_float(int32_t dtype) {
  return dtype == KILN_PLUGIN_DTYPE_FLOAT32 || dtype == KILN_PLUGIN_DTYPE_FLOAT16 ||
         dtype == KILN_PLUGIN_DTYPE_FLOAT64;
}

class Partitioner {
 public:
  Partitioner(GraphView& g, Rewriter& rw) : g_(g), rw_(rw) {}

  void run() {
    clear_old_groups();
    nodes_ = g_.nodes(0);
    for (size_t i = 0; i < nodes_.size(); ++i) index_[nodes_[i]] = static_cast<int>(i);
    find_host_values();
    build_dag();
    double heaviest = 0;
    for (const auto& n : dag_.nodes)
      if (n.role != Role::kOpaque) heaviest = std::max(heaviest, n.weight);
    const double td = kThresholdFactor * heaviest;
    // Attention groups first; the clustering sees their nodes as opaque.
    const std::vector<std::vector<int>> attention = attention_groups();
    Dag rest = dag_;
    for (const auto& members : attention)
      for (int m : members) rest.nodes[static_cast<size_t>(m)].role = Role::kOpaque;
    const std::vector<int> clusters = kiln::fusion::cluster(rest, td);
    std::vector<std::vector<int>> groups = kiln::fusion::legalize(rest, clusters);
    groups = decide_dwpw(groups);
    groups.insert(groups.end(), attention.begin(), attention.end());
    std::sort(groups.begin(), groups.end());
    groups = add_store_views(groups);
    groups = add_view_prologues(groups);
    groups = add_row_norms(groups);
    groups = add_conv_sums(groups);
    groups = add_dw_norms(groups);
    groups = add_squeeze_excites(groups);
    groups = add_scaled_convs(groups);
    groups = add_norm_gemms(groups);
    std::vector<int> group_of(dag_.nodes.size());
    for (size_t i = 0; i < group_of.size(); ++i) group_of[i] = static_cast<int>(groups.size() + i);
    // A shared view counts as a group of its own: each clone reads only the
    // source and feeds only its group, so it closes no cycle that the
    // shared node alone would not.
    for (size_t k = 0; k < groups.size(); ++k)
      for (int m : groups[k])
        if (!shared_views_.count(m)) group_of[static_cast<size_t>(m)] = static_cast<int>(k);
    if (!kiln::fusion::is_acyclic_partition(dag_, group_of)) {
      // Cannot happen (partition.h); if it does, fuse nothing rather than deadlock.
      rw_.log(KILN_LOG_WARNING, "the partition has a cycle; no fusion groups");
      rw_.add_statistic("partition-cycles", 1);
      return;
    }
    annotate(groups);
    statistics(groups, group_of, td);
  }

 private:
  void clear_old_groups() {
    for (size_t r = 0; r < g_.region_count(); ++r)
      for (kiln_node_id_t n : g_.nodes(static_cast<kiln_region_id_t>(r)))
        if (g_.node_annotation(n, KILN_ANNOTATION_FUSION_GROUP)) {
          rw_.remove_node_annotation(n, KILN_ANNOTATION_FUSION_GROUP);
          ++cleared_;
        }
  }

  // Values the planner knows on the host: constants, small non-float graph
  // inputs, Shape/Size outputs and what is computed from those alone.
  void find_host_values() {
    for (kiln_value_id_t v : g_.region_inputs(0)) {
      auto info = g_.value(v);
      auto shape = g_.static_shape(v);
      if (!info || is_float(info->dtype) || !shape) continue;
      int64_t numel = 1;
      for (int64_t d : *shape) numel *= d;
      if (numel <= kHostInputMaxElements) host_.insert(v);
    }
    for (kiln_node_id_t n : nodes_) {
      auto info = g_.node(n);
      bool all = true, from_shapes = true;
      for (kiln_value_id_t v : g_.inputs(n)) {
        if (v != KILN_NO_ID && !host_.count(v) && !g_.is_constant(v)) all = false;
        if (v != KILN_NO_ID && !shape_values_.count(v) && !g_.is_constant(v)) from_shapes = false;
      }
      const bool shape_op = info->domain.empty() && (info->op == "Shape" || info->op == "Size");
      if ((all || shape_op) && !has_subgraph(n))
        for (kiln_value_id_t v : g_.outputs(n)) {
          host_.insert(v);
          if (shape_op || from_shapes) shape_values_.insert(v);
        }
    }
  }

  std::vector<kiln_region_id_t> subgraphs(kiln_node_id_t n) const {
    std::vector<kiln_region_id_t> out;
    if (auto names = g_.attr_names(n))
      for (const std::string& key : *names)
        if (g_.attr_kind(n, key.c_str()) == KILN_ATTR_GRAPH) out.push_back(g_.host()->attr_graph(g_.raw(), n, key.c_str()));
    return out;
  }
  bool has_subgraph(kiln_node_id_t n) const { return !subgraphs(n).empty(); }

  // Main-graph values read anywhere inside the node's sub-graphs.
  void captures(kiln_node_id_t n, std::set<kiln_value_id_t>& out) const {
    for (kiln_region_id_t r : subgraphs(n))
      for (kiln_node_id_t inner : g_.nodes(r)) {
        for (kiln_value_id_t v : g_.inputs(inner))
          if (auto info = g_.value(v); info && info->region == 0) out.insert(v);
        captures(inner, out);
      }
  }

  std::string shape_key(kiln_value_id_t v) const {
    auto info = g_.value(v);
    auto dims = g_.shape(v);
    if (!info || !dims || info->dtype == KILN_PLUGIN_DTYPE_UNDEFINED) return {};
    std::string key = std::to_string(info->dtype) + ":";
    for (const auto& d : *dims) {
      if (d.is_unknown) return {};
      key += (d.is_const ? std::to_string(d.value) : d.expr) + ",";
    }
    return key;
  }

  std::vector<int64_t> extents(kiln_value_id_t v) const {
    std::vector<int64_t> out;
    if (auto dims = g_.shape(v))
      for (const auto& d : *dims) out.push_back(d.is_const ? d.value : kNominalExtent);
    return out;
  }

  // The op's loop nest (Eq. 1): its output's loops, plus the reduction
  // loops of a complex op.
  std::vector<int64_t> loops(kiln_node_id_t n, const kiln::plugin::NodeInfo& info, int32_t mapping) const {
    const auto in = g_.inputs(n);
    const auto out = g_.outputs(n);
    std::vector<int64_t> l = out.empty() || out[0] == KILN_NO_ID ? std::vector<int64_t>() : extents(out[0]);
    if (mapping != KILN_MAPPING_MANY_TO_MANY || in.empty() || in[0] == KILN_NO_ID) return l;
    if (info.op == "Conv" || info.op == "ConvTranspose") {
      if (in.size() > 1) {
        auto w = extents(in[1]);
        l.insert(l.end(), w.begin() + std::min<size_t>(1, w.size()), w.end());
      }
    } else if (info.op == "MatMul" || info.op == "Gemm") {
      auto a = extents(in[0]);
      const bool trans = info.op == "Gemm" && g_.attr_int(n, "transA", 0) != 0;
      if (!a.empty()) l.push_back(trans ? a.front() : a.back());
    } else if (g_.has_attr(n, "kernel_shape")) {
      for (int64_t k : g_.attr_ints(n, "kernel_shape")) l.push_back(k);
    } else {
      l = extents(in[0]);  // reductions, Softmax, norms: every input element
    }
    return l;
  }

  // A Slice whose output has its input's shape, with unit steps (so it
  // starts at 0): a bijection, which an anchor may store through (swin's
  // crop after a window reverse that needed no padding). (An Expand to its
  // own shape stays an elementwise node.)
  bool identity_slice(kiln_node_id_t n, const kiln::plugin::NodeInfo& info) const {
    if (info.op != "Slice") return false;
    const auto in = g_.inputs(n);
    const auto out = g_.outputs(n);
    if (in.empty() || in[0] == KILN_NO_ID || out.size() != 1 || shape_key(in[0]).empty() ||
        shape_key(in[0]) != shape_key(out[0]))
      return false;
    for (size_t k = 1; k < in.size(); ++k)
      if (in[k] != KILN_NO_ID && !g_.is_constant(in[k])) return false;
    if (in.size() < 5 || in[4] == KILN_NO_ID) return true;
    auto steps = g_.value(in[4]);
    size_t bytes = 0;
    const void* data = g_.constant_data(in[4], &bytes);
    if (!steps || !data) return false;
    for (size_t i = 0; steps->dtype == KILN_PLUGIN_DTYPE_INT64 && i < bytes / 8; ++i)
      if (static_cast<const int64_t*>(data)[i] != 1) return false;
    for (size_t i = 0; steps->dtype == KILN_PLUGIN_DTYPE_INT32 && i < bytes / 4; ++i)
      if (static_cast<const int32_t*>(data)[i] != 1) return false;
    return steps->dtype == KILN_PLUGIN_DTYPE_INT64 || steps->dtype == KILN_PLUGIN_DTYPE_INT32;
  }

  // Conv kinds of FCM: depthwise (group == in == out channels) and pointwise
  // (1x1, stride 1, unpadded, group 1), 2-D only.
  void conv_kind(kiln_node_id_t n, kiln::fusion::DagNode& d) const {
    const auto in = g_.inputs(n);
    if (in.size() < 2) return;
    auto w = g_.static_shape(in[1]);
    auto x = g_.shape(in[0]);
    if (!w || w->size() != 4 || !x || x->size() != 4) return;
    const int64_t group = g_.attr_int(n, "group", 1);
    const std::string pad = g_.attr_string(n, "auto_pad", "NOTSET");
    bool unit = true, unpadded = pad == "NOTSET" || pad == "VALID";
    for (int64_t s : g_.attr_ints(n, "strides")) unit = unit && s == 1;
    for (int64_t p : g_.attr_ints(n, "pads")) unpadded = unpadded && p == 0;
    d.depthwise = group > 1 && (*w)[0] == group && (*w)[1] == 1 && (*x)[1].is_const && (*x)[1].value == group;
    d.pointwise = group == 1 && (*w)[2] == 1 && (*w)[3] == 1 && unit && unpadded;
    d.unpadded_1x1 = group == 1 && (*w)[2] == 1 && (*w)[3] == 1 && unpadded && g_.is_constant(in[1]);
  }

  void build_dag() {
    dag_.nodes.resize(nodes_.size());
    std::map<std::string, int> shape_ids;
    const std::vector<kiln_value_id_t> graph_outputs = g_.region_outputs(0);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const kiln_node_id_t n = nodes_[i];
      auto info = g_.node(n);
      auto& d = dag_.nodes[i];
      std::set<kiln_value_id_t> reads;
      for (kiln_value_id_t v : g_.inputs(n))
        if (v != KILN_NO_ID) reads.insert(v);
      captures(n, reads);
      for (kiln_value_id_t v : reads) {
        auto vi = g_.value(v);
        if (!vi || vi->producer == KILN_NO_ID) continue;
        auto it = index_.find(vi->producer);
        if (it == index_.end() || it->second == static_cast<int>(i)) continue;
        // Shape/Size of a data-movement node read its dims on the host, never
        // its data: no edge, so that the view may join a group whose shape
        // input depends on those dims (torch's MultiheadAttention reshapes).
        if (reads_only_dims(g_, n) && dag_.nodes[static_cast<size_t>(it->second)].role == Role::kOpaque &&
            is_view_op(g_, vi->producer))
          continue;
        dag_.add_edge(it->second, static_cast<int>(i));
      }
      const auto in = g_.inputs(n);
      if (!in.empty() && in[0] != KILN_NO_ID)
        if (auto vi = g_.value(in[0]); vi && vi->producer != KILN_NO_ID && index_.count(vi->producer))
          d.data_pred = index_.at(vi->producer);
      const auto out = g_.outputs(n);
      const int32_t mapping = g_.op_mapping(info->domain, info->op);
      d.weight = kiln::fusion::op_weight(loops(n, *info, mapping));
      for (kiln_value_id_t v : out)
        for (const auto& use : g_.uses(v)) {
          if (use.node == KILN_NO_ID || !index_.count(use.node)) d.escapes = true;
        }
      for (kiln_value_id_t v : out)
        if (std::find(graph_outputs.begin(), graph_outputs.end(), v) != graph_outputs.end()) d.escapes = true;
      // Who may be grouped at all.
      if (out.size() != 1 || out[0] == KILN_NO_ID || host_.count(out[0]) || has_subgraph(n)) continue;
      const std::string key = shape_key(out[0]);
      if (key.empty()) continue;
      if (info->domain.empty() && (kStoreViewOps.count(info->op) || identity_slice(n, *info))) {
        d.store_view = true;  // opaque, but an anchor may store through it (add_store_views)
        d.shape_class = shape_ids.emplace(key, static_cast<int>(shape_ids.size())).first->second;
        continue;
      }
      if (mapping == KILN_MAPPING_ONE_TO_ONE || mapping == KILN_MAPPING_ONE_TO_MANY) d.role = Role::kElementwise;
      else if (mapping == KILN_MAPPING_MANY_TO_MANY) d.role = Role::kAnchor;
      else continue;
      d.shape_class = shape_ids.emplace(key, static_cast<int>(shape_ids.size())).first->second;
      if (info->domain.empty() && info->op == "Conv") conv_kind(n, d);
    }
  }

  // The attention patterns (attention_pattern.h) as DAG indices, ascending;
  // remembered for the statistics.
  std::vector<std::vector<int>> attention_groups() {
    std::vector<std::vector<int>> out;
    for (const auto& nodes : kiln::fusion::find_attention_groups(g_, host_)) {
      std::vector<int> members;
      for (kiln_node_id_t n : nodes) members.push_back(index_.at(n));
      std::sort(members.begin(), members.end());
      attention_.insert(members.front());
      out.push_back(std::move(members));
    }
    return out;
  }

  // Asks FusePlanner about every DW/PW group; a refusal splits it into the
  // depthwise part and the pointwise part (each kept when still legal).
  std::vector<std::vector<int>> decide_dwpw(const std::vector<std::vector<int>>& groups) {
    std::vector<std::vector<int>> out;
    for (const auto& members : groups) {
      if (kiln::fusion::classify(dag_, members) != GroupKind::kDwPw) {
        out.push_back(members);
        continue;
      }
      int dw = -1, pw = -1;
      for (int m : members)
        if (dag_.nodes[static_cast<size_t>(m)].role == Role::kAnchor) (dw < 0 ? dw : pw) = m;
      kiln::fusion::DwPwDecision decision;
      if (auto shape = dwpw_shape(nodes_[static_cast<size_t>(dw)], nodes_[static_cast<size_t>(pw)]))
        decision = kiln::fusion::plan_dwpw(*shape, device_limits());
      else
        decision.why = "symbolic dims";
      if (dwpw_override_ != DwPwOverride::kAuto) {
        // The ablation knob (README): FusePlanner's tiles stay where it fuses.
        ++dwpw_forced_;
        decision.fuse = dwpw_override_ == DwPwOverride::kFuse;
        decision.why = "KILN_FUSION_DWPW";
      }
      if (decision.fuse) {
        ++dwpw_groups_;
        const kiln_node_id_t pw_node = nodes_[static_cast<size_t>(pw)];
        if (decision.tile_m > 0 && decision.tile_n > 0 && !g_.node_annotation(pw_node, KILN_ANNOTATION_KERNEL))
          rw_.annotate_node(pw_node, KILN_ANNOTATION_KERNEL,
                            "tile=" + std::to_string(decision.tile_m) + "x" + std::to_string(decision.tile_n));
        out.push_back(members);
        continue;
      }
      ++dwpw_refused_;
      rw_.log(KILN_LOG_DEBUG, "DW/PW pair " + g_.node(nodes_[static_cast<size_t>(dw)])->name + " -> " +
                                  g_.node(nodes_[static_cast<size_t>(pw)])->name + " not fused: " + decision.why);
      std::vector<int> head, tail;
      // The depthwise part feeds the pw Conv, so it precedes it in index
      // order; the pointwise part follows it.
      for (int m : members) (m < pw ? head : tail).push_back(m);
      for (auto* part : {&head, &tail})
        if (part->size() >= 2 && kiln::fusion::classify(dag_, *part) != GroupKind::kIllegal) out.push_back(*part);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // FusePlanner's limits: the device's when the pipeline compiles for one
  // (ABI 1.3 target_info), else the defaults (32 KiB, compute units unknown).
  kiln::fusion::DeviceLimits device_limits() const {
    kiln::fusion::DeviceLimits limits;
    if (auto t = g_.target_info()) {
      if (t->shared_memory_bytes > 0) limits.shared_memory_bytes = t->shared_memory_bytes;
      limits.compute_units = t->compute_units;
    }
    return limits;
  }

  // A data-movement node the planner can read through an index view
  // (planner/fusion_views.h): its parameters are constants (a Gather's: one
  // index inside the axis), its output has known dims and is read only by
  // nodes of the main graph (returned, ascending), as a view node's input 0
  // when that node is a view too, and its input is a device tensor.
  std::optional<std::vector<int>> view_consumers(int i) const {
    const kiln_node_id_t n = nodes_[static_cast<size_t>(i)];
    auto info = g_.node(n);
    if (!info || !info->domain.empty() || dag_.nodes[static_cast<size_t>(i)].escapes) return std::nullopt;
    if (!is_view_op(g_, n)) return std::nullopt;
    const auto in = g_.inputs(n);
    const auto out = g_.outputs(n);
    if (in.empty() || in[0] == KILN_NO_ID || out.size() != 1 || out[0] == KILN_NO_ID) return std::nullopt;
    if (host_.count(in[0]) || g_.is_constant(in[0]) || host_.count(out[0]) || shape_key(out[0]).empty())
      return std::nullopt;
    // Bounds and shapes fixed at plan time: constants, or (a Slice's starts
    // and ends) shape arithmetic, whose dims the planner knows symbolically.
    if (info->op == "Slice" || info->op == "Expand")
      for (size_t k = 1; k < in.size(); ++k)
        if (in[k] != KILN_NO_ID && !g_.is_constant(in[k]) && !(info->op == "Slice" && k <= 2 && shape_values_.count(in[k])))
          return std::nullopt;
    if (info->op == "Gather" && !gather_is_view(g_, n)) return std::nullopt;
    if (info->op == "Concat" && !is_roll(g_, n)) return std::nullopt;
    std::set<int> consumers;
    for (const auto& use : g_.uses(out[0])) {
      auto it = index_.find(use.node);
      if (it == index_.end()) return std::nullopt;
      // Shape and Size read the dims, which a view keeps (the planner runs them on the host).
      if (!reads_only_dims(g_, use.node)) consumers.insert(it->second);
    }
    if (consumers.empty()) return std::nullopt;
    return std::vector<int>(consumers.begin(), consumers.end());
  }

  // A node with no group that a view may join as its core although the
  // partitioner never groups it: a Concat, whose kernel reads each input
  // through its accessors (swin's roll and PatchMerging concatenate Slices).
  bool is_view_core(int c) const {
    const kiln_node_id_t n = nodes_[static_cast<size_t>(c)];
    auto info = g_.node(n);
    if (!info || !info->domain.empty() || info->op != "Concat" || has_subgraph(n)) return false;
    const auto out = g_.outputs(n);
    return out.size() == 1 && out[0] != KILN_NO_ID && !host_.count(out[0]) && !shape_key(out[0]).empty();
  }

  // Whether store-view node `i` ends a chain at the graph: its one output is
  // a graph output that no node of the main graph reads (a super-resolution
  // net's final pixel shuffle), its input a device tensor.
  bool ends_at_graph_output(int i) const {
    const kiln::fusion::DagNode& d = dag_.nodes[static_cast<size_t>(i)];
    if (!d.store_view || !d.succs.empty()) return false;
    const kiln_node_id_t n = nodes_[static_cast<size_t>(i)];
    const auto in = g_.inputs(n);
    const auto out = g_.outputs(n);
    if (in.empty() || in[0] == KILN_NO_ID || out.size() != 1 || out[0] == KILN_NO_ID || host_.count(in[0]) ||
        g_.is_constant(in[0]))
      return false;
    for (const auto& use : g_.uses(out[0]))
      if (use.node != KILN_NO_ID) return false;  // read by a sub-graph or another region
    const std::vector<kiln_value_id_t> outputs = g_.region_outputs(0);
    return std::find(outputs.begin(), outputs.end(), out[0]) != outputs.end();
  }

  // The one DAG node reading view node `i` (Shape/Size aside), if `i` may be
  // a view and exactly one node reads it.
  std::optional<int> sole_view_consumer(int i) const {
    const auto consumers = view_consumers(i);
    if (!consumers || consumers->size() != 1) return std::nullopt;
    return consumers->front();
  }

  // An anchor whose output reaches elementwise nodes only through a chain of
  // Reshape/Transpose-like nodes (ViT's out-projection -> Reshape ->
  // Reshape -> residual Add; ConvNeXt's fc2 -> layer scale -> Transpose ->
  // residual Add) stores the elementwise result through the chain: the
  // anchor's group (or the lone anchor), the chain and the elementwise
  // consumer (with the elementwise group it starts, if any) become one
  // group when classify says it is a legal (d) group. Before the view
  // prologues, which would otherwise take the chain into the consumer.
  // The merge makes no cycle: the anchor part's only edge out is the
  // chain, whose only edge out goes into the tail.
  std::vector<std::vector<int>> add_store_views(std::vector<std::vector<int>> groups) {
    std::vector<int> group_of = group_index(groups);
    std::vector<bool> dropped(groups.size(), false);
    for (int a = 0; a < static_cast<int>(dag_.nodes.size()); ++a) {
      // `a` the sink of an anchor part: a lone anchor or an (b) group's sink.
      const int ga = group_of[static_cast<size_t>(a)];
      std::vector<int> anchor_part{a};
      if (ga >= 0) {
        if (dropped[static_cast<size_t>(ga)] || groups[static_cast<size_t>(ga)].back() != a ||
            kiln::fusion::classify(dag_, groups[static_cast<size_t>(ga)]) != GroupKind::kAnchor)
          continue;
        anchor_part = groups[static_cast<size_t>(ga)];
      } else if (dag_.nodes[static_cast<size_t>(a)].role != Role::kAnchor) {
        continue;
      }
      // The chain, each link the only reader of the one before; or ending
      // at a graph output (then there is no tail: the anchor stores the
      // graph's output through the chain).
      std::vector<int> views;
      bool to_graph_output = false;
      int at = a;
      while (dag_.nodes[static_cast<size_t>(at)].succs.size() == 1) {
        const int next = dag_.nodes[static_cast<size_t>(at)].succs[0];
        if (!dag_.nodes[static_cast<size_t>(next)].store_view || group_of[static_cast<size_t>(next)] >= 0) break;
        if (!sole_view_consumer(next)) {
          to_graph_output = ends_at_graph_output(next);
          if (to_graph_output) views.push_back(next);
          break;
        }
        views.push_back(next);
        at = next;
      }
      if (views.empty()) continue;
      int gc = -1;
      std::vector<int> tail;
      if (!to_graph_output) {
        const std::optional<int> c = sole_view_consumer(views.back());
        if (!c || dag_.nodes[static_cast<size_t>(*c)].role != Role::kElementwise) continue;
        // The tail: the consumer, or the elementwise group it starts.
        gc = group_of[static_cast<size_t>(*c)];
        tail = {*c};
        if (gc >= 0) {
          if (dropped[static_cast<size_t>(gc)] || groups[static_cast<size_t>(gc)].front() != *c ||
              kiln::fusion::classify(dag_, groups[static_cast<size_t>(gc)]) != GroupKind::kElementwise)
            continue;
          tail = groups[static_cast<size_t>(gc)];
        }
      }
      std::vector<int> merged = anchor_part;
      merged.insert(merged.end(), views.begin(), views.end());
      merged.insert(merged.end(), tail.begin(), tail.end());
      std::sort(merged.begin(), merged.end());
      if (kiln::fusion::classify(dag_, merged) != GroupKind::kStoreView) continue;
      if (ga >= 0) dropped[static_cast<size_t>(ga)] = true;
      if (gc >= 0) dropped[static_cast<size_t>(gc)] = true;
      const int k = static_cast<int>(groups.size());
      groups.push_back(merged);
      dropped.push_back(false);
      for (int m : merged) group_of[static_cast<size_t>(m)] = k;
      store_view_nodes_ += static_cast<int64_t>(views.size());
    }
    std::vector<std::vector<int>> out;
    for (size_t k = 0; k < groups.size(); ++k)
      if (!dropped[k]) out.push_back(std::move(groups[k]));
    std::sort(out.begin(), out.end());
    return out;
  }

  // Group shape (f), planner/fusion_row_norm.h: a LayerNormalization over
  // the last axis whose input is made by a MatMul or Gemm — alone, or the
  // sink of a group that the GEMM heads (after any view prologues): an
  // anchor (b) group (a transformer's fc2 -> bias -> residual add) or a
  // store-view (e) group whose views only reshape (vit's out-projection ->
  // Reshape -> Reshape -> residual add) — joins that group, so that a split
  // GEMM's reduce pass normalizes the rows it stores instead of a second
  // dispatch. The GEMM part's output may have readers outside (pre-norm's
  // residual stream). No cycle: the norm's other inputs are constants, so
  // the merge adds no edge into the group, and nothing outside lies between
  // the group and the norm.
  std::vector<std::vector<int>> add_row_norms(std::vector<std::vector<int>> groups) {
    std::vector<int> group_of = group_index(groups);
    for (int i = 0; i < static_cast<int>(dag_.nodes.size()); ++i) {
      const kiln::fusion::DagNode& d = dag_.nodes[static_cast<size_t>(i)];
      if (group_of[static_cast<size_t>(i)] >= 0 || d.role != Role::kAnchor || d.data_pred < 0) continue;
      const kiln_node_id_t n = nodes_[static_cast<size_t>(i)];
      if (!is_op(n, "LayerNormalization")) continue;
      const auto in = g_.inputs(n);
      const auto x = g_.shape(in[0]);
      const int64_t axis = g_.attr_int(n, "axis", -1);
      if (!x || x->empty() || (axis != -1 && axis != static_cast<int64_t>(x->size()) - 1)) continue;
      bool constants = true;
      for (size_t k = 1; k < in.size(); ++k) constants = constants && (in[k] == KILN_NO_ID || g_.is_constant(in[k]));
      if (!constants) continue;
      const int a = d.data_pred;
      const int ga = group_of[static_cast<size_t>(a)];
      std::vector<int> prefix{a};  // without its view prologues
      if (ga >= 0) {
        const std::vector<int>& grp = groups[static_cast<size_t>(ga)];
        prefix = without_views(grp);
        if (grp.back() != a || prefix.empty()) continue;
        const GroupKind kind = kiln::fusion::classify(dag_, prefix);
        if (kind != GroupKind::kAnchor && !(kind == GroupKind::kStoreView && reshapes_only(prefix))) continue;
      } else if (dag_.nodes[static_cast<size_t>(a)].role != Role::kAnchor) {
        continue;
      }
      const kiln_node_id_t gemm = nodes_[static_cast<size_t>(prefix.front())];
      if (!is_op(gemm, "MatMul") && !is_op(gemm, "Gemm")) continue;
      if (ga >= 0) {
        groups[static_cast<size_t>(ga)].push_back(i);  // after the sink: still ascending
        group_of[static_cast<size_t>(i)] = ga;
      } else {
        group_of[static_cast<size_t>(a)] = group_of[static_cast<size_t>(i)] = static_cast<int>(groups.size());
        groups.push_back({a, i});
      }
      row_norms_.insert(prefix.front());
    }
    std::sort(groups.begin(), groups.end());
    return groups;
  }

  // Group shape (g), planner/fusion_conv_sum.h: an anchor (b) group headed
  // by a 1x1 unpadded group-1 Conv `h` whose second member is an Add of h's
  // output and the output of another such Conv `d` (any strides) that is in
  // no group and read only by that Add — a ResNet block's last conv and its
  // projection shortcut — takes `d` in: one GEMM over both convs' input
  // channels (AGO's intensive fusion of two complex ops that share their
  // output), so the shortcut's output never reaches memory and one kernel
  // (or split-K pair) replaces two. The tail after the Add must not read
  // h's output. No cycle: d's only edge out enters the group, and no path
  // leaves the group and comes back to d (it would have to leave through
  // the sink, a descendant of the Add, which d precedes).
  std::vector<std::vector<int>> add_conv_sums(std::vector<std::vector<int>> groups) {
    // KILN_FUSION_CONV_SUM=off: the ablation (each conv its own GEMM, the
    // Add in the last conv's epilogue), timed side by side in one run.
    if (const char* v = std::getenv("KILN_FUSION_CONV_SUM"); v != nullptr && std::strcmp(v, "off") == 0) {
      ++conv_sums_off_;
      return groups;
    }
    std::vector<int> group_of = group_index(groups);
    for (auto& members : groups) {
      if (members.size() < 2 || is_view_.count(members.front()) || row_norms_.count(members.front()) ||
          attention_.count(members.front()) || kiln::fusion::classify(dag_, members) != GroupKind::kAnchor)
        continue;
      const int h = members[0], a = members[1];
      const kiln::fusion::DagNode& hd = dag_.nodes[static_cast<size_t>(h)];
      const kiln_node_id_t add = nodes_[static_cast<size_t>(a)];
      if (!hd.unpadded_1x1 || !is_op(add, "Add") || g_.inputs(add).size() != 2) continue;
      const kiln_value_id_t hv = g_.outputs(nodes_[static_cast<size_t>(h)])[0];
      const auto in = g_.inputs(add);
      const kiln_value_id_t other = in[0] == hv ? in[1] : in[1] == hv ? in[0] : KILN_NO_ID;
      auto oi = other == KILN_NO_ID ? std::nullopt : g_.value(other);
      if (!oi || oi->producer == KILN_NO_ID || !index_.count(oi->producer)) continue;
      const int d = index_.at(oi->producer);
      const kiln::fusion::DagNode& dd = dag_.nodes[static_cast<size_t>(d)];
      if (group_of[static_cast<size_t>(d)] >= 0 || !dd.unpadded_1x1 || dd.escapes || dd.succs != std::vector<int>{a} ||
          dd.shape_class != hd.shape_class)
        continue;
      bool tail_reads_h = false;
      for (size_t k = 2; k < members.size(); ++k)
        for (kiln_value_id_t v : g_.inputs(nodes_[static_cast<size_t>(members[k])]))
          tail_reads_h = tail_reads_h || v == hv;
      if (tail_reads_h) continue;
      group_of[static_cast<size_t>(d)] = group_of[static_cast<size_t>(h)];
      members.insert(std::lower_bound(members.begin(), members.end(), d), d);
      conv_sums_.insert(members.front());
    }
    std::sort(groups.begin(), groups.end());
    return groups;
  }

  // Group shape (h), planner/fusion_dw_norm.h: a group made of a
  // LayerNormalization `n` and the view prologues it reads its input
  // through, a chain back to a depthwise Conv `d` with a constant weight
  // that is in no group and read only by the chain's first node (ConvNeXt:
  // dwconv -> Transpose -> LayerNorm over the channels): d joins, and the
  // norm's row kernel computes the conv where it reads its row, so d's
  // output never reaches memory and its dispatch is gone. No recomputation:
  // the row kernel reads each element once. The planner refuses rows too
  // long to keep in registers (then d runs alone, as before). No cycle: d's
  // only edge out enters the group, whose other nodes descend from d.
  //
  // Measured, it pays on a device of few compute units (lavapipe's CPU
  // threads: convnext_tiny 2-8 % faster, the image storage most) and not
  // on a GPU of many (an H200: 3-6 % more GPU time — at batch 1 a pixel
  // group's channels are too little work per workgroup, and NCHW input
  // read across channels coalesces worse than the conv alone reads it), so
  // only devices with fewer than kFewComputeUnits get the groups
  // (statistic `dw-norms-refused` counts the others' candidates).
  // KILN_FUSION_DW_NORM=off (the ablation) makes none, =on makes them on
  // any device (for timing both ways).
  std::vector<std::vector<int>> add_dw_norms(std::vector<std::vector<int>> groups) {
    const char* env = std::getenv("KILN_FUSION_DW_NORM");
    if (env != nullptr && std::strcmp(env, "off") == 0) {
      ++dw_norms_off_;
      return groups;
    }
    const bool forced = env != nullptr && std::strcmp(env, "on") == 0;
    const bool device_pays = device_limits().compute_units < kFewComputeUnits;
    std::vector<int> group_of = group_index(groups);
    for (auto& members : groups) {
      const std::vector<int> core = without_views(members);
      if (core.size() != 1 || core.back() != members.back() ||
          !is_op(nodes_[static_cast<size_t>(core[0])], "LayerNormalization") ||
          attention_.count(members.front()) || row_norms_.count(members.front()))
        continue;
      // Back from the norm along input 0 through the group's views.
      int reader = core[0], d = dag_.nodes[static_cast<size_t>(reader)].data_pred;
      size_t chain = 1;
      while (d >= 0 && is_view_.count(d) && !shared_views_.count(d) &&
             std::binary_search(members.begin(), members.end(), d) &&
             dag_.nodes[static_cast<size_t>(d)].succs == std::vector<int>{reader}) {
        reader = d;
        d = dag_.nodes[static_cast<size_t>(d)].data_pred;
        ++chain;
      }
      if (chain != members.size() || d < 0 || group_of[static_cast<size_t>(d)] >= 0) continue;
      const kiln::fusion::DagNode& dd = dag_.nodes[static_cast<size_t>(d)];
      const kiln_node_id_t conv = nodes_[static_cast<size_t>(d)];
      if (!dd.depthwise || dd.escapes || dd.succs != std::vector<int>{reader} ||
          !g_.is_constant(g_.inputs(conv)[1]))
        continue;
      if (!forced && !device_pays) {
        ++dw_norms_refused_;
        continue;
      }
      group_of[static_cast<size_t>(d)] = group_of[static_cast<size_t>(core[0])];
      members.insert(members.begin(), d);  // d precedes its readers: still ascending
      dw_norms_.insert(d);
    }
    std::sort(groups.begin(), groups.end());
    return groups;
  }

  // Group shape (i), planner/fusion_squeeze_excite.h: a GlobalAveragePool
  // `p` in no group, read only by a 1x1 unpadded group-1 Conv `c1` with a
  // constant weight that heads an anchor (b) group (or is alone), whose
  // output only another such Conv `c2` reads, heading its own (b) group (or
  // alone): the three become one group — squeeze-and-excitation, three
  // dispatches of almost no work each. The planner keeps the pool's own
  // kernel (a reduction over the whole device) and runs both convs and
  // their tails in one workgroup per image from shared memory (AGO's
  // intensive fusion of two complex ops). No recomputation: every value is
  // computed once. No cycle: p's only edge out enters c1's group, whose
  // only edge out (its sink's, read by c2 alone) enters c2's.
  //
  // That workgroup reads both convs' weights alone, a latency chain of
  // loads while the rest of a GPU idles: on an H200 it took 5-7 us where
  // the two GEMVs took ~9 with up to ~10 K weights, ~9 us at 20 K, and 21 to
  // 141 us from 50 K to 460 K (efficientnet_b0, regnet_y_800mf,
  // mobilenet_v3_large; bench/results/h200-2026-11-29-session25). So on a
  // device of many compute units (kFewComputeUnits or more) only blocks of
  // at most kSqueezeExciteMaxWeights weights are grouped (statistic
  // `squeeze-excites-refused` counts the others); a CPU device's workgroup
  // runs on one of its few cores either way.
  // KILN_FUSION_SQUEEZE_EXCITE=off (the ablation) makes none, =on makes
  // them whatever their weights (for timing both ways).
  std::vector<std::vector<int>> add_squeeze_excites(std::vector<std::vector<int>> groups) {
    const char* env = std::getenv("KILN_FUSION_SQUEEZE_EXCITE");
    if (env != nullptr && std::strcmp(env, "off") == 0) {
      ++squeeze_excites_off_;
      return groups;
    }
    const bool any_size = (env != nullptr && std::strcmp(env, "on") == 0) ||
                          device_limits().compute_units < kFewComputeUnits;
    std::vector<int> group_of = group_index(groups);
    const auto conv_group = [&](int c) { return conv_group_of(c, groups, group_of); };
    std::vector<bool> dropped(groups.size(), false);
    std::vector<std::vector<int>> made;
    for (int i = 0; i < static_cast<int>(dag_.nodes.size()); ++i) {
      const kiln::fusion::DagNode& pd = dag_.nodes[static_cast<size_t>(i)];
      if (group_of[static_cast<size_t>(i)] >= 0 || pd.role != Role::kAnchor || pd.escapes || pd.succs.size() != 1 ||
          !is_op(nodes_[static_cast<size_t>(i)], "GlobalAveragePool"))
        continue;
      const std::vector<int> g1 = conv_group(pd.succs[0]);
      if (g1.empty()) continue;
      const kiln::fusion::DagNode& s1 = dag_.nodes[static_cast<size_t>(g1.back())];
      if (s1.escapes || s1.succs.size() != 1) continue;
      const std::vector<int> g2 = conv_group(s1.succs[0]);
      if (g2.empty()) continue;
      const int64_t weights = weight_elements(g1.front()) + weight_elements(g2.front());
      if (!any_size && (weights < 0 || weights > kSqueezeExciteMaxWeights)) {
        ++squeeze_excites_refused_;
        continue;
      }
      std::vector<int> members{i};
      for (const std::vector<int>* part : {&g1, &g2}) {
        members.insert(members.end(), part->begin(), part->end());
        const int gk = group_of[static_cast<size_t>(part->front())];
        if (gk >= 0) dropped[static_cast<size_t>(gk)] = true;
      }
      std::sort(members.begin(), members.end());
      for (int m : members) group_of[static_cast<size_t>(m)] = -2;  // taken
      squeeze_excites_.insert(i);
      made.push_back(std::move(members));
    }
    std::vector<std::vector<int>> out;
    for (size_t k = 0; k < groups.size(); ++k)
      if (!dropped[k]) out.push_back(std::move(groups[k]));
    out.insert(out.end(), made.begin(), made.end());
    std::sort(out.begin(), out.end());
    return out;
  }

  // The members of the group a 1x1 unpadded group-1 Conv `c` with a
  // constant weight heads (just c when it is in none), if that is a plain
  // anchor (b) group; empty otherwise (or when c is no such conv).
  std::vector<int> conv_group_of(int c, const std::vector<std::vector<int>>& groups,
                                 const std::vector<int>& group_of) const {
    const kiln::fusion::DagNode& cd = dag_.nodes[static_cast<size_t>(c)];
    if (!cd.unpadded_1x1 || !is_op(nodes_[static_cast<size_t>(c)], "Conv")) return {};
    const int gc = group_of[static_cast<size_t>(c)];
    if (gc == -1) return {c};
    if (gc < 0) return {};  // taken by a group made in this step
    const std::vector<int>& members = groups[static_cast<size_t>(gc)];
    if (members.front() != c || is_view_.count(c) || row_norms_.count(c) || conv_sums_.count(c) ||
        attention_.count(c) || kiln::fusion::classify(dag_, members) != GroupKind::kAnchor)
      return {};
    return members;
  }

  // Group shape (j), planner/fusion_scaled_conv.h: a Mul in no group of a
  // rank-4 feature map X and one value per channel S ([N or 1, C, 1, 1]) —
  // squeeze-excite's end — whose output only a 1x1 unpadded group-1 Conv
  // with a constant weight reads, heading an anchor (b) group or alone: the
  // Mul joins at the group's start and the conv's GEMM reads X times S, so
  // the scaled map never reaches memory and its dispatch is gone (a
  // producer elementwise op folded into a complex op's prologue). No
  // recomputation beyond a multiply per A element. No cycle: the Mul's
  // only edge out enters the group, whose other nodes descend from it.
  // KILN_FUSION_SCALED_CONV=off (the ablation) makes none.
  std::vector<std::vector<int>> add_scaled_convs(std::vector<std::vector<int>> groups) {
    if (const char* v = std::getenv("KILN_FUSION_SCALED_CONV"); v != nullptr && std::strcmp(v, "off") == 0) {
      ++scaled_convs_off_;
      return groups;
    }
    std::vector<int> group_of = group_index(groups);
    const auto same = [](const kiln::plugin::Dim& a, const kiln::plugin::Dim& b) {
      return !a.is_unknown && !b.is_unknown && a.is_const == b.is_const &&
             (a.is_const ? a.value == b.value : a.expr == b.expr);
    };
    const auto is_one = [](const kiln::plugin::Dim& d) { return d.is_const && d.value == 1; };
    std::vector<std::vector<int>> made;
    for (int i = 0; i < static_cast<int>(dag_.nodes.size()); ++i) {
      const kiln::fusion::DagNode& md = dag_.nodes[static_cast<size_t>(i)];
      const kiln_node_id_t mul = nodes_[static_cast<size_t>(i)];
      if (group_of[static_cast<size_t>(i)] != -1 || md.role != Role::kElementwise || md.escapes ||
          md.succs.size() != 1 || !is_op(mul, "Mul"))
        continue;
      const auto in = g_.inputs(mul);
      const auto out = g_.shape(g_.outputs(mul)[0]);
      if (in.size() != 2 || !out || out->size() != 4) continue;
      bool scaled = false;
      for (size_t j = 0; j < 2 && !scaled; ++j) {
        const auto x = g_.shape(in[j]), sc = g_.shape(in[1 - j]);
        if (!x || !sc || x->size() != 4 || sc->size() != 4) continue;
        bool x_is_out = true;
        for (size_t a = 0; a < 4; ++a) x_is_out = x_is_out && same((*x)[a], (*out)[a]);
        scaled = x_is_out && (is_one((*sc)[0]) || same((*sc)[0], (*out)[0])) && same((*sc)[1], (*out)[1]) &&
                 is_one((*sc)[2]) && is_one((*sc)[3]);
      }
      const int c = md.succs[0];
      if (!scaled || g_.inputs(nodes_[static_cast<size_t>(c)])[0] != g_.outputs(mul)[0]) continue;
      std::vector<int> members = conv_group_of(c, groups, group_of);
      if (members.empty()) continue;
      const int gc = group_of[static_cast<size_t>(c)];
      members.insert(members.begin(), i);  // the Mul precedes its reader: still ascending
      for (int m : members) group_of[static_cast<size_t>(m)] = -2;  // taken
      if (gc >= 0) {
        groups[static_cast<size_t>(gc)] = std::move(members);
      } else {
        made.push_back(std::move(members));
      }
      scaled_convs_.insert(i);
    }
    groups.insert(groups.end(), made.begin(), made.end());
    std::sort(groups.begin(), groups.end());
    return groups;
  }

  // Group shape (k), planner/fusion_norm_gemm.h: a LayerNormalization `n`
  // over the last axis of a matrix of known width, with constant scale and
  // bias, alone or in a group of its view prologues only (ConvNeXt: dwconv
  // -> Transpose -> norm, where no dw-norm group took it), whose output only
  // a MatMul `c` reads, as its A, with a constant 2-D B, heading an anchor
  // (b) group or alone: the two merge, and c's GEMM computes its tile
  // rows' statistics before its K loop and normalizes the rows it stages —
  // the normalized tensor never reaches memory and the norm's dispatch is
  // gone (AGO's intensive fusion of a reduction into the complex op that
  // reads it; the statistics are recomputed once per column tile of the
  // GEMM). No cycle: n's group has one edge out, into c's group.
  //
  // Measured, it does not pay where Kiln runs today, so it is made only on
  // request (KILN_FUSION_NORM_GEMM=on; statistic `norm-gemms-off` = 1
  // otherwise). On an H200 (bench/results/h200-2026-11-29-session26) the
  // statistics pass cost each of ConvNeXt's first Linears about what the
  // norm's own dispatch did at K = 96-192 and more at K = 384-768 (its
  // channels-last view also denies the GEMM its 16-byte A units):
  // convnext_tiny fp16 0.74 -> 0.85 GPU ms, swin_t 0.82 -> 0.84; on
  // lavapipe swin_t 2.27 -> 2.38-2.51 s (each column tile recomputes its
  // rows' statistics on a CPU core). Fewer dispatches either way.
  std::vector<std::vector<int>> add_norm_gemms(std::vector<std::vector<int>> groups) {
    if (const char* v = std::getenv("KILN_FUSION_NORM_GEMM"); v == nullptr || std::strcmp(v, "on") != 0) {
      ++norm_gemms_off_;
      return groups;
    }
    std::vector<int> group_of = group_index(groups);
    std::vector<std::vector<int>> made;
    std::set<size_t> emptied;
    for (int i = 0; i < static_cast<int>(dag_.nodes.size()); ++i) {
      const kiln::fusion::DagNode& nd = dag_.nodes[static_cast<size_t>(i)];
      const kiln_node_id_t n = nodes_[static_cast<size_t>(i)];
      if (!is_op(n, "LayerNormalization") || nd.escapes || nd.succs.size() != 1 || g_.outputs(n).size() != 1) continue;
      const auto in = g_.inputs(n);
      const auto x = g_.shape(in[0]);
      const int64_t axis = g_.attr_int(n, "axis", -1);
      if (!x || x->size() < 2 || !x->back().is_const ||
          (axis != -1 && axis != static_cast<int64_t>(x->size()) - 1))
        continue;
      bool constants = in.size() >= 2;
      for (size_t k = 1; k < in.size(); ++k) constants = constants && (in[k] == KILN_NO_ID || g_.is_constant(in[k]));
      const int c = nd.succs[0];
      const kiln_node_id_t mm = nodes_[static_cast<size_t>(c)];
      if (!constants || !is_op(mm, "MatMul") || g_.inputs(mm).size() != 2 || g_.inputs(mm)[0] != g_.outputs(n)[0])
        continue;
      const auto w = g_.static_shape(g_.inputs(mm)[1]);
      if (!g_.is_constant(g_.inputs(mm)[1]) || !w || w->size() != 2) continue;
      // The norm's group: the norm alone, or its view prologues and it.
      const int gn = group_of[static_cast<size_t>(i)];
      std::vector<int> norm_part{i};
      if (gn >= 0) {
        const std::vector<int>& grp = groups[static_cast<size_t>(gn)];
        if (without_views(grp) != std::vector<int>{i} || dw_norms_.count(grp.front()) || row_norms_.count(grp.front()))
          continue;
        norm_part = grp;
      } else if (gn < -1) {
        continue;
      }
      // The MatMul's group: it alone, or an anchor (b) group it heads.
      const int gc = group_of[static_cast<size_t>(c)];
      std::vector<int> gemm_part{c};
      if (gc >= 0) {
        const std::vector<int>& grp = groups[static_cast<size_t>(gc)];
        if (grp.front() != c || is_view_.count(c) || row_norms_.count(c) || attention_.count(c) ||
            kiln::fusion::classify(dag_, grp) != GroupKind::kAnchor)
          continue;
        gemm_part = grp;
      } else if (gc < -1) {
        continue;
      }
      std::vector<int> members = norm_part;
      members.insert(members.end(), gemm_part.begin(), gemm_part.end());
      std::sort(members.begin(), members.end());
      for (int m : members) group_of[static_cast<size_t>(m)] = -2;  // taken
      if (gn >= 0) emptied.insert(static_cast<size_t>(gn));
      if (gc >= 0) emptied.insert(static_cast<size_t>(gc));
      made.push_back(std::move(members));
      norm_gemms_.insert(i);
    }
    std::vector<std::vector<int>> out;
    for (size_t k = 0; k < groups.size(); ++k)
      if (!emptied.count(k)) out.push_back(std::move(groups[k]));
    out.insert(out.end(), made.begin(), made.end());
    std::sort(out.begin(), out.end());
    return out;
  }

  // Each DAG node's group in `groups` (its index), -1 for a node in none.
  std::vector<int> group_index(const std::vector<std::vector<int>>& groups) const {
    std::vector<int> group_of(dag_.nodes.size(), -1);
    for (size_t k = 0; k < groups.size(); ++k)
      for (int m : groups[k]) group_of[static_cast<size_t>(m)] = static_cast<int>(k);
    return group_of;
  }

  // The elements of Conv `c`'s weight (input 1), -1 when unknown.
  int64_t weight_elements(int c) const {
    const auto in = g_.inputs(nodes_[static_cast<size_t>(c)]);
    const auto shape = in.size() > 1 ? g_.static_shape(in[1]) : std::nullopt;
    if (!shape) return -1;
    int64_t n = 1;
    for (int64_t d : *shape) {
      if (d < 0) return -1;
      n *= d;
    }
    return n;
  }

  // Whether every store-view node of `members` reshapes (no Transpose,
  // Slice or pixel shuffle): the anchor's rows stay the output's rows.
  bool reshapes_only(const std::vector<int>& members) const {
    static const std::set<std::string> kReshapes = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"};
    for (int m : members) {
      if (!dag_.nodes[static_cast<size_t>(m)].store_view) continue;
      auto info = g_.node(nodes_[static_cast<size_t>(m)]);
      if (!info || !info->domain.empty() || !kReshapes.count(info->op)) return false;
    }
    return true;
  }

  bool is_op(kiln_node_id_t n, const char* op) const {
    auto info = g_.node(n);
    return info && info->domain.empty() && info->op == op;
  }

  // DNNFusion fuses reorganize and shuffle ops into their consumers; Kiln's
  // planner does it by reading the chain's source through an index view
  // (SmartMem's index comprehension), so a Transpose, Slice or image-stored
  // Reshape stops being a copy kernel. A view node joins, at its start,
  // every group that reads it: its consumers' groups (a consumer that is a
  // view node: the groups that node joined); a consumer in no group forms a
  // group with it when it is a device node or a Concat. When the consumers
  // are in several groups the node joins each (cloned per group when the
  // groups are annotated); when any consumer cannot take it, none does.
  // Joining never makes a cycle: the view node's only edges out go into its
  // groups. DW/PW groups take none (their GEMM reads the depthwise input by
  // its own indexing).
  std::vector<std::vector<int>> add_view_prologues(std::vector<std::vector<int>> groups) {
    std::vector<std::vector<int>> groups_of(dag_.nodes.size());
    for (size_t k = 0; k < groups.size(); ++k)
      for (int m : groups[k]) groups_of[static_cast<size_t>(m)] = {static_cast<int>(k)};
    for (int i = static_cast<int>(dag_.nodes.size()) - 1; i >= 0; --i) {
      if (!groups_of[static_cast<size_t>(i)].empty()) continue;
      const std::optional<std::vector<int>> consumers = view_consumers(i);
      if (!consumers) continue;
      std::set<int> targets;
      std::vector<int> new_cores;
      bool taken = true;
      for (int c : *consumers) {
        const std::vector<int>& of = groups_of[static_cast<size_t>(c)];
        if (is_view_.count(c)) {
          taken = taken && reads_only_as_data(c, i);
          targets.insert(of.begin(), of.end());
        } else if (!of.empty()) {
          taken = taken && kiln::fusion::classify(dag_, without_views(groups[static_cast<size_t>(of[0])])) !=
                               GroupKind::kDwPw;
          targets.insert(of[0]);
        } else if ((dag_.nodes[static_cast<size_t>(c)].role != Role::kOpaque && !view_consumers(c)) ||
                   is_view_core(c)) {
          new_cores.push_back(c);
        } else {
          taken = false;
        }
      }
      if (!taken || (targets.size() + new_cores.size() > 1 && !can_clone(g_, nodes_[static_cast<size_t>(i)])))
        continue;
      for (int c : new_cores) {
        targets.insert(static_cast<int>(groups.size()));
        groups_of[static_cast<size_t>(c)] = {static_cast<int>(groups.size())};
        groups.push_back({c});
      }
      for (int k : targets) groups[static_cast<size_t>(k)].push_back(i);
      groups_of[static_cast<size_t>(i)].assign(targets.begin(), targets.end());
      is_view_.insert(i);
      if (targets.size() > 1) shared_views_.insert(i);
      ++view_nodes_;
    }
    for (auto& members : groups) std::sort(members.begin(), members.end());
    std::sort(groups.begin(), groups.end());
    return groups;
  }

  // Whether view node `c` reads the output of node `i` only as data: its
  // input 0 (not a shape or a bound), or either input of a roll.
  bool reads_only_as_data(int c, int i) const {
    const kiln_node_id_t n = nodes_[static_cast<size_t>(c)];
    const auto in = g_.inputs(n);
    const kiln_value_id_t v = g_.outputs(nodes_[static_cast<size_t>(i)])[0];
    for (size_t k = is_roll(g_, n) ? 2 : 1; k < in.size(); ++k)
      if (in[k] == v) return false;
    return true;
  }

  std::vector<int> without_views(const std::vector<int>& members) const {
    std::vector<int> core;
    for (int m : members)
      if (!is_view_.count(m)) core.push_back(m);
    return core;
  }

  std::optional<kiln::fusion::DwPwShape> dwpw_shape(kiln_node_id_t dw, kiln_node_id_t pw) const {
    const auto x = g_.static_shape(g_.inputs(dw)[0]);
    const auto w = g_.static_shape(g_.inputs(dw)[1]);
    const auto y = g_.static_shape(g_.outputs(dw)[0]);
    const auto z = g_.static_shape(g_.outputs(pw)[0]);
    auto info = g_.value(g_.outputs(pw)[0]);
    if (!x || !w || !y || !z || !info) return std::nullopt;
    std::vector<int64_t> strides = g_.attr_ints(dw, "strides");
    if (strides.size() != 2) strides = {1, 1};
    return kiln::fusion::DwPwShape{(*x)[0], (*x)[1], (*x)[2], (*x)[3], (*y)[2], (*y)[3], (*w)[2], (*w)[3],
                                   strides[0], strides[1], (*z)[1],
                                   static_cast<int64_t>(kiln_plugin_dtype_size(info->dtype))};
  }

  void annotate(const std::vector<std::vector<int>>& groups) {
    std::vector<std::string> names;
    for (size_t k = 0; k < groups.size(); ++k) names.push_back("fg" + std::to_string(k));
    for (size_t k = 0; k < groups.size(); ++k)
      for (int m : groups[k])
        if (!shared_views_.count(m)) rw_.annotate_node(nodes_[static_cast<size_t>(m)], KILN_ANNOTATION_FUSION_GROUP, names[k]);
    if (!shared_views_.empty()) views_cloned_ = clone_shared_views(g_, rw_, nodes_, groups, names);
  }

  void statistics(const std::vector<std::vector<int>>& groups, const std::vector<int>& group_of, double td) {
    int64_t grouped = 0, complex_max = 0, kinds[static_cast<int>(GroupKind::kNormGemm) + 1] = {};
    for (const auto& members : groups) {
      grouped += static_cast<int64_t>(members.size());
      int64_t complex = 0;
      for (int m : members) complex += dag_.nodes[static_cast<size_t>(m)].role == Role::kAnchor;
      complex_max = std::max(complex_max, complex);
      const std::vector<int> core = without_views(members);
      const GroupKind kind = attention_.count(core.front())  ? GroupKind::kAttention
                             : row_norms_.count(core.front()) ? GroupKind::kRowNorm
                             : conv_sums_.count(core.front()) ? GroupKind::kConvSum
                             : dw_norms_.count(core.front())  ? GroupKind::kDwNorm
                             : squeeze_excites_.count(core.front()) ? GroupKind::kSqueezeExcite
                             : scaled_convs_.count(core.front()) ? GroupKind::kScaledConv
                             : norm_gemms_.count(core.front()) ? GroupKind::kNormGemm
                             : core.size() < 2               ? GroupKind::kIllegal
                                                             : kiln::fusion::classify(dag_, core);
      ++kinds[static_cast<int>(kind)];
    }
    // Balance over the partition of the device nodes (AGO Fig. 14).
    std::map<int, double> weights;
    for (size_t i = 0; i < dag_.nodes.size(); ++i)
      if (dag_.nodes[i].role != Role::kOpaque) weights[group_of[i]] += dag_.nodes[i].weight;
    std::vector<double> w;
    for (const auto& [id, weight] : weights) w.push_back(weight);
    rw_.add_statistic("groups", static_cast<int64_t>(groups.size()));
    rw_.add_statistic("grouped-nodes", grouped);
    rw_.add_statistic("groups-elementwise", kinds[static_cast<int>(GroupKind::kElementwise)]);
    rw_.add_statistic("groups-anchor", kinds[static_cast<int>(GroupKind::kAnchor)]);
    rw_.add_statistic("groups-dwpw", dwpw_groups_);
    rw_.add_statistic("attention-groups", kinds[static_cast<int>(GroupKind::kAttention)]);
    if (kinds[static_cast<int>(GroupKind::kStoreView)])
      rw_.add_statistic("groups-store-view", kinds[static_cast<int>(GroupKind::kStoreView)]);
    if (kinds[static_cast<int>(GroupKind::kRowNorm)])
      rw_.add_statistic("groups-row-norm", kinds[static_cast<int>(GroupKind::kRowNorm)]);
    if (kinds[static_cast<int>(GroupKind::kConvSum)])
      rw_.add_statistic("groups-conv-sum", kinds[static_cast<int>(GroupKind::kConvSum)]);
    if (kinds[static_cast<int>(GroupKind::kDwNorm)])
      rw_.add_statistic("groups-dw-norm", kinds[static_cast<int>(GroupKind::kDwNorm)]);
    if (kinds[static_cast<int>(GroupKind::kSqueezeExcite)])
      rw_.add_statistic("groups-squeeze-excite", kinds[static_cast<int>(GroupKind::kSqueezeExcite)]);
    if (kinds[static_cast<int>(GroupKind::kScaledConv)])
      rw_.add_statistic("groups-scaled-conv", kinds[static_cast<int>(GroupKind::kScaledConv)]);
    if (kinds[static_cast<int>(GroupKind::kNormGemm)])
      rw_.add_statistic("groups-norm-gemm", kinds[static_cast<int>(GroupKind::kNormGemm)]);
    if (view_nodes_) rw_.add_statistic("view-prologue-nodes", view_nodes_);
    if (views_cloned_) rw_.add_statistic("views-cloned", views_cloned_);
    if (store_view_nodes_) rw_.add_statistic("store-view-nodes", store_view_nodes_);
    if (dwpw_refused_) rw_.add_statistic("dwpw-refused", dwpw_refused_);
    if (dwpw_forced_) rw_.add_statistic("dwpw-forced", dwpw_forced_);
    if (conv_sums_off_) rw_.add_statistic("conv-sums-off", conv_sums_off_);
    if (dw_norms_off_) rw_.add_statistic("dw-norms-off", dw_norms_off_);
    if (dw_norms_refused_) rw_.add_statistic("dw-norms-refused", dw_norms_refused_);
    if (squeeze_excites_off_) rw_.add_statistic("squeeze-excites-off", squeeze_excites_off_);
    if (squeeze_excites_refused_) rw_.add_statistic("squeeze-excites-refused", squeeze_excites_refused_);
    if (scaled_convs_off_) rw_.add_statistic("scaled-convs-off", scaled_convs_off_);
    if (norm_gemms_off_) rw_.add_statistic("norm-gemms-off", norm_gemms_off_);
    rw_.add_statistic("complex-ops-per-group-max", complex_max);
    // Weights grow with tensor sizes, which a model may make absurd: the
    // statistics saturate (NaN counts as 0) instead of overflowing the cast.
    auto saturated = [](double v) -> int64_t {
      if (!(v == v)) return 0;
      if (v >= 9.2e18) return std::numeric_limits<int64_t>::max();
      if (v <= -9.2e18) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(v);
    };
    rw_.add_statistic("weight-balance-jain-x1000", saturated(1000.0 * kiln::fusion::jain_index(w) + 0.5));
    rw_.add_statistic("weight-threshold", saturated(td));
    if (cleared_) rw_.add_statistic("old-groups-cleared", cleared_);
  }

  GraphView& g_;
  Rewriter& rw_;
  std::vector<kiln_node_id_t> nodes_;
  std::map<kiln_node_id_t, int> index_;
  std::set<kiln_value_id_t> host_;
  std::set<kiln_value_id_t> shape_values_;  // ... of them, those computed from shapes and constants only
  Dag dag_;
  std::set<int> is_view_;       // DAG nodes that joined a group as index views
  std::set<int> shared_views_;  // ... of them, those that joined several groups
  std::set<int> attention_;     // the first DAG node of each attention group
  std::set<int> row_norms_;     // ... and of each row-norm group (its GEMM)
  std::set<int> conv_sums_;     // ... and of each conv-sum group (its first conv)
  std::set<int> dw_norms_;      // ... and of each dw-norm group (its depthwise conv)
  std::set<int> squeeze_excites_;  // ... and of each squeeze-excite group (its pool)
  std::set<int> scaled_convs_;     // ... and of each scaled-conv group (its Mul)
  std::set<int> norm_gemms_;       // ... and of each norm-GEMM group (its LayerNormalization)
  int64_t dwpw_groups_ = 0, dwpw_refused_ = 0, cleared_ = 0, view_nodes_ = 0, views_cloned_ = 0;
  int64_t store_view_nodes_ = 0, dwpw_forced_ = 0, conv_sums_off_ = 0, dw_norms_off_ = 0, dw_norms_refused_ = 0;
  int64_t squeeze_excites_off_ = 0, squeeze_excites_refused_ = 0, scaled_convs_off_ = 0, norm_gemms_off_ = 0;
  // KILN_FUSION_DWPW=fuse|split overrides FusePlanner for every DW/PW pair
  // (for timing both ways: bench/dwpw_timing.py); unset or anything else:
  // FusePlanner decides.
  enum class DwPwOverride : uint8_t { kAuto, kFuse, kSplit };
  DwPwOverride dwpw_override_ = read_dwpw_override();
  static DwPwOverride read_dwpw_override() {
    const char* v = std::getenv("KILN_FUSION_DWPW");
    if (v != nullptr && std::strcmp(v, "fuse") == 0) return DwPwOverride::kFuse;
    if (v != nullptr && std::strcmp(v, "split") == 0) return DwPwOverride::kSplit;
    return DwPwOverride::kAuto;
  }
};

class FusionPass : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    if (!g.can_infer_dims() || !KILN_PLUGIN_HAS_FIELD(g.host(), kiln_host_api_t, op_mapping) || !rw.can_remove_annotations())
      throw kiln::plugin::Error("kiln.fusion needs a host of plugin ABI 1.3 or newer", KILN_PLUGIN_UNIMPLEMENTED);
    Partitioner(g, rw).run();
  }
};

FusionPass fusion_pass;
const kiln_pass_t kFusion = kiln::plugin::make_pass(
    fusion_pass, "fusion",
    "fusion groups (AGO weighted acyclic clustering, DNNFusion legality, FCM DW/PW): annotates kiln.fusion_group",
    KILN_FACT_SHAPES, KILN_FACT_FUSION_GROUPS | KILN_FACT_KERNEL_CONFIGS, false, KILN_FACT_FUSION_GROUPS);
const kiln_pass_t* const kPasses[] = {&kFusion};
const kiln_plugin_t kPlugin = kiln::plugin::make_plugin("kiln.fusion", "1.0", kPasses, 1);

}  // namespace
}  // namespace kiln_fusion

KILN_PLUGIN_DEFINE_QUERY(kiln_fusion_plugin_query, kiln_fusion::kPlugin)
#ifdef KILN_FUSION_SHARED
KILN_PLUGIN_DEFINE_QUERY(kiln_plugin_query, kiln_fusion::kPlugin)
#endif

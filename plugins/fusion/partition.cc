// AGO partitioning and DNNFusion legality (see partition.h).
//
// Why the cones of legalize are cycle-free: in a single-sink cone G every
// member but the sink s has all its consumers in G, so every path leaving G
// leaves through s, and every member reaches s. If two cones A and B had
// paths A -> B and B -> A, the edge leaving B would start at s_B and enter
// some a in A, and the path from A would leave through s_A and reach some b
// in B, which reaches s_B: s_B -> a -> s_A -> b -> s_B, a cycle in the DAG.
#include "plugins/fusion/partition.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace kiln::fusion {

const char* group_kind_name(GroupKind kind) {
  switch (kind) {
    case GroupKind::kElementwise: return "elementwise";
    case GroupKind::kAnchor: return "anchor";
    case GroupKind::kDwPw: return "dwpw";
    case GroupKind::kAttention: return "attention";
    case GroupKind::kStoreView: return "store-view";
    case GroupKind::kRowNorm: return "row-norm";
    case GroupKind::kConvSum: return "conv-sum";
    case GroupKind::kDwNorm: return "dw-norm";
    case GroupKind::kSqueezeExcite: return "squeeze-excite";
    case GroupKind::kScaledConv: return "scaled-conv";
    case GroupKind::kNormGemm: return "norm-gemm";
    case GroupKind::kIllegal: break;
  }
  return "illegal";
}

void Dag::add_edge(int from, int to) {
  auto& s = nodes[static_cast<size_t>(from)].succs;
  if (std::find(s.begin(), s.end(), to) == s.end()) s.push_back(to);
  auto& p = nodes[static_cast<size_t>(to)].preds;
  if (std::find(p.begin(), p.end(), from) == p.end()) p.push_back(from);
}

double op_weight(const std::vector<int64_t>& loop_extents, double slope, double bias) {
  double product = 1.0;
  for (int64_t s : loop_extents) product *= std::log2(1.0 + static_cast<double>(std::max<int64_t>(s, 1)));
  return slope * product + bias;
}

std::vector<int> topological_stages(const Dag& dag, const std::vector<int>& cluster_of, int clusters) {
  // Parallel edges between two hyper nodes stay: each counts once in the
  // in-degree and is released once, which Kahn's algorithm does not mind.
  std::vector<std::vector<int>> out(static_cast<size_t>(clusters));
  std::vector<int> indegree(static_cast<size_t>(clusters), 0), stage(static_cast<size_t>(clusters), -1);
  for (size_t u = 0; u < dag.nodes.size(); ++u) {
    stage[static_cast<size_t>(cluster_of[u])] = 1;
    for (int v : dag.nodes[u].succs) {
      const int a = cluster_of[u], b = cluster_of[static_cast<size_t>(v)];
      if (a != b) out[static_cast<size_t>(a)].push_back(b), ++indegree[static_cast<size_t>(b)];
    }
  }
  std::vector<int> ready;
  for (int c = 0; c < clusters; ++c)
    if (stage[static_cast<size_t>(c)] > 0 && indegree[static_cast<size_t>(c)] == 0) ready.push_back(c);
  while (!ready.empty()) {
    const int c = ready.back();
    ready.pop_back();
    for (int d : out[static_cast<size_t>(c)]) {
      stage[static_cast<size_t>(d)] = std::max(stage[static_cast<size_t>(d)], stage[static_cast<size_t>(c)] + 1);
      if (--indegree[static_cast<size_t>(d)] == 0) ready.push_back(d);
    }
  }
  return stage;
}

namespace {

// affix_set over the cluster's known members.
std::vector<int> affix_of_members(const Dag& dag, const std::vector<int>& cluster_of, const std::vector<int>& stages,
                                  int cluster, const std::vector<int>& members) {
  std::set<int> out;
  const int ts = stages[static_cast<size_t>(cluster)];
  for (int u : members) {
    for (const auto* list : {&dag.nodes[static_cast<size_t>(u)].preds, &dag.nodes[static_cast<size_t>(u)].succs})
      for (int v : *list) {
        const int c = cluster_of[static_cast<size_t>(v)];
        if (c != cluster && std::abs(stages[static_cast<size_t>(c)] - ts) == 1) out.insert(c);
      }
  }
  return {out.begin(), out.end()};
}

}  // namespace

std::vector<int> affix_set(const Dag& dag, const std::vector<int>& cluster_of, const std::vector<int>& stages,
                           int cluster) {
  std::set<int> out;
  const int ts = stages[static_cast<size_t>(cluster)];
  for (size_t u = 0; u < dag.nodes.size(); ++u) {
    if (cluster_of[u] != cluster) continue;
    for (const auto* list : {&dag.nodes[u].preds, &dag.nodes[u].succs})
      for (int v : *list) {
        const int c = cluster_of[static_cast<size_t>(v)];
        if (c != cluster && std::abs(stages[static_cast<size_t>(c)] - ts) == 1) out.insert(c);
      }
  }
  return {out.begin(), out.end()};
}

bool compatible(const Dag& dag, const std::vector<int>& members) {
  std::vector<int> anchors;
  std::set<int> shapes;
  for (int m : members) {
    const DagNode& n = dag.nodes[static_cast<size_t>(m)];
    if (n.role == Role::kOpaque || n.shape_class < 0) return false;
    if (n.role == Role::kAnchor) anchors.push_back(m);
    shapes.insert(n.shape_class);
  }
  // An anchor's kernels take the elementwise nodes after it (its epilogue,
  // or the chain between a depthwise and a pointwise Conv): an elementwise
  // node before the first anchor could never be fused with it, and letting
  // the cluster take it would steal it from the anchor it follows (ResNet's
  // conv -> relu -> conv: the relu belongs to the first conv).
  if (!anchors.empty())
    for (int m : members)
      if (dag.nodes[static_cast<size_t>(m)].role == Role::kElementwise && m < *std::min_element(anchors.begin(), anchors.end()))
        return false;
  if (anchors.size() <= 1) return shapes.size() <= 1;
  // DW before PW (a pointwise Conv before a depthwise one is FCM's PWDW,
  // which the planner does not fuse: let the depthwise one find its PW).
  std::sort(anchors.begin(), anchors.end());
  return anchors.size() == 2 && dag.nodes[static_cast<size_t>(anchors[0])].depthwise &&
         dag.nodes[static_cast<size_t>(anchors[1])].pointwise && shapes.size() <= 2;
}

namespace {

bool contains(const std::vector<int>& sorted, int x) { return std::binary_search(sorted.begin(), sorted.end(), x); }

int member_preds(const Dag& dag, const std::vector<int>& members, int node) {
  int k = 0;
  for (int p : dag.nodes[static_cast<size_t>(node)].preds) k += contains(members, p);
  return k;
}

// Members whose outputs reach `target` inside `members` (target included).
std::vector<int> ancestors_within(const Dag& dag, const std::vector<int>& members, int target) {
  std::set<int> seen{target};
  std::vector<int> stack{target};
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    for (int p : dag.nodes[static_cast<size_t>(n)].preds)
      if (contains(members, p) && seen.insert(p).second) stack.push_back(p);
  }
  return {seen.begin(), seen.end()};
}

GroupKind classify_dwpw(const Dag& dag, const std::vector<int>& members, int dw, int pw) {
  const std::vector<int> up = ancestors_within(dag, members, pw);  // dw part plus pw
  std::vector<int> head, tail;
  for (int m : members) (contains(up, m) && m != pw ? head : tail).push_back(m);
  const DagNode& pwn = dag.nodes[static_cast<size_t>(pw)];
  const int sink_shape = dag.nodes[static_cast<size_t>(members.back())].shape_class;
  const int dw_shape = dag.nodes[static_cast<size_t>(dw)].shape_class;
  if (!contains(head, dw) || member_preds(dag, head, dw) != 0) return GroupKind::kIllegal;
  // The pw Conv reads the head through its data input only.
  if (member_preds(dag, members, pw) != 1 || !contains(head, pwn.data_pred)) return GroupKind::kIllegal;
  for (int m : head) {
    const DagNode& n = dag.nodes[static_cast<size_t>(m)];
    if (n.shape_class != dw_shape) return GroupKind::kIllegal;
    if (m != dw && (n.role != Role::kElementwise || member_preds(dag, head, m) == 0)) return GroupKind::kIllegal;
    for (int s : n.succs)
      if (!contains(head, s) && s != pw) return GroupKind::kIllegal;
  }
  for (int m : tail) {
    const DagNode& n = dag.nodes[static_cast<size_t>(m)];
    if (n.shape_class != sink_shape) return GroupKind::kIllegal;
    if (m != pw && (n.role != Role::kElementwise || member_preds(dag, tail, m) == 0 ||
                    member_preds(dag, head, m) != 0))
      return GroupKind::kIllegal;
  }
  return GroupKind::kDwPw;
}

}  // namespace

GroupKind classify_store_view(const Dag& dag, const std::vector<int>& members) {
  if (members.size() < 2 || !std::is_sorted(members.begin(), members.end())) return GroupKind::kIllegal;
  const auto node = [&](int m) -> const DagNode& { return dag.nodes[static_cast<size_t>(m)]; };
  // Split in order: the anchor part, the views, the tail.
  std::vector<int> anchor_part, views, tail;
  for (int m : members) {
    if (node(m).store_view && tail.empty() && !anchor_part.empty()) views.push_back(m);
    else (views.empty() ? anchor_part : tail).push_back(m);
  }
  if (views.empty()) return GroupKind::kIllegal;
  if (anchor_part.size() == 1 ? node(anchor_part[0]).role != Role::kAnchor
                              : classify(dag, anchor_part) != GroupKind::kAnchor)
    return GroupKind::kIllegal;
  // The chain: each link's only reader is the next one.
  int prev = anchor_part.back();
  for (int v : views) {
    const DagNode& p = node(prev);
    if (p.escapes || p.succs.size() != 1 || p.succs[0] != v || node(v).data_pred != prev ||
        member_preds(dag, members, v) != 1)
      return GroupKind::kIllegal;
    prev = v;
  }
  const DagNode& last = node(prev);
  // No tail: the chain ends at a graph output no node reads.
  if (tail.empty()) return last.succs.empty() && last.shape_class >= 0 ? GroupKind::kStoreView : GroupKind::kIllegal;
  if (last.escapes || last.shape_class < 0) return GroupKind::kIllegal;
  for (int s : last.succs)
    if (!contains(tail, s)) return GroupKind::kIllegal;
  // The tail: an (a) DAG fed by the last view alone, of its shape.
  for (size_t k = 0; k < tail.size(); ++k) {
    const DagNode& n = node(tail[k]);
    if (n.role != Role::kElementwise || n.shape_class != last.shape_class) return GroupKind::kIllegal;
    const int from_tail = member_preds(dag, tail, tail[k]);
    const bool reads_view = std::find(n.preds.begin(), n.preds.end(), prev) != n.preds.end();
    if (member_preds(dag, members, tail[k]) != from_tail + (reads_view ? 1 : 0)) return GroupKind::kIllegal;
    if (k == 0 ? (!reads_view || from_tail != 0) : from_tail == 0) return GroupKind::kIllegal;
    if (tail[k] == members.back()) continue;
    if (n.escapes || n.succs.empty()) return GroupKind::kIllegal;
    for (int s : n.succs)
      if (!contains(tail, s)) return GroupKind::kIllegal;
  }
  return GroupKind::kStoreView;
}

GroupKind classify(const Dag& dag, const std::vector<int>& members) {
  if (members.size() < 2 || !std::is_sorted(members.begin(), members.end())) return GroupKind::kIllegal;
  for (int m : members)
    if (dag.nodes[static_cast<size_t>(m)].store_view) return classify_store_view(dag, members);
  const int sink = members.back();
  std::vector<int> anchors;
  for (int m : members) {
    const DagNode& n = dag.nodes[static_cast<size_t>(m)];
    if (n.role == Role::kOpaque || n.shape_class < 0) return GroupKind::kIllegal;
    if (n.role == Role::kAnchor) anchors.push_back(m);
    if (m == sink) continue;
    // One value leaves the group: the sink's.
    if (n.escapes || n.succs.empty()) return GroupKind::kIllegal;
    for (int s : n.succs)
      if (!contains(members, s)) return GroupKind::kIllegal;
  }
  if (anchors.size() == 2) {
    const DagNode& a = dag.nodes[static_cast<size_t>(anchors[0])];
    const DagNode& b = dag.nodes[static_cast<size_t>(anchors[1])];
    if (!a.depthwise || !b.pointwise) return GroupKind::kIllegal;
    return classify_dwpw(dag, members, anchors[0], anchors[1]);
  }
  if (anchors.size() > 2) return GroupKind::kIllegal;
  const int shape = dag.nodes[static_cast<size_t>(sink)].shape_class;
  for (int m : members) {
    if (dag.nodes[static_cast<size_t>(m)].shape_class != shape) return GroupKind::kIllegal;
    const bool source = member_preds(dag, members, m) == 0;
    // The anchor comes first and feeds the rest (directly or through them).
    if (!anchors.empty() && source != (m == anchors[0])) return GroupKind::kIllegal;
  }
  return anchors.empty() ? GroupKind::kElementwise : GroupKind::kAnchor;
}

std::vector<int> cluster(const Dag& dag, double td) {
  const int n = static_cast<int>(dag.nodes.size());
  std::vector<int> cluster_of(static_cast<size_t>(n));
  std::vector<std::vector<int>> members(static_cast<size_t>(n));
  std::vector<double> weight(static_cast<size_t>(n));
  std::set<int> cand;
  for (int i = 0; i < n; ++i) {
    cluster_of[static_cast<size_t>(i)] = i;
    members[static_cast<size_t>(i)] = {i};
    weight[static_cast<size_t>(i)] = dag.nodes[static_cast<size_t>(i)].weight;
    if (dag.nodes[static_cast<size_t>(i)].role != Role::kOpaque) cand.insert(i);
  }
  std::vector<int> stages;
  bool stale = true;
  while (!cand.empty()) {
    // The heaviest candidate (ties: the lower id).
    int v = *cand.begin();
    for (int c : cand)
      if (weight[static_cast<size_t>(c)] > weight[static_cast<size_t>(v)]) v = c;
    // Stages change only when hyper nodes merge.
    if (stale) stages = topological_stages(dag, cluster_of, n), stale = false;
    int best = -1;
    for (int u : affix_of_members(dag, cluster_of, stages, v, members[static_cast<size_t>(v)])) {
      if (weight[static_cast<size_t>(v)] + weight[static_cast<size_t>(u)] >= td) continue;
      std::vector<int> merged = members[static_cast<size_t>(v)];
      merged.insert(merged.end(), members[static_cast<size_t>(u)].begin(), members[static_cast<size_t>(u)].end());
      if (!compatible(dag, merged)) continue;
      if (best < 0 || weight[static_cast<size_t>(u)] < weight[static_cast<size_t>(best)]) best = u;
    }
    if (best < 0) {
      cand.erase(v);
      continue;
    }
    // u joins v; the hyper node v' stays in Cand.
    for (int m : members[static_cast<size_t>(best)]) cluster_of[static_cast<size_t>(m)] = v;
    auto& mv = members[static_cast<size_t>(v)];
    mv.insert(mv.end(), members[static_cast<size_t>(best)].begin(), members[static_cast<size_t>(best)].end());
    std::sort(mv.begin(), mv.end());
    members[static_cast<size_t>(best)].clear();
    weight[static_cast<size_t>(v)] += weight[static_cast<size_t>(best)];
    cand.erase(best);
    stale = true;
  }
  return cluster_of;
}

std::vector<std::vector<int>> legalize(const Dag& dag, const std::vector<int>& cluster_of) {
  std::vector<std::vector<int>> by_cluster(dag.nodes.size());
  for (size_t i = 0; i < dag.nodes.size(); ++i) by_cluster[static_cast<size_t>(cluster_of[i])].push_back(static_cast<int>(i));
  std::vector<std::vector<int>> groups;
  for (std::vector<int>& rest : by_cluster) {
    while (rest.size() >= 2) {
      // The cone of the last remaining member: members (in reverse order)
      // all of whose consumers are already in it.
      const int sink = rest.back();
      std::vector<int> cone{sink};
      for (size_t k = rest.size() - 1; k-- > 0;) {
        const DagNode& n = dag.nodes[static_cast<size_t>(rest[k])];
        bool inside = !n.escapes && !n.succs.empty();
        for (int s : n.succs) inside = inside && std::find(cone.begin(), cone.end(), s) != cone.end();
        if (inside) cone.push_back(rest[k]);
      }
      std::sort(cone.begin(), cone.end());
      // Dropping the first member keeps it a cone (nothing in it feeds the first).
      while (cone.size() >= 2 && classify(dag, cone) == GroupKind::kIllegal) cone.erase(cone.begin());
      if (cone.size() < 2) cone = {sink};
      else groups.push_back(cone);
      std::vector<int> left;
      std::set_difference(rest.begin(), rest.end(), cone.begin(), cone.end(), std::back_inserter(left));
      rest = std::move(left);
    }
  }
  std::sort(groups.begin(), groups.end());
  return groups;
}

bool is_acyclic_partition(const Dag& dag, const std::vector<int>& group_of) {
  // Dense ids for the groups, then Kahn's algorithm on the contracted graph.
  std::vector<int> ids(group_of);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<int> dense(dag.nodes.size());
  for (size_t i = 0; i < dag.nodes.size(); ++i)
    dense[i] = static_cast<int>(std::lower_bound(ids.begin(), ids.end(), group_of[i]) - ids.begin());
  const std::vector<int> stage = topological_stages(dag, dense, static_cast<int>(ids.size()));
  // Without a cycle every edge climbs at least one stage. Groups on a cycle
  // are never released, and stages cannot rise all the way around a cycle,
  // so some edge on it does not climb.
  for (size_t u = 0; u < dag.nodes.size(); ++u)
    for (int v : dag.nodes[u].succs)
      if (dense[u] != dense[static_cast<size_t>(v)] &&
          stage[static_cast<size_t>(dense[u])] >= stage[static_cast<size_t>(dense[static_cast<size_t>(v)])])
        return false;
  return true;
}

double jain_index(const std::vector<double>& weights) {
  double sum = 0, squares = 0;
  for (double w : weights) sum += w, squares += w * w;
  return squares > 0 ? sum * sum / (static_cast<double>(weights.size()) * squares) : 0.0;
}

}  // namespace kiln::fusion

// Peak-memory execution order: exact within segments, heuristic across them (order.h).
#include "plugins/memplan/order.h"

#include <algorithm>

namespace kiln::memplan {

uint64_t order_peak(const OrderGraph& graph, const std::vector<int>& order) {
  const size_t n = graph.node_count;
  if (n == 0) return 0;
  std::vector<size_t> pos(n, 0);
  for (size_t k = 0; k < order.size(); ++k) pos[static_cast<size_t>(order[k])] = k;
  // Each value is live from its producer's step through its last consumer's
  // (to the end when it is an output); a difference array sums them.
  std::vector<int64_t> delta(n + 1, 0);
  for (const OrderGraph::Value& v : graph.values) {
    size_t start = v.producer < 0 ? 0 : pos[static_cast<size_t>(v.producer)];
    size_t end = start;
    bool used = v.producer >= 0 || v.live_out;
    for (int c : v.consumers) end = std::max(end, pos[static_cast<size_t>(c)]), used = true;
    if (v.live_out) end = n - 1;
    if (!used) continue;
    delta[start] += static_cast<int64_t>(v.bytes);
    delta[end + 1] -= static_cast<int64_t>(v.bytes);
  }
  int64_t live = 0, peak = 0;
  for (size_t k = 0; k < n; ++k) peak = std::max(peak, live += delta[k]);
  return static_cast<uint64_t>(peak);
}

namespace {

// One value as a segment sees it, in bit masks over the segment's nodes.
struct SegValue {
  uint32_t producer = 0;   // the producer's bit; 0 if produced before the segment
  uint32_t consumers = 0;  // bits of the consumers inside the segment
  bool needed_after = false;  // a graph output, or read after the segment
  uint64_t bytes = 0;
};

// Reorders order[begin, end) to the least peak among its valid orders.
void solve_segment(const OrderGraph& graph, std::vector<int>& order, size_t begin, size_t end,
                   const std::vector<std::vector<size_t>>& touching, const std::vector<size_t>& pos) {
  const size_t m = end - begin;
  if (m < 2) return;
  std::vector<int> local(graph.node_count, -1);
  for (size_t i = 0; i < m; ++i) local[static_cast<size_t>(order[begin + i])] = static_cast<int>(i);

  // The values the segment produces or reads; the rest are a constant base.
  std::vector<size_t> ids;
  for (size_t i = 0; i < m; ++i)
    for (size_t v : touching[static_cast<size_t>(order[begin + i])]) ids.push_back(v);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<SegValue> vals;
  std::vector<uint32_t> preds(m, 0);
  std::vector<uint64_t> out_bytes(m, 0);
  for (size_t id : ids) {
    const OrderGraph::Value& v = graph.values[id];
    SegValue s;
    s.bytes = v.bytes;
    s.needed_after = v.live_out;
    const int p = v.producer >= 0 ? local[static_cast<size_t>(v.producer)] : -1;
    if (p >= 0) s.producer = 1u << p;
    for (int c : v.consumers) {
      const int lc = local[static_cast<size_t>(c)];
      if (lc >= 0) {
        s.consumers |= 1u << lc;
        if (p >= 0 && lc != p) preds[static_cast<size_t>(lc)] |= s.producer;
      } else if (pos[static_cast<size_t>(c)] >= end) {
        s.needed_after = true;
      }
    }
    if (p >= 0) out_bytes[static_cast<size_t>(p)] += v.bytes;
    vals.push_back(s);
  }
  auto live_after = [&](uint32_t done) {
    uint64_t bytes = 0;
    for (const SegValue& s : vals) {
      if (s.producer && !(done & s.producer)) continue;
      if (s.needed_after || (s.consumers & ~done)) bytes += s.bytes;
    }
    return bytes;
  };
  auto peak_of = [&](const std::vector<int>& seq) {
    uint32_t done = 0;
    uint64_t peak = 0;
    for (int i : seq) {
      peak = std::max(peak, live_after(done) + out_bytes[static_cast<size_t>(i)]);
      done |= 1u << i;
    }
    return peak;
  };

  const uint32_t full = (m == 32) ? ~0u : ((1u << m) - 1);
  std::vector<uint64_t> best(static_cast<size_t>(full) + 1, UINT64_MAX);
  std::vector<int8_t> last(static_cast<size_t>(full) + 1, -1);
  best[0] = 0;
  for (uint32_t done = 0; done < full; ++done) {
    if (best[done] == UINT64_MAX) continue;
    const uint64_t base = live_after(done);
    for (size_t i = 0; i < m; ++i) {
      const uint32_t bit = 1u << i;
      if ((done & bit) || (preds[i] & ~done)) continue;
      const uint64_t peak = std::max(best[done], base + out_bytes[i]);
      if (peak < best[done | bit]) {
        best[done | bit] = peak;
        last[done | bit] = static_cast<int8_t>(i);
      }
    }
  }
  std::vector<int> identity(m);
  for (size_t i = 0; i < m; ++i) identity[i] = static_cast<int>(i);
  if (peak_of(identity) <= best[full]) return;  // the given order is optimal: keep it
  std::vector<int> seq;
  for (uint32_t done = full; done;) {
    const int i = last[done];
    seq.push_back(i);
    done &= ~(1u << i);
  }
  std::reverse(seq.begin(), seq.end());
  std::vector<int> nodes(order.begin() + static_cast<std::ptrdiff_t>(begin),
                         order.begin() + static_cast<std::ptrdiff_t>(end));
  for (size_t k = 0; k < m; ++k) order[begin + k] = nodes[static_cast<size_t>(seq[k])];
}

}  // namespace

std::vector<int> choose_order(const OrderGraph& graph, size_t max_segment) {
  max_segment = std::clamp<size_t>(max_segment, 2, 20);
  const size_t n = graph.node_count;
  std::vector<int> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<int>(i);
  std::vector<std::vector<size_t>> touching(n);  // values each node produces or reads
  for (size_t v = 0; v < graph.values.size(); ++v) {
    const OrderGraph::Value& val = graph.values[v];
    if (val.producer >= 0) touching[static_cast<size_t>(val.producer)].push_back(v);
    for (int c : val.consumers) touching[static_cast<size_t>(c)].push_back(v);
  }
  auto is_barrier = [&](int node) {
    return static_cast<size_t>(node) < graph.barrier.size() && graph.barrier[static_cast<size_t>(node)];
  };
  std::vector<size_t> pos(n);
  for (size_t shift : {size_t{0}, max_segment / 2}) {
    for (size_t k = 0; k < n; ++k) pos[static_cast<size_t>(order[k])] = k;
    size_t begin = 0;
    size_t limit = shift ? shift : max_segment;  // the first segment of the shifted sweep is shorter
    for (size_t k = 0; k <= n; ++k) {
      const bool cut = k == n || is_barrier(order[k]) || k - begin == limit;
      if (!cut) continue;
      // pos[] of nodes outside [begin, k) is unchanged by solving it.
      solve_segment(graph, order, begin, k, touching, pos);
      for (size_t j = begin; j < k; ++j) pos[static_cast<size_t>(order[j])] = j;
      if (k < n && is_barrier(order[k])) {
        begin = k + 1;
      } else {
        begin = k;
      }
      limit = max_segment;
    }
  }
  return order;
}

}  // namespace kiln::memplan

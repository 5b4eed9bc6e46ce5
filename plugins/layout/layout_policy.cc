// The layout plugin's per-tensor decisions (see layout_policy.h).
#include "plugins/layout/layout_policy.h"

#include <algorithm>
#include <map>

#include "kiln/kiln_plugin.h"

namespace kiln_layout {
namespace {

int planner_default_axis(int rank) { return rank == 4 ? 1 : rank - 1; }

// The axes a consumer wants contiguous: its reduction axes, without the
// sliding window of a stencil op (a 3x3 window is too short to fill a vec4,
// the channels it also sums over are not).
uint64_t wanted_axes(const ConsumerFacts& c) {
  if (c.layout_class != KILN_LAYOUT_CLASS_ILD_VARIABLE) return 0;
  return c.stencil ? c.reduction_axes & uint64_t{0x3} : c.reduction_axes;
}

// The packed axis the consumers ask for (layout_policy.h).
PackChoice consumers_choice(const TensorFacts& t) {
  const int last = t.rank - 1;
  std::map<int, int> votes;  // non-last axis -> consumers wanting it
  bool last_wanted = false;
  for (const ConsumerFacts& c : t.consumers) {
    const uint64_t axes = wanted_axes(c);
    for (int a = 0; a < t.rank && a < 64; ++a) {
      if (!(axes >> a & 1)) continue;
      if (a == last) last_wanted = true;
      else ++votes[a];
    }
  }
  PackChoice out;
  if (!votes.empty()) {
    // The most wanted non-last axis; ties go to the outer axis (a conv's
    // channels before a stray spatial axis).
    int best = votes.begin()->first;
    for (const auto& [axis, n] : votes)
      if (n > votes[best]) best = axis;
    out.axis = best;
    out.reason = PackReason::kReduction;
    out.conflict = votes.size() > 1;
    return out;
  }
  if (last_wanted) {
    out.axis = last;
    out.reason = PackReason::kReduction;
    return out;
  }
  if (t.producer_packed_axis && *t.producer_packed_axis >= 0 && *t.producer_packed_axis < t.rank) {
    out.axis = *t.producer_packed_axis;
    out.reason = PackReason::kProducer;
    return out;
  }
  out.axis = planner_default_axis(t.rank);
  return out;
}

}  // namespace

std::vector<int> reshape_axis_map(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  for (int64_t d : in)
    if (d < 0) return {};
  for (int64_t d : out)
    if (d < 0) return {};
  std::vector<int> map(out.size(), -1);
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    // One group: the shortest prefixes of the rest whose products agree.
    const size_t i0 = i, j0 = j;
    int64_t pi = i < in.size() ? in[i++] : 1, pj = j < out.size() ? out[j++] : 1;
    while (pi != pj) {
      if (pi < pj && i < in.size()) pi *= in[i++];
      else if (pj < pi && j < out.size()) pj *= out[j++];
      else return {};  // element counts differ
      if (pi > (int64_t{1} << 62) || pj > (int64_t{1} << 62)) return {};
    }
    int inner = -1;  // the group's innermost input axis of extent > 1
    for (size_t k = i0; k < i; ++k)
      if (in[k] > 1) inner = static_cast<int>(k);
    if (inner < 0 && i > i0) inner = static_cast<int>(i - 1);
    for (size_t k = j0; k < j; ++k) map[k] = inner;
  }
  return map;
}

DeviceKind device_kind(int32_t vk_device_type) {
  switch (vk_device_type) {
    case 4: return DeviceKind::kCpu;          // VK_PHYSICAL_DEVICE_TYPE_CPU
    case 2: return DeviceKind::kDiscreteGpu;  // VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
    default: return DeviceKind::kOtherGpu;    // integrated, virtual, other
  }
}

PackChoice choose_packed_axis(const TensorFacts& t) {
  PackChoice wanted = consumers_choice(t);
  const std::optional<int> natural = t.producer_natural_axis;
  if (!natural || *natural < 0 || *natural >= t.rank) return wanted;
  PackChoice out;
  out.axis = *natural;
  out.reason = PackReason::kProducer;
  out.conflict = wanted.conflict;
  out.overridden = wanted.reason == PackReason::kReduction && wanted.axis != *natural;
  return out;
}

bool image_fits(const std::vector<int64_t>& dims, int packed_axis, int64_t limit) {
  if (limit <= 0 || dims.empty()) return true;
  const int last = static_cast<int>(dims.size()) - 1;
  for (int64_t d : dims)
    if (d < 0) return true;  // symbolic: the planner checks at run time
  // Multiplied with overflow in mind: a product past the limit stops early.
  const int64_t slices = dims[static_cast<size_t>(packed_axis)] / 4 + (dims[static_cast<size_t>(packed_axis)] % 4 != 0);
  if (slices > limit) return false;
  if (packed_axis != last && slices > 0 && dims[static_cast<size_t>(last)] > limit / slices) return false;
  int64_t height = 1;
  for (int k = 0; k <= last; ++k) {
    if (k == packed_axis || k == last) continue;
    const int64_t d = dims[static_cast<size_t>(k)];
    if (d > 0 && height > limit / d) return false;
    height *= d;
  }
  return true;
}

StorageChoice choose_storage(const TensorFacts& t, const DeviceFacts& d, int packed_axis) {
  StorageChoice out;
  if (t.graph_io) {
    out.reason = StorageReason::kGraphIo;
    return out;
  }
  bool wanted = false;
  switch (d.kind) {
    case DeviceKind::kCpu: wanted = t.rank == 4; break;
    case DeviceKind::kOtherGpu: wanted = true; break;
    case DeviceKind::kDiscreteGpu:
    case DeviceKind::kNone: wanted = false; break;
  }
  const bool symbolic = std::any_of(t.dims.begin(), t.dims.end(), [](int64_t dim) { return dim < 0; });
  if (wanted && symbolic) {
    out.reason = StorageReason::kSymbolic;
    return out;
  }
  if (wanted && !image_fits(t.dims, packed_axis, d.max_image_dimension_2d)) {
    out.reason = StorageReason::kTooLarge;
    return out;
  }
  out.image = wanted;
  return out;
}

}  // namespace kiln_layout

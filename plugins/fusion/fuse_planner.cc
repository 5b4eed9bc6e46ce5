// FusePlanner's global-memory estimators for Kiln's DW -> PW kernels (see
// fuse_planner.h). Counts are elements until the end, then bytes.
//
// The paper's estimators (FCM §4), restated for Kiln's kernels:
//   Eq. 1  the halo: input elements of one channel read again because the
//          windows of neighbouring output tiles overlap;
//   Eq. 2  a pointwise layer: IFMs re-read once per weight tile, OFMs
//          written once, weights re-read once per OFM tile;
//   Eq. 3  a depthwise layer: IFMs read once plus the halo, OFMs written
//          once, weights re-read once per spatial OFM tile;
//   Eq. 4  a fused module: Eq. 2 and 3 without the intermediate tensor, the
//          first layer's IFMs re-read as often as the second layer's tiling
//          makes the first layer recompute.
// Tilings are explored as the paper does: every candidate that fits the
// shared memory, and (when the device says how many compute units it has)
// gives at least one workgroup per compute unit; the cheapest wins.
#include "plugins/fusion/fuse_planner.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace kiln::fusion {
namespace {

// Kiln's tiled GEMM: K advances this many channels per shared-memory stage.
constexpr int64_t kBK = 16;

struct GemmTile {
  int m, n;
};
// What the GEMM lowering offers (planner/gemm_kernels.cc): 128 rows only
// with 64 columns.
constexpr GemmTile kGemmTiles[] = {{16, 16}, {16, 32}, {16, 64}, {32, 16}, {32, 32},
                                   {32, 64}, {64, 16}, {64, 32}, {64, 64}, {128, 64}};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Eq. 1. With tiles_w x tiles_h output tiles over one channel's plane, each
// of the (tiles_w - 1) vertical boundaries makes a band (kernel_w - stride_w)
// input columns wide and in_h tall be read by the tiles on both sides, and
// likewise each horizontal boundary; a stride at least the kernel's size
// leaves no overlap. The paper charges the band twice (2 x Overlap in Eq. 3
// and 4); the band's first read is already part of the IFM size, so Kiln
// adds it once.
int64_t overlap_eq1(const DwPwShape& s, int64_t tiles_w, int64_t tiles_h) {
  const int64_t band_w = std::max<int64_t>(s.kernel_w - s.stride_w, 0);
  const int64_t band_h = std::max<int64_t>(s.kernel_h - s.stride_h, 0);
  return (tiles_w - 1) * band_w * s.in_h + (tiles_h - 1) * band_h * s.in_w;
}

// The GEMM's rows are an image's output pixels in row-major order, so a tile
// of tile_m rows is a strip: part of one output row when tile_m < out_w,
// else tile_m / out_w whole rows. Returns the strips across and down one
// plane, the tiling Eq. 1 sees.
struct PlaneTiles {
  int64_t w, h;
};
PlaneTiles pixel_strips(const DwPwShape& s, int64_t tile_m) {
  if (tile_m >= s.out_w) return {1, ceil_div(s.out_h * s.out_w, tile_m)};
  return {ceil_div(s.out_w, tile_m), s.out_h};
}

// A candidate tiling and what the estimators say of it.
struct Candidate {
  int tile_m = 0, tile_n = 0;  // GEMM tile, or the depthwise tile's rows x columns
  int64_t elements = 0;        // global-memory accesses, in elements
  int64_t workgroups = 0;
  int64_t shared_bytes = 0;
  // Outputs the workgroups cover, padding included (a 128-row tile over 50
  // rows computes 78 rows for nothing).
  int64_t covered = 0;
};

// Eq. 3 for Kiln's layer-by-layer depthwise kernel with th x tw output
// tiles of one channel per workgroup (one filter slice per workgroup, as
// the paper assumes): IFMs + halo, OFMs written once, every channel's
// weights once per spatial tile.
Candidate dw_eq3(const DwPwShape& s, int64_t th, int64_t tw) {
  const int64_t planes = s.batch * s.channels;
  const int64_t tiles_h = ceil_div(s.out_h, th), tiles_w = ceil_div(s.out_w, tw);
  const int64_t ifm = planes * s.in_h * s.in_w;
  const int64_t ofm = planes * s.out_h * s.out_w;
  const int64_t weights = s.channels * s.kernel_h * s.kernel_w;
  Candidate c;
  c.tile_m = static_cast<int>(th);
  c.tile_n = static_cast<int>(tw);
  c.elements = planes * overlap_eq1(s, tiles_w, tiles_h) + ifm + ofm + s.batch * tiles_h * tiles_w * weights;
  c.workgroups = planes * tiles_h * tiles_w;
  c.covered = c.workgroups * th * tw;
  const int64_t window = ((th - 1) * s.stride_h + s.kernel_h) * ((tw - 1) * s.stride_w + s.kernel_w);
  c.shared_bytes = (window + s.kernel_h * s.kernel_w) * s.elem_bytes;
  return c;
}

// Eq. 2 for the pointwise GEMM of the layer-by-layer pair: its IFMs (the
// depthwise output, M x C) are re-read once per column tile (the paper's
// weight tile: tile_n filters), its OFMs written once, its weights (C x K)
// re-read once per row tile (the paper's OFM tile).
Candidate pw_eq2(const DwPwShape& s, GemmTile t) {
  const int64_t pixels = s.out_h * s.out_w;
  const int64_t m = s.batch * pixels;
  const int64_t row_tiles = s.batch * ceil_div(pixels, t.m), col_tiles = ceil_div(s.out_channels, t.n);
  Candidate c;
  c.tile_m = t.m;
  c.tile_n = t.n;
  c.elements = col_tiles * m * s.channels + m * s.out_channels + row_tiles * s.channels * s.out_channels;
  c.workgroups = row_tiles * col_tiles;
  c.covered = c.workgroups * t.m * t.n;
  c.shared_bytes = (t.m + t.n) * kBK * s.elem_bytes;
  return c;
}

// Eq. 4, the paper's PWDW module turned around for DWPW. The intermediate
// tensor (the depthwise output, the GEMM's A) never reaches global memory.
// The depthwise IFMs are read, halo included, once per column tile: the
// paper's max(ceil(PwWeights / PwWeightsTile), ceil(DwWeights /
// DwWeightsTile)) is the pointwise count here, because every tile needs all
// channels and so never splits the depthwise weights. The pointwise weights
// are re-read once per row tile, the depthwise weights by every tile, and
// the OFMs are written once.
Candidate dwpw_eq4(const DwPwShape& s, GemmTile t) {
  const int64_t planes = s.batch * s.channels;
  const int64_t pixels = s.out_h * s.out_w;
  const PlaneTiles strips = pixel_strips(s, t.m);
  const int64_t row_tiles = s.batch * ceil_div(pixels, t.m), col_tiles = ceil_div(s.out_channels, t.n);
  const int64_t dw_input = planes * (s.in_h * s.in_w + overlap_eq1(s, strips.w, strips.h));
  const int64_t ofm = s.batch * pixels * s.out_channels;
  const int64_t pw_weights = s.channels * s.out_channels, dw_weights = s.channels * s.kernel_h * s.kernel_w;
  Candidate c;
  c.tile_m = t.m;
  c.tile_n = t.n;
  c.elements = col_tiles * dw_input + ofm + row_tiles * pw_weights + row_tiles * col_tiles * dw_weights;
  c.workgroups = row_tiles * col_tiles;
  c.covered = c.workgroups * t.m * t.n;
  // A and B stages of the GEMM plus the depthwise weights of the BK
  // channels the A stage is computed from.
  c.shared_bytes = ((t.m + t.n) * kBK + kBK * s.kernel_h * s.kernel_w) * s.elem_bytes;
  return c;
}

// The paper's two constraints, then the fewest accesses. Ties go to the
// tiling with more workgroups when the device's size is known (better
// balance), then to the one computing the least padding, then to the
// larger tile (the largest that does not outgrow the problem). With no candidate giving a workgroup
// per compute unit, the most parallel one that fits. `fits` is false (and
// the smallest footprint returned) when nothing fits the shared memory.
struct Choice {
  Candidate best;
  bool fits = false;
  bool fills_device = false;
};
Choice choose(const std::vector<Candidate>& all, const DeviceLimits& limits) {
  Choice out;
  std::vector<Candidate> fitting;
  for (const Candidate& c : all)
    if (static_cast<uint64_t>(c.shared_bytes) <= limits.shared_memory_bytes) fitting.push_back(c);
  if (fitting.empty()) {
    out.best = *std::min_element(all.begin(), all.end(),
                                 [](const Candidate& a, const Candidate& b) { return a.shared_bytes < b.shared_bytes; });
    return out;
  }
  out.fits = true;
  const int64_t cu = limits.compute_units;
  std::vector<Candidate> pool;
  for (const Candidate& c : fitting)
    if (c.workgroups >= cu) pool.push_back(c);
  out.fills_device = !pool.empty();
  if (pool.empty()) {  // none fills the device: the most parallel
    int64_t most = 0;
    for (const Candidate& c : fitting) most = std::max(most, c.workgroups);
    for (const Candidate& c : fitting)
      if (c.workgroups == most) pool.push_back(c);
  }
  out.best = *std::min_element(pool.begin(), pool.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.elements != b.elements) return a.elements < b.elements;
    if (cu > 0 && a.workgroups != b.workgroups) return a.workgroups > b.workgroups;
    if (a.covered != b.covered) return a.covered < b.covered;
    return a.tile_m * a.tile_n > b.tile_m * b.tile_n;
  });
  return out;
}

std::string format(const char* fmt, auto... args) {
  char buf[1024];
  std::snprintf(buf, sizeof(buf), fmt, args...);
  return buf;
}

std::string invalid_shape(const DwPwShape& s) {
  const std::pair<const char*, int64_t> fields[] = {
      {"batch", s.batch},         {"channels", s.channels},   {"in_h", s.in_h},         {"in_w", s.in_w},
      {"out_h", s.out_h},         {"out_w", s.out_w},         {"kernel_h", s.kernel_h}, {"kernel_w", s.kernel_w},
      {"stride_h", s.stride_h},   {"stride_w", s.stride_w},   {"out_channels", s.out_channels},
      {"elem_bytes", s.elem_bytes}};
  for (const auto& [name, v] : fields) {
    if (v <= 0) return format("%s is %lld; every dimension must be positive", name, static_cast<long long>(v));
    if (v > (int64_t{1} << 31)) return format("%s is %lld, too large to estimate", name, static_cast<long long>(v));
  }
  // Keep every product far from int64 overflow (a 2^40-element tensor is
  // already beyond any device).
  const int64_t kLimit = int64_t{1} << 40;
  if (s.batch * s.channels > kLimit / std::max(s.in_h * s.in_w, s.out_h * s.out_w) ||
      s.batch * s.out_h * s.out_w > kLimit / std::max(s.channels, s.out_channels))
    return "the tensors are too large to estimate";
  return "";
}

}  // namespace

DwPwDecision plan_dwpw(const DwPwShape& s, const DeviceLimits& limits) {
  DwPwDecision d;
  if (std::string bad = invalid_shape(s); !bad.empty()) {
    d.why = "not fused: " + bad;
    return d;
  }
  // Layer by layer: each layer at its own best tiling (the paper's first
  // pass over the layers).
  std::vector<Candidate> dw_all, pw_all, fused_all;
  for (int64_t th : {1, 2, 4, 8, 16, 32, 64})
    for (int64_t tw : {4, 8, 16, 32, 64, 128}) {
      if (th > 1 && th / 2 >= s.out_h) continue;  // no taller than the plane needs
      if (tw > 4 && tw / 2 >= s.out_w) continue;
      dw_all.push_back(dw_eq3(s, th, tw));
    }
  for (GemmTile t : kGemmTiles) {
    pw_all.push_back(pw_eq2(s, t));
    fused_all.push_back(dwpw_eq4(s, t));
  }
  const Choice dw = choose(dw_all, limits), pw = choose(pw_all, limits), fused = choose(fused_all, limits);
  const int64_t e = s.elem_bytes;
  d.unfused_bytes = (dw.best.elements + pw.best.elements) * e;
  const std::string lbl = format("layer by layer %lld B (depthwise %lldx%lld tiles %lld B + pointwise %dx%d tiles %lld B)",
                                 static_cast<long long>(d.unfused_bytes), static_cast<long long>(dw.best.tile_m),
                                 static_cast<long long>(dw.best.tile_n),
                                 static_cast<long long>(dw.best.elements * e), pw.best.tile_m, pw.best.tile_n,
                                 static_cast<long long>(pw.best.elements * e));
  if (!fused.fits) {
    d.why = format("not fused: no fused tile fits %llu B of shared memory (the smallest, %dx%d, needs %lld B); ",
                   static_cast<unsigned long long>(limits.shared_memory_bytes), fused.best.tile_m, fused.best.tile_n,
                   static_cast<long long>(fused.best.shared_bytes)) +
            lbl;
    return d;
  }
  d.fused_bytes = fused.best.elements * e;
  d.fuse = d.fused_bytes < d.unfused_bytes;
  if (d.fuse) {
    d.tile_m = fused.best.tile_m;
    d.tile_n = fused.best.tile_n;
  }
  const double saved = 100.0 * static_cast<double>(d.unfused_bytes - d.fused_bytes) / static_cast<double>(d.unfused_bytes);
  std::string units = limits.compute_units == 0
                          ? std::string("compute units unknown")
                          : format("%s %u compute units", fused.fills_device ? ">=" : "fewer than the",
                                   limits.compute_units);
  d.why = format("%s: fused %lld B (tile %dx%d, %lld workgroups, %s; %lld B of %llu B shared memory; depthwise input "
                 "read %lld times) vs ",
                 d.fuse ? "fused" : "not fused", static_cast<long long>(d.fused_bytes), fused.best.tile_m,
                 fused.best.tile_n, static_cast<long long>(fused.best.workgroups), units.c_str(),
                 static_cast<long long>(fused.best.shared_bytes),
                 static_cast<unsigned long long>(limits.shared_memory_bytes),
                 static_cast<long long>(ceil_div(s.out_channels, fused.best.tile_n))) +
          lbl + format(", %s %.1f%%", saved >= 0 ? "saving" : "costing", saved >= 0 ? saved : -saved);
  return d;
}

}  // namespace kiln::fusion

// TMModel's latency model (../shared/papers/tmmodel.txt §4, Eq. 1-7) and the
// device profile that holds its fitted parameters.
//
// Thread level (Eq. 1): the latency of one access of a thread walking a 2D
// tensor is <beta, H>, H the cross-block stride histogram of its walk
// (cross_block_histogram) and beta fitted per storage (sampled image,
// storage buffer) by least squares over random-stride pointer chases.
// Warp level (Eq. 2): |W| threads each keeping s lines live thrash a cache
// of C lines once |W| s > C, multiplying the latency by D per further C.
// Work-group level (Eq. 4-6): WGs = prod ceil(O_j / (T_j G_j)) work groups
// of ceil(G / w) warps each (w the subgroup width) run in
// ceil(WGs ceil(G / w) / K_G) serial waves, K_G = SPs x occupancy the warps
// the device keeps in flight with groups of G (§3.2.2: warps beyond the
// occupancy run serially, also within a work group). K_G is measured per G,
// since Vulkan reports neither the shader cores of every driver nor
// register footprints.
// Integrated (Eq. 7): the product, times the thread's number of accesses
// (the paper's implementations of one kernel do equal work per thread; the
// tile choice here does not, so the count is explicit).
//
// No engine or Vulkan dependency: the `kiln tune` tool fits a Profile and the
// tmmodel plugin (ABI only) evaluates it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::tmmodel {

// The assumed 2D block shapes of the cross-block stride histogram (§3.1 step
// III): a cache line of 4 texels of 16 bytes, small and large 2D tiles, and
// a page-sized tile.
struct BlockShape {
  int width;
  int height;
};
inline constexpr std::array<BlockShape, 4> kBlockShapes = {{{4, 1}, {8, 8}, {16, 16}, {64, 64}}};
// Features: a constant 1 (the latency of an access that stays in its block),
// then per block shape the fraction of accesses crossing a block boundary
// along x and along y.
inline constexpr int kFeatureCount = 1 + 2 * static_cast<int>(kBlockShapes.size());

struct Texel {
  int x;
  int y;
};

// H of a walk: feature values per access (see kFeatureCount). An empty or
// one-point walk is all intercept.
std::vector<double> cross_block_histogram(const std::vector<Texel>& walk);

// The access patterns of §3.2.1 (Fig. 3) for one thread over a region
// `width` texels wide, with their intra-thread reuse distance s in lines.
enum class AccessPattern { kRow, kBlock2, kBlock4, kBlock8 };
inline constexpr std::array<AccessPattern, 4> kAccessPatterns = {AccessPattern::kRow, AccessPattern::kBlock2,
                                                                  AccessPattern::kBlock4, AccessPattern::kBlock8};
const char* pattern_name(AccessPattern p);
int reuse_distance(AccessPattern p);  // 1, 2, 4, 8
// The first `steps` texels a thread visits with pattern `p` in a region of
// `width` columns starting at (0, 0): rows of `width` for kRow, columns of
// b rows, column after column, for kBlockB.
std::vector<Texel> pattern_walk(AccessPattern p, int width, int steps);

enum class Storage { kImage, kBuffer };
const char* storage_name(Storage s);

struct Profile {
  std::string device_name;
  std::string driver_version;
  std::string kiln_version;
  uint32_t subgroup_size = 0;
  // Eq. 1 per storage, kFeatureCount weights in nanoseconds.
  std::vector<double> beta_image, beta_buffer;
  // Eq. 2: thrashing rate D and cache lines C, and the scale c0 from a
  // dependent pointer-chase access to a streamed one (the stream kernel's
  // per-access overhead), per storage.
  double thrash_d = 1.0;
  int cache_lines = 1 << 20;
  double stream_scale_image = 1.0, stream_scale_buffer = 1.0;
  // Eq. 6: warps in flight (SPs x occupancy) by work-group size G, warps
  // of warp_width invocations (the subgroup size; 32 when unknown).
  int warp_width = 32;
  std::map<int, double> warps_in_flight;
  // How well the model ranked held-out measurements (Spearman), -2 = unset:
  // thread level per storage and both pooled, and integrated (Eq. 7).
  double spearman_image = -2, spearman_buffer = -2, spearman_thread = -2, spearman_integrated = -2;

  const std::vector<double>& beta(Storage s) const { return s == Storage::kImage ? beta_image : beta_buffer; }
  double stream_scale(Storage s) const { return s == Storage::kImage ? stream_scale_image : stream_scale_buffer; }
};

// Eq. 1: nanoseconds per access; H has kFeatureCount entries.
double thread_latency(const std::vector<double>& beta, const std::vector<double>& h);
// Eq. 2's factor D^ceil((|W| s - C) / C) (1 without thrashing), |W| =
// min(threads, 64).
double warp_factor(const Profile& p, int threads, int reuse);
// Eq. 6's K_G for groups of `group_size` invocations: the value measured
// for the nearest size at or above it (else the largest); 1 without
// measurements.
double warps_in_flight(const Profile& p, int group_size);
// Eq. 6: ceil(WGs ceil(G / w) / K_G).
int64_t waves(const Profile& p, int64_t work_groups, int group_size);

// One stream configuration of the integrated benchmark (and of the model):
// `group_size` invocations per group, `work_groups` groups, each invocation
// making `steps` accesses with pattern `pattern` over `storage`.
struct StreamConfig {
  Storage storage = Storage::kBuffer;
  AccessPattern pattern = AccessPattern::kRow;
  int group_size = 64;
  int64_t work_groups = 1;
  int steps = 64;
};
// Eq. 7 for a stream configuration, nanoseconds.
double predict_stream_ns(const Profile& p, const StreamConfig& c);
// The same with the thread level's L_t of the configuration's walk given
// (stream_walk_latency): a fit that varies only the levels above it
// computes the walk's histogram once, not once per trial.
double stream_walk_latency(const Profile& p, const StreamConfig& c);
double predict_stream_ns(const Profile& p, const StreamConfig& c, double walk_latency);

// Spearman's rank correlation (average ranks for ties); 0 for fewer than 3
// points or a constant series.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

// The profile as JSON (a "model" object the plugin reads, plus whatever the
// tool adds under "measurements"), and back. parse_profile returns nullopt
// and sets `error` on a document that is not a complete profile.
std::string profile_model_json(const Profile& p, int indent);
std::optional<Profile> parse_profile(const std::string& text, std::string* error);

// File-name-safe form of a device name ("AMD Radeon (TM)" -> "AMD_Radeon_TM").
std::string sanitized(const std::string& name);
// Where profiles are cached: <cache>/tmmodel, <cache> as the kernel cache's
// ($KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln); empty
// when none is set.
std::string profile_directory();
// <sanitized device>-drv<driver>-kiln<version>.json
std::string profile_file_name(const std::string& device, const std::string& driver, const std::string& kiln_version);

}  // namespace kiln::tmmodel

// Limits on what a model may ask of the machine running it.
//
// A model (or a caller's input shape) can ask for a tensor of terabytes, a
// Loop that never ends or sub-graphs nested without end. Each is refused with
// an error naming the tensor or node and the limit, instead of an allocation
// that takes the machine down, a hang or a stack overflow. Every limit has a
// default and an environment variable that overrides it (like
// KILN_COMPILE_THREADS and KILN_CACHE_DIR); a malformed value is an error
// naming the variable rather than a silent default.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/base/status.h"

namespace kiln {

// KILN_MAX_TENSOR_BYTES: the most bytes one tensor may need. Default: the
// host's physical memory (every tensor has a host copy on some path: inputs,
// outputs, constants, the reference executor's activations).
inline constexpr std::string_view kMaxTensorBytesEnv = "KILN_MAX_TENSOR_BYTES";
StatusOr<int64_t> max_tensor_bytes();

// KILN_MAX_LOOP_ITERATIONS: the most iterations one execution of a Loop may
// run (a Loop with no trip count whose condition never turns false would
// otherwise hang the caller). Default 1 << 20.
inline constexpr std::string_view kMaxLoopIterationsEnv = "KILN_MAX_LOOP_ITERATIONS";
inline constexpr int64_t kDefaultMaxLoopIterations = int64_t{1} << 20;
StatusOr<int64_t> max_loop_iterations();

// KILN_MAX_SUBGRAPH_DEPTH: how deeply If/Loop/Scan bodies may nest (every
// pass over the graph recurses into them). Default 64.
inline constexpr std::string_view kMaxSubgraphDepthEnv = "KILN_MAX_SUBGRAPH_DEPTH";
inline constexpr int64_t kDefaultMaxSubgraphDepth = 64;
StatusOr<int64_t> max_subgraph_depth();

// "1.5 GiB (1610612736 bytes)": a byte count for error messages.
std::string format_bytes(int64_t bytes);

// The error for a tensor of `bytes` over max_tensor_bytes() (`what` names
// it: "node 'x' (Tile): output 0 [...] f32"), or OK when it fits.
Status check_tensor_bytes(int64_t bytes, std::string_view what);

}  // namespace kiln

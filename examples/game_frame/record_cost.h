// The CPU cost of kiln_session_record alone: Kiln's commands recorded again
// and again into one of the game's command buffers that is never submitted,
// so that no GPU work (on lavapipe: the CPU's own cores) competes with the
// recording, and no frame pacing hides in the numbers. A benchmark: it
// reports times and never judges them (CI runs it for the report and to
// check that recording works; README.md has the measured numbers).
#ifndef KILN_EXAMPLES_GAME_FRAME_RECORD_COST_H_
#define KILN_EXAMPLES_GAME_FRAME_RECORD_COST_H_

#include <vector>

#include "game_gpu.h"
#include "kiln/kiln_vulkan.h"

namespace game {

struct RecordCost {
  // Per repetition, the kiln_session_record call: back to back (hot: what
  // Kiln and the driver touch is in the CPU's caches), and after the game's
  // other work of a frame evicted the caches (cold: what a frame loop sees;
  // the frame's work is stood in for by writing 64 MiB, more than a
  // server's last-level cache).
  std::vector<double> hot_us;
  std::vector<double> cold_us;
  std::vector<double> empty_us;  // per hot repetition: begin + end of the same command buffer, no Kiln call
  // Per hot repetition, kiln_session_record_with_options with
  // KILN_RECORD_VIA_SECONDARY (one vkCmdExecuteCommands of the secondary
  // Kiln recorded at the first call, which is not counted).
  std::vector<double> via_secondary_us;
};

// Records `session`'s run (its bindings as they are) `repetitions` times
// hot, then `repetitions` times cold, into a primary command buffer of the
// game's queue family, timing each kiln_session_record; the command buffer
// is reset between repetitions and never submitted. Exits on an error
// (check_kiln, check_vk).
RecordCost measure_record_cost(GameGpu& gpu, kiln_session_t* session, int repetitions);

}  // namespace game

#endif  // KILN_EXAMPLES_GAME_FRAME_RECORD_COST_H_

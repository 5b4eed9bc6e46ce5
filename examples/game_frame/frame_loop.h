// The game's frame loop with Kiln inside it. Each frame, on one queue:
//
//   generate   (the game's compute pass: an animated image, written as the
//               model's NCHW float input into the game's VkBuffer)
//   Kiln       (the model, reading that buffer and writing its output into
//               another of the game's VkBuffers)
//   composite  (the game's pass: the image with the model's top-5 classes
//               drawn as bars, into the frame's RGBA8 buffer)
//
// Kiln's work is either submitted by Kiln between the game's two
// submissions, ordered by the game's timeline semaphore
// (kiln_session_submit), or recorded into the game's one command buffer
// between its passes (kiln_session_record), or spread over several frames
// a slice at a time within a GPU time budget (kiln_session_record_slice).
// The CPU never waits inside a
// frame; it waits only before reusing a frame slot (frames in flight), on
// the value the slot's last frame signalled. README.md draws the waits.
#ifndef KILN_EXAMPLES_GAME_FRAME_FRAME_LOOP_H_
#define KILN_EXAMPLES_GAME_FRAME_FRAME_LOOP_H_

#include <cstdint>
#include <set>
#include <vector>

#include "game_gpu.h"
#include "kiln/kiln_vulkan.h"

namespace game {

// kSubmit: kiln_session_submit between the game's submissions; kRecord:
// kiln_session_record into the frame's command buffer every frame;
// kRecordSecondary: kiln_session_record_with_options with
// KILN_RECORD_VIA_SECONDARY every frame (the frame's command buffer
// executes Kiln's secondary of those bindings); kReplay:
// kiln_session_record once per set of model buffers into a secondary
// command buffer, which every frame executes (no Kiln call in the frame);
// kSliced: kiln_session_record_slice, one slice of the model per frame (a
// frame starts a new inference, generating its input, when the previous
// one finished).
enum class KilnMode { kSubmit, kRecord, kRecordSecondary, kReplay, kSliced };

struct FrameLoopConfig {
  KilnMode mode = KilnMode::kSubmit;
  int frames = 30;
  int in_flight = 2;
  // kSliced: each slice's estimated GPU time, at most (one dispatch at least).
  double budget_us = 0;
  // Frames whose image, model input and model output are copied back to the
  // host (for PNGs and the check against kiln_session_run). In sliced mode
  // a frame here is kept as the first frame at or after it whose slice
  // finishes an inference (its output then belongs to its input).
  std::set<int> keep;
};

// One pair of the game's buffers holding the model's input and output.
struct ModelIo {
  GpuBuffer input;   // [1, 3, height, width] float32
  GpuBuffer output;  // `classes` float32
};

// The model's input and output in buffers the game owns: one pair shared
// by every frame in flight, or one pair per frame slot (each frame then
// binds its slot's pair before Kiln's call).
struct ModelBuffers {
  uint32_t width = 0;
  uint32_t height = 0;
  uint32_t classes = 0;
  const char* input_name = nullptr;
  const char* output_name = nullptr;
  std::vector<ModelIo> io;
};

// Prints what failed and the status's message and exits when `status` is
// not NULL: the example's error handling for Kiln calls.
void check_kiln(kiln_status_t* status, const char* what);

// Binds `io` as the session's model input and output; exits on an error.
void bind_model_io(kiln_session_t* session, const ModelBuffers& model, const ModelIo& io);

struct KeptFrame {
  int index = 0;
  std::vector<uint8_t> rgba;  // width * height * 4
  std::vector<float> input;   // what the model read
  std::vector<float> output;  // what it wrote
};

struct FrameTimes {
  std::vector<double> kiln_cpu_us;   // per frame: inside Kiln calls (submit and wait, or record)
  std::vector<double> frame_cpu_us;  // per frame: recording and submitting the frame, Kiln included
  std::vector<double> model_gpu_ms;  // per frame, when the queue has timestamps (see README.md)
  // Sliced mode, per frame: the slice's dispatches and estimated GPU time.
  std::vector<uint32_t> slice_dispatches;
  std::vector<double> slice_estimated_us;
  bool estimates_measured = false;  // from a profiled run, else the rate model
  int inferences = 0;               // completed
  uint32_t inference_dispatches = 0;  // of one inference
  double inference_estimated_us = 0;  // one inference's estimated GPU time
  double pacing_wait_ms = 0;         // CPU time spent waiting for frame slots
  double wall_ms = 0;
};

class FrameLoop {
 public:
  FrameLoop(GameGpu& gpu, kiln_session_t* session, const ModelBuffers& model, const FrameLoopConfig& config);
  ~FrameLoop();
  FrameLoop(const FrameLoop&) = delete;
  FrameLoop& operator=(const FrameLoop&) = delete;

  // Runs every frame, then waits for the last ones.
  void run();
  const std::vector<KeptFrame>& kept() const { return kept_; }
  const FrameTimes& times() const { return times_; }

 private:
  // What one frame in flight owns.
  struct Slot {
    VkCommandBuffer commands = VK_NULL_HANDLE;   // submit mode: the generate pass; else the whole frame
    VkCommandBuffer composite = VK_NULL_HANDLE;  // submit mode: the composite pass
    GpuBuffer image;                             // the composited RGBA8 frame
    GpuBuffer readback;                          // host-visible: timestamps, image, model input and output
    const ModelIo* io = nullptr;  // the model's buffers this slot's frames use
    VkDescriptorSet generate_set = VK_NULL_HANDLE;
    VkDescriptorSet composite_set = VK_NULL_HANDLE;
    int frame = -1;  // the frame using the slot; -1: free
    uint64_t ticket = 0;
    bool keep = false;  // the frame copies its image, model input and output back
  };

  uint64_t done_value(int frame) const;
  void submit_mode_frame(int frame, Slot& slot, uint32_t index);
  // Record and replay modes: the frame's command buffer with Kiln's work
  // recorded into it (record) or executed from kiln_commands_ (replay).
  void recorded_frame(int frame, Slot& slot, uint32_t index);
  // Replay mode: kiln_commands_, recorded once for each model buffer set.
  void record_kiln_commands();
  // Sliced mode: the frame's command buffer with the next slice of the
  // inference in progress (which this frame starts when none is).
  void sliced_frame(int frame, Slot& slot, uint32_t index);
  // Commands shared by both modes.
  void begin(VkCommandBuffer cmd);
  void frame_start_barrier(VkCommandBuffer cmd);
  void dispatch_generate(VkCommandBuffer cmd, const Slot& slot, int frame);
  void dispatch_composite(VkCommandBuffer cmd, const Slot& slot);
  void copy_back(VkCommandBuffer cmd, const Slot& slot, uint32_t index, bool keep);
  void timestamp(VkCommandBuffer cmd, VkPipelineStageFlagBits stage, uint32_t query);
  void submit(VkCommandBuffer cmd, const VkSemaphore* wait, uint64_t wait_value, VkPipelineStageFlags wait_stage,
              uint64_t signal_value);
  // The frame pacing wait, then what the slot's frame left for the host.
  void finish(Slot& slot);

  GameGpu& gpu_;
  kiln_session_t* session_;
  ModelBuffers model_;
  FrameLoopConfig config_;
  GameGpu::Pipeline generate_{}, composite_{};
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;  // two timestamps per slot
  VkSemaphore timeline_ = VK_NULL_HANDLE;  // the game's frame timeline
  std::vector<Slot> slots_;
  std::vector<VkCommandBuffer> kiln_commands_;  // replay mode: per model_.io entry, secondary
  std::vector<KeptFrame> kept_;
  FrameTimes times_;
  bool inference_running_ = false;  // sliced mode: a slice of it was recorded, not its last
  bool keep_pending_ = false;       // sliced mode: a kept frame waits for its inference to finish
};

}  // namespace game

#endif  // KILN_EXAMPLES_GAME_FRAME_FRAME_LOOP_H_

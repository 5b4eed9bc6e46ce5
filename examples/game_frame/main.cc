// game_frame: a headless stand-in for a game that runs an image model
// inside its frame, on its own Vulkan device and queue, through Kiln's
// public C API only (kiln/kiln.h, kiln/kiln_vulkan.h). README.md explains
// what it shows and the synchronization it uses.
//
//   game_frame MODEL.onnx [--frames N] [--mode submit|record|record-secondary|replay|sliced] [--budget-us N]
//              [--in-flight N] [--buffers shared|per-frame] [--validate] [--device N]
//              [--keep 0,15,29] [--png-dir DIR] [--dump DIR] [--record-cost N]
//
// Exit status: 0 when every kept frame's model output matches
// kiln_session_run on the same input and the validation layer (with
// --validate or GAME_FRAME_VALIDATE=1) reported nothing; 1 otherwise; 77
// when there is no Vulkan device (a skip for ctest), unless
// KILN_REQUIRE_VULKAN=1 or CI=true.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "frame_loop.h"
#include "game_gpu.h"
#include "kiln/kiln.h"
#include "kiln/kiln_vulkan.h"
#include "png_writer.h"
#include "record_cost.h"

namespace {

using game::check_kiln;
using game::FrameLoop;
using game::FrameLoopConfig;
using game::GameGpu;
using game::KeptFrame;
using game::KilnMode;
using game::ModelBuffers;

struct Options {
  std::string model;
  FrameLoopConfig loop;
  bool keep_given = false;
  game::GpuOptions gpu;
  bool buffers_per_frame = false;
  std::string png_dir;
  std::string dump_dir;
  int record_cost = 0;  // repetitions of the record-only measurement (record_cost.h); 0: none
};

int usage(const char* problem) {
  std::fprintf(stderr,
               "game_frame: %s\n"
               "usage: game_frame MODEL.onnx [--frames N] [--mode submit|record|record-secondary|replay|sliced]\n"
               "                  [--budget-us N]\n"
               "                  [--in-flight N] [--buffers shared|per-frame] [--validate] [--device N]\n"
               "                  [--keep F,F,...] [--png-dir DIR] [--dump DIR] [--record-cost N]\n",
               problem);
  return 2;
}

bool parse_int(const char* text, int min, int* out) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < min || v > 1000000) return false;
  *out = static_cast<int>(v);
  return true;
}

bool parse_frames(const char* text, std::set<int>* out) {
  std::string list = text;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t comma = std::min(list.find(',', pos), list.size());
    int frame = 0;
    if (!parse_int(list.substr(pos, comma - pos).c_str(), 0, &frame)) return false;
    out->insert(frame);
    pos = comma + 1;
  }
  return true;
}

// Returns 0 when parsed, else the exit status.
int parse(int argc, char** argv, Options* o) {
  const char* env = std::getenv("GAME_FRAME_VALIDATE");
  o->gpu.validate = env && std::strcmp(env, "0") != 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--validate") {
      o->gpu.validate = true;
    } else if (arg == "--frames" && has_value) {
      if (!parse_int(argv[++i], 1, &o->loop.frames)) return usage("--frames needs a positive number");
    } else if (arg == "--in-flight" && has_value) {
      if (!parse_int(argv[++i], 1, &o->loop.in_flight)) return usage("--in-flight needs a positive number");
    } else if (arg == "--device" && has_value) {
      if (!parse_int(argv[++i], 0, &o->gpu.device_index)) return usage("--device needs an index");
    } else if (arg == "--mode" && has_value) {
      const std::string mode = argv[++i];
      if (mode == "submit") o->loop.mode = KilnMode::kSubmit;
      else if (mode == "record") o->loop.mode = KilnMode::kRecord;
      else if (mode == "record-secondary") o->loop.mode = KilnMode::kRecordSecondary;
      else if (mode == "replay") o->loop.mode = KilnMode::kReplay;
      else if (mode == "sliced") o->loop.mode = KilnMode::kSliced;
      else return usage("--mode is submit, record, record-secondary, replay or sliced");
    } else if (arg == "--budget-us" && has_value) {
      char* end = nullptr;
      o->loop.budget_us = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0' || !(o->loop.budget_us > 0) || !std::isfinite(o->loop.budget_us))
        return usage("--budget-us needs a positive number of microseconds");
    } else if (arg == "--buffers" && has_value) {
      const std::string buffers = argv[++i];
      if (buffers == "shared") o->buffers_per_frame = false;
      else if (buffers == "per-frame") o->buffers_per_frame = true;
      else return usage("--buffers is shared or per-frame");
    } else if (arg == "--keep" && has_value) {
      if (!parse_frames(argv[++i], &o->loop.keep)) return usage("--keep needs frame numbers separated by commas");
      o->keep_given = true;
    } else if (arg == "--png-dir" && has_value) {
      o->png_dir = argv[++i];
    } else if (arg == "--record-cost" && has_value) {
      if (!parse_int(argv[++i], 1, &o->record_cost)) return usage("--record-cost needs a positive number");
    } else if (arg == "--dump" && has_value) {
      o->dump_dir = argv[++i];
    } else if (arg == "--help" || arg == "-h") {
      return usage("runs MODEL inside a frame loop");
    } else if (arg[0] == '-' || !o->model.empty()) {
      return usage(("unexpected argument '" + arg + "'").c_str());
    } else {
      o->model = arg;
    }
  }
  if (o->model.empty()) return usage("no model given");
  if (o->loop.mode == KilnMode::kSliced && o->loop.budget_us <= 0)
    return usage("--mode sliced needs --budget-us: the GPU time each frame's slice may take");
  if (o->loop.mode == KilnMode::kSliced && o->buffers_per_frame)
    return usage("--mode sliced uses one pair of model buffers (--buffers shared): an inference spans frames");
  const int last = o->loop.frames - 1;
  if (!o->keep_given) o->loop.keep = {0, last / 2, last};
  for (int f : o->loop.keep)
    if (f > last) return usage(("--keep names frame " + std::to_string(f) + ", beyond the last").c_str());
  return 0;
}

const char* mode_name(KilnMode mode) {
  switch (mode) {
    case KilnMode::kSubmit: return "submit";
    case KilnMode::kRecord: return "record";
    case KilnMode::kRecordSecondary: return "record-secondary";
    case KilnMode::kReplay: return "replay";
    case KilnMode::kSliced: return "sliced";
  }
  return "?";
}

// The model's image input as [1, 3, H, W] (static), or exits naming why not.
void image_input_shape(const kiln_model_t* model, int64_t shape[4]) {
  if (kiln_model_input_count(model) != 1 || kiln_model_output_count(model) != 1) {
    std::fprintf(stderr, "game_frame: the model needs one input and one output (it has %zu and %zu)\n",
                 kiln_model_input_count(model), kiln_model_output_count(model));
    std::exit(1);
  }
  kiln_input_info_t info{};
  info.struct_size = sizeof(info);
  check_kiln(kiln_model_input_info(model, 0, &info), "kiln_model_input_info");
  size_t rank = 0;
  kiln_status_t* s = kiln_model_input_shape(model, 0, nullptr, nullptr, 0, shape, 4, &rank);
  if (s || info.dtype != KILN_DTYPE_FLOAT32 || rank != 4 || shape[0] != 1 || shape[1] != 3) {
    kiln_status_free(s);
    std::fprintf(stderr, "game_frame: input '%s' is %s %s; the example needs an image, float32 [1,3,H,W]\n",
                 info.name, kiln_dtype_name(info.dtype), info.shape_text);
    std::exit(1);
  }
}

// The same model through the plain synchronous API, input in host memory.
kiln_tensor_t* run_on_host(kiln_session_t* session, const int64_t shape[4], const std::vector<float>& input) {
  kiln_tensor_t* x = nullptr;
  check_kiln(kiln_tensor_create(KILN_DTYPE_FLOAT32, shape, 4, &x), "kiln_tensor_create");
  if (!input.empty()) std::memcpy(kiln_tensor_data(x), input.data(), input.size() * sizeof(float));
  const kiln_tensor_t* inputs[1] = {x};
  kiln_tensor_t* outputs[1] = {nullptr};
  check_kiln(kiln_session_run(session, inputs, 1, outputs, 1), "kiln_session_run (reference)");
  kiln_tensor_destroy(x);
  return outputs[0];
}

// As the Vulkan tests (platform/vulkan/vk_test_requirement.h): a missing
// device fails instead of skipping when KILN_REQUIRE_VULKAN is set to
// anything but "" or "0", or CI is "true".
bool vulkan_required() {
  const char* require = std::getenv("KILN_REQUIRE_VULKAN");
  const char* ci = std::getenv("CI");
  return (require && *require && std::strcmp(require, "0") != 0) || (ci && std::strcmp(ci, "true") == 0);
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

void print_times(const char* what, const std::vector<double>& v, const char* unit) {
  if (v.empty()) return;
  std::printf("  %-44s median %9.3f %s, p90 %9.3f %s, max %9.3f %s\n", what, percentile(v, 0.5), unit,
              percentile(v, 0.9), unit, percentile(v, 1.0), unit);
}

// Sliced mode: the slices against the budget, estimated and measured.
void print_slices(double budget_us, const game::FrameTimes& t) {
  std::vector<double> dispatches(t.slice_dispatches.begin(), t.slice_dispatches.end());
  print_times("dispatches per slice:", dispatches, "");
  print_times(t.estimates_measured ? "estimated GPU time per slice (measured kernels):"
                                   : "estimated GPU time per slice (rate model):",
              t.slice_estimated_us, "us");
  size_t over = 0;
  for (double ms : t.model_gpu_ms) over += ms * 1000.0 > budget_us ? 1 : 0;
  std::printf("  an inference: %u dispatches, %.0f us estimated; budget %.0f us a frame: %d inferences finished in "
              "%zu frames; %zu of %zu slices took longer on the GPU than the budget%s\n",
              t.inference_dispatches, t.inference_estimated_us, budget_us, t.inferences, t.slice_dispatches.size(),
              over, t.model_gpu_ms.size(), t.model_gpu_ms.empty() ? " (no timestamps on this queue)" : "");
}

// Compares every kept frame's model output with kiln_session_run's on the
// same input; also writes the PNGs and the --dump files. True when all match.
bool check_kept_frames(const Options& o, kiln_session_t* reference, const int64_t shape[4],
                       const std::vector<KeptFrame>& kept, uint32_t width, uint32_t height) {
  bool ok = !kept.empty();
  for (const KeptFrame& frame : kept) {
    kiln_tensor_t* want = run_on_host(reference, shape, frame.input);
    const float* w = static_cast<const float*>(kiln_tensor_data(want));
    double max_delta = 0, max_ref = 1;
    bool finite = true;
    for (size_t i = 0; i < frame.output.size(); ++i) {
      finite = finite && std::isfinite(frame.output[i]) && std::isfinite(w[i]);
      max_delta = std::max(max_delta, std::fabs(static_cast<double>(frame.output[i]) - w[i]));
      max_ref = std::max(max_ref, std::fabs(static_cast<double>(w[i])));
    }
    const double bound = 1e-3 * max_ref;
    const bool match = finite && max_delta <= bound;
    ok = ok && match;
    std::printf("frame %3d: model output vs kiln_session_run on the same input: max|delta| = %.3g (bound %.3g) %s\n",
                frame.index, max_delta, bound, match ? "ok" : finite ? "MISMATCH" : "NOT FINITE");
    if (!o.dump_dir.empty() && &frame == &kept.back()) {
      kiln_tensor_t* x = nullptr;
      check_kiln(kiln_tensor_create(KILN_DTYPE_FLOAT32, shape, 4, &x), "kiln_tensor_create");
      std::memcpy(kiln_tensor_data(x), frame.input.data(), frame.input.size() * sizeof(float));
      check_kiln(kiln_tensor_save_npy(x, (o.dump_dir + "/input.npy").c_str()), "saving input.npy");
      std::memcpy(kiln_tensor_data(want), frame.output.data(), frame.output.size() * sizeof(float));
      check_kiln(kiln_tensor_save_npy(want, (o.dump_dir + "/output.npy").c_str()), "saving output.npy");
      kiln_tensor_destroy(x);
    }
    kiln_tensor_destroy(want);
    if (!o.png_dir.empty()) {
      char name[32];
      std::snprintf(name, sizeof(name), "/frame_%03d.png", frame.index);
      ok = game::write_png_rgba8(o.png_dir + name, frame.rgba.data(), width, height) && ok;
    }
  }
  // The frames are animated: equal outputs would mean the model read a stale input.
  for (size_t i = 1; i < kept.size(); ++i)
    if (kept[i].output == kept[0].output) {
      std::printf("frames %d and %d have the same model output: the model did not see the new frame\n",
                  kept[0].index, kept[i].index);
      ok = false;
    }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int status = parse(argc, argv, &o)) return status;

  bool no_device = false;
  std::unique_ptr<GameGpu> gpu = GameGpu::create(o.gpu, &no_device);
  if (!gpu) return no_device && !vulkan_required() ? 77 : 1;

  // Kiln borrows the game's device and queue.
  kiln_vulkan_host_device_t host{};
  host.struct_size = sizeof(host);
  host.instance = gpu->instance();
  host.instance_api_version = gpu->api_version();
  host.get_instance_proc_addr = vkGetInstanceProcAddr;
  host.physical_device = gpu->physical_device();
  host.device = gpu->device();
  host.queue_family_index = gpu->queue_family();
  host.queue_index = 0;
  host.enabled_features = gpu->enabled_features();
  kiln_vulkan_device_t* kiln_device = nullptr;
  check_kiln(kiln_vulkan_device_wrap(&host, &kiln_device), "kiln_vulkan_device_wrap");

  kiln_model_t* model = nullptr;
  check_kiln(kiln_model_load(o.model.c_str(), &model), "kiln_model_load");
  int64_t shape[4];
  image_input_shape(model, shape);
  kiln_session_options_t options{};
  options.struct_size = sizeof(options);
  options.backend = KILN_BACKEND_VULKAN;
  options.vulkan_device = kiln_device;
  options.storage = KILN_STORAGE_BUFFER;  // bindable to the game's buffers
  options.precision = KILN_PRECISION_FP32;
  kiln_session_t* session = nullptr;   // runs inside the frame
  kiln_session_t* reference = nullptr;  // the check: host tensors, kiln_session_run
  check_kiln(kiln_session_create(model, &options, &reference), "kiln_session_create (reference)");
  // Sliced mode: the warm-up run times every kernel, and the slices are cut
  // by those times (else by a rough rate model).
  options.profile = o.loop.mode == KilnMode::kSliced ? 1 : 0;
  check_kiln(kiln_session_create(model, &options, &session), "kiln_session_create");
  kiln_vulkan_device_release(kiln_device);  // the sessions hold it

  ModelBuffers buffers;
  buffers.height = static_cast<uint32_t>(shape[2]);
  buffers.width = static_cast<uint32_t>(shape[3]);
  kiln_tensor_t* probe = run_on_host(reference, shape, {});  // learns the output's size
  buffers.classes = static_cast<uint32_t>(kiln_tensor_byte_size(probe) / sizeof(float));
  kiln_tensor_destroy(probe);
  if (buffers.classes < 5) {
    std::fprintf(stderr, "game_frame: the model has %u outputs; the example draws a classifier's top 5\n",
                 buffers.classes);
    return 1;
  }
  const VkBufferUsageFlags usage =
      VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  buffers.input_name = kiln_model_input_name(model, 0);
  buffers.output_name = kiln_model_output_name(model, 0);
  buffers.io.resize(o.buffers_per_frame ? static_cast<size_t>(o.loop.in_flight) : 1);
  for (game::ModelIo& io : buffers.io) {
    io.input = gpu->create_buffer(3ull * buffers.width * buffers.height * sizeof(float), usage, false);
    io.output = gpu->create_buffer(buffers.classes * sizeof(float), usage, false);
  }
  kiln_dtype_t device_dtype = KILN_DTYPE_UNDEFINED;
  check_kiln(kiln_session_device_dtype(session, buffers.input_name, &device_dtype), "kiln_session_device_dtype");
  if (device_dtype != KILN_DTYPE_FLOAT32) {
    std::fprintf(stderr, "game_frame: the session keeps '%s' as %s on the device; the game writes float32\n",
                 buffers.input_name, kiln_dtype_name(device_dtype));
    return 1;
  }
  // Loading the level: one run per set of bindings records Kiln's commands
  // for it, so that no frame pays for that. The frames start with the first.
  for (size_t i = buffers.io.size(); i-- > 0;) {
    game::bind_model_io(session, buffers, buffers.io[i]);
    kiln_tensor_t* none[1] = {nullptr};
    check_kiln(kiln_session_run(session, nullptr, 1, none, 1), "kiln_session_run (warm-up)");
  }

  std::printf("game_frame: %s on %s, model %s (%s [1,3,%u,%u] -> %u classes), %d frames, %s mode, %d in flight, "
              "%s model buffers, validation %s\n",
              kiln_version_string(), gpu->device_name().c_str(), o.model.c_str(), buffers.input_name, buffers.height,
              buffers.width, buffers.classes, o.loop.frames,
              mode_name(o.loop.mode), o.loop.in_flight,
              o.buffers_per_frame ? "per-frame" : "shared", o.gpu.validate ? "on (with synchronization validation)" : "off");
  if (o.record_cost > 0) {
    // Before the frames: kiln_session_record alone, into a command buffer
    // that is never submitted (record_cost.h).
    const game::RecordCost cost = game::measure_record_cost(*gpu, session, o.record_cost);
    std::printf("record cost, 2 x %d recordings into an unsubmitted command buffer (no GPU work):\n", o.record_cost);
    print_times("CPU in kiln_session_record, hot caches:", cost.hot_us, "us");
    print_times("CPU in kiln_session_record, cold caches:", cost.cold_us, "us");
    print_times("CPU in the driver's begin + end (no Kiln):", cost.empty_us, "us");
    print_times("CPU in kiln_session_record via secondary, hot:", cost.via_secondary_us, "us");
  }
  bool ok = true;
  {
    FrameLoop loop(*gpu, session, buffers, o.loop);
    loop.run();
    const game::FrameTimes& t = loop.times();
    std::printf("%d frames in %.1f ms (%.1f frames/s); CPU waits for frame slots: %.1f ms in all\n", o.loop.frames,
                t.wall_ms, o.loop.frames * 1000.0 / t.wall_ms, t.pacing_wait_ms);
    print_times(o.loop.mode == KilnMode::kSubmit   ? "CPU in Kiln calls (submit + wait) per frame:"
                : o.loop.mode == KilnMode::kRecord ? "CPU in Kiln calls (record) per frame:"
                : o.loop.mode == KilnMode::kRecordSecondary ? "CPU in Kiln calls (record via secondary) per frame:"
                : o.loop.mode == KilnMode::kSliced ? "CPU in Kiln calls (record_slice) per frame:"
                                                   : "CPU executing Kiln's commands per frame:",
                t.kiln_cpu_us, "us");
    print_times("CPU recording + submitting a frame:", t.frame_cpu_us, "us");
    print_times(o.loop.mode == KilnMode::kSubmit   ? "GPU: generate end -> composite start:"
                : o.loop.mode == KilnMode::kSliced ? "GPU time of the slice (timestamps around it):"
                                                   : "GPU time of the model (timestamps around it):",
                t.model_gpu_ms, "ms");
    if (o.loop.mode == KilnMode::kSliced) print_slices(o.loop.budget_us, t);
    ok = check_kept_frames(o, reference, shape, loop.kept(), buffers.width, buffers.height);
  }
  kiln_session_destroy(reference);
  kiln_session_destroy(session);
  kiln_model_release(model);
  for (game::ModelIo& io : buffers.io) {
    gpu->destroy(io.input);
    gpu->destroy(io.output);
  }
  gpu->shutdown();
  if (o.gpu.validate) std::printf("validation messages: %u\n", gpu->messages());
  ok = ok && gpu->messages() == 0;
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

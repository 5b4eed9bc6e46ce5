// kiln-tune: characterizes a Vulkan device for TMModel (microbench.h), fits
// the model (fit.h) and writes the profile the tmmodel plugin reads, to
// --out and to the profile cache (model.h: profile_directory), keyed by
// device, driver and Kiln version. `kiln tune ...` runs this program.
//
//   kiln-tune [--device SEL] [--short] [--out FILE] [--no-cache] [--validation] [--seed N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "platform/vulkan/device.h"
#include "platform/vulkan/instance.h"
#include "plugins/tmmodel/model.h"
#include "tools/tune/fit.h"
#include "tools/tune/microbench.h"

namespace {

using namespace kiln;

constexpr const char* kUsage =
    "usage: kiln tune [--device SEL] [--short] [--out FILE] [--no-cache] [--validation] [--seed N]\n"
    "  Runs TMModel's micro-benchmarks on the device (pointer chases over a sampled\n"
    "  image and a storage buffer, stream kernels over work-group sizes and counts),\n"
    "  fits the latency model and writes the profile the tmmodel pass reads: to FILE\n"
    "  and to the cache ($KILN_CACHE_DIR, $XDG_CACHE_HOME/kiln or ~/.cache/kiln,\n"
    "  under tmmodel/), keyed by device, driver and Kiln version. --short: a few\n"
    "  seconds on lavapipe (CI). --validation: with the Khronos validation layer;\n"
    "  any message fails the run.\n";

struct Args {
  std::string device, out;
  bool short_mode = false, cache = true, validation = false;
  uint64_t seed = 1;
};

std::string predictions_json(const std::vector<tune::Prediction>& v) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < v.size(); ++i)
    o << (i ? ", " : "") << "[" << v[i].predicted << ", " << v[i].measured << ", " << (v[i].held_out ? 1 : 0) << "]";
  return o.str() + "]";
}

std::string stream_json(const std::vector<tune::StreamRun>& runs, const std::vector<tune::Prediction>& pred) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < runs.size(); ++i) {
    const tmmodel::StreamConfig& c = runs[i].config;
    o << (i ? ",\n      " : "") << "{\"storage\": \"" << tmmodel::storage_name(c.storage) << "\", \"pattern\": \""
      << tmmodel::pattern_name(c.pattern) << "\", \"group_size\": " << c.group_size
      << ", \"work_groups\": " << c.work_groups << ", \"steps\": " << c.steps << ", \"ns\": " << runs[i].ns
      << ", \"predicted_ns\": " << pred[i].predicted << ", \"held_out\": " << (pred[i].held_out ? "true" : "false")
      << "}";
  }
  return o.str() + "]";
}

bool write_file(const std::string& path, const std::string& text) {
  std::error_code ec;
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!(f << text)) return false;
  }
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

int fail(const Status& s) {
  std::fprintf(stderr, "kiln tune: %s\n", s.to_string().c_str());
  return 1;
}

int run(const Args& args) {
  const auto start = std::chrono::steady_clock::now();
  vk::InstanceOptions io;
  int validation_messages = 0;
  if (args.validation) {
    io.validation = vk::Validation::kRequired;
    io.on_message = [&validation_messages](const vk::DebugMessage& m) {
      ++validation_messages;  // counted from the driver's thread; read after the device is idle
      std::fprintf(stderr, "kiln tune: validation: %s\n", m.text.c_str());
    };
  }
  auto instance = vk::Instance::create(io);
  if (!instance.ok()) return fail(instance.status());
  vk::DeviceOptions dopt;
  dopt.selector = args.device;
  auto device = vk::Device::create(**instance, dopt);
  if (!device.ok()) return fail(device.status());
  const vk::Capabilities& caps = (*device)->capabilities();

  tune::MicrobenchOptions mo;
  mo.seed = args.seed;
  if (!args.short_mode) {
    mo.image_size = 2048;
    mo.chase_steps = 32768;
    mo.chase_runs = 128;
    mo.stream_steps = 256;
    mo.repetitions = 5;
    mo.group_sizes.clear();
    for (int g = 16; g <= 512 && static_cast<uint32_t>(g) <= caps.max_compute_work_group_invocations; g *= 2)
      mo.group_sizes.push_back(g);
    // Enough work groups to fill the device several times over.
    mo.work_groups.clear();
    const int64_t most = std::max<int64_t>(64, 4 * int64_t{caps.compute_units});
    for (int64_t w = 1; w <= most; w = w < 4 ? w + 1 : w * 3 / 2) mo.work_groups.push_back(w);
  }
  // Progress on stderr, one line a phase: the full mode runs for minutes on
  // some devices, and a silent tool looks hung.
  auto phase_start = std::chrono::steady_clock::now();
  auto progress = [&phase_start](const std::string& done) {
    const auto now = std::chrono::steady_clock::now();
    std::fprintf(stderr, "kiln tune: %s (%.1f s)\n", done.c_str(),
                 std::chrono::duration<double>(now - phase_start).count());
    phase_start = now;
  };
  std::fprintf(stderr, "kiln tune: %s mode on %s: %d pointer chases of %d steps per storage, %zu x %zu stream configurations\n",
               args.short_mode ? "short" : "full", caps.device_name.c_str(), mo.chase_runs, mo.chase_steps,
               mo.group_sizes.size(), mo.work_groups.size());
  auto bench = tune::Microbench::create(**device, mo);
  if (!bench.ok()) return fail(bench.status());
  progress("set up");
  auto chase = (*bench)->chase();
  if (!chase.ok()) return fail(chase.status());
  progress("pointer chases measured");
  auto stream = (*bench)->stream();
  if (!stream.ok()) return fail(stream.status());
  progress("stream runs measured");
  bench->reset();

  tmmodel::Profile identity;
  identity.device_name = caps.device_name;
  identity.driver_version = caps.driver_info.empty() ? std::to_string(caps.driver_version) : caps.driver_info;
  identity.kiln_version = std::to_string(KILN_VERSION_MAJOR) + "." + std::to_string(KILN_VERSION_MINOR) + "." +
                          std::to_string(KILN_VERSION_PATCH);
  identity.subgroup_size = caps.subgroup_size;
  identity.warp_width = caps.subgroup_size > 0 ? static_cast<int>(caps.subgroup_size) : 32;
  auto fit = tune::fit_profile(*chase, *stream, identity);
  if (!fit.ok()) return fail(fit.status());
  progress("model fitted");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (validation_messages > 0)
    return fail(internal_error(std::to_string(validation_messages) + " validation message(s); see above"));

  const tmmodel::Profile& p = fit->profile;
  std::ostringstream doc;
  doc << "{\n  \"format\": \"kiln-tmmodel-profile-v1\",\n  \"mode\": \"" << (args.short_mode ? "short" : "full")
      << "\",\n  \"tuning_seconds\": " << seconds << ",\n  \"model\": " << tmmodel::profile_model_json(p, 2)
      << ",\n  \"measurements\": {\n    \"chase_image\": " << predictions_json(fit->chase_image)
      << ",\n    \"chase_buffer\": " << predictions_json(fit->chase_buffer)
      << ",\n    \"stream\": " << stream_json(*stream, fit->stream) << "\n  }\n}\n";
  std::vector<std::string> written;
  if (!args.out.empty()) {
    if (!write_file(args.out, doc.str())) return fail(unavailable("cannot write " + args.out));
    written.push_back(args.out);
  }
  if (args.cache) {
    const std::string dir = tmmodel::profile_directory();
    const std::string path = dir + "/" + tmmodel::profile_file_name(p.device_name, p.driver_version, p.kiln_version);
    if (!dir.empty() && write_file(path, doc.str())) written.push_back(path);
    else std::fprintf(stderr, "kiln tune: no profile cache directory could be written; profile not cached\n");
  }

  std::printf("device: %s (%s)\n", p.device_name.c_str(), p.driver_version.c_str());
  auto print_beta = [](const char* name, const std::vector<double>& b) {
    std::printf("beta_%s (ns; 1, then x/y crossings of", name);
    for (const auto& s : tmmodel::kBlockShapes) std::printf(" %dx%d", s.width, s.height);
    std::printf("):");
    for (double v : b) std::printf(" %.3g", v);
    std::printf("\n");
  };
  print_beta("image", p.beta_image);
  print_beta("buffer", p.beta_buffer);
  std::printf("thrash D %.3g over C = %d lines; stream scale image %.3g buffer %.3g\n", p.thrash_d, p.cache_lines,
              p.stream_scale_image, p.stream_scale_buffer);
  std::printf("warps of %d in flight:", p.warp_width);
  for (const auto& [g, k] : p.warps_in_flight) std::printf(" G=%d:%g", g, k);
  std::printf("\nheld-out Spearman: thread %.3f (image %.3f, buffer %.3f), integrated %.3f\n", p.spearman_thread,
              p.spearman_image, p.spearman_buffer, p.spearman_integrated);
  std::printf("tuning time %.2f s; profile:", seconds);
  for (const std::string& w : written) std::printf(" %s", w.c_str());
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "kiln tune: %s needs a value\n%s", flag, kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--device") args.device = value("--device");
    else if (a == "--out") args.out = value("--out");
    else if (a == "--short") args.short_mode = true;
    else if (a == "--no-cache") args.cache = false;
    else if (a == "--validation") args.validation = true;
    else if (a == "--seed") {
      char* end = nullptr;
      const char* v = value("--seed");
      args.seed = std::strtoull(v, &end, 10);
      if (end == v || *end != '\0') {
        std::fprintf(stderr, "kiln tune: --seed takes a number, not '%s'\n", v);
        return 2;
      }
    } else if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "kiln tune: unknown argument '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  return run(args);
}

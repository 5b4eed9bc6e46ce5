// Runs ONNX node-test cases on the Vulkan backend, in worker processes.
//
// A validated Vulkan device and the shader compiles dominate a case's time,
// so instead of one process per case (the reference run's isolation) a worker
// process creates the device once and runs the cases in order, reporting each
// result on a pipe. A case that crashes or hangs takes down only its worker;
// it is recorded as failed and a new worker resumes after it. The parent
// never touches Vulkan (a device does not survive fork()).
//
// The device is the one the Vulkan unit tests use (platform/vulkan/
// vk_test_env.cc): the Khronos validation layer required, synchronization
// validation on. Every validation error a case causes fails that case; the
// worker also destroys its device at the end and reports what the layer said
// then (leaked objects).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "planner/kernel.h"

namespace kiln::node_test {

struct VulkanConfig {
  // With auto_storage the storage of what the layout pass leaves unannotated.
  planner::Storage storage = planner::Storage::kBuffer;
  // `--storage auto`, what `kiln run` does by default: each case first goes
  // through the default pass pipeline compiling for the worker's device in
  // auto mode (the layout pass chooses buffer or image per tensor, fusion
  // groups and index views form), then compiles. Without it no pass runs:
  // each op's own kernels are what is tested.
  bool auto_storage = false;
  planner::ElemType precision = planner::ElemType::kF32;
  int timeout_s = 120;  // per case, device creation included for a worker's first
};

struct VulkanCaseResult {
  enum class Kind { kPass, kFail, kFallback };
  Kind kind = Kind::kFail;
  // The model's distinct ops ("Add", "Exp+ReduceSum"), or for a fallback the
  // ops that ran on the host: what failures are grouped by.
  std::string ops;
  std::string message;  // kFail: what went wrong; kFallback: the planner's reasons
  uint64_t validation_errors = 0;
  uint64_t validation_warnings = 0;
  std::string warning;  // the first warning, when there were any
};

struct VulkanRun {
  std::string skip_reason;  // non-empty: no Vulkan device; nothing ran
  std::string setup_error;  // non-empty: Vulkan without the validation layer; nothing ran
  std::string device;       // the device's name
  std::vector<VulkanCaseResult> results;  // one per case, in order
  // What the layer reported while the workers destroyed their devices.
  uint64_t teardown_errors = 0;
  std::string teardown_messages;
  int workers = 0;  // processes started (1 + one per crash or hang)
};

// Runs every case (directories holding model.onnx and test_data_set_*) with
// `config`. Cases a case's plan runs partly on the host (fallbacks) are
// kFallback when their outputs match, kFail otherwise.
VulkanRun run_on_vulkan(const std::vector<std::filesystem::path>& cases, const VulkanConfig& config);

}  // namespace kiln::node_test

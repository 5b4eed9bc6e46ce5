// One OpenCL device, its context and in-order queues, and its program
// cache (program_cache.h: in memory for the process, on disk across
// processes): the OpenCL backend's view of the driver (no Kiln types beyond
// Status and the planner's TargetInfo).
//
// The device: $KILN_OPENCL_DEVICE ("<platform>:<device>" indices, as
// `kiln info` lists them) or else the first GPU, else the first device of
// any type. Programs are built once per (device, source) in a process and
// shared by every model on the device (PoCL compiles each with LLVM, which
// dominates a small model's compile time), and their binaries are kept on
// disk for the next process.
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/base/status.h"
#include "planner/target.h"
#include "plugins/opencl/program_cache.h"

namespace kiln::opencl {

// "CL_OUT_OF_RESOURCES (-5)".
std::string cl_error_name(cl_int code);
Status cl_status(cl_int code, const std::string& what);

struct DeviceDescription {
  std::string platform, platform_version, name, version, driver;
  cl_device_type type = 0;
  uint64_t global_memory = 0, local_memory = 0, max_alloc = 0;
  size_t max_workgroup = 0;
  bool images = false;
  size_t image2d_width = 0, image2d_height = 0;
  std::string extensions;
  uint32_t compute_units = 0, vendor_id = 0;
  bool unified_memory = false;  // CL_DEVICE_HOST_UNIFIED_MEMORY: an integrated GPU, or a CPU
  uint32_t base_addr_align = 0;  // CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes: a sub-buffer's origin is a multiple
};

// Every device of every platform, in `kiln info` order (platform, device).
// Errors: kUnavailable when no OpenCL platform exists.
StatusOr<std::vector<std::vector<DeviceDescription>>> list_devices();

class ClDevice {
 public:
  // The shared device of this process (opened on first use).
  static StatusOr<std::shared_ptr<ClDevice>> shared();
  ~ClDevice();
  ClDevice(const ClDevice&) = delete;
  ClDevice& operator=(const ClDevice&) = delete;

  const DeviceDescription& description() const { return desc_; }
  planner::TargetInfo target() const;
  bool has_fp16() const { return desc_.extensions.find("cl_khr_fp16") != std::string::npos; }
  cl_context context() const { return context_; }
  cl_device_id device() const { return device_; }
  cl_command_queue queue() const { return queue_; }
  // The in-order queue with CL_QUEUE_PROFILING_ENABLE (profiled models),
  // created on first use: profiling costs some drivers time per command.
  StatusOr<cl_command_queue> profiling_queue();
  // A new kernel object of `source`'s kiln_kernel (the program built or
  // loaded once). Errors: the build log, prefixed with `what`.
  StatusOr<cl_kernel> create_kernel(const std::string& source, const std::string& what);
  // What the program cache did so far (for tests and the compile's note).
  ProgramCacheStats program_stats() const { return programs_->stats(); }
  // Serializes the runs of every model on the device (kernel arguments
  // are per kernel object, the queue is shared).
  std::mutex& run_mutex() { return run_mutex_; }

 private:
  ClDevice() = default;
  cl_platform_id platform_ = nullptr;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  cl_command_queue profiling_queue_ = nullptr;
  DeviceDescription desc_;
  std::unique_ptr<ProgramCache> programs_;
  std::mutex queue_mutex_;  // guards profiling_queue_'s creation
  std::mutex run_mutex_;
};

}  // namespace kiln::opencl

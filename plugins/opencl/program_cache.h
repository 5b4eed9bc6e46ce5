// Built OpenCL programs, in memory for the process and on disk across
// processes: the OpenCL counterpart of the Vulkan kernel cache
// (platform/vulkan/kernel_cache.h). Phone drivers compile OpenCL C from
// scratch in every process (PoCL keeps a cache of its own, most drivers do
// not), which makes a CNN's first compile take seconds there.
//
// On disk: one file per program, `<device key hash>-<source hash>.clbin` in
// the directory (default: $KILN_CACHE_DIR/opencl, else
// $XDG_CACHE_HOME/kiln/opencl, else $HOME/.cache/kiln/opencl, the
// convention of Kiln's other caches; $KILN_OPENCL_PROGRAM_CACHE=off keeps
// programs in memory only). A file holds a magic, the full key (device
// name, driver version, platform version, build options and two 64-bit
// hashes of the source), the binary's size and checksum, and the binary
// (clGetProgramInfo CL_PROGRAM_BINARIES). A file that is short, has another
// key or checksum, or that the driver refuses (clCreateProgramWithBinary or
// clBuildProgram fails) is counted as rejected, rebuilt from source and
// rewritten; a file that cannot be written is counted and ignored: the
// cache never fails a compile that the source alone would pass.
//
// Thread-safety: get() is serialized by an internal mutex.
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "engine/base/status.h"

namespace kiln::opencl {

struct ProgramCacheStats {
  uint64_t builds = 0;          // programs built from source
  uint64_t disk_hits = 0;       // programs loaded from a cache file
  uint64_t memory_hits = 0;     // programs this cache had built or loaded before
  uint64_t rejected_files = 0;  // cache files found corrupt or mismatched (then rebuilt)
  uint64_t write_failures = 0;  // cache files that could not be written
};

class ProgramCache {
 public:
  // `directory`: where the files go ("" = memory only). `device_key`: what
  // a binary is valid for (device, driver and platform versions); the build
  // options are added to it.
  ProgramCache(cl_context context, cl_device_id device, std::string directory, std::string device_key,
               std::string build_options);
  ~ProgramCache();
  ProgramCache(const ProgramCache&) = delete;
  ProgramCache& operator=(const ProgramCache&) = delete;

  // $KILN_CACHE_DIR/opencl etc. (see the top), "" when caching on disk is
  // off or no directory is known.
  static std::string default_directory();

  // The program of `source`, built for the device (owned by the cache).
  // Errors: kUnimplemented with the build log, prefixed with `what`.
  StatusOr<cl_program> get(const std::string& source, const std::string& what);
  ProgramCacheStats stats() const;
  const std::string& directory() const { return directory_; }
  // The file that holds (or would hold) `source`'s binary.
  std::string file_for(const std::string& source) const;

 private:
  StatusOr<cl_program> build_from_source(const std::string& source, const std::string& what);
  // The cached binary of `source`, or null (missing, rejected: counted).
  cl_program load(const std::string& source, const std::string& key);
  void store(cl_program program, const std::string& source, const std::string& key);
  std::string key_for(const std::string& source) const;

  cl_context context_;
  cl_device_id device_;
  std::string directory_, device_key_, build_options_;
  mutable std::mutex mutex_;
  std::map<std::string, cl_program> programs_;  // by source
  ProgramCacheStats stats_;
};

}  // namespace kiln::opencl

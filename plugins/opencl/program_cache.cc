// ProgramCache (see program_cache.h).
#include "plugins/opencl/program_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "plugins/opencl/cl_device.h"

namespace kiln::opencl {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'C', 'L', 'B', '1'};
constexpr uint64_t kMaxBinaryBytes = uint64_t{1} << 30;  // a larger size field is corruption

uint64_t fnv1a64(const std::string& data, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}
// Two independent 64-bit hashes: a file name that collides is still told
// apart by the key inside the file.
uint64_t hash_a(const std::string& s) { return fnv1a64(s, 0xcbf29ce484222325ull); }
uint64_t hash_b(const std::string& s) { return fnv1a64(s, 0x84222325cbf29ce4ull); }

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
bool get_u64(const std::string& in, size_t& pos, uint64_t& v) {
  if (in.size() < pos + 8) return false;
  v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[pos + i])) << (8 * i);
  pos += 8;
  return true;
}

std::string build_log(cl_program program, cl_device_id device) {
  size_t n = 0;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  std::string log(n, '\0');
  if (n) clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  if (log.size() > 2000) log = log.substr(0, 2000) + "...";
  return log;
}

}  // namespace

ProgramCache::ProgramCache(cl_context context, cl_device_id device, std::string directory, std::string device_key,
                           std::string build_options)
    : context_(context),
      device_(device),
      directory_(std::move(directory)),
      device_key_(std::move(device_key)),
      build_options_(std::move(build_options)) {}

ProgramCache::~ProgramCache() {
  for (auto& [source, program] : programs_) clReleaseProgram(program);
}

std::string ProgramCache::default_directory() {
  if (env("KILN_OPENCL_PROGRAM_CACHE") == "off") return "";
  std::string cache = env("KILN_CACHE_DIR");
  if (cache.empty() && !env("XDG_CACHE_HOME").empty()) cache = env("XDG_CACHE_HOME") + "/kiln";
  if (cache.empty() && !env("HOME").empty()) cache = env("HOME") + "/.cache/kiln";
  return cache.empty() ? cache : cache + "/opencl";
}

std::string ProgramCache::key_for(const std::string& source) const {
  return device_key_ + "\nbuild options: " + build_options_ + "\nsource: " + hex(hash_a(source)) + hex(hash_b(source)) +
         " (" + std::to_string(source.size()) + " bytes)";
}

std::string ProgramCache::file_for(const std::string& source) const {
  if (directory_.empty()) return "";
  return directory_ + "/" + hex(hash_a(device_key_ + "\n" + build_options_)) + "-" + hex(hash_a(source)) + ".clbin";
}

StatusOr<cl_program> ProgramCache::get(const std::string& source, const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto it = programs_.find(source); it != programs_.end()) {
    ++stats_.memory_hits;
    return it->second;
  }
  const std::string key = key_for(source);
  cl_program program = directory_.empty() ? nullptr : load(source, key);
  if (program) {
    ++stats_.disk_hits;
  } else {
    KILN_ASSIGN_OR_RETURN(program, build_from_source(source, what));
    ++stats_.builds;
    if (!directory_.empty()) store(program, source, key);
  }
  programs_.emplace(source, program);
  return program;
}

ProgramCacheStats ProgramCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

StatusOr<cl_program> ProgramCache::build_from_source(const std::string& source, const std::string& what) {
  // $KILN_OPENCL_DUMP=DIR: every program's source, for debugging the translation.
  if (const std::string dump = env("KILN_OPENCL_DUMP"); !dump.empty())
    std::ofstream(dump + "/kernel_" + hex(hash_a(source)) + ".cl") << "// " << what << "\n" << source;
  const char* text = source.c_str();
  const size_t length = source.size();
  cl_int rc = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context_, 1, &text, &length, &rc);
  KILN_RETURN_IF_ERROR(cl_status(rc, what + ": clCreateProgramWithSource"));
  rc = clBuildProgram(program, 1, &device_, build_options_.c_str(), nullptr, nullptr);
  if (rc != CL_SUCCESS) {
    const std::string log = build_log(program, device_);
    clReleaseProgram(program);
    return unimplemented(what + ": the OpenCL C translation does not build (" + cl_error_name(rc) + "): " + log);
  }
  return program;
}

cl_program ProgramCache::load(const std::string& source, const std::string& key) {
  const std::string path = file_for(source);
  std::ifstream f(path, std::ios::binary);
  if (!f) return nullptr;  // not cached yet
  const std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // Any mismatch below: a corrupt file, another device's or driver's, or
  // another source under a colliding name. Rebuilt by the caller.
  auto reject = [&]() -> cl_program {
    ++stats_.rejected_files;
    return nullptr;
  };
  size_t pos = sizeof kMagic;
  uint64_t key_size = 0, binary_size = 0, checksum = 0;
  if (data.size() < pos || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) return reject();
  if (!get_u64(data, pos, key_size) || key_size != key.size() || data.size() < pos + key_size) return reject();
  if (data.compare(pos, key_size, key) != 0) return reject();
  pos += key_size;
  if (!get_u64(data, pos, binary_size) || !get_u64(data, pos, checksum)) return reject();
  if (binary_size == 0 || binary_size > kMaxBinaryBytes || data.size() != pos + binary_size) return reject();
  const std::string binary = data.substr(pos);
  if (hash_a(binary) != checksum) return reject();
  const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
  const size_t size = binary.size();
  cl_int binary_status = CL_SUCCESS, rc = CL_SUCCESS;
  cl_program program = clCreateProgramWithBinary(context_, 1, &device_, &size, &bytes, &binary_status, &rc);
  if (rc != CL_SUCCESS || binary_status != CL_SUCCESS) {
    if (program) clReleaseProgram(program);
    return reject();
  }
  if (clBuildProgram(program, 1, &device_, build_options_.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    clReleaseProgram(program);
    return reject();
  }
  return program;
}

void ProgramCache::store(cl_program program, const std::string& source, const std::string& key) {
  size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) != CL_SUCCESS || size == 0) {
    ++stats_.write_failures;  // the driver offers no binary
    return;
  }
  std::vector<unsigned char> binary(size);
  unsigned char* pointer = binary.data();
  if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof pointer, &pointer, nullptr) != CL_SUCCESS) {
    ++stats_.write_failures;
    return;
  }
  const std::string bytes(binary.begin(), binary.end());
  std::string out(kMagic, sizeof kMagic);
  put_u64(out, key.size());
  out += key;
  put_u64(out, bytes.size());
  put_u64(out, hash_a(bytes));
  out += bytes;
  // Written whole to a temporary name, then renamed: a reader (another
  // process) never sees half a file.
  std::error_code ec;
  std::filesystem::create_directories(directory_, ec);
  const std::string path = file_for(source);
  const std::string temp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(temp, std::ios::binary | std::ios::trunc);
    f.write(out.data(), static_cast<std::streamsize>(out.size()));
    if (!f) {
      ++stats_.write_failures;
      std::filesystem::remove(temp, ec);
      return;
    }
  }
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    ++stats_.write_failures;
    std::filesystem::remove(temp, ec);
  }
}

}  // namespace kiln::opencl

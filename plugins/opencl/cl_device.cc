// ClDevice and the device listing (see cl_device.h).
#include "plugins/opencl/cl_device.h"

#include <algorithm>
#include <cstdlib>

namespace kiln::opencl {
namespace {

// CL_PLATFORM_NOT_FOUND_KHR (cl_ext.h): the ICD loader found no driver.
constexpr cl_int kPlatformNotFoundKhr = -1001;

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  clGetPlatformInfo(p, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  clGetDeviceInfo(d, what, sizeof(T), &v, nullptr);
  return v;
}

StatusOr<std::vector<cl_platform_id>> platforms() {
  cl_uint n = 0;
  const cl_int rc = clGetPlatformIDs(0, nullptr, &n);
  if (rc == kPlatformNotFoundKhr || n == 0)
    return unavailable("no OpenCL platform (the ICD loader found no installed driver)");
  if (rc != CL_SUCCESS) return cl_status(rc, "clGetPlatformIDs");
  std::vector<cl_platform_id> ids(n);
  KILN_RETURN_IF_ERROR(cl_status(clGetPlatformIDs(n, ids.data(), nullptr), "clGetPlatformIDs"));
  return ids;
}

std::vector<cl_device_id> devices_of(cl_platform_id p) {
  cl_uint n = 0;
  if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::vector<cl_device_id> ids(n);
  clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr);
  return ids;
}

DeviceDescription describe(cl_platform_id p, cl_device_id d) {
  DeviceDescription s;
  s.platform = platform_string(p, CL_PLATFORM_NAME);
  s.platform_version = platform_string(p, CL_PLATFORM_VERSION);
  s.name = device_string(d, CL_DEVICE_NAME);
  s.version = device_string(d, CL_DEVICE_VERSION);
  s.driver = device_string(d, CL_DRIVER_VERSION);
  s.type = device_value<cl_device_type>(d, CL_DEVICE_TYPE);
  s.global_memory = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
  s.local_memory = device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE);
  s.max_alloc = device_value<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  s.max_workgroup = device_value<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  s.images = device_value<cl_bool>(d, CL_DEVICE_IMAGE_SUPPORT) == CL_TRUE;
  s.image2d_width = device_value<size_t>(d, CL_DEVICE_IMAGE2D_MAX_WIDTH);
  s.image2d_height = device_value<size_t>(d, CL_DEVICE_IMAGE2D_MAX_HEIGHT);
  s.extensions = device_string(d, CL_DEVICE_EXTENSIONS);
  s.compute_units = device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS);
  s.vendor_id = device_value<cl_uint>(d, CL_DEVICE_VENDOR_ID);
  s.unified_memory = device_value<cl_bool>(d, CL_DEVICE_HOST_UNIFIED_MEMORY) == CL_TRUE;
  s.base_addr_align = device_value<cl_uint>(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8;  // reported in bits
  return s;
}

}  // namespace

std::string cl_error_name(cl_int code) {
  static const std::map<cl_int, const char*> names = {
      {CL_DEVICE_NOT_FOUND, "CL_DEVICE_NOT_FOUND"},
      {CL_OUT_OF_RESOURCES, "CL_OUT_OF_RESOURCES"},
      {CL_OUT_OF_HOST_MEMORY, "CL_OUT_OF_HOST_MEMORY"},
      {CL_MEM_OBJECT_ALLOCATION_FAILURE, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
      {CL_BUILD_PROGRAM_FAILURE, "CL_BUILD_PROGRAM_FAILURE"},
      {CL_INVALID_VALUE, "CL_INVALID_VALUE"},
      {CL_INVALID_KERNEL_ARGS, "CL_INVALID_KERNEL_ARGS"},
      {CL_INVALID_WORK_GROUP_SIZE, "CL_INVALID_WORK_GROUP_SIZE"},
      {CL_INVALID_BUFFER_SIZE, "CL_INVALID_BUFFER_SIZE"},
      {CL_INVALID_ARG_SIZE, "CL_INVALID_ARG_SIZE"},
      {CL_INVALID_GLOBAL_WORK_SIZE, "CL_INVALID_GLOBAL_WORK_SIZE"},
  };
  const auto it = names.find(code);
  return std::string(it == names.end() ? "OpenCL error" : it->second) + " (" + std::to_string(code) + ")";
}

Status cl_status(cl_int code, const std::string& what) {
  if (code == CL_SUCCESS) return ok_status();
  if (code == CL_OUT_OF_HOST_MEMORY || code == CL_MEM_OBJECT_ALLOCATION_FAILURE)
    return out_of_memory(what + ": " + cl_error_name(code));
  return internal_error(what + ": " + cl_error_name(code));
}

StatusOr<std::vector<std::vector<DeviceDescription>>> list_devices() {
  KILN_ASSIGN_OR_RETURN(std::vector<cl_platform_id> ps, platforms());
  std::vector<std::vector<DeviceDescription>> out;
  for (cl_platform_id p : ps) {
    out.emplace_back();
    for (cl_device_id d : devices_of(p)) out.back().push_back(describe(p, d));
  }
  return out;
}

StatusOr<std::shared_ptr<ClDevice>> ClDevice::shared() {
  static std::mutex mutex;
  static std::weak_ptr<ClDevice> current;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto d = current.lock()) return d;
  KILN_ASSIGN_OR_RETURN(std::vector<cl_platform_id> ps, platforms());
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  if (const char* env = std::getenv("KILN_OPENCL_DEVICE"); env && *env) {
    char* end = nullptr;
    const unsigned long pi = std::strtoul(env, &end, 10);
    const unsigned long di = end && *end == ':' ? std::strtoul(end + 1, nullptr, 10) : 0;
    if (pi >= ps.size() || di >= devices_of(ps[pi]).size())
      return not_found(std::string("KILN_OPENCL_DEVICE=") + env + " names no device (see `kiln info`)");
    platform = ps[pi];
    device = devices_of(platform)[di];
  } else {
    for (cl_device_type want : {cl_device_type(CL_DEVICE_TYPE_GPU), cl_device_type(CL_DEVICE_TYPE_ALL)}) {
      for (cl_platform_id p : ps) {
        for (cl_device_id d : devices_of(p))
          if (device_value<cl_device_type>(d, CL_DEVICE_TYPE) & want) {
            platform = p;
            device = d;
            break;
          }
        if (device) break;
      }
      if (device) break;
    }
  }
  if (!device) return unavailable("the OpenCL platforms offer no device");
  auto d = std::shared_ptr<ClDevice>(new ClDevice);
  d->platform_ = platform;
  d->device_ = device;
  d->desc_ = describe(platform, device);
  cl_int rc = CL_SUCCESS;
  d->context_ = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &rc);
  KILN_RETURN_IF_ERROR(cl_status(rc, "clCreateContext on " + d->desc_.name));
  d->queue_ = clCreateCommandQueue(d->context_, device, 0, &rc);
  KILN_RETURN_IF_ERROR(cl_status(rc, "clCreateCommandQueue on " + d->desc_.name));
  // A binary is valid for this device under this driver and platform
  // version; GLSL's float literals are single precision.
  const std::string device_key = "device: " + d->desc_.name + "\ndevice version: " + d->desc_.version +
                                 "\ndriver: " + d->desc_.driver + "\nplatform: " + d->desc_.platform + " " +
                                 d->desc_.platform_version;
  d->programs_ = std::make_unique<ProgramCache>(d->context_, device, ProgramCache::default_directory(), device_key,
                                                "-cl-single-precision-constant -w");
  current = d;
  return d;
}

ClDevice::~ClDevice() {
  programs_.reset();
  if (profiling_queue_) clReleaseCommandQueue(profiling_queue_);
  if (queue_) clReleaseCommandQueue(queue_);
  if (context_) clReleaseContext(context_);
}

planner::TargetInfo ClDevice::target() const {
  planner::TargetInfo t;
  t.max_storage_buffer_range = desc_.max_alloc;
  t.max_push_constants_size = 4096;  // dynamic dims are one struct argument
  t.max_shared_memory = static_cast<uint32_t>(std::min<uint64_t>(desc_.local_memory, 1u << 30));
  t.max_workgroup_invocations = static_cast<uint32_t>(std::min<size_t>(desc_.max_workgroup, 1024));
  // What the passes are told too (opencl_plugin.cc, target_info): tile and
  // GEMV choices made for the same device the passes planned for.
  t.compute_units = desc_.compute_units;
  // KILN_OPENCL_COMPUTE_UNITS=N plans as for a device of N compute units
  // (split-K and GEMV choices depend on it): a GPU's plan reproduced on
  // PoCL, or a plan without split-K on a GPU, to tell a kernel's fault.
  if (const char* cu = std::getenv("KILN_OPENCL_COMPUTE_UNITS"); cu && *cu) {
    const long n = std::strtol(cu, nullptr, 10);
    if (n > 0 && n <= 1 << 20) t.compute_units = static_cast<uint32_t>(n);
  }
  // OpenCL grids have no per-dimension group limit: kernels that number
  // their groups linearly get exact 1-D grids (glsl_to_opencl.h relies on it).
  t.max_workgroup_count_x = 0x7fffffff;
  // Image storage: a tensor whose texel grid passes either image2d limit
  // stays in a buffer (planner::choose_layout; one number for both axes).
  t.max_image_dimension_2d =
      desc_.images ? static_cast<uint32_t>(std::min<size_t>({desc_.image2d_width, desc_.image2d_height, 0x7fffffff}))
                   : 0;
  // No subgroups, fp16, cooperative matrices or float atomics: the kernels
  // the planner then picks are the portable ones.
  return t;
}

StatusOr<cl_command_queue> ClDevice::profiling_queue() {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  if (!profiling_queue_) {
    cl_int rc = CL_SUCCESS;
    profiling_queue_ = clCreateCommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE, &rc);
    KILN_RETURN_IF_ERROR(cl_status(rc, "clCreateCommandQueue(CL_QUEUE_PROFILING_ENABLE) on " + desc_.name));
  }
  return profiling_queue_;
}

StatusOr<cl_kernel> ClDevice::create_kernel(const std::string& source, const std::string& what) {
  KILN_ASSIGN_OR_RETURN(cl_program program, programs_->get(source, what));
  cl_int rc = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(program, "kiln_kernel", &rc);
  KILN_RETURN_IF_ERROR(cl_status(rc, what + ": clCreateKernel"));
  // The kernel's fixed work-group size (reqd_work_group_size) against what
  // the device runs of this kernel (registers and local memory bound it
  // below the device's maximum): a launch past either fails on a GPU with
  // a bare CL_OUT_OF_RESOURCES, so the compile says which and why.
  size_t required[3] = {0, 0, 0}, most = 0;
  cl_ulong local_bytes = 0;
  if (clGetKernelWorkGroupInfo(kernel, device_, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof required, required,
                               nullptr) == CL_SUCCESS &&
      clGetKernelWorkGroupInfo(kernel, device_, CL_KERNEL_WORK_GROUP_SIZE, sizeof most, &most, nullptr) ==
          CL_SUCCESS &&
      clGetKernelWorkGroupInfo(kernel, device_, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local_bytes, &local_bytes,
                               nullptr) == CL_SUCCESS) {
    const size_t invocations = required[0] * required[1] * required[2];
    std::string why;
    if (most > 0 && invocations > most)
      why = "work groups of " + std::to_string(invocations) + " invocations, but '" + desc_.name +
            "' runs at most " + std::to_string(most) + " of this kernel at once";
    else if (desc_.local_memory > 0 && local_bytes > desc_.local_memory)
      why = std::to_string(local_bytes) + " bytes of local memory, but '" + desc_.name + "' has " +
            std::to_string(desc_.local_memory);
    if (!why.empty()) {
      clReleaseKernel(kernel);
      return failed_precondition(what + ": the kernel needs " + why);
    }
  }
  return kernel;
}

}  // namespace kiln::opencl

// The GLSL -> OpenCL C translation on a shader that uses what the planner's
// kernels use (buffers and a vector view of one, specialization constants,
// constant lists, a shared array and barrier after the group guard, a
// per-invocation global, out/inout parameters, an array constructor,
// boolean vectors, an [[unroll]] loop), and glsl_codegen's image accessors, built and run on
// the machine's OpenCL device (skipped without one).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <vector>

#include "planner/glsl_codegen.h"
#include "plugins/opencl/cl_device.h"
#include "plugins/opencl/cl_image.h"
#include "plugins/opencl/cl_test_requirement.h"
#include "plugins/opencl/glsl_to_opencl.h"

namespace kiln::opencl {
namespace {

constexpr char kShader[] = R"(#version 450
layout(local_size_x = 4, local_size_y = 1, local_size_z = 1) in;

layout(constant_id = 0) const int KILN_GROUPS = 1;
layout(constant_id = 1) const int N = 1;
layout(std430, set = 0, binding = 0) readonly restrict buffer KilnBuffer0 { float x_data[]; };
layout(std430, set = 0, binding = 1) restrict buffer KilnBuffer1 { float y_data[]; };
layout(std430, set = 0, binding = 1) restrict buffer KilnBufferV1 { vec4 y_data4[]; };
const int HALF = 2, TWICE = N * 2;
shared float part[4];
int gid;
void split(float v, out float hi, inout float count) { hi = floor(v); count += 1.0; }
float total() {
  float sum = 0.0;
  [[unroll]] for (int i = 0; i < 4; ++i) sum += part[i];
  return sum;
}
void main() {
  int kiln_group = int(gl_WorkGroupID.x);
  if (kiln_group >= KILN_GROUPS) return;
  gid = int(gl_GlobalInvocationID.x);
  int c[2] = int[2](gid, HALF);
  float hi, count = 0.0;
  split(x_data[gid], hi, count);
  part[gl_LocalInvocationIndex] = hi + count;
  barrier();
  y_data[gid] = total() + float(TWICE);
  if (gid == 0) y_data4[1] = vec4(equal(ivec4(c[1]), ivec4(2, 0, 2, 0)));
}
)";

// Runs `kernel` (binding 0: x, binding 1: y) as one work group of
// x.size() invocations and returns y (`y_size` floats, zero before the run).
// x and y sit at byte offsets 256 and 512 of buffers padded with NaN, as
// tensors placed in the runtime's arena: the kernel must take its offset
// arguments (`code.offset_args`) and touch nothing outside them.
void run_x_to_y(ClDevice& device, cl_kernel kernel, const TranslatedKernel& code, const std::vector<float>& x,
                size_t y_size, std::vector<float>& y) {
  constexpr size_t kXStart = 256 / sizeof(float), kYStart = 512 / sizeof(float), kPad = 64;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> xs(kXStart + x.size() + kPad, nan), ys(kYStart + y_size + kPad, nan);
  std::copy(x.begin(), x.end(), xs.begin() + kXStart);
  std::fill(ys.begin() + kYStart, ys.begin() + kYStart + y_size, 0.0f);
  cl_int rc = CL_SUCCESS;
  cl_mem bx = clCreateBuffer(device.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, xs.size() * sizeof(float),
                             xs.data(), &rc);
  ASSERT_EQ(rc, CL_SUCCESS);
  cl_mem by = clCreateBuffer(device.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, ys.size() * sizeof(float),
                             ys.data(), &rc);
  ASSERT_EQ(rc, CL_SUCCESS);
  ASSERT_EQ(code.offset_args.size(), 2u);
  const cl_ulong x_offset = kXStart * sizeof(float), y_offset = kYStart * sizeof(float);
  ASSERT_EQ(clSetKernelArg(kernel, 0, sizeof bx, &bx), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(kernel, 1, sizeof by, &by), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(kernel, static_cast<cl_uint>(code.offset_args[0]), sizeof x_offset, &x_offset), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(kernel, static_cast<cl_uint>(code.offset_args[1]), sizeof y_offset, &y_offset), CL_SUCCESS);
  const size_t global = x.size(), local = x.size();
  ASSERT_EQ(clEnqueueNDRangeKernel(device.queue(), kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr),
            CL_SUCCESS);
  ASSERT_EQ(clEnqueueReadBuffer(device.queue(), by, CL_TRUE, 0, ys.size() * sizeof(float), ys.data(), 0, nullptr,
                                nullptr),
            CL_SUCCESS);
  clReleaseMemObject(bx);
  clReleaseMemObject(by);
  for (size_t i = 0; i < ys.size(); ++i) {
    const bool padding = i < kYStart || i >= kYStart + y_size;
    EXPECT_TRUE(!padding || std::isnan(ys[i])) << "y's padding written at float " << i;
  }
  y.assign(ys.begin() + kYStart, ys.begin() + kYStart + y_size);
}

TEST(GlslToOpenCl, TranslatesAndRunsWhatThePlannersKernelsUse) {
  auto code = glsl_to_opencl(kShader, {1, 3});
  ASSERT_TRUE(code.ok()) << code.status().to_string();
  EXPECT_EQ(code->bindings, 2u);
  EXPECT_FALSE(code->has_push);
  EXPECT_EQ(code->local_size[0], 4u);
  EXPECT_TRUE(code->requires_exact_grid);  // the guard before the barrier went
  EXPECT_NE(code->source.find("float *hi"), std::string::npos) << code->source;
  EXPECT_EQ(code->source.find("[["), std::string::npos) << code->source;  // no OpenCL C 1.2 spelling

  auto device = ClDevice::shared();
  if (!device.ok()) {
    if (kiln::opencl::opencl_required())
      FAIL() << kiln::opencl::opencl_required_failure(device.status().to_string());
    GTEST_SKIP() << device.status().to_string();
  }
  auto kernel = (*device)->create_kernel(code->source, "test shader");
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  const std::vector<float> x = {1.5f, 2.5f, 3.5f, 4.5f};
  std::vector<float> y;
  ASSERT_NO_FATAL_FAILURE(run_x_to_y(**device, *kernel, *code, x, 8, y));
  // Each: the workgroup's floor(x) + 1 summed (1+2+3+4 + 4) plus TWICE (6).
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i], 20.0f) << i;
  // equal() gives GLSL's 1 / 0 lanes, which vec4() converts to 1.0 / 0.0.
  EXPECT_EQ(y[4], 1.0f);
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_EQ(y[6], 1.0f);
  EXPECT_EQ(y[7], 0.0f);
  clReleaseKernel(*kernel);
}

// glsl_codegen's image accessors (planner/glsl_codegen.cc) for a map kernel
// over 2.5D textures: x and y [1, 5, 2, 3] packed along axis 1 (two texels
// per column, the second with one valid lane), b a buffer. The translation
// gives read_only / write_only image2d_t arguments in binding order; on the
// device, x packed by the planner's own packing (cl_image.h) is read with
// x_at, x_ld and x_at4 (whose lanes past the tensor read 0) and y stored
// with y_st4 and unpacked: every element checked.
TEST(GlslToOpenCl, ImageAccessorsReadAndWriteTheTexelsThePackingUses) {
  const std::vector<int64_t> dims = {1, 5, 2, 3};
  auto tensor = [&](const char* name, planner::Storage storage, bool written) {
    planner::KernelTensor t;
    t.name = name;
    for (int64_t d : dims) t.shape.emplace_back(d);
    t.layout.storage = storage;
    t.layout.packed_axis = storage == planner::Storage::kImage ? 1 : -1;
    t.written = written;
    return t;
  };
  planner::KernelDesc k;
  k.name = "image_map";
  k.tensors = {tensor("x", planner::Storage::kImage, false), tensor("b", planner::Storage::kBuffer, false),
               tensor("y", planner::Storage::kImage, true)};
  k.tensors[1].shape = {ir::Dim(5)};
  k.body = "v = x_at(oc0, oc1, oc2, oc3) * 10.0 + x_ld(oi) * b_at(oc1) + x_at4(oc0, oc1 & ~3, oc2, oc3).y;";
  auto glsl = planner::generate_glsl(k, planner::TargetInfo{});
  ASSERT_TRUE(glsl.ok()) << glsl.status().to_string();
  auto code = glsl_to_opencl(glsl->glsl, glsl->spec);
  ASSERT_TRUE(code.ok()) << code.status().to_string();
  EXPECT_EQ(code->bindings, 3u);
  EXPECT_EQ(code->image_bindings, (std::vector<bool>{true, false, true}));
  EXPECT_NE(code->source.find("read_only image2d_t x_tex, const global float* restrict b_data, write_only image2d_t y_img"),
            std::string::npos)
      << code->source;
  EXPECT_NE(code->source.find("#define KILN_IMAGES 1"), std::string::npos);

  auto device = ClDevice::shared();
  if (!device.ok()) GTEST_SKIP() << device.status().to_string();
  if (!(*device)->description().images) GTEST_SKIP() << "the OpenCL device has no images";
  auto kernel = (*device)->create_kernel(code->source, "image accessors");
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  const Shape shape(dims.begin(), dims.end());
  auto x = Tensor::allocate(DType::kFloat32, shape);
  ASSERT_TRUE(x.ok());
  for (int64_t i = 0; i < x->numel(); ++i) x->data<float>()[i] = static_cast<float>(i) * 0.5f - 3.0f;
  const float b[5] = {1, -2, 3, -4, 5};
  const planner::DeviceLayout layout = k.tensors[0].layout;
  const ImageSize size = tensor_image_size(layout, shape);
  EXPECT_EQ(size.width, 2u * 3u);  // ceil(5 / 4) texels per column, times the last axis
  EXPECT_EQ(size.height, 2u);      // the other axes
  auto ix = create_tensor_image(**device, layout, shape, "x");
  auto iy = create_tensor_image(**device, layout, shape, "y");
  ASSERT_TRUE(ix.ok() && iy.ok()) << ix.status().to_string() << iy.status().to_string();
  cl_int rc = CL_SUCCESS;
  cl_mem bb = clCreateBuffer((*device)->context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof b,
                             const_cast<float*>(b), &rc);
  ASSERT_EQ(rc, CL_SUCCESS);
  cl_command_queue queue = (*device)->queue();
  ASSERT_TRUE(upload_tensor_image(queue, *ix, layout, *x, "x").ok());
  ASSERT_EQ(clSetKernelArg(*kernel, 0, sizeof(cl_mem), &*ix), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(*kernel, 1, sizeof bb, &bb), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(*kernel, 2, sizeof(cl_mem), &*iy), CL_SUCCESS);
  EXPECT_EQ(code->offset_args, (std::vector<int>{-1, 3, -1}));  // images take no offset
  const cl_ulong b_offset = 0;
  ASSERT_EQ(clSetKernelArg(*kernel, 3, sizeof b_offset, &b_offset), CL_SUCCESS);
  ASSERT_FALSE(code->has_push);  // static dims: specialization constants
  size_t global[3], local[3];
  for (int d = 0; d < 3; ++d) {
    ASSERT_TRUE(glsl->groups[d].is_const());
    local[d] = code->local_size[d];
    global[d] = static_cast<size_t>(glsl->groups[d].value()) * local[d];
  }
  ASSERT_EQ(clEnqueueNDRangeKernel(queue, *kernel, 3, nullptr, global, local, 0, nullptr, nullptr), CL_SUCCESS);
  auto y = download_tensor_image(queue, *iy, layout, DType::kFloat32, shape, "y");
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  const float* xs = x->data<float>();
  for (int64_t c = 0; c < 5; ++c)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t w = 0; w < 3; ++w) {
        const int64_t i = (c * 2 + h) * 3 + w;
        const int64_t lane = (c & ~3) + 1;  // x_at4(c & ~3).y: channel lane, 0 past the tensor
        const float at4_y = lane < 5 ? xs[(lane * 2 + h) * 3 + w] : 0.0f;
        EXPECT_FLOAT_EQ(y->data<float>()[i], xs[i] * 10.0f + xs[i] * b[c] + at4_y) << "c" << c << " h" << h << " w" << w;
      }
  clReleaseMemObject(*ix);
  clReleaseMemObject(*iy);
  clReleaseMemObject(bb);
  clReleaseKernel(*kernel);
}

// Invocations that each store one lane of a shared vector (as gemm_tile's
// B tile does): the lane is stored as a scalar through a pointer, not as
// OpenCL C's vector-lane store, which compilers emit as a load, insert and
// store of the whole vector (racing with the invocations writing the other
// lanes on a GPU). Reads, whole-vector stores and comparisons stay as
// they are. On the device every lane holds what its invocation wrote.
constexpr char kLaneShader[] = R"(#version 450
layout(local_size_x = 8, local_size_y = 1, local_size_z = 1) in;
layout(std430, set = 0, binding = 0) readonly restrict buffer KilnBuffer0 { float x_data[]; };
layout(std430, set = 0, binding = 1) restrict buffer KilnBuffer1 { float y_data[]; };
shared vec4 lanes[2];
shared ivec4 one;
shared vec4 whole[2];
void main() {
  int li = int(gl_LocalInvocationIndex);
  lanes[li >> 2][li & 3] = x_data[li] * 2.0;
  if (li < 4) one[li] = li + 1;
  if (li < 4) one[li] += 10;
  if (li == 0) whole[1] = vec4(0.5);
  barrier();
  float bonus = lanes[li >> 2][li & 3] == x_data[li] * 2.0 ? 100.0 : 0.0;
  y_data[li] = lanes[li >> 2][li & 3] + float(one[li & 3]) + whole[1][li & 3] + bonus;
}
)";

TEST(GlslToOpenCl, LaneStoresIntoSharedVectorsAreScalarStores) {
  auto code = glsl_to_opencl(kLaneShader, {});
  ASSERT_TRUE(code.ok()) << code.status().to_string();
  const std::string& src = code->source;
  EXPECT_NE(src.find("((local float*)&lanes[li >> 2])[li & 3] = x_data[li]"), std::string::npos) << src;
  EXPECT_NE(src.find("((local int*)&one)[li] = li + 1"), std::string::npos) << src;
  EXPECT_NE(src.find("((local int*)&one)[li] += 10"), std::string::npos) << src;
  EXPECT_NE(src.find("whole[1] = "), std::string::npos) << src;  // a whole vector: as written
  EXPECT_NE(src.find("lanes[li >> 2][li & 3] == x_data"), std::string::npos) << src;  // a comparison reads
  EXPECT_NE(src.find("y_data[li] = lanes[li >> 2][li & 3] + "), std::string::npos) << src;

  auto device = ClDevice::shared();
  if (!device.ok()) {
    if (kiln::opencl::opencl_required())
      FAIL() << kiln::opencl::opencl_required_failure(device.status().to_string());
    GTEST_SKIP() << device.status().to_string();
  }
  auto kernel = (*device)->create_kernel(src, "lane-store shader");
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  std::vector<float> x(8), y;
  for (int i = 0; i < 8; ++i) x[i] = 1.0f + static_cast<float>(i);
  ASSERT_NO_FATAL_FAILURE(run_x_to_y(**device, *kernel, *code, x, 8, y));
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(y[i], x[i] * 2.0f + static_cast<float>((i & 3) + 11) + 0.5f + 100.0f) << i;
  clReleaseKernel(*kernel);
}

// A kernel wanting more local memory than the device has is refused when
// it is created, naming the bytes, not at its first launch with a bare
// CL_OUT_OF_RESOURCES.
TEST(GlslToOpenCl, AKernelBeyondTheDevicesLocalMemoryIsRefusedByName) {
  auto device = ClDevice::shared();
  if (!device.ok()) {
    if (kiln::opencl::opencl_required())
      FAIL() << kiln::opencl::opencl_required_failure(device.status().to_string());
    GTEST_SKIP() << device.status().to_string();
  }
  const uint64_t floats = (*device)->description().local_memory / 4 + 1024;
  const std::string glsl = "#version 450\nlayout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;\n"
                           "layout(std430, set = 0, binding = 0) restrict buffer KilnBuffer0 { float y_data[]; };\n"
                           "shared float big[" + std::to_string(floats) + "];\n"
                           "void main() {\n  uint i = gl_LocalInvocationIndex;\n  big[i * 997u] = float(i);\n"
                           "  barrier();\n  y_data[i] = big[(63u - i) * 997u];\n}\n";
  auto code = glsl_to_opencl(glsl, {});
  ASSERT_TRUE(code.ok()) << code.status().to_string();
  auto kernel = (*device)->create_kernel(code->source, "big-local shader");
  ASSERT_FALSE(kernel.ok());
  EXPECT_NE(kernel.status().message().find("big-local shader"), std::string::npos) << kernel.status().to_string();
  EXPECT_NE(kernel.status().message().find("bytes of local memory"), std::string::npos) << kernel.status().to_string();
}

// A binding read back after the dispatch's own stores (coherent: the split-K
// reduce fused with LayerNorm reads its stored rows through a second
// binding of the buffer) is never `const global`, which NVIDIA may read
// through its non-coherent read-only cache; a plain readonly one is.
TEST(GlslToOpenCl, CoherentReadOnlyBindingsAreNotConst) {
  auto code = glsl_to_opencl(
      "layout(local_size_x = 1, local_size_y = 1, local_size_z = 1) in;\n"
      "layout(std430, set = 0, binding = 0) readonly restrict buffer KilnBuffer0 { float a_data[]; };\n"
      "layout(std430, set = 0, binding = 1) coherent buffer KilnBuffer1 { float y_data[]; };\n"
      "layout(std430, set = 0, binding = 2) readonly coherent buffer KilnBuffer2 { float x_data[]; };\n"
      "void main() { y_data[0] = a_data[0]; barrier(); y_data[1] = x_data[0]; }\n",
      {});
  ASSERT_TRUE(code.ok()) << code.status().to_string();
  const std::string& src = code->source;
  EXPECT_NE(src.find("const global float* restrict a_data"), std::string::npos) << src;
  EXPECT_NE(src.find("global volatile float* y_data"), std::string::npos) << src;
  EXPECT_NE(src.find(", global volatile float* x_data"), std::string::npos) << src;
  EXPECT_EQ(src.find("const global volatile"), std::string::npos) << src;
}

// Program-scope variables are per invocation in GLSL. Declared together
// (`int oc0, oc1;`, as the attention kernel's batch coordinates are) each
// must still be the invocation's own: as one OpenCL C 2.0 program-scope
// global, every work-item shared them (vit_b_16 on NVIDIA gave different
// outputs run to run). Each invocation stores its id, passes a barrier and
// reads it back, so a shared variable shows the last writer everywhere.
TEST(GlslToOpenCl, ProgramScopeVariablesDeclaredTogetherArePerInvocation) {
  const char* shader = R"(#version 450
layout(local_size_x = 8, local_size_y = 1, local_size_z = 1) in;
layout(std430, set = 0, binding = 0) readonly restrict buffer KilnBuffer0 { float x_data[]; };
layout(std430, set = 0, binding = 1) restrict buffer KilnBuffer1 { float y_data[]; };
int oc0, oc1;  // the workgroup's batch coordinates
void main() {
  int li = int(gl_LocalInvocationIndex);
  oc0 = li;
  oc1 = 100 * li;
  barrier();
  y_data[li] = x_data[li] + float(oc0 + oc1);
}
)";
  auto code = glsl_to_opencl(shader, {});
  ASSERT_TRUE(code.ok()) << code.status().to_string();
  EXPECT_NE(code->source.find("int oc0_kiln_private[1]"), std::string::npos) << code->source;
  EXPECT_NE(code->source.find("int oc1_kiln_private[1]"), std::string::npos) << code->source;

  auto device = ClDevice::shared();
  if (!device.ok()) {
    if (kiln::opencl::opencl_required())
      FAIL() << kiln::opencl::opencl_required_failure(device.status().to_string());
    GTEST_SKIP() << device.status().to_string();
  }
  auto kernel = (*device)->create_kernel(code->source, "per-invocation globals");
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  std::vector<float> x(8, 0.5f), y;
  ASSERT_NO_FATAL_FAILURE(run_x_to_y(**device, *kernel, *code, x, 8, y));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(y[i], 0.5f + static_cast<float>(101 * i)) << i;
}

TEST(GlslToOpenCl, RefusesFp16ImagesNamingTheDeclaration) {
  auto code = glsl_to_opencl(
      "layout(local_size_x = 1, local_size_y = 1, local_size_z = 1) in;\n"
      "layout(set = 0, binding = 0, rgba16f) uniform writeonly image2D y_img;\nvoid main() {}\n",
      {});
  ASSERT_FALSE(code.ok());
  EXPECT_EQ(code.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(code.status().message().find("image2D y_img"), std::string::npos) << code.status().message();
}

TEST(GlslToOpenCl, RefusesUnknownDeclarationsNamingThem) {
  auto code = glsl_to_opencl(
      "layout(local_size_x = 1, local_size_y = 1, local_size_z = 1) in;\n"
      "layout(set = 0, binding = 0, r32ui) uniform uimage2D z_img;\nvoid main() {}\n",
      {});
  ASSERT_FALSE(code.ok());
  EXPECT_EQ(code.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(code.status().message().find("uimage2D z_img"), std::string::npos) << code.status().message();
}

}  // namespace
}  // namespace kiln::opencl

// The GLSL -> OpenCL C translation on a shader that uses what the planner's
// kernels use (buffers and a vector view of one, specialization constants,
// constant lists, a shared array and barrier after the group guard, a
// per-invocation global, out/inout parameters, an array constructor,
// boolean vectors), built and run on the machine's OpenCL device (skipped
// without one).
#include <gtest/gtest.h>

#include "plugins/opencl/cl_device.h"
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
  for (int i = 0; i < 4; ++i) sum += part[i];
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

TEST(GlslToOpenCl, TranslatesAndRunsWhatThePlannersKernelsUse) {
  auto code = glsl_to_opencl(kShader, {1, 3});
  ASSERT_TRUE(code.ok()) << code.status().to_string();
  EXPECT_EQ(code->bindings, 2u);
  EXPECT_FALSE(code->has_push);
  EXPECT_EQ(code->local_size[0], 4u);
  EXPECT_TRUE(code->requires_exact_grid);  // the guard before the barrier went
  EXPECT_NE(code->source.find("float *hi"), std::string::npos) << code->source;

  auto device = ClDevice::shared();
  if (!device.ok()) {
    if (kiln::opencl::opencl_required())
      FAIL() << kiln::opencl::opencl_required_failure(device.status().to_string());
    GTEST_SKIP() << device.status().to_string();
  }
  auto kernel = (*device)->create_kernel(code->source, "test shader");
  ASSERT_TRUE(kernel.ok()) << kernel.status().to_string();
  const float x[4] = {1.5f, 2.5f, 3.5f, 4.5f};
  float y[8] = {};
  cl_int rc = CL_SUCCESS;
  cl_mem bx = clCreateBuffer((*device)->context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof x,
                             const_cast<float*>(x), &rc);
  ASSERT_EQ(rc, CL_SUCCESS);
  cl_mem by = clCreateBuffer((*device)->context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof y, y, &rc);
  ASSERT_EQ(rc, CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(*kernel, 0, sizeof bx, &bx), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(*kernel, 1, sizeof by, &by), CL_SUCCESS);
  const size_t global = 4, local = 4;
  ASSERT_EQ(clEnqueueNDRangeKernel((*device)->queue(), *kernel, 1, nullptr, &global, &local, 0, nullptr, nullptr),
            CL_SUCCESS);
  ASSERT_EQ(clEnqueueReadBuffer((*device)->queue(), by, CL_TRUE, 0, sizeof y, y, 0, nullptr, nullptr), CL_SUCCESS);
  // Each: the workgroup's floor(x) + 1 summed (1+2+3+4 + 4) plus TWICE (6).
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y[i], 20.0f) << i;
  // equal() gives GLSL's 1 / 0 lanes, which vec4() converts to 1.0 / 0.0.
  EXPECT_EQ(y[4], 1.0f);
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_EQ(y[6], 1.0f);
  EXPECT_EQ(y[7], 0.0f);
  clReleaseMemObject(bx);
  clReleaseMemObject(by);
  clReleaseKernel(*kernel);
}

TEST(GlslToOpenCl, RefusesImagesNamingTheDeclaration) {
  auto code = glsl_to_opencl(
      "layout(local_size_x = 1, local_size_y = 1, local_size_z = 1) in;\n"
      "layout(set = 0, binding = 0, rgba32f) uniform readonly image2D x_img;\nvoid main() {}\n",
      {});
  ASSERT_FALSE(code.ok());
  EXPECT_EQ(code.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(code.status().message().find("image2D x_img"), std::string::npos) << code.status().message();
}

}  // namespace
}  // namespace kiln::opencl

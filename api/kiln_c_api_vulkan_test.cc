// The C API on Vulkan: sessions on a Kiln-created device match the
// reference executor; a session on a wrapped host device leaves the host's
// device alive; inputs and outputs bound to host VkBuffers are read and
// written in place; binding mistakes are clear statuses.
//
// The "host" is the validated test instance and device of vk_test_env.h:
// their raw handles go through kiln_vulkan_device_wrap exactly as a game's
// would, so every Vulkan call libkiln makes on them is validated (the
// VulkanTest fixture fails on any validation error).
#include "platform/vulkan/vk_test_env.h"  // before kiln_vulkan.h: volk includes vulkan.h itself

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "kiln/kiln_vulkan.h"
#include "kiln/kiln.hpp"
#include "platform/vulkan/memory_arena.h"
#include "platform/vulkan/transfer.h"
#include "api/testing/host_buffer.h"
#include "api/testing/host_device.h"

// From kiln_c_api_c_check.c, compiled as C99.
extern "C" size_t capi_c_check_session_options_size(void);
extern "C" size_t capi_c_check_binding_size(void);
extern "C" size_t capi_c_check_host_device_size(void);
extern "C" size_t capi_c_check_value_info_size(void);
extern "C" size_t capi_c_check_submit_sync_size(void);
extern "C" size_t capi_c_check_memory_size(void);

namespace {

using kiln::capi::testing::HostBuffer;
using kiln::api::Error;
using kiln::api::Model;
using kiln::api::Session;
using kiln::api::Tensor;
using kiln::api::VulkanDevice;

const std::string kModel = std::string(KILN_TEST_DATA_DIR) + "/add_relu.onnx";

// x[2,3] -> t = x + c -> y = Reshape(t, [6]); z = Identity(x). Outputs that
// may share memory with other tensors in the plan (the Reshape's input, the
// graph input).
std::string aliasing_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("aliasing");
  auto value = [](onnx::ValueInfoProto* v, const std::string& name, std::vector<int64_t> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  value(g->add_input(), "x", {2, 3});
  value(g->add_output(), "y", {6});
  value(g->add_output(), "z", {2, 3});
  auto* c = g->add_initializer();
  c->set_name("c");
  c->set_data_type(onnx::TensorProto::FLOAT);
  c->add_dims(3);
  for (float v : {1.0f, -2.0f, 0.5f}) c->add_float_data(v);
  auto* shape = g->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(1);
  shape->add_int64_data(6);
  auto node = [&](const std::string& op, std::vector<std::string> in, const std::string& out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    for (const auto& i : in) n->add_input(i);
    n->add_output(out);
  };
  node("Add", {"x", "c"}, "t");
  node("Reshape", {"t", "shape"}, "y");
  node("Identity", {"x"}, "z");
  return m.SerializeAsString();
}

std::vector<float> inputs_for(int64_t n, float shift) {
  std::vector<float> v(static_cast<size_t>(n * 3));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.75f - 2.0f + shift;
  return v;
}

// y = relu(x + [1, -2, 0.5]) on the reference executor.
std::vector<float> reference(const Model& model, int64_t n, const std::vector<float>& x) {
  Session session;
  EXPECT_FALSE(Session::create(model, KILN_BACKEND_REFERENCE, session));
  Tensor t;
  EXPECT_FALSE(Tensor::create(KILN_DTYPE_FLOAT32, {n, 3}, t));
  std::memcpy(t.data<float>(), x.data(), x.size() * sizeof(float));
  std::vector<Tensor> out;
  Error e = session.run({&t}, 1, out);
  EXPECT_FALSE(e) << e.message();
  if (e) return {};
  return std::vector<float>(out[0].data<float>(), out[0].data<float>() + x.size());
}

std::vector<float> run_host(Session& session, int64_t n, const std::vector<float>& x) {
  Tensor t;
  EXPECT_FALSE(Tensor::create(KILN_DTYPE_FLOAT32, {n, 3}, t));
  std::memcpy(t.data<float>(), x.data(), x.size() * sizeof(float));
  std::vector<Tensor> out;
  Error e = session.run({&t}, 1, out);
  EXPECT_FALSE(e) << e.message();
  if (e) return {};
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{n, 3}));
  return std::vector<float>(out[0].data<float>(), out[0].data<float>() + x.size());
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

class CApiVulkanTest : public kiln::vk::testing::VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    Error e = Model::load(kModel, model_);
    ASSERT_FALSE(e) << e.message();
  }

  // The test's validated device, as a game would describe its own.
  kiln_vulkan_host_device_t host_handles() {
    return kiln::capi::testing::host_device(instance(), device());
  }

  // A buffer-storage fp32 session on the wrapped test device.
  void wrapped_session(Session& session, kiln_storage_t storage = KILN_STORAGE_BUFFER) {
    VulkanDevice host;
    Error e = VulkanDevice::wrap(host_handles(), host);
    ASSERT_FALSE(e) << e.message();
    kiln_session_options_t o{};
    o.backend = KILN_BACKEND_VULKAN;
    o.vulkan_device = host.get();  // the session keeps its own reference
    o.storage = storage;
    e = Session::create(model_, o, session);
    ASSERT_FALSE(e) << e.message();
    ASSERT_EQ(session.backend(), KILN_BACKEND_VULKAN);
  }

  static kiln_vulkan_buffer_binding_t binding(const HostBuffer& b, VkDeviceSize offset, VkDeviceSize size,
                                              const std::vector<int64_t>* shape) {
    kiln_vulkan_buffer_binding_t r{};
    r.struct_size = sizeof(r);
    r.buffer = b.handle();
    r.offset = offset;
    r.size = size;
    r.shape = shape ? shape->data() : nullptr;
    r.rank = shape ? shape->size() : 0;
    return r;
  }

  Model model_;
};

// (a) Vulkan sessions on a Kiln-created device, in every storage/precision,
// give the reference executor's outputs, for two batch sizes.
TEST_F(CApiVulkanTest, KilnDeviceSessionsMatchReference) {
  VulkanDevice vk;
  Error e = VulkanDevice::create("", "", vk);
  ASSERT_FALSE(e) << e.message();
  EXPECT_FALSE(vk.name().empty());
  struct Config {
    kiln_storage_t storage;
    kiln_precision_t precision;
    float tol;
  };
  for (const Config& c : {Config{KILN_STORAGE_BUFFER, KILN_PRECISION_FP32, 1e-6f},
                          Config{KILN_STORAGE_IMAGE, KILN_PRECISION_FP32, 1e-6f},
                          Config{KILN_STORAGE_BUFFER, KILN_PRECISION_FP16, 2e-2f}}) {
    SCOPED_TRACE("storage " + std::to_string(c.storage) + " precision " + std::to_string(c.precision));
    kiln_session_options_t o{};
    o.backend = KILN_BACKEND_VULKAN;
    o.vulkan_device = vk.get();
    o.storage = c.storage;
    o.precision = c.precision;
    Session session;
    e = Session::create(model_, o, session);
    ASSERT_FALSE(e) << e.message();
    EXPECT_EQ(session.backend(), KILN_BACKEND_VULKAN);
    kiln_dtype_t dtype = KILN_DTYPE_UNDEFINED;
    ASSERT_FALSE(session.device_dtype("x", dtype));
    EXPECT_EQ(dtype, c.precision == KILN_PRECISION_FP16 ? KILN_DTYPE_FLOAT16 : KILN_DTYPE_FLOAT32);
    for (int64_t n : {2, 5}) {
      const std::vector<float> x = inputs_for(n, 0.25f);
      expect_near(run_host(session, n, x), reference(model_, n, x), c.tol);
    }
  }
  // Profiling: per-kernel GPU times of the last run; a repeated shape
  // re-uses the recorded commands.
  kiln_session_options_t o{};
  o.backend = KILN_BACKEND_VULKAN;
  o.vulkan_device = vk.get();
  o.profile = 1;
  Session profiled;
  ASSERT_FALSE(Session::create(model_, o, profiled));
  kiln_run_stats_t stats;
  EXPECT_EQ(profiled.last_run_stats(stats).code(), KILN_FAILED_PRECONDITION);
  for (int round = 0; round < 2; ++round) {
    const std::vector<float> x = inputs_for(2, 0.0f);
    expect_near(run_host(profiled, 2, x), reference(model_, 2, x), 1e-6f);
    ASSERT_FALSE(profiled.last_run_stats(stats));
    EXPECT_EQ(stats.recorded, round == 0 ? 1u : 0u);
    EXPECT_GE(stats.dispatches, 1u);
    EXPECT_EQ(stats.fallbacks, 0u);
    EXPECT_GT(stats.activation_bytes, 0u);
    EXPECT_GT(stats.device_bytes, stats.activation_bytes);  // the weights too
    EXPECT_GT(stats.bytes_read, 0u);
    EXPECT_GT(stats.bytes_written, 0u);
    EXPECT_LE(stats.fused_dispatches, stats.dispatches);
    if (stats.gpu_ms < 0) continue;  // no timestamps on this queue
    ASSERT_EQ(stats.kernel_timings, stats.dispatches);
    uint64_t read = 0, written = 0;
    for (uint32_t k = 0; k < stats.kernel_timings; ++k) {
      kiln_kernel_timing_t t;
      ASSERT_FALSE(profiled.kernel_timing(k, t));
      EXPECT_GT(std::strlen(t.kernel), 0u);
      EXPECT_GE(t.gpu_ms, 0.0);
      read += t.bytes_read;
      written += t.bytes_written;
    }
    // The run's totals are its kernels' sums.
    EXPECT_EQ(read, stats.bytes_read);
    EXPECT_EQ(written, stats.bytes_written);
    kiln_kernel_timing_t past;
    EXPECT_EQ(profiled.kernel_timing(stats.kernel_timings, past).code(), KILN_OUT_OF_RANGE);
  }

  // One recorded signature at most: a shape that comes back after another
  // records again (compiling nothing).
  o.profile = 0;
  o.max_signatures = 1;
  Session one;
  ASSERT_FALSE(Session::create(model_, o, one));
  const int64_t rows[] = {2, 3, 2, 2};
  const uint32_t records[] = {1, 1, 1, 0};
  for (size_t r = 0; r < 4; ++r) {
    const std::vector<float> x = inputs_for(rows[r], 0.5f);
    expect_near(run_host(one, rows[r], x), reference(model_, rows[r], x), 1e-6f);
    ASSERT_FALSE(one.last_run_stats(stats));
    EXPECT_EQ(stats.recorded, records[r]) << "run " << r;
  }

  // The device outlives `vk`'s reference while a session holds it.
  Session held;
  {
    VulkanDevice temporary;
    ASSERT_FALSE(VulkanDevice::create("", "", temporary));
    ASSERT_FALSE(Session::create(model_, temporary, KILN_PRECISION_FP32, held));
  }
  const std::vector<float> x = inputs_for(3, -1.0f);
  expect_near(run_host(held, 3, x), reference(model_, 3, x), 1e-6f);
}

// (a) Without a device, a Vulkan session creates its own; the selector
// reaches Device::create.
TEST_F(CApiVulkanTest, SessionCreatesItsOwnDevice) {
  kiln_session_options_t o{};
  o.backend = KILN_BACKEND_VULKAN;
  Session session;
  Error e = Session::create(model_, o, session);
  ASSERT_FALSE(e) << e.message();
  const std::vector<float> x = inputs_for(4, 0.5f);
  expect_near(run_host(session, 4, x), reference(model_, 4, x), 1e-6f);

  // \since 0.2: the device the session creates can run under validation.
  o.validation = 1;
  Session validated;
  e = Session::create(model_, o, validated);
  ASSERT_FALSE(e) << e.message();
  expect_near(run_host(validated, 4, x), reference(model_, 4, x), 1e-6f);
  o.validation = 0;

  o.device_selector = "no-such-gpu-anywhere";
  Session missing;
  e = Session::create(model_, o, missing);
  ASSERT_TRUE(e);
  EXPECT_EQ(e.code(), KILN_NOT_FOUND);
  EXPECT_NE(e.message().find("no-such-gpu-anywhere"), std::string::npos) << e.message();
}

// (b) A session on the host's device; after it and the wrapper are gone the
// host's device, queue and memory still work.
TEST_F(CApiVulkanTest, WrappedHostDeviceSurvivesKiln) {
  {
    Session session;
    wrapped_session(session);
    const std::vector<float> x = inputs_for(2, 0.0f);
    expect_near(run_host(session, 2, x), reference(model_, 2, x), 1e-6f);
  }
  // The host's device is untouched: allocate, copy through its queue, wait.
  auto arena = kiln::vk::MemoryArena::create(device(), 1 << 16);
  ASSERT_TRUE(arena.ok()) << arena.status().message();
  auto transfer = kiln::vk::Transfer::create(device());
  ASSERT_TRUE(transfer.ok()) << transfer.status().message();
  auto buffer = (*arena)->create_buffer(256);
  ASSERT_TRUE(buffer.ok());
  std::vector<uint32_t> in(64), out(64, 0);
  for (uint32_t i = 0; i < 64; ++i) in[i] = i * 2654435761u;
  ASSERT_TRUE((*transfer)->upload(*buffer, in.data(), 256).ok());
  ASSERT_TRUE((*transfer)->download(*buffer, out.data(), 256).ok());
  EXPECT_EQ(in, out);
  EXPECT_EQ(device().fn().vkDeviceWaitIdle(device().handle()), VK_SUCCESS);
  buffer->reset();
  // And it can be wrapped again.
  Session again;
  wrapped_session(again);
  const std::vector<float> x = inputs_for(1, 2.0f);
  expect_near(run_host(again, 1, x), reference(model_, 1, x), 1e-6f);
}

// (c) Input and output in the host's buffers: the run reads x from the
// host's buffer and writes y into the other; nothing is returned for y.
TEST_F(CApiVulkanTest, ZeroCopyBuffers) {
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(session));
  kiln_dtype_t dtype = KILN_DTYPE_UNDEFINED;
  ASSERT_FALSE(session.device_dtype("y", dtype));
  ASSERT_EQ(dtype, KILN_DTYPE_FLOAT32);
  const int64_t n = 4;
  const std::vector<int64_t> shape{n, 3};
  const VkDeviceSize bytes = n * 3 * sizeof(float);
  HostBuffer bx(device(), bytes), by(device(), bytes);
  ASSERT_TRUE(bx.ok() && by.ok());

  std::vector<float> x = inputs_for(n, 0.1f);
  bx.write(0, x);
  by.write(0, std::vector<float>(n * 3, -99.0f));
  auto bind_x = binding(bx, 0, bytes, &shape);
  auto bind_y = binding(by, 0, bytes, nullptr);
  Error e(kiln_session_bind_vulkan_buffer(session.get(), "x", &bind_x));
  ASSERT_FALSE(e) << e.message();
  e = Error(kiln_session_bind_vulkan_buffer(session.get(), "y", &bind_y));
  ASSERT_FALSE(e) << e.message();

  const kiln_tensor_t* none[] = {nullptr};
  static char sentinel;
  kiln_tensor_t* y = reinterpret_cast<kiln_tensor_t*>(&sentinel);  // the run must set it to NULL
  e = Error(kiln_session_run(session.get(), none, 1, &y, 1));
  ASSERT_FALSE(e) << e.message();
  EXPECT_EQ(y, nullptr);
  expect_near(by.read(0, x.size()), reference(model_, n, x), 1e-6f);
  EXPECT_EQ(bx.read(0, x.size()), x);  // the input is left as it was

  // New contents of the same buffers: the next run sees them.
  x = inputs_for(n, -3.0f);
  bx.write(0, x);
  e = Error(kiln_session_run(session.get(), none, 1, &y, 1));
  ASSERT_FALSE(e) << e.message();
  expect_near(by.read(0, x.size()), reference(model_, n, x), 1e-6f);
  kiln_run_stats_t stats;
  ASSERT_FALSE(session.last_run_stats(stats));
  EXPECT_EQ(stats.recorded, 0u);  // same shapes and bindings: recorded commands re-used

  // Unbinding y: it comes back as a tensor and the buffer is left alone.
  ASSERT_FALSE(session.unbind("y"));
  by.write(0, std::vector<float>(n * 3, -99.0f));
  e = Error(kiln_session_run(session.get(), none, 1, &y, 1));
  ASSERT_FALSE(e) << e.message();
  ASSERT_NE(y, nullptr);
  expect_near(std::vector<float>(static_cast<float*>(kiln_tensor_data(y)),
                                 static_cast<float*>(kiln_tensor_data(y)) + x.size()),
              reference(model_, n, x), 1e-6f);
  kiln_tensor_destroy(y);
  EXPECT_EQ(by.read(0, 1)[0], -99.0f);

  // Before the host destroys a buffer it was bound: forgetting bx unbinds x
  // (so the run wants a tensor again) and drops what was recorded with it.
  ASSERT_FALSE(session.bind_vulkan_buffer("y", by.handle(), 0, bytes));
  session.forget_vulkan_buffer(bx.handle());
  e = Error(kiln_session_run(session.get(), none, 1, &y, 1));
  ASSERT_TRUE(e);
  EXPECT_NE(e.message().find("'x' is missing"), std::string::npos) << e.message();
  session.forget_vulkan_buffer(by.handle());
  EXPECT_TRUE(session.unbind("y"));  // forgotten: no longer bound
}

// (c) Both tensors in one buffer, the output at an aligned offset, through
// the C++ wrapper; the batch size comes from the binding.
TEST_F(CApiVulkanTest, ZeroCopyOneBufferTwoRanges) {
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(session));
  const int64_t n = 3;
  const VkDeviceSize bytes = n * 3 * sizeof(float);
  const VkDeviceSize align = std::max<VkDeviceSize>(device().capabilities().min_storage_buffer_offset_alignment, 4);
  const VkDeviceSize y_offset = (bytes + align - 1) / align * align;
  HostBuffer b(device(), y_offset + bytes);
  ASSERT_TRUE(b.ok());
  const std::vector<float> x = inputs_for(n, 0.6f);
  b.write(0, x);
  ASSERT_FALSE(session.bind_vulkan_buffer("x", b.handle(), 0, bytes, {n, 3}));
  ASSERT_FALSE(session.bind_vulkan_buffer("y", b.handle(), y_offset, bytes));
  std::vector<Tensor> out;
  Error e = session.run({nullptr}, 1, out);
  ASSERT_FALSE(e) << e.message();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0]);
  expect_near(b.read(y_offset, x.size()), reference(model_, n, x), 1e-6f);
  // Every input bound: the input array may be NULL.
  kiln_tensor_t* y = nullptr;
  e = Error(kiln_session_run(session.get(), nullptr, 1, &y, 1));
  ASSERT_FALSE(e) << e.message();
  EXPECT_EQ(y, nullptr);
  session.forget_vulkan_buffer(b.handle());
}

// (c) Outputs the plan may alias to other tensors still land in the host's
// buffers, or are refused with a clear status when they cannot.
TEST_F(CApiVulkanTest, ZeroCopyAliasedOutputs) {
  const std::string bytes = aliasing_model();
  kiln_model_t* model = nullptr;
  Error e(kiln_model_load_from_memory(bytes.data(), bytes.size(), &model));
  ASSERT_FALSE(e) << e.message();
  kiln_vulkan_device_t* host = nullptr;
  kiln_vulkan_host_device_t handles = host_handles();
  e = Error(kiln_vulkan_device_wrap(&handles, &host));
  ASSERT_FALSE(e) << e.message();
  kiln_session_options_t o{};
  o.struct_size = sizeof(o);
  o.backend = KILN_BACKEND_VULKAN;
  o.vulkan_device = host;
  kiln_session_t* s = nullptr;
  e = Error(kiln_session_create(model, &o, &s));
  kiln_model_release(model);  // the session holds both
  kiln_vulkan_device_release(host);
  ASSERT_FALSE(e) << e.message();
  std::unique_ptr<kiln_session_t, void (*)(kiln_session_t*)> owned(s, kiln_session_destroy);
  {
    const std::vector<float> x = {-2.0f, -1.0f, 0.0f, 1.0f, 2.0f, 3.0f};
    const std::vector<float> want_y = {-1.0f, -3.0f, 0.5f, 2.0f, 0.0f, 3.5f};  // x + [1,-2,0.5], flattened
    HostBuffer bx(device(), 24), by(device(), 24), bz(device(), 24);
    ASSERT_TRUE(bx.ok() && by.ok() && bz.ok());
    bx.write(0, x);
    auto bind = [&](const char* name, const HostBuffer& b) {
      kiln_vulkan_buffer_binding_t r{};
      r.struct_size = sizeof(r);
      r.buffer = b.handle();
      r.size = 24;
      return Error(kiln_session_bind_vulkan_buffer(s, name, &r));
    };
    ASSERT_FALSE(bind("x", bx));
    ASSERT_FALSE(bind("y", by));
    const kiln_tensor_t* none[] = {nullptr};
    kiln_tensor_t* out[2] = {nullptr, nullptr};
    e = Error(kiln_session_run(s, none, 1, out, 2));
    ASSERT_FALSE(e) << e.message();
    EXPECT_EQ(out[0], nullptr);
    ASSERT_NE(out[1], nullptr);  // z is not bound: downloaded
    const float* z = static_cast<const float*>(kiln_tensor_data(out[1]));
    EXPECT_EQ(std::vector<float>(z, z + 6), x);
    kiln_tensor_destroy(out[1]);
    EXPECT_EQ(by.read(0, 6), want_y);
    // z = Identity(x) bound to a third buffer: either it gets x's values or
    // the run says the two share memory.
    ASSERT_FALSE(bind("z", bz));
    e = Error(kiln_session_run(s, none, 1, out, 2));
    if (e) {
      EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.message();
      EXPECT_NE(e.message().find("shares device memory"), std::string::npos) << e.message();
      // Bound to x's own range it is fine: z is x.
      ASSERT_FALSE(bind("z", bx));
      e = Error(kiln_session_run(s, none, 1, out, 2));
      ASSERT_FALSE(e) << e.message();
      EXPECT_EQ(out[1], nullptr);
      EXPECT_EQ(bx.read(0, 6), x);
    } else {
      EXPECT_EQ(bz.read(0, 6), x);
    }
    EXPECT_EQ(by.read(0, 6), want_y);
    for (const HostBuffer* b : {&bx, &by, &bz}) kiln_session_forget_vulkan_buffer(s, b->handle());
  }
}

// (d) Binding mistakes are statuses that name the problem.
TEST_F(CApiVulkanTest, BindingErrors) {
  Session session;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(session));
  const std::vector<int64_t> shape{2, 3};
  HostBuffer small(device(), 16), big(device(), 256);
  ASSERT_TRUE(small.ok() && big.ok());
  auto expect_error = [](kiln_status_t* s, kiln_status_code_t code, const std::string& text) {
    Error e(s);
    ASSERT_TRUE(e) << "expected an error containing '" << text << "'";
    EXPECT_EQ(e.code(), code) << e.message();
    EXPECT_NE(e.message().find(text), std::string::npos) << e.message();
  };
  auto ok = binding(big, 0, 256, &shape);
  expect_error(kiln_session_bind_vulkan_buffer(session.get(), "nope", &ok), KILN_NOT_FOUND,
               "no input or output named 'nope'");
  auto tiny = binding(small, 0, 16, &shape);
  expect_error(kiln_session_bind_vulkan_buffer(session.get(), "x", &tiny), KILN_INVALID_ARGUMENT,
               "'x' needs 24 bytes");
  auto null_buffer = ok;
  null_buffer.buffer = VK_NULL_HANDLE;
  expect_error(kiln_session_bind_vulkan_buffer(session.get(), "x", &null_buffer), KILN_INVALID_ARGUMENT,
               "VK_NULL_HANDLE");
  expect_error(kiln_session_bind_vulkan_buffer(nullptr, "x", &ok), KILN_INVALID_ARGUMENT, "session");
  expect_error(kiln_session_bind_vulkan_buffer(session.get(), nullptr, &ok), KILN_INVALID_ARGUMENT, "name");
  expect_error(kiln_session_bind_vulkan_buffer(session.get(), "x", nullptr), KILN_INVALID_ARGUMENT, "binding");
  auto old_struct = ok;
  old_struct.struct_size = 4;
  expect_error(kiln_session_bind_vulkan_buffer(session.get(), "x", &old_struct), KILN_INVALID_ARGUMENT,
               "struct_size");
  auto no_shape = binding(big, 0, 256, nullptr);
  expect_error(kiln_session_bind_vulkan_buffer(session.get(), "x", &no_shape), KILN_INVALID_ARGUMENT,
               "symbolic dims");
  const std::vector<int64_t> wrong{2, 4};
  auto wrong_shape = binding(big, 0, 256, &wrong);
  expect_error(kiln_session_bind_vulkan_buffer(session.get(), "x", &wrong_shape), KILN_INVALID_ARGUMENT,
               "[2,4]");
  const VkDeviceSize align = device().capabilities().min_storage_buffer_offset_alignment;
  if (align > 1) {
    auto misaligned = binding(big, align / 2, 128, &shape);
    expect_error(kiln_session_bind_vulkan_buffer(session.get(), "x", &misaligned), KILN_INVALID_ARGUMENT,
                 "minStorageBufferOffsetAlignment");
  }
  expect_error(kiln_session_unbind(session.get(), "x"), KILN_NOT_FOUND, "not bound");

  // The output's size is known once the run has the input's shape.
  ASSERT_FALSE(session.bind_vulkan_buffer("x", big.handle(), 0, 24, shape));
  ASSERT_FALSE(session.bind_vulkan_buffer("y", small.handle(), 0, 16));
  const kiln_tensor_t* none[] = {nullptr};
  kiln_tensor_t* y = nullptr;
  expect_error(kiln_session_run(session.get(), none, 1, &y, 1), KILN_INVALID_ARGUMENT, "'y' needs 24 bytes");
  // Overlapping ranges of one buffer.
  ASSERT_FALSE(session.bind_vulkan_buffer("y", big.handle(), 0, 24));
  expect_error(kiln_session_run(session.get(), none, 1, &y, 1), KILN_INVALID_ARGUMENT, "overlap");
  // A tensor given for a bound input.
  session.unbind_all();
  ASSERT_FALSE(session.bind_vulkan_buffer("x", big.handle(), 0, 24, shape));
  Tensor x;
  ASSERT_FALSE(Tensor::create(KILN_DTYPE_FLOAT32, shape, x));
  const kiln_tensor_t* given[] = {x.get()};
  expect_error(kiln_session_run(session.get(), given, 1, &y, 1), KILN_INVALID_ARGUMENT,
               "'x' is bound to a device buffer");
  // An unbound input left NULL.
  session.unbind_all();
  expect_error(kiln_session_run(session.get(), none, 1, &y, 1), KILN_INVALID_ARGUMENT, "'x' is missing");

  // Image storage cannot be bound; the reference backend has no device.
  Session images;
  ASSERT_NO_FATAL_FAILURE(wrapped_session(images, KILN_STORAGE_IMAGE));
  expect_error(kiln_session_bind_vulkan_buffer(images.get(), "x", &ok), KILN_FAILED_PRECONDITION, "image");
  Session cpu;
  ASSERT_FALSE(Session::create(model_, KILN_BACKEND_REFERENCE, cpu));
  expect_error(kiln_session_bind_vulkan_buffer(cpu.get(), "x", &ok), KILN_FAILED_PRECONDITION, "reference");
  kiln_dtype_t dtype;
  expect_error(kiln_session_device_dtype(cpu.get(), "x", &dtype), KILN_FAILED_PRECONDITION, "reference");
  expect_error(kiln_session_device_dtype(session.get(), "z", &dtype), KILN_NOT_FOUND, "'z'");
}

// The public headers compile as C99 with the same layouts.
TEST(CApiHeadersTest, SameLayoutsFromC) {
  EXPECT_EQ(capi_c_check_session_options_size(), sizeof(kiln_session_options_t));
  EXPECT_EQ(capi_c_check_binding_size(), sizeof(kiln_vulkan_buffer_binding_t));
  EXPECT_EQ(capi_c_check_host_device_size(), sizeof(kiln_vulkan_host_device_t));
  EXPECT_EQ(capi_c_check_value_info_size(), sizeof(kiln_input_info_t) + sizeof(kiln_input_dim_t));
  EXPECT_EQ(capi_c_check_submit_sync_size(), sizeof(kiln_vulkan_submit_sync_t) + sizeof(kiln_vulkan_semaphore_value_t));
  EXPECT_EQ(capi_c_check_memory_size(), sizeof(kiln_device_memory_t));
}

// \since 0.2: a validated Kiln-created device, a profiled session on it, and
// the descriptions `kiln run --stats` writes (compile stats, per-run memory
// and kernels).
TEST_F(CApiVulkanTest, ValidatedDeviceAndDescriptions) {
  kiln_vulkan_device_options_t d{};
  d.kernel_cache_dir = "";
  d.validation = 1;
  VulkanDevice device;
  Error e = VulkanDevice::create(d, device);
  ASSERT_FALSE(e) << e.message();
  kiln_session_options_t o{};
  o.backend = KILN_BACKEND_VULKAN;
  o.vulkan_device = device.get();
  o.profile = 1;
  o.disable_inplace = 1;
  o.disable_cooperative_matrix = 1;
  Session session;
  e = Session::create(model_, o, session);
  ASSERT_FALSE(e) << e.message();
  std::string json;
  ASSERT_FALSE(session.describe_json(json));
  for (const char* field : {"\"backend\": \"vulkan\"", "\"device\": ", "\"storage\": \"auto\"",
                            "\"precision\": \"fp32\"", "\"compile\": {\"plan_ms\": ", "\"fallback_reasons\": [",
                            "\"fusion_notes\": [", "\"kernel_cache\": {\"compiles\": "})
    EXPECT_NE(json.find(field), std::string::npos) << field << " in " << json;
  const std::vector<float> x = inputs_for(4, 0.5f);
  expect_near(run_host(session, 4, x), reference(model_, 4, x), 1e-6f);
  ASSERT_FALSE(session.last_run_json(json));
  for (const char* field : {"\"gpu_ms\": ", "\"memory\": {\"arena_bytes\": ", "\"kernels\": [{\"kernel\": "})
    EXPECT_NE(json.find(field), std::string::npos) << field << " in " << json;
  session = Session();
  EXPECT_EQ(device.validation_errors(), 0u);
  ASSERT_FALSE(device.describe_json(json));
  EXPECT_NE(json.find("\"device_name\":\"" + device.name() + "\""), std::string::npos) << json;
  Error null_dev(kiln_vulkan_device_describe_json(nullptr, nullptr));
  EXPECT_EQ(null_dev.code(), KILN_INVALID_ARGUMENT);

  kiln_vulkan_device_options_t small{};
  small.struct_size = 2;
  kiln_vulkan_device_t* none = nullptr;
  Error size_err(kiln_vulkan_device_create(&small, &none));
  EXPECT_EQ(size_err.code(), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(none, nullptr);
}

// (d) Wrapping with missing handles.
TEST_F(CApiVulkanTest, WrapErrors) {
  kiln_vulkan_device_t* d = nullptr;
  kiln_vulkan_host_device_t h = host_handles();
  h.device = VK_NULL_HANDLE;
  Error e(kiln_vulkan_device_wrap(&h, &d));
  ASSERT_TRUE(e);
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT);
  EXPECT_NE(e.message().find("device"), std::string::npos) << e.message();
  h = host_handles();
  h.get_instance_proc_addr = nullptr;
  e = Error(kiln_vulkan_device_wrap(&h, &d));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT);
  EXPECT_NE(e.message().find("get_instance_proc_addr"), std::string::npos) << e.message();
  h = host_handles();
  h.queue_family_index = 1000;
  e = Error(kiln_vulkan_device_wrap(&h, &d));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.message();
  e = Error(kiln_vulkan_device_wrap(nullptr, &d));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(d, nullptr);
  kiln_vulkan_device_release(nullptr);
  EXPECT_STREQ(kiln_vulkan_device_name(nullptr), "");
}

}  // namespace

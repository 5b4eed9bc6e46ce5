// Concurrency through the C API: threads x input shapes x sessions, on the
// Vulkan backend (the validated test device, wrapped as a game would) and on
// the reference executor. Every output is compared with the reference
// executor's, computed once, serially, before any thread starts; each thread
// feeds inputs that differ from the other threads', so a run that returned
// another run's outputs (or a mix) fails as surely as a wrong kernel.
//
// What runs at once:
//   * one session, kiln_session_run from several threads, cycling through
//     the shapes (runs of one session must serialize correctly), while
//     another thread reads its statistics, description and memory;
//   * one session per thread, all created at the same moment (concurrent
//     compiles of one model through one kernel cache), then run;
//   * sessions created, run and destroyed while other sessions run;
//   * Vulkan devices of Kiln's own created at once, a session on each;
//   * kiln_session_submit / kiln_session_wait from several threads on one
//     session (each thread its own shape), beside a kiln_session_run, also
//     with room for fewer recordings than shapes (evicted while tickets of
//     other shapes are pending);
//   * zero-copy runs (inputs and outputs in the host's VkBuffers, bound and
//     forgotten every run) on a session per thread;
//   * one session with a run slot per thread (max_concurrent_runs): runs
//     and submissions of one shape from every thread at once, while another
//     thread reads the session's memory report.
//
// Also built with ThreadSanitizer by the `tsan` ctest (tests/tsan/), which
// is where a data race shows up; here, the outputs are what is checked.
#include "platform/vulkan/vk_test_env.h"  // before kiln_vulkan.h: volk includes vulkan.h itself

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "api/testing/host_buffer.h"
#include "api/testing/host_device.h"
#include "api/testing/onnx_models.h"
#include "kiln/kiln_vulkan.h"  // before kiln.hpp: its Vulkan parts
#include "kiln/kiln.hpp"

namespace {

using kiln::api::Error;
using kiln::api::Model;
using kiln::api::Session;
using kiln::api::Tensor;
using kiln::api::VulkanDevice;
using kiln::capi::testing::HostBuffer;
using kiln::capi::testing::OnnxBuilder;

constexpr int64_t kFeatures = 8;
// The dynamic dim's values: different activation sizes, so a new shape may
// grow the model's activation memory and drop the other shapes' recordings.
const std::vector<int64_t> kRows = {1, 3, 8, 33};
constexpr int kVariants = 3;  // input contents per shape
constexpr int kThreads = 4;
constexpr int kRunsPerThread = 6;

// x[n,8] -> h = Relu(x W1 + b1) -> y = Softmax(h W2) [n,8];
// m = ReduceMean(x * y, axis 0) [1,8]: a reduction over the dynamic dim, so
// every row of every output depends on the run's whole input.
std::string dynamic_model() {
  OnnxBuilder b("stress");
  b.float_input("x", {"n", kFeatures});
  b.float_output("y", {"n", kFeatures});
  b.float_output("m", {1, kFeatures});
  b.weight("w1", {kFeatures, 16}, 0.125f);
  b.weight("b1", {16}, 0.25f);
  b.weight("w2", {16, kFeatures}, -0.0625f);
  b.node("MatMul", {"x", "w1"}, "xw");
  b.node("Add", {"xw", "b1"}, "pre");
  b.node("Relu", {"pre"}, "h");
  b.node("MatMul", {"h", "w2"}, "logits");
  OnnxBuilder::int_attribute(b.node("Softmax", {"logits"}, "y"), "axis", -1);
  b.node("Mul", {"x", "y"}, "xy");
  OnnxBuilder::ints_attribute(b.node("ReduceMean", {"xy"}, "m"), "axes", {0});
  return b.serialize();
}

// One input and the outputs the reference executor gave for it.
struct Case {
  int64_t rows = 0;
  Tensor x;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<float>> values;
};

// Compares `got` with the case's reference outputs; "" when they match
// (bit for bit when `exact`, else within fp32 rounding), else what differs.
std::string compare(const Case& c, std::vector<Tensor>& got, bool exact) {
  if (got.size() != c.values.size()) return "wrong output count";
  for (size_t o = 0; o < got.size(); ++o) {
    if (!got[o]) return "output " + std::to_string(o) + " is NULL";
    if (got[o].shape() != c.shapes[o]) return "output " + std::to_string(o) + " has the wrong shape";
    const float* v = got[o].data<float>();
    for (size_t i = 0; i < c.values[o].size(); ++i) {
      const float want = c.values[o][i];
      const bool ok = exact ? v[i] == want : std::fabs(v[i] - want) <= 1e-5f + 1e-4f * std::fabs(want);
      if (!ok) {
        return "rows " + std::to_string(c.rows) + ", output " + std::to_string(o) + "[" + std::to_string(i) +
               "] = " + std::to_string(v[i]) + ", want " + std::to_string(want);
      }
    }
  }
  return "";
}

// Runs body(t) on `threads` threads released together; fails the test with
// each thread's non-empty result.
void run_threads(int threads, const std::function<std::string(int)>& body) {
  std::atomic<int> arrived{0};
  std::vector<std::string> failures(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      arrived.fetch_add(1);
      while (arrived.load() < threads) std::this_thread::yield();
      failures[static_cast<size_t>(t)] = body(t);
    });
  }
  for (std::thread& th : pool) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(failures[static_cast<size_t>(t)], "") << "thread " << t;
}

class CApiStressTest : public kiln::vk::testing::VulkanTest, public ::testing::WithParamInterface<kiln_backend_t> {
 protected:
  void SetUp() override {
    if (vulkan()) {
      VulkanTest::SetUp();
      if (IsSkipped() || HasFatalFailure()) return;
    }
    const std::string bytes = dynamic_model();
    Error e = Model::load_from_memory(bytes.data(), bytes.size(), model_);
    ASSERT_FALSE(e) << e.message();
    ASSERT_NO_FATAL_FAILURE(compute_references());
    if (vulkan()) {
      ASSERT_NO_FATAL_FAILURE(wrap_test_device());
    }
  }
  void TearDown() override {
    device_ = VulkanDevice();
    if (vulkan()) VulkanTest::TearDown();
  }

  bool vulkan() const { return GetParam() == KILN_BACKEND_VULKAN; }

  // kVariants inputs of every shape, with the reference executor's outputs.
  void compute_references() {
    Session reference;
    Error e = Session::create(model_, options(KILN_BACKEND_REFERENCE), reference);
    ASSERT_FALSE(e) << e.message();
    for (int64_t rows : kRows) {
      for (int v = 0; v < kVariants; ++v) {
        Case c;
        c.rows = rows;
        ASSERT_FALSE(Tensor::create(KILN_DTYPE_FLOAT32, {rows, kFeatures}, c.x));
        float* x = c.x.data<float>();
        for (int64_t i = 0; i < rows * kFeatures; ++i) {
          x[i] = std::sin(0.37f * static_cast<float>(i) + 1.3f * static_cast<float>(v) + 0.1f * static_cast<float>(rows));
        }
        std::vector<Tensor> out;
        e = reference.run({&c.x}, 2, out);
        ASSERT_FALSE(e) << e.message();
        for (Tensor& t : out) {
          c.shapes.push_back(t.shape());
          c.values.emplace_back(t.data<float>(), t.data<float>() + t.numel());
        }
        cases_.push_back(std::move(c));
      }
    }
  }

  // The validated test device as a game hands it over (timeline semaphores
  // enabled, for kiln_session_submit). A fresh wrap per test: its kernel
  // cache starts empty, so the first compiles really compile.
  void wrap_test_device() {
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f12.timelineSemaphore = device().enabled().timeline_semaphore ? VK_TRUE : VK_FALSE;
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &f12;
    const kiln_vulkan_host_device_t h = kiln::capi::testing::host_device(instance(), device(), &features);
    Error e = VulkanDevice::wrap(h, device_);
    ASSERT_FALSE(e) << e.message();
  }

  kiln_session_options_t options(kiln_backend_t backend) const {
    kiln_session_options_t o{};
    o.struct_size = sizeof(o);
    o.backend = backend;
    o.vulkan_device = backend == KILN_BACKEND_VULKAN ? device_.get() : nullptr;
    o.ignore_plugin_path = 1;  // the same passes whatever the environment
    return o;
  }

  // A session of the test's backend, or the error as text.
  // `passes` as kiln_session_options_t.passes (NULL: the default pipeline).
  std::string create(Session& session, const char* passes = nullptr) const {
    kiln_session_options_t o = options(GetParam());
    o.passes = passes;
    Error e = Session::create(model_, o, session);
    return e ? "create: " + e.to_string() : "";
  }

  // Runs cases_[index] on `session` and checks its outputs.
  std::string run_case(Session& session, size_t index) const {
    const Case& c = cases_[index % cases_.size()];
    std::vector<Tensor> out;
    Error e = session.run({&c.x}, 2, out);
    if (e) return "run (rows " + std::to_string(c.rows) + "): " + e.to_string();
    return compare(c, out, /*exact=*/!vulkan());
  }

  void submit_and_wait_from_threads(uint32_t max_signatures);

  Model model_;
  VulkanDevice device_;
  std::vector<Case> cases_;
};

std::string backend_name(const ::testing::TestParamInfo<kiln_backend_t>& backend) {
  return backend.param == KILN_BACKEND_VULKAN ? "Vulkan" : "Reference";
}

INSTANTIATE_TEST_SUITE_P(Backends, CApiStressTest, ::testing::Values(KILN_BACKEND_REFERENCE, KILN_BACKEND_VULKAN),
                         backend_name);

// The session queries documented as thread-safe, once each; "" or what failed.
std::string query_session(const Session& session, bool vulkan) {
  kiln_run_stats_t stats{};
  stats.struct_size = sizeof(stats);
  Error e = session.last_run_stats(stats);
  if (e && e.code() != KILN_FAILED_PRECONDITION) return "last_run_stats: " + e.to_string();  // before the first run
  if (!e && stats.wall_ms <= 0) return "last_run_stats: no wall time";
  std::string json;
  e = session.last_run_json(json);
  if (e && e.code() != KILN_FAILED_PRECONDITION) return "last_run_json: " + e.to_string();
  if ((e = session.describe_json(json))) return "describe_json: " + e.to_string();
  if (!vulkan) return "";
  kiln_device_memory_t memory{};
  memory.struct_size = sizeof(memory);
  if ((e = Error(kiln_session_memory(session.get(), &memory)))) return "memory: " + e.to_string();
  if (memory.weights_bytes == 0) return "memory: no weights";
  kiln_session_set_wait_spin(session.get(), 50);
  return "";
}

// Runs of one session from every thread, each thread stepping through all
// shapes and inputs from its own starting point, while one more thread
// reads the session's statistics, description and memory.
TEST_P(CApiStressTest, OneSessionSharedByThreads) {
  Session session;
  ASSERT_EQ(create(session), "");
  std::atomic<int> running{kThreads};
  run_threads(kThreads + 1, [&](int t) -> std::string {
    if (t == kThreads) {
      std::string failure;
      while (running.load() > 0 && failure.empty()) failure = query_session(session, vulkan());
      return failure;
    }
    std::string failure;
    for (int i = 0; i < kRunsPerThread && failure.empty(); ++i) failure = run_case(session, static_cast<size_t>(t * 5 + i));
    running.fetch_sub(1);
    return failure;
  });
}

// Every thread creates its own session of the one model at the same moment
// (on Vulkan: concurrent compiles sharing the device's empty kernel cache;
// half the sessions run no pass, so unfused kernels compile beside the fused
// ones), runs it and destroys it while the others may still run.
TEST_P(CApiStressTest, SessionPerThreadCreatedAtOnce) {
  run_threads(kThreads, [&](int t) -> std::string {
    Session session;
    if (std::string failure = create(session, t % 2 ? "none" : nullptr); !failure.empty())
      return failure;
    for (int i = 0; i < kRunsPerThread; ++i) {
      std::string failure = run_case(session, static_cast<size_t>(t * 7 + i));
      if (!failure.empty()) return failure;
    }
    return "";
  });
}

// Thread 0 creates, runs and destroys one session after another; the other
// threads run one session each (created beforehand) until it is done.
TEST_P(CApiStressTest, SessionsDestroyedWhileOthersRun) {
  std::vector<Session> runners(kThreads - 1);
  for (Session& s : runners) ASSERT_EQ(create(s), "");
  std::atomic<bool> churning{true};
  run_threads(kThreads, [&](int t) -> std::string {
    if (t == 0) {
      std::string failure;
      for (int i = 0; i < 3 && failure.empty(); ++i) {
        Session session;
        failure = create(session);
        if (failure.empty()) failure = run_case(session, static_cast<size_t>(i * 4));
      }  // destroyed here, while the runners run
      churning.store(false);
      return failure;
    }
    Session& session = runners[static_cast<size_t>(t - 1)];
    for (int i = 0; i < kRunsPerThread || churning.load(); ++i) {
      std::string failure = run_case(session, static_cast<size_t>(t * 3 + i));
      if (!failure.empty()) {
        churning.store(false);  // thread 0 may be waiting for nothing else
        return failure;
      }
    }
    return "";
  });
}

using CApiVulkanStressTest = CApiStressTest;

// Threads each create a Vulkan device of Kiln's own (instance, device,
// kernel cache; the loader is opened once for all) and a session on it, at
// the same moment, with the validation layers on.
TEST_P(CApiVulkanStressTest, DevicePerThreadCreatedAtOnce) {
  constexpr int kDevices = 2;
  std::vector<uint64_t> validation_errors(kDevices, 0);
  run_threads(kDevices, [&](int t) -> std::string {
    kiln_vulkan_device_options_t o{};
    o.struct_size = sizeof(o);
    o.kernel_cache_dir = "";  // in memory: nothing written outside the test
    o.validation = 1;
    VulkanDevice own;
    Error e = VulkanDevice::create(o, own);
    if (e) return "kiln_vulkan_device_create: " + e.to_string();
    kiln_session_options_t so = options(KILN_BACKEND_VULKAN);
    so.vulkan_device = own.get();
    Session session;
    if ((e = Session::create(model_, so, session))) return "create: " + e.to_string();
    for (int i = 0; i < 2; ++i) {
      std::string failure = run_case(session, static_cast<size_t>(t * 5 + i));
      if (!failure.empty()) return failure;
    }
    validation_errors[static_cast<size_t>(t)] = own.validation_errors();
    return "";
  });
  for (uint64_t errors : validation_errors) EXPECT_EQ(errors, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, CApiVulkanStressTest, ::testing::Values(KILN_BACKEND_VULKAN), backend_name);

// Zero-copy runs on sessions of their own, one per thread: each iteration
// binds fresh VkBuffers of the "game" for the input and both outputs (a new
// recording per binding set), runs with no host tensors, reads the results
// from the buffers and forgets the buffers, while the other threads do the
// same on the same device and queue.
TEST_P(CApiVulkanStressTest, BoundBuffersOnSessionPerThread) {
  run_threads(kThreads, [&](int t) -> std::string {
    Session session;
    if (std::string failure = create(session); !failure.empty()) return failure;
    for (int i = 0; i < 3; ++i) {
      const Case& c = cases_[static_cast<size_t>(t * 4 + i) % cases_.size()];
      const VkDeviceSize x_bytes = static_cast<VkDeviceSize>(c.rows * kFeatures) * sizeof(float);
      HostBuffer bx(device(), x_bytes), by(device(), x_bytes), bm(device(), kFeatures * sizeof(float));
      if (!bx.ok() || !by.ok() || !bm.ok()) return "could not make the host's buffers";
      const float* x = static_cast<const float*>(kiln_tensor_data(c.x.get()));
      bx.write(0, std::vector<float>(x, x + c.rows * kFeatures));
      Error e = session.bind_vulkan_buffer("x", bx.handle(), 0, x_bytes, c.x.shape());
      if (!e) e = session.bind_vulkan_buffer("y", by.handle(), 0, x_bytes);
      if (!e) e = session.bind_vulkan_buffer("m", bm.handle(), 0, kFeatures * sizeof(float));
      if (e) return "bind: " + e.to_string();
      std::vector<Tensor> none;
      e = session.run({nullptr}, 2, none);
      if (e) return "run (rows " + std::to_string(c.rows) + "): " + e.to_string();
      std::vector<Tensor> out(2);
      if ((e = Tensor::create(KILN_DTYPE_FLOAT32, c.shapes[0], out[0])) ||
          (e = Tensor::create(KILN_DTYPE_FLOAT32, c.shapes[1], out[1])))
        return "tensor: " + e.to_string();
      std::memcpy(out[0].data<float>(), by.read(0, c.values[0].size()).data(), out[0].byte_size());
      std::memcpy(out[1].data<float>(), bm.read(0, c.values[1].size()).data(), out[1].byte_size());
      for (const HostBuffer* b : {&bx, &by, &bm}) session.forget_vulkan_buffer(b->handle());
      std::string failure = compare(c, out, /*exact=*/false);
      if (!failure.empty()) return "bound " + failure;
    }
    return "";
  });
}

// Asynchronous runs of one session from several threads: threads 1..3 each
// submit and wait for one shape of their own (host-memory inputs and
// outputs: a shape's staging is its ticket's until the wait, so one thread
// per shape never finds it busy), polling in between, while thread 0 runs
// the remaining shape with kiln_session_run. Submissions of different shapes
// share the model's activation memory. With `max_signatures` below the
// number of shapes, recordings are evicted (and made again) while other
// threads' tickets are pending.
void CApiStressTest::submit_and_wait_from_threads(uint32_t max_signatures) {
  ASSERT_TRUE(device().enabled().timeline_semaphore) << "the test device has no timeline semaphores";
  Session session;
  kiln_session_options_t o = options(KILN_BACKEND_VULKAN);
  o.max_signatures = max_signatures;
  Error created = Session::create(model_, o, session);
  ASSERT_FALSE(created) << created.to_string();
  ASSERT_EQ(kRows.size(), static_cast<size_t>(kThreads));
  run_threads(kThreads, [&](int t) -> std::string {
    for (int i = 0; i < kRunsPerThread; ++i) {
      // Cases are grouped by shape: kVariants consecutive ones per row count.
      const size_t index = static_cast<size_t>(t * kVariants + i % kVariants);
      if (t == 0) {
        std::string failure = run_case(session, index);
        if (!failure.empty()) return failure;
        continue;
      }
      const Case& c = cases_[index];
      const kiln_tensor_t* in[] = {c.x.get()};
      uint64_t ticket = 0;
      Error e(kiln_session_submit(session.get(), in, 1, nullptr, &ticket));
      if (e) return "submit (rows " + std::to_string(c.rows) + "): " + e.to_string();
      int done = -1;
      e = Error(kiln_session_poll(session.get(), ticket, &done));
      if (e) return "poll: " + e.to_string();
      kiln_tensor_t* raw[2] = {nullptr, nullptr};
      e = Error(kiln_session_wait(session.get(), ticket, UINT64_MAX, raw, 2));
      if (e) return "wait (rows " + std::to_string(c.rows) + "): " + e.to_string();
      std::vector<Tensor> out;
      for (kiln_tensor_t* r : raw) out.emplace_back(r);
      std::string failure = compare(c, out, /*exact=*/false);
      if (!failure.empty()) return "submitted " + failure;
    }
    return "";
  });
  if (max_signatures == 0) return;
  // The recordings really were evicted: after every shape in turn, the
  // first one is recorded again.
  for (size_t shape = 0; shape <= kRows.size(); ++shape)
    ASSERT_EQ(run_case(session, (shape % kRows.size()) * kVariants), "");
  kiln_run_stats_t stats{};
  stats.struct_size = sizeof(stats);
  ASSERT_FALSE(session.last_run_stats(stats));
  EXPECT_EQ(stats.recorded, 1u);
}

TEST_P(CApiVulkanStressTest, SubmitAndWaitFromThreadsOnOneSession) {
  submit_and_wait_from_threads(/*max_signatures=*/0);  // the default, 32: every shape stays recorded
}

TEST_P(CApiVulkanStressTest, SubmitAndWaitWhileRecordingsAreEvicted) {
  submit_and_wait_from_threads(/*max_signatures=*/2);
}

// Run slots: one session with a slot per thread, every thread running and
// submitting inputs of the same shape (with one slot, submissions of one
// shape would refuse each other while a ticket is pending), each output
// checked against the reference; then the other shapes, growing each slot's
// activation memory while other slots run. One more thread reads the memory
// report meanwhile.
TEST_P(CApiVulkanStressTest, RunSlotsRunOneShapeFromThreads) {
  Session session;
  kiln_session_options_t o = options(KILN_BACKEND_VULKAN);
  o.max_concurrent_runs = kThreads;
  Error created = Session::create(model_, o, session);
  ASSERT_FALSE(created) << created.to_string();
  std::atomic<int> running{kThreads};
  run_threads(kThreads + 1, [&](int t) -> std::string {
    if (t == kThreads) {
      std::string failure;
      while (running.load() > 0 && failure.empty()) {
        kiln_device_memory_t memory{};
        memory.struct_size = sizeof(memory);
        if (Error e{kiln_session_memory(session.get(), &memory)}) failure = "memory: " + e.to_string();
        else if (memory.run_slots != kThreads) failure = "memory: " + std::to_string(memory.run_slots) + " run slots";
      }
      return failure;
    }
    std::string failure;
    for (int i = 0; i < kRunsPerThread && failure.empty(); ++i) {
      // The first runs all of shape kRows[1], then each thread its own.
      const size_t shape = i < kRunsPerThread / 2 ? 1 : static_cast<size_t>(t);
      const size_t index = shape * kVariants + static_cast<size_t>(t + i) % kVariants;
      if (i % 2 == 0) {
        failure = run_case(session, index);
        continue;
      }
      const Case& c = cases_[index];
      const kiln_tensor_t* in[] = {c.x.get()};
      uint64_t ticket = 0;
      kiln_tensor_t* raw[2] = {nullptr, nullptr};
      Error e(kiln_session_submit(session.get(), in, 1, nullptr, &ticket));
      if (!e) e = Error(kiln_session_wait(session.get(), ticket, UINT64_MAX, raw, 2));
      if (e) {
        failure = "submit/wait (rows " + std::to_string(c.rows) + "): " + e.to_string();
        break;
      }
      std::vector<Tensor> out;
      for (kiln_tensor_t* r : raw) out.emplace_back(r);
      failure = compare(c, out, /*exact=*/false);
    }
    running.fetch_sub(1);
    return failure;
  });
}

}  // namespace

// Concurrent runs of one compiled model through the C API
// (kiln_session_options_t.max_concurrent_runs; kiln_vulkan.h, "Concurrent
// runs").
//
// In flight at once: submissions of the same shapes with host-memory inputs
// and outputs each wait on the "game's" timeline semaphore, which the test
// signals only after all of them were submitted, so every one of them is
// pending on the device at the same moment (polls say so; with one slot the
// second submission is refused instead, its staging memory being the first
// ticket's). After the signal each gives what a run of its input alone
// gives, bit for bit (the slots share the compiled kernels). Memory: each
// slot that ran holds one run's activations and staging, the weights are
// held once, and a memory limit counts all slots together. Threads: runs
// and submissions of one shape from several threads, each thread its own
// inputs, all equal to a sequential run.
//
// The device is lavapipe, which has one queue: the runs' entry barriers make
// it execute them one after another, so what is asserted is that they are
// in flight together and independent, not that they overlap in time.
// The "host" is the validated test instance and device: the VulkanTest
// fixture fails on any validation message.
#include "platform/vulkan/vk_test_env.h"  // before kiln_vulkan.h: volk includes vulkan.h itself

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

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

constexpr int64_t kRows = 4;
constexpr int64_t kCols = 3;

// Input number `k`: different contents for every k.
Tensor input(int k) {
  Tensor t;
  EXPECT_FALSE(Tensor::create(KILN_DTYPE_FLOAT32, {kRows, kCols}, t));
  float* x = t.data<float>();
  for (int64_t i = 0; i < kRows * kCols; ++i) x[i] = static_cast<float>(i % 5) * 0.5f - 1.0f + 0.37f * k;
  return t;
}

std::vector<float> values(Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.numel()); }
std::vector<float> values(Tensor&& t) { return values(t); }

class CApiConcurrentTest : public kiln::vk::testing::VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(device().enabled().timeline_semaphore) << "the test device has no timeline semaphores";
    const std::string bytes = kiln::capi::testing::mlp_model(kRows, kCols);
    Error e = Model::load_from_memory(bytes.data(), bytes.size(), model_);
    ASSERT_FALSE(e) << e.message();
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f12.timelineSemaphore = VK_TRUE;
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &f12;
    kiln_vulkan_host_device_t host = kiln::capi::testing::host_device(instance(), device(), &features);
    // Calibrated timestamps (the runs' device intervals), as the test
    // device enabled them.
    static const char* const kCalibrated[] = {VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME};
    if (device().enabled().calibrated_timestamps) {
      host.enabled_extensions = kCalibrated;
      host.enabled_extension_count = 1;
    }
    e = VulkanDevice::wrap(host, host_);
    ASSERT_FALSE(e) << e.message();
  }
  void TearDown() override {
    if (gate_ != VK_NULL_HANDLE) device().fn().vkDestroySemaphore(device().handle(), gate_, nullptr);
    host_ = VulkanDevice();
    VulkanTest::TearDown();
  }

  // A session on the wrapped test device with `slots` run slots.
  void create(Session& session, uint32_t slots, uint64_t memory_limit = 0) {
    kiln_session_options_t o{};
    o.struct_size = sizeof(o);
    o.backend = KILN_BACKEND_VULKAN;
    o.vulkan_device = host_.get();
    o.ignore_plugin_path = 1;
    o.max_concurrent_runs = slots;
    o.device_memory_limit = memory_limit;
    Error e = Session::create(model_, o, session);
    ASSERT_FALSE(e) << e.message();
  }

  // kiln_session_run's output for input(k).
  std::vector<float> run(Session& session, int k) {
    Tensor x = input(k);
    std::vector<Tensor> out;
    Error e = session.run({&x}, 1, out);
    EXPECT_FALSE(e) << e.message();
    return e ? std::vector<float>{} : values(out[0]);
  }

  kiln_device_memory_t memory(const Session& session) {
    kiln_device_memory_t m{};
    m.struct_size = sizeof(m);
    EXPECT_FALSE(Error(kiln_session_memory(session.get(), &m)));
    return m;
  }

  // The game's timeline semaphore at 0: submissions wait for it at 1.
  void make_gate() {
    VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    info.pNext = &type;
    ASSERT_EQ(device().fn().vkCreateSemaphore(device().handle(), &info, nullptr, &gate_), VK_SUCCESS);
  }
  void open_gate() {
    VkSemaphoreSignalInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
    info.semaphore = gate_;
    info.value = 1;
    ASSERT_EQ(device().fn().vkSignalSemaphore(device().handle(), &info), VK_SUCCESS);
  }

  // Submits input(k) behind the gate.
  Error submit_gated(Session& session, int k, uint64_t* ticket) {
    Tensor x = input(k);  // copied by the submit: freed before the run
    const kiln_tensor_t* in[] = {x.get()};
    const kiln_vulkan_semaphore_value_t gate{gate_, 1, 0};
    const kiln_vulkan_submit_sync_t sync{sizeof(kiln_vulkan_submit_sync_t), &gate, 1, nullptr, 0};
    return Error(kiln_session_submit(session.get(), in, 1, &sync, ticket));
  }

  Model model_;
  VulkanDevice host_;
  VkSemaphore gate_ = VK_NULL_HANDLE;
};

// Two submissions of one shape on a session with two run slots, both
// pending on the device at once; a third finds both slots' staging taken.
// After the gate opens, each output is its input's alone, bit for bit.
TEST_F(CApiConcurrentTest, SubmissionsOfOneShapeAreInFlightTogether) {
  Session sequential, concurrent;
  ASSERT_NO_FATAL_FAILURE(create(sequential, 1));
  ASSERT_NO_FATAL_FAILURE(create(concurrent, 2));
  const std::vector<float> want_a = run(sequential, 1), want_b = run(sequential, 2);
  ASSERT_NE(want_a, want_b);
  ASSERT_NO_FATAL_FAILURE(make_gate());

  uint64_t a = 0, b = 0, c = 0;
  Error e = submit_gated(concurrent, 1, &a);
  ASSERT_FALSE(e) << e.to_string();
  e = submit_gated(concurrent, 2, &b);
  ASSERT_FALSE(e) << e.to_string();  // one slot: FAILED_PRECONDITION, the staging is a's (below)
  EXPECT_NE(a, b);
  e = submit_gated(concurrent, 3, &c);
  EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();
  EXPECT_NE(e.message().find("still running"), std::string::npos) << e.message();
  // Both in flight at the same moment: submitted, and neither can have run.
  for (uint64_t ticket : {a, b}) {
    int done = -1;
    ASSERT_FALSE(Error(kiln_session_poll(concurrent.get(), ticket, &done)));
    EXPECT_EQ(done, 0) << "ticket " << ticket;
  }
  kiln_tensor_t* y = nullptr;
  e = Error(kiln_session_wait(concurrent.get(), b, 0, &y, 1));
  EXPECT_EQ(e.code(), KILN_UNAVAILABLE) << e.to_string();

  ASSERT_NO_FATAL_FAILURE(open_gate());
  e = Error(kiln_session_wait(concurrent.get(), b, UINT64_MAX, &y, 1));  // the later one first
  ASSERT_FALSE(e) << e.to_string();
  EXPECT_EQ(values(Tensor(y)), want_b);
  e = Error(kiln_session_wait(concurrent.get(), a, UINT64_MAX, &y, 1));
  ASSERT_FALSE(e) << e.to_string();
  EXPECT_EQ(values(Tensor(y)), want_a);
  int done = -1;
  e = Error(kiln_session_poll(concurrent.get(), a, &done));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << "a ticket is waited for once: " << e.to_string();

  // Each slot that ran holds what the one-slot session holds for a run;
  // the weights are there once.
  const kiln_device_memory_t one = memory(sequential), two = memory(concurrent);
  EXPECT_EQ(one.run_slots, 1u);
  EXPECT_EQ(two.run_slots, 2u);
  EXPECT_GT(one.activation_bytes, 0u);
  EXPECT_EQ(one.per_run_bytes, one.activation_bytes + one.staging_bytes);
  EXPECT_EQ(two.per_run_bytes, one.per_run_bytes);
  EXPECT_EQ(two.activation_bytes, 2 * one.activation_bytes);
  EXPECT_EQ(two.staging_bytes, 2 * one.staging_bytes);
  EXPECT_EQ(two.weights_bytes, one.weights_bytes);
  EXPECT_EQ(two.total_bytes, two.weights_bytes + 2 * two.per_run_bytes);

  // Tickets of several slots are no values of one semaphore.
  VkSemaphore timeline = VK_NULL_HANDLE;
  e = Error(kiln_session_timeline(concurrent.get(), &timeline));
  EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();
  EXPECT_NE(e.message().find("run slots"), std::string::npos) << e.message();
  ASSERT_FALSE(Error(kiln_session_timeline(sequential.get(), &timeline)));
}

// With one slot (the default) the second submission of the same shapes is
// refused while the first is pending: the behaviour slots lift.
TEST_F(CApiConcurrentTest, OneSlotRefusesASecondSubmissionOfTheShape) {
  Session session;
  ASSERT_NO_FATAL_FAILURE(create(session, 0));  // 0: the default, one slot
  ASSERT_NO_FATAL_FAILURE(make_gate());
  uint64_t a = 0, b = 0;
  Error e = submit_gated(session, 1, &a);
  ASSERT_FALSE(e) << e.to_string();
  e = submit_gated(session, 2, &b);
  EXPECT_EQ(e.code(), KILN_FAILED_PRECONDITION) << e.to_string();
  ASSERT_NO_FATAL_FAILURE(open_gate());
  kiln_tensor_t* y = nullptr;
  ASSERT_FALSE(Error(kiln_session_wait(session.get(), a, UINT64_MAX, &y, 1)));
  kiln_tensor_destroy(y);
  EXPECT_EQ(memory(session).run_slots, 1u);
}

// The memory limit covers all slots together: room for the weights and one
// run (plus a few bytes) lets one slot run and refuses a second run in
// flight beside it, naming the other slots' memory; once the first ticket is
// waited for, its slot takes the next submission.
TEST_F(CApiConcurrentTest, MemoryLimitCoversAllSlots) {
  Session unlimited;
  ASSERT_NO_FATAL_FAILURE(create(unlimited, 1));
  const std::vector<float> want = run(unlimited, 1);
  const kiln_device_memory_t one = memory(unlimited);
  Session session;
  ASSERT_NO_FATAL_FAILURE(create(session, 2, one.weights_bytes + one.per_run_bytes + 16));
  ASSERT_NO_FATAL_FAILURE(make_gate());
  uint64_t a = 0, b = 0;
  Error e = submit_gated(session, 1, &a);
  ASSERT_FALSE(e) << e.to_string();
  e = submit_gated(session, 2, &b);
  EXPECT_EQ(e.code(), KILN_OUT_OF_MEMORY) << e.to_string();
  EXPECT_NE(e.message().find("other run slots"), std::string::npos) << e.message();
  ASSERT_NO_FATAL_FAILURE(open_gate());
  kiln_tensor_t* y = nullptr;
  ASSERT_FALSE(Error(kiln_session_wait(session.get(), a, UINT64_MAX, &y, 1)));
  EXPECT_EQ(values(Tensor(y)), want);
  e = submit_gated(session, 1, &b);  // the gate is open: runs at once
  ASSERT_FALSE(e) << e.to_string();
  ASSERT_FALSE(Error(kiln_session_wait(session.get(), b, UINT64_MAX, &y, 1)));
  EXPECT_EQ(values(Tensor(y)), want);
  EXPECT_LE(memory(session).total_bytes, one.weights_bytes + one.per_run_bytes + 16);
}

TEST_F(CApiConcurrentTest, TooManySlotsIsRefused) {
  kiln_session_options_t o{};
  o.struct_size = sizeof(o);
  o.backend = KILN_BACKEND_VULKAN;
  o.vulkan_device = host_.get();
  o.max_concurrent_runs = 65;
  Session session;
  Error e = Session::create(model_, o, session);
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.to_string();
  EXPECT_NE(e.message().find("max_concurrent_runs"), std::string::npos) << e.message();
}

// Threads share one session with a slot each: every thread runs and submits
// its own inputs of the one shape, and every output equals the sequential
// run of that input.
TEST_F(CApiConcurrentTest, ThreadsRunAndSubmitOneShapeAtOnce) {
  constexpr int kThreads = 4, kRounds = 4;
  Session session;
  ASSERT_NO_FATAL_FAILURE(create(session, kThreads));
  std::vector<std::vector<float>> want;
  for (int k = 0; k < kThreads * kRounds; ++k) want.push_back(run(session, k));
  std::atomic<int> arrived{0};
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      arrived.fetch_add(1);
      while (arrived.load() < kThreads) std::this_thread::yield();
      for (int r = 0; r < kRounds && failures[t].empty(); ++r) {
        const int k = t * kRounds + r;
        Tensor x = input(k);
        std::vector<float> got;
        if (r % 2 == 0) {
          std::vector<Tensor> out;
          if (Error e = session.run({&x}, 1, out)) {
            failures[t] = "run: " + e.to_string();
            break;
          }
          got = values(out[0]);
        } else {
          const kiln_tensor_t* in[] = {x.get()};
          uint64_t ticket = 0;
          kiln_tensor_t* y = nullptr;
          Error e(kiln_session_submit(session.get(), in, 1, nullptr, &ticket));
          if (!e) e = Error(kiln_session_wait(session.get(), ticket, UINT64_MAX, &y, 1));
          if (e) {
            failures[t] = "submit/wait: " + e.to_string();
            break;
          }
          got = values(Tensor(y));
        }
        if (got != want[static_cast<size_t>(k)]) failures[t] = "input " + std::to_string(k) + ": wrong outputs";
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
  const kiln_device_memory_t m = memory(session);
  EXPECT_EQ(m.run_slots, static_cast<uint32_t>(kThreads));
  EXPECT_GT(m.per_run_bytes, 0u);
  EXPECT_LE(m.activation_bytes + m.staging_bytes, kThreads * m.per_run_bytes);
}

// kiln_session_run_with_stats from several threads at once: every run's
// outputs equal a single run's, and its device interval (calibrated GPU
// timestamps on the host's steady clock) is well formed: begin <= end,
// inside the host's bracket of the call, on the one queue a wrapped device
// gives. Whether runs overlap is not asserted: lavapipe has one queue and
// runs on the CPU, and overlap is a benchmark figure (kiln bench
// --concurrent, whose computation kiln_overlap_test checks).
TEST_F(CApiConcurrentTest, RunStatsGiveEachRunsDeviceInterval) {
  ASSERT_TRUE(device().enabled().calibrated_timestamps)
      << "the CI device (lavapipe) offers VK_EXT_calibrated_timestamps with the device and monotonic clocks";
  constexpr int kThreads = 3, kRounds = 3;
  Session session;
  ASSERT_NO_FATAL_FAILURE(create(session, kThreads));
  std::vector<std::vector<float>> want;
  for (int k = 0; k < kThreads * kRounds; ++k) want.push_back(run(session, k));
  struct Record {
    int64_t call_begin = 0, call_end = 0;
    kiln_run_stats_t stats{};
    bool outputs_match = false;
    std::string error;
  };
  std::vector<Record> records(kThreads * kRounds);
  const auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  std::atomic<int> arrived{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      arrived.fetch_add(1);
      while (arrived.load() < kThreads) std::this_thread::yield();
      for (int r = 0; r < kRounds; ++r) {
        const int k = t * kRounds + r;
        Record& rec = records[static_cast<size_t>(k)];
        Tensor x = input(k);
        std::vector<Tensor> out;
        rec.call_begin = now_ns();
        Error e = session.run({&x}, 1, out, &rec.stats);
        rec.call_end = now_ns();
        if (e) {
          rec.error = e.to_string();
          return;
        }
        rec.outputs_match = values(out[0]) == want[static_cast<size_t>(k)];
      }
    });
  for (std::thread& th : threads) th.join();
  for (size_t k = 0; k < records.size(); ++k) {
    const Record& rec = records[k];
    SCOPED_TRACE("input " + std::to_string(k));
    ASSERT_EQ(rec.error, "");
    EXPECT_TRUE(rec.outputs_match);
    EXPECT_GT(rec.stats.gpu_ms, 0);
    EXPECT_GT(rec.stats.gpu_begin_ns, 0);
    EXPECT_LE(rec.stats.gpu_begin_ns, rec.stats.gpu_end_ns);
    EXPECT_GE(rec.stats.gpu_begin_ns, rec.call_begin);
    EXPECT_LE(rec.stats.gpu_end_ns, rec.call_end);
    EXPECT_EQ(rec.stats.queue, 0u);  // a wrapped device: the host's one queue
  }
  // A struct_size too small for the fields every version has is refused.
  kiln_run_stats_t tiny{};
  tiny.struct_size = 8;
  Tensor x = input(0);
  const kiln_tensor_t* in[] = {x.get()};
  kiln_tensor_t* y = nullptr;
  Error e(kiln_session_run_with_stats(session.get(), in, 1, &y, 1, &tiny));
  EXPECT_EQ(e.code(), KILN_INVALID_ARGUMENT) << e.message();
}

}  // namespace

// RunSlots (run_slots.h) without a device: which slot a call takes, that a
// held slot is not handed out twice, and the ticket encoding.
#include "engine/runtime/vulkan/run_slots.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

namespace kiln::runtime {
namespace {

TEST(RunSlots, OneSlotKeepsTicketsAsTimelineValues) {
  RunSlots slots(1);
  EXPECT_EQ(slots.ticket(0, 17), 17u);
  EXPECT_EQ(slots.slot_of(17), 0u);
  EXPECT_EQ(slots.value_of(17), 17u);
}

TEST(RunSlots, TicketsNameTheirSlotAndValue) {
  RunSlots slots(3);
  for (size_t slot = 0; slot < 3; ++slot)
    for (uint64_t value : {1u, 2u, 1000u}) {
      const uint64_t ticket = slots.ticket(slot, value);
      EXPECT_EQ(slots.slot_of(ticket), slot);
      EXPECT_EQ(slots.value_of(ticket), value);
    }
  EXPECT_NE(slots.ticket(0, 2), slots.ticket(1, 1));
}

TEST(RunSlots, HeldSlotsAreNotHandedOutTwice) {
  RunSlots slots(3);
  RunSlots::Lease a = slots.acquire();
  RunSlots::Lease b = slots.acquire();
  RunSlots::Lease c = slots.acquire();
  EXPECT_EQ(std::set<size_t>({a.slot(), b.slot(), c.slot()}).size(), 3u);
}

TEST(RunSlots, PrefersSlotsWithoutPendingSubmissions) {
  RunSlots slots(3);
  slots.add_pending(0);
  slots.add_pending(0);
  slots.add_pending(1);
  EXPECT_EQ(slots.acquire().slot(), 2u);
  slots.add_pending(2);
  EXPECT_EQ(slots.acquire().slot(), 1u);  // one pending, like slot 2; the lower index
  slots.remove_pending(0);
  slots.remove_pending(0);
  EXPECT_EQ(slots.acquire().slot(), 0u);
  EXPECT_EQ(slots.pending(1), 1u);
}

// A busy slot without pending submissions is waited for rather than an idle
// slot beside a pending ticket taken.
TEST(RunSlots, WaitsForABusySlotWithFewerPending) {
  RunSlots slots(2);
  slots.add_pending(1);
  std::atomic<size_t> taken{99};
  std::thread other;
  {
    RunSlots::Lease held = slots.acquire();
    ASSERT_EQ(held.slot(), 0u);
    other = std::thread([&] { taken.store(slots.acquire().slot()); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(taken.load(), 99u);  // still waiting: slot 1 is idle but has a pending ticket
  }  // slot 0 released
  other.join();
  EXPECT_EQ(taken.load(), 0u);
}

}  // namespace
}  // namespace kiln::runtime

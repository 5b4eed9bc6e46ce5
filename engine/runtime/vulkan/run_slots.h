// RunSlots: which of a model's run slots (VulkanModelOptions::concurrent_runs)
// a run or submission takes, and how a ticket names its slot.
//
// A slot is busy while a run() or submit() call is inside it (its mutex
// serializes them anyway). A call takes an idle slot among those with the
// fewest submissions not yet waited for (a pending ticket holds its slot's
// staging memory until the wait), waiting for one to become idle: so a
// submission never lands beside a pending ticket while some slot has none. No Vulkan here: the policy
// is tested on its own (run_slots_test.cc).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace kiln::runtime {

class RunSlots {
 public:
  // `count` slots, at least 1.
  explicit RunSlots(size_t count);

  size_t count() const { return pending_.size(); }

  // A slot held by one run() or submit() call; releases it when destroyed.
  class Lease {
   public:
    Lease(RunSlots& slots, size_t slot) : slots_(&slots), slot_(slot) {}
    Lease(Lease&& other) noexcept : slots_(other.slots_), slot_(other.slot_) { other.slots_ = nullptr; }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (slots_) slots_->release(slot_);
    }
    size_t slot() const { return slot_; }

   private:
    RunSlots* slots_;
    size_t slot_;
  };

  // Waits until a slot with the fewest pending submissions of all slots is
  // idle, and holds it (the lowest index among such).
  Lease acquire();

  // A submission into `slot` is pending / was waited for (or forgotten).
  void add_pending(size_t slot);
  void remove_pending(size_t slot);
  size_t pending(size_t slot) const;

  // Tickets: a slot's timeline value and the slot in one number (with one
  // slot, the value itself, as before slots existed).
  uint64_t ticket(size_t slot, uint64_t value) const { return value * count() + slot; }
  size_t slot_of(uint64_t ticket) const { return static_cast<size_t>(ticket % count()); }
  uint64_t value_of(uint64_t ticket) const { return ticket / count(); }

 private:
  void release(size_t slot);

  mutable std::mutex mutex_;
  std::condition_variable idle_;
  std::vector<bool> busy_;
  std::vector<size_t> pending_;
};

}  // namespace kiln::runtime

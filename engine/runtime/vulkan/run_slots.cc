// RunSlots (run_slots.h): the choice of a model's run slot.
#include "engine/runtime/vulkan/run_slots.h"

#include <algorithm>

namespace kiln::runtime {

RunSlots::RunSlots(size_t count) : busy_(std::max<size_t>(count, 1), false), pending_(std::max<size_t>(count, 1), 0) {}

RunSlots::Lease RunSlots::acquire() {
  std::unique_lock<std::mutex> lock(mutex_);
  size_t best = count();
  idle_.wait(lock, [&] {
    // A busy slot with fewer pending submissions is worth waiting for: its
    // call ends soon, while a pending ticket's staging stays taken until
    // the host waits for it.
    const size_t fewest = *std::min_element(pending_.begin(), pending_.end());
    best = count();
    for (size_t s = 0; s < count() && best == count(); ++s)
      if (!busy_[s] && pending_[s] == fewest) best = s;
    return best < count();
  });
  busy_[best] = true;
  return Lease(*this, best);
}

void RunSlots::release(size_t slot) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_[slot] = false;
  }
  idle_.notify_all();  // waiters choose by pending counts: any of them may want this slot
}

void RunSlots::add_pending(size_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++pending_[slot];
}

void RunSlots::remove_pending(size_t slot) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pending_[slot] > 0) --pending_[slot];
  }
  idle_.notify_all();  // the fewest pending may now be an idle slot's
}

size_t RunSlots::pending(size_t slot) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_[slot];
}

}  // namespace kiln::runtime

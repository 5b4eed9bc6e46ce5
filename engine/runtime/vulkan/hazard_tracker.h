// Where barriers go between the dispatches of one command buffer.
//
// A recorded segment's dispatches run in submission order but overlap on the
// GPU unless a barrier separates them. A barrier costs a pipeline drain, so
// the recorder places one only where a hazard exists: a dispatch reads memory
// written since the last barrier (read after write), or writes memory read or
// written since then (write after read, write after write). Reads after reads
// need none. Memory is compared as byte ranges of a resource (the activation
// arena's buffers and the images placed in it are one resource, by offset),
// so aliasing tensors are caught however they are bound.
//
// Pure logic without Vulkan types: unit-tested without a device
// (hazard_tracker_test.cc).
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::runtime {

// Bytes [begin, end) of one resource that a dispatch reads or writes.
struct MemoryRange {
  int resource = 0;
  uint64_t begin = 0;
  uint64_t end = 0;
  bool overlaps(const MemoryRange& o) const { return resource == o.resource && begin < o.end && o.begin < end; }
};

// The accesses since the last barrier of one command buffer. A dispatch's
// own reads and writes are never compared with each other (a kernel writing
// in place reads and writes one range: no barrier inside a dispatch); later
// dispatches see its write as a write of that range. Not thread-safe; one
// per command buffer being recorded.
class HazardTracker {
 public:
  // Whether a dispatch reading `reads` and writing `writes` must wait for
  // the accesses recorded since the last barrier (RAW, WAR or WAW overlap).
  bool needs_barrier(const std::vector<MemoryRange>& reads, const std::vector<MemoryRange>& writes) const;

  // A barrier ordering everything recorded so far was placed: forget it.
  void barrier();

  // Adds a dispatch's accesses (after its barrier, when it needed one).
  void record(const std::vector<MemoryRange>& reads, const std::vector<MemoryRange>& writes);

  // needs_barrier, then barrier() when it did, then record: true when the
  // caller must place a barrier before this dispatch.
  bool access(const std::vector<MemoryRange>& reads, const std::vector<MemoryRange>& writes);

 private:
  std::vector<MemoryRange> reads_;
  std::vector<MemoryRange> writes_;
};

}  // namespace kiln::runtime

// Keys and eviction for VulkanModel's recorded signatures.
//
// A signature (shapes, placement, command buffers) is made once per input
// shapes and reused on every run with the same key; past a sub-graph
// boundary a continuation is made once per what the boundary materialized.
// What makes two runs "the same" and which recordings go when the cache is
// full is plain logic, kept here without Vulkan calls so that it is
// unit-tested without a device (signature_cache_test.cc). The signatures
// themselves (vulkan_model_impl.h) and their release stay in the runtime.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/graph.h"
#include "engine/runtime/vulkan/vulkan_model.h"

namespace kiln::runtime {

// The dtype and shape of one graph input for a run (a bound input has no
// host tensor, only the shape its binding gives).
struct InputSpec {
  DType dtype = DType::kUndefined;
  Shape shape;
  const Tensor* value = nullptr;  // the host tensor, when the input was given as one (borrowed)
};

// A tensor's bytes as lowercase hex: values that shape a run (host-resident
// inputs, values read back at a boundary) are part of its key.
std::string hex_bytes(const Tensor& t);

// The key of an input-shape signature: every input's dtype and shape, the
// bytes of each input with host_resident[i] (its values shape the run: the
// bytes, so float values such as Resize scales count too), and the device
// bindings (descriptors point into the host's buffers). `names` name the
// inputs for errors. Errors: kInvalidArgument when a host-resident input
// was not given as a host tensor. Pure; thread-safe.
StatusOr<std::string> signature_key(const std::vector<InputSpec>& inputs, const std::vector<bool>& host_resident,
                                    const std::vector<std::string>& names, const DeviceBindings& bindings);

// Parts of a continuation's key: the shapes a boundary's host step gave its
// outputs, and one value read back at the boundary. Pure; thread-safe.
std::string host_outputs_key(const std::vector<Tensor>& outputs);
std::string read_back_key(ir::ValueId value, const Tensor& t);

// The keys to drop from `family` so that at most max(limit, 1) entries
// stay: least recently run first (T::last_run, ties in key order), never
// `keep` (which may make fewer go). Pure; the caller releases and erases
// them in the order given.
template <typename T>
std::vector<std::string> lru_victims(const std::map<std::string, std::unique_ptr<T>>& family, size_t limit,
                                     const T* keep) {
  limit = std::max<size_t>(limit, 1);
  std::vector<std::pair<uint64_t, const std::string*>> candidates;
  for (const auto& [key, entry] : family)
    if (entry.get() != keep) candidates.push_back({entry->last_run, &key});
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> victims;
  for (size_t i = 0; i < candidates.size() && family.size() - victims.size() > limit; ++i)
    victims.push_back(*candidates[i].second);
  return victims;
}

}  // namespace kiln::runtime

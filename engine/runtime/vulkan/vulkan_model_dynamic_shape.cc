// Value-dependent output shapes on the device: sub-graph boundaries (SoD²
// §3, Execution Determined Output; §4.3's partitioning at nac shapes).
//
// Most nodes' output shapes follow from the input shapes, so one signature
// (per input shapes) sizes, places and records the whole plan before a run.
// A few depend on tensor values the device computes: NonZero, Range or Loop
// over device values (host fallbacks), or a Reshape, Expand, Tile, Slice or
// ConstantOfShape whose shape input is computed on the device. Such a node
// ends its signature: the steps before it are recorded as usual, and a run
// then crosses the boundary, either running the node on the host (its
// outputs' shapes are what the rest needs) or reading back only the few
// elements of its shape inputs. What it found keys a continuation that sizes,
// places and records the remaining steps once; the same values later reuse
// it, so a repeat records nothing, and nothing ever compiles (kernels take
// their dims as push constants). A graph without such a node has no boundary
// and runs exactly as before: one signature, no extra wait.
//
// The continuation keeps the tensors its parents wrote where they are (its
// descriptors point into the parents' memory) and places only its own.
#include <algorithm>
#include <map>

#include "planner/device_data.h"
#include "engine/runtime/vulkan/vulkan_model_impl.h"
#include "planner/memory/liveness.h"

namespace kiln::runtime {

using planner::PlanStep;
using planner::PlanTensor;

namespace {

// Hazard-tracking ids of memory a continuation inherits: apart from its own
// (0 = its activation arena, buffers and images alike; 1+ images in a
// separate image arena), so that no access to its own memory is mistaken
// for one to a parent's.
constexpr int kInheritedResource = 1 << 20;

// The tensor whose memory `t` uses (views, in-place writes: planner/inplace.h).
TensorId root_of(const planner::ExecutionPlan& plan, TensorId t) { return planner::memory_root(plan, t); }


}  // namespace

Status VulkanModel::Impl::find_boundary(Signature& sig) const {
  sig.boundary = Boundary{};
  sig.end_step = plan.steps.size();
  if (sig.pending.empty()) return ok_status();
  // The first step of a waiting node (a waiting node without steps, a view,
  // is crossed before its first reader; one read by nothing but the graph's
  // outputs at the end).
  size_t s = sig.first_step;
  while (s < plan.steps.size() && !sig.pending.count(plan.steps[s].node)) ++s;
  std::vector<bool> waiting(graph.num_values(), false);
  for (ir::NodeId nid : sig.pending)
    for (ir::ValueId v : graph.node(nid).outputs)
      if (v != ir::kNoValue) waiting[static_cast<size_t>(v)] = true;
  auto describe_first = [&]() {
    for (ir::NodeId nid : sig.pending) {
      const ir::Node& node = graph.node(nid);
      if (std::none_of(node.inputs.begin(), node.inputs.end(),
                       [&](ir::ValueId v) { return v != ir::kNoValue && waiting[static_cast<size_t>(v)]; }))
        return node.describe();
    }
    return graph.node(*sig.pending.begin()).describe();
  };
  for (size_t h = 0; h < s; ++h) {
    const PlanStep& step = plan.steps[h];
    const size_t end = step.kind == PlanStep::Kind::kIf     ? step.else_end
                       : step.kind == PlanStep::Kind::kLoop ? step.body_end
                                                            : 0;
    if (end > s)
      return unimplemented(describe_first() + ": its output shape depends on tensor values computed inside " +
                           graph.node(step.node).describe() + "; the Vulkan backend sizes such shapes only between "
                           "the steps of the main graph");
  }
  sig.end_step = s;
  sig.boundary.step = s;

  const std::vector<bool> written = planner::roots_written_in(plan, graph, 0, s);
  // Whether `v` is known on the host already, or computed on the device
  // before step s (then it can be read back there).
  auto known = [&](ir::ValueId v) {
    return graph.value(v).is_constant() || sig.known_values.count(v) ||
           (sig.host_values.count(v) && !waiting[static_cast<size_t>(v)]);  // not a placeholder
  };
  auto computed = [&](ir::ValueId v) {
    auto it = plan.value_tensor.find(v);
    if (it == plan.value_tensor.end()) return false;
    const TensorId r = root_of(plan, it->second);
    return std::count(plan.inputs.begin(), plan.inputs.end(), r) > 0 || written[static_cast<size_t>(r)];
  };
  if (s < plan.steps.size() && plan.steps[s].kind == PlanStep::Kind::kFallback) {
    const ir::Node& node = graph.node(plan.steps[s].node);
    sig.boundary.host_step = std::none_of(node.inputs.begin(), node.inputs.end(), [&](ir::ValueId v) {
      return v != ir::kNoValue && waiting[static_cast<size_t>(v)];
    });
  }
  // Every node that waits only on values it reads as shape data, all of
  // them computed by now: read those back.
  for (ir::NodeId nid : sig.pending) {
    const ir::Node& node = graph.node(nid);
    if (sig.boundary.host_step && nid == plan.steps[s].node) continue;
    const ops::OpSchema* schema = ops::OpRegistry::builtin().find(node.domain, node.op);
    // A device If with a branch-dependent shape waits on its condition.
    const bool device_if =
        s < plan.steps.size() && plan.steps[s].kind == PlanStep::Kind::kIf && plan.steps[s].node == nid;
    const std::vector<int> if_inputs = {0};
    // A device Loop waits on its trip count and initial condition.
    const bool device_loop = std::any_of(plan.steps.begin(), plan.steps.end(), [&](const PlanStep& p) {
      return p.kind == PlanStep::Kind::kLoop && p.node == nid;
    });
    const std::vector<int> loop_inputs = {0, 1};
    const std::vector<int>* value_inputs = device_if     ? &if_inputs
                                           : device_loop ? &loop_inputs
                                           : schema      ? &schema->value_inputs
                                                         : nullptr;
    if (!value_inputs || value_inputs->empty()) continue;
    bool ready = true;
    for (ir::ValueId v : node.inputs) ready = ready && (v == ir::kNoValue || !waiting[static_cast<size_t>(v)]);
    std::vector<ir::ValueId> reads;
    for (int i : *value_inputs) {
      if (static_cast<size_t>(i) >= node.inputs.size()) continue;
      const ir::ValueId v = node.inputs[static_cast<size_t>(i)];
      if (v == ir::kNoValue || known(v)) continue;
      ready = ready && computed(v);
      reads.push_back(v);
    }
    if (!ready) continue;
    for (ir::ValueId v : reads)
      if (std::find(sig.boundary.read_back.begin(), sig.boundary.read_back.end(), v) == sig.boundary.read_back.end())
        sig.boundary.read_back.push_back(v);
  }
  if (!sig.boundary.host_step && sig.boundary.read_back.empty())
    return unimplemented(describe_first() +
                         ": its output shape depends on tensor values the Vulkan backend cannot materialize "
                         "(neither a host step nor shape inputs computed on the device)");
  return ok_status();
}

StatusOr<Signature*> VulkanModel::Impl::cross_boundary(Signature& sig, const std::vector<InputSpec>& inputs,
                                                       const DeviceBindings& bindings, bool* created,
                                                       VulkanRunStats& ran) {
  *created = false;
  const Boundary& b = sig.boundary;
  std::string key;
  std::vector<Tensor> host_outputs;
  if (b.host_step) {
    KILN_ASSIGN_OR_RETURN(host_outputs, fallback_outputs(sig, b.step));
    ++ran.fallbacks;
    key += host_outputs_key(host_outputs);
  }
  // Only the few elements of the shape inputs come back (a download of each).
  std::map<ir::ValueId, Tensor> read;
  for (ir::ValueId v : b.read_back) {
    KILN_ASSIGN_OR_RETURN(Tensor t, read_tensor(sig, plan.value_tensor.at(v)));
    key += read_back_key(v, t);
    read.emplace(v, std::move(t));
  }
  const ir::Node* node = b.host_step ? &graph.node(plan.steps[b.step].node) : nullptr;
  Signature* next = nullptr;
  if (auto it = sig.continuations.find(key); it != sig.continuations.end()) {
    next = it->second.get();
  } else {
    auto c = std::make_unique<Signature>();
    c->parent = &sig;
    c->depth = sig.depth + 1;
    c->first_step = b.host_step ? b.step + 1 : b.step;
    c->known_values = sig.known_values;
    c->known_shapes = sig.known_shapes;
    for (auto& [v, t] : read) c->known_values.insert_or_assign(v, std::move(t));
    if (node)
      for (size_t i = 0; i < node->outputs.size(); ++i)
        if (node->outputs[i] != ir::kNoValue)
          c->known_shapes[node->outputs[i]] = {host_outputs[i].dtype(), host_outputs[i].shape()};
    KILN_RETURN_IF_ERROR(evaluate_shapes(inputs, *c));
    KILN_RETURN_IF_ERROR(find_boundary(*c));
    if (c->first_step == sig.first_step && c->pending == sig.pending)
      return internal_error("a sub-graph boundary at step " + std::to_string(b.step) + " materialized nothing");
    Status made = resolve_bindings(bindings, *c);
    if (made.ok()) made = place_phase(*c);
    if (made.ok()) made = record(*c);
    if (!made.ok()) {
      release(*c);  // its memory goes with it
      return made;
    }
    *created = true;
    next = c.get();
    sig.continuations.emplace(key, std::move(c));
    evict_signatures(sig.continuations, next);
  }
  // Before the host step's outputs go in: another continuation of this
  // depth may have run in the memory since this one last did.
  if (!owns_memory(*next)) KILN_RETURN_IF_ERROR(restore_arena(*next));
  if (node)
    for (size_t i = 0; i < node->outputs.size(); ++i) {
      if (node->outputs[i] == ir::kNoValue) continue;
      const TensorId id = plan.value_tensor.at(node->outputs[i]);
      if (host_outputs[i].shape() != next->shapes[static_cast<size_t>(id)])
        return internal_error(node->describe() + ": host step produced another shape than its continuation planned");
      KILN_RETURN_IF_ERROR(write_tensor(*next, id, host_outputs[i]));
    }
  return next;
}

Status VulkanModel::Impl::place_phase(Signature& sig) {
  const size_t n = plan.tensors.size();
  const size_t parent_end = sig.parent ? sig.parent->end_step : 0;
  const std::vector<bool> before = planner::roots_written_in(plan, graph, 0, parent_end);
  const std::vector<bool> until_end = planner::roots_written_in(plan, graph, 0, sig.end_step);
  const std::vector<bool> after = planner::roots_written_in(plan, graph, sig.end_step, plan.steps.size());
  // Inherited: the parents wrote it (or it is an input, written before the
  // run): it stays where they put it. Later: only steps past this
  // signature's boundary write it: a continuation places it.
  std::vector<bool> inherited(n, false), later(n, false);
  for (size_t t = 0; t < n; ++t) {
    const PlanTensor& pt = plan.tensors[t];
    if (root_of(plan, static_cast<TensorId>(t)) != static_cast<TensorId>(t) || pt.constant.defined() ||
        pt.origin == PlanTensor::Origin::kState || pt.host_resident)
      continue;  // (constants and state: the model's memory, the same for all)
    if (sig.external.count(static_cast<TensorId>(t))) continue;  // the host's buffer, the same for all
    const bool input = std::count(plan.inputs.begin(), plan.inputs.end(), static_cast<TensorId>(t)) > 0;
    inherited[t] = sig.parent && (before[t] || input);
    later[t] = !input && !until_end[t] && after[t];
  }
  // place_tensors (planner/memory/arena.h's placement) sizes every tensor of the
  // plan: those this signature does not own are made one element there
  // (their slots go unused); inherited ones then point at the parents'
  // memory.
  std::map<size_t, Shape> saved;
  for (size_t t = 0; t < n; ++t)
    if (inherited[t] || later[t]) {
      saved[t] = sig.shapes[t];
      sig.shapes[t].assign(sig.shapes[t].size(), 1);
    }
  const Status placed = place_tensors(sig);
  for (auto& [t, shape] : saved) sig.shapes[t] = std::move(shape);
  KILN_RETURN_IF_ERROR(placed);
  if (!sig.parent) return ok_status();
  for (size_t t = 0; t < n; ++t) {
    if (!inherited[t]) continue;
    Placement p = sig.parent->place[t];
    if (p.resource >= 0 && p.resource < kInheritedResource) p.resource += kInheritedResource;
    sig.place[t] = p;
  }
  for (size_t t = 0; t < n; ++t) {
    const size_t r = static_cast<size_t>(root_of(plan, static_cast<TensorId>(t)));
    if (r == t) continue;
    if (!inherited[r]) continue;
    Placement p = sig.place[r];
    p.size = std::min<VkDeviceSize>(p.size, device_bytes(plan.tensors[t].layout, sig.shapes[t]));
    sig.place[t] = p;
  }
  return ok_status();
}

}  // namespace kiln::runtime

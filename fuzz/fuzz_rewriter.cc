// libFuzzer target: the plugin-facing rewriter. A pass written against the
// plugin ABI (include/kiln/kiln_plugin.h) turns the input bytes into a
// sequence of host calls — reads, staged edits with ids in and out of range,
// attribute and annotation changes, constant data, dims from expressions,
// node evaluation and dims inference — on one of a few small graphs, then
// returns success or an error. The host must answer every call without
// crashing and commit only a graph that verifies (host_api.h); what the
// ABI leaves to the plugin (valid pointers, arrays as long as their counts,
// NUL-terminated strings) is respected here, everything else is fuzzed.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "engine/ir/text.h"
#include "engine/ir/verifier.h"
#include "engine/registry/host_api.h"

namespace {

// The graphs the edits start from: a chain with constants, shape data and
// symbolic dims, and one with an If's sub-graphs.
constexpr const char* kGraphs[] = {
    R"(graph @chain opset 17 {
  input %x : f32[1,3,h,w]
  const %w : f32[3] = dense<[0.5,1.5,2.5]>
  const %s : i64[2] = dense<[1,-1]>
  %a = Relu(%x) : f32[1,3,h,w]
  %m = Mul(%a, %w) : f32[1,3,h,w]
  %r = Reshape(%m, %s) : f32[1,((3*h)*w)]
  %y = Softmax(%r) {axis = -1} : f32[1,((3*h)*w)]
  return %y
})",
    R"(graph @conv opset 17 {
  input %x : f32[1,2,4,4]
  const %k : f32[2,2,1,1] = dense<[1.0,0.0,0.0,1.0]>
  const %one : f32[] = dense<[1.0]>
  const %two : f32[] = dense<[2.0]>
  %sum = Add(%one, %two) : f32[]
  %c = Conv(%x, %k) {kernel_shape = [1,1], pads = [0,0,0,0]} : f32[1,2,4,4]
  %y = Add(%c, %sum) : f32[1,2,4,4]
  %t = Transpose(%y) {perm = [0,2,3,1]} : f32[1,4,4,2]
  return %t
})",
    R"(graph @branch opset 17 {
  input %c : bool[]
  input %x : f32[n]
  %a = Relu(%x) : f32[n]
  %y = If(%c) {else_branch = region {
    %e = Neg(%a) : f32[n]
    return %e
  }, then_branch = region {
    %t = Exp(%a) : f32[n]
    return %t
  }} : f32[n]
  return %y
})",
};

const std::vector<std::unique_ptr<kiln::ir::Graph>>& base_graphs() {
  static auto* graphs = [] {
    auto* out = new std::vector<std::unique_ptr<kiln::ir::Graph>>;
    for (const char* text : kGraphs) {
      auto g = kiln::ir::parse_graph(text);
      if (!g.ok()) __builtin_trap();  // a broken fixture, not a finding
      out->push_back(std::move(*g));
    }
    return out;
  }();
  return *graphs;
}

const char* const kOps[] = {"Relu", "Add", "Mul", "Neg", "Reshape", "Concat", "Identity", "Conv", "If",
                            "Transpose", "Softmax", "Cast", "Shape", "Gather", "Bogus"};
const char* const kKeys[] = {"axis", "perm", "pads", "kernel_shape", "to", "kiln.fusion_group",
                             "kiln.layout", "kiln.kernel", "then_branch", ""};

// The pass: one edit script, consumed from the fuzz input.
struct Script {
  FuzzedDataProvider* in;
  std::vector<kiln_value_id_t> values;  // ids seen so far (valid or not)
  std::vector<kiln_node_id_t> nodes;

  int32_t pick_id(const std::vector<int32_t>& known) {
    if (!known.empty() && in->ConsumeBool()) return known[in->ConsumeIntegralInRange<size_t>(0, known.size() - 1)];
    return in->ConsumeIntegralInRange<int32_t>(-2, 40);
  }
  kiln_value_id_t value() { return pick_id(values); }
  kiln_node_id_t node() { return pick_id(nodes); }
  kiln_region_id_t region() { return in->ConsumeIntegralInRange<int32_t>(-1, 3); }
  std::string text(size_t max = 12) { return in->ConsumeRandomLengthString(max); }
  const char* key(std::string& storage) {
    if (in->ConsumeBool()) return kKeys[in->ConsumeIntegralInRange<size_t>(0, std::size(kKeys) - 1)];
    storage = text();
    return storage.c_str();
  }
  int32_t dtype() { return in->ConsumeIntegralInRange<int32_t>(-1, 14); }

  void collect(const kiln_host_api_t* h, const kiln_graph_t* g) {
    for (kiln_region_id_t r = 0; r < static_cast<kiln_region_id_t>(h->region_count(g)); ++r) {
      for (size_t i = 0; i < h->region_input_count(g, r); ++i) values.push_back(h->region_input_at(g, r, i));
      for (size_t i = 0; i < h->region_node_count(g, r); ++i) {
        kiln_node_id_t n = h->region_node_at(g, r, i);
        nodes.push_back(n);
        kiln_node_info_t info{sizeof(info)};
        if (!h->node_info(g, n, &info)) continue;
        for (size_t k = 0; k < info.input_count; ++k) values.push_back(h->node_input(g, n, k));
        for (size_t k = 0; k < info.output_count; ++k) values.push_back(h->node_output(g, n, k));
      }
    }
  }

  void read(const kiln_host_api_t* h, const kiln_graph_t* g) {
    std::string storage;
    kiln_node_id_t n = node();
    kiln_value_id_t v = value();
    switch (in->ConsumeIntegralInRange<int>(0, 9)) {
      case 0: { kiln_node_info_t info{sizeof(info)}; (void)h->node_info(g, n, &info); break; }
      case 1: { kiln_value_info_t info{sizeof(info)}; (void)h->value_info(g, v, &info); break; }
      case 2: { kiln_dim_t d{sizeof(d)}; (void)h->value_dim(g, v, in->ConsumeIntegralInRange<size_t>(0, 6), &d); break; }
      case 3: { size_t bytes = 0; (void)h->value_constant(g, v, &bytes); break; }
      case 4: {
        int64_t out[8];
        (void)h->attr_kind(g, n, key(storage));
        (void)h->attr_ints(g, n, key(storage), out, in->ConsumeIntegralInRange<size_t>(0, 8));
        break;
      }
      case 5: { (void)h->attr_name_at(g, n, in->ConsumeIntegralInRange<size_t>(0, 8)); break; }
      case 6: {
        kiln_node_id_t user = 0;
        size_t index = 0;
        (void)h->value_use_count(g, v);
        (void)h->value_use_at(g, v, in->ConsumeIntegralInRange<size_t>(0, 4), &user, &index);
        break;
      }
      case 7: { (void)h->node_annotation(g, n, key(storage)); (void)h->value_annotation(g, v, key(storage)); break; }
      case 8: { (void)h->attr_graph(g, n, key(storage)); (void)h->attr_string(g, n, key(storage)); break; }
      default: infer_dims(h, g, n); break;
    }
  }

  // infer_node_dims with per-input ranks, dims and shape values, each
  // array as long as the node's input count (the ABI's contract).
  void infer_dims(const kiln_host_api_t* h, const kiln_graph_t* g, kiln_node_id_t n) {
    kiln_node_info_t info{sizeof(info)};
    if (!h->node_info(g, n, &info) || info.input_count > 16) return;
    std::vector<int32_t> ranks(info.input_count);
    std::vector<std::vector<std::string>> dim_text(info.input_count), value_text(info.input_count);
    std::vector<std::vector<const char*>> dims(info.input_count), vals(info.input_count);
    std::vector<const char* const*> dim_ptrs(info.input_count), val_ptrs(info.input_count);
    for (size_t i = 0; i < info.input_count; ++i) {
      if (in->ConsumeBool()) {
        // Shape data: rank 0 (one element) or rank 1 with its element count
        // as the dim, and exactly that many element texts.
        ranks[i] = in->ConsumeIntegralInRange<int32_t>(0, 1);
        const int count = ranks[i] == 0 ? 1 : in->ConsumeIntegralInRange<int>(0, 4);
        if (ranks[i] == 1) dim_text[i].push_back(std::to_string(count));
        for (int k = 0; k < count; ++k) value_text[i].push_back(text(8));
      } else {
        ranks[i] = in->ConsumeIntegralInRange<int32_t>(-1, 4);
        for (int32_t k = 0; k < ranks[i]; ++k) dim_text[i].push_back(text(8));
      }
      for (const std::string& s : dim_text[i]) dims[i].push_back(s.c_str());
      for (const std::string& s : value_text[i]) vals[i].push_back(s.c_str());
      dim_ptrs[i] = dims[i].data();
      val_ptrs[i] = value_text[i].empty() ? nullptr : vals[i].data();
    }
    int32_t out_ranks[4];
    const char* const* out_dims[4];
    (void)h->infer_node_dims(g, n, ranks.data(), dim_ptrs.data(), val_ptrs.data(), out_ranks, out_dims,
                             in->ConsumeIntegralInRange<size_t>(0, 4));
  }

  void edit(const kiln_host_api_t* h, kiln_rewriter_t* rw) {
    std::string s1, s2;
    switch (in->ConsumeIntegralInRange<int>(0, 17)) {
      case 0: values.push_back(h->rw_add_value(rw, text().c_str(), dtype(), region())); break;
      case 1: {
        std::vector<int64_t> shape(in->ConsumeIntegralInRange<size_t>(0, 4));
        for (int64_t& d : shape) d = in->ConsumeBool() ? in->ConsumeIntegralInRange<int64_t>(-1, 5) : in->ConsumeIntegral<int64_t>();
        const std::vector<uint8_t> data = in->ConsumeBytes<uint8_t>(in->ConsumeIntegralInRange<size_t>(0, 64));
        values.push_back(h->rw_add_constant(rw, text().c_str(), dtype(), shape.data(), shape.size(), data.data(),
                                            data.size(), region()));
        break;
      }
      case 2: {
        std::vector<kiln_value_id_t> ins(in->ConsumeIntegralInRange<size_t>(0, 3)), outs(in->ConsumeIntegralInRange<size_t>(0, 2));
        for (auto& v : ins) v = value();
        for (auto& v : outs) v = value();
        const char* op = kOps[in->ConsumeIntegralInRange<size_t>(0, std::size(kOps) - 1)];
        const char* domain = in->ConsumeBool() ? "" : "kiln";
        nodes.push_back(h->rw_add_node(rw, op, domain, text().c_str(), ins.data(), ins.size(), outs.data(),
                                       outs.size(), region(), node()));
        break;
      }
      case 3: (void)h->rw_erase_node(rw, node()); break;
      case 4: (void)h->rw_replace_uses(rw, value(), value()); break;
      case 5: (void)h->rw_set_input(rw, node(), in->ConsumeIntegralInRange<size_t>(0, 4), value()); break;
      case 6: (void)h->rw_set_attr_int(rw, node(), key(s1), in->ConsumeIntegral<int64_t>()); break;
      case 7: (void)h->rw_set_attr_float(rw, node(), key(s1), in->ConsumeFloatingPoint<float>()); break;
      case 8: (void)h->rw_set_attr_string(rw, node(), key(s1), text().c_str()); break;
      case 9: {
        std::vector<int64_t> v(in->ConsumeIntegralInRange<size_t>(0, 6));
        for (int64_t& x : v) x = in->ConsumeIntegralInRange<int64_t>(-3, 8);
        (void)h->rw_set_attr_ints(rw, node(), key(s1), v.data(), v.size());
        break;
      }
      case 10: {
        std::vector<float> v(in->ConsumeIntegralInRange<size_t>(0, 4));
        for (float& x : v) x = in->ConsumeFloatingPoint<float>();
        (void)h->rw_set_attr_floats(rw, node(), key(s1), v.data(), v.size());
        break;
      }
      case 11: (void)h->rw_remove_attr(rw, node(), key(s1)); break;
      case 12: (void)h->rw_annotate_node(rw, node(), key(s1), text().c_str()); break;
      case 13: (void)h->rw_annotate_value(rw, value(), key(s1), text().c_str()); break;
      case 14: {
        std::vector<std::string> exprs(in->ConsumeIntegralInRange<size_t>(0, 4));
        std::vector<const char*> ptrs;
        for (std::string& e : exprs) ptrs.push_back((e = text(30)).c_str());
        (void)h->rw_set_value_dims(rw, value(), ptrs.data(), ptrs.size());
        break;
      }
      case 15: {
        kiln_value_id_t outs[4];
        (void)h->evaluate_node(rw, node(), outs, in->ConsumeIntegralInRange<size_t>(0, 4));
        break;
      }
      case 16: (void)h->rw_remove_node_annotation(rw, node(), key(s1)); (void)h->rw_remove_value_annotation(rw, value(), key(s2)); break;
      default: h->rw_add_statistic(rw, key(s1), in->ConsumeIntegral<int64_t>()); break;
    }
  }
};

kiln_plugin_status_t* run_script(void* state, const kiln_host_api_t* host, const kiln_graph_t* graph,
                                 kiln_rewriter_t* rw) {
  Script& script = *static_cast<Script*>(state);
  script.collect(host, graph);
  for (int step = 0; step < 64 && script.in->remaining_bytes() > 0; ++step) {
    if (script.in->ConsumeIntegralInRange<int>(0, 3) == 0)
      script.read(host, graph);
    else
      script.edit(host, rw);
  }
  // Mostly success, so commits (and their checks) happen.
  if (script.in->ConsumeIntegralInRange<int>(0, 7) == 0) return host->make_status(KILN_PLUGIN_INTERNAL, "fuzz");
  return nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const auto& graphs = base_graphs();
  kiln::ir::Graph graph = *graphs[in.ConsumeIntegralInRange<size_t>(0, graphs.size() - 1)];
  Script script{&in};
  kiln_pass_t pass{sizeof(pass)};
  pass.name = "fuzz.edits";
  pass.run = run_script;
  pass.pass_state = &script;
  pass.required = 1;
  auto result = kiln::registry::run_pass(pass, graph, {});
  // A commit leaves a graph that verifies and survives printing and parsing.
  // On a failure, what failed goes to stderr first (the crash artifact
  // alone does not say).
  if (result.ok()) {
    if (const kiln::Status v = kiln::ir::verify_graph(graph); !v.ok()) {
      std::fprintf(stderr, "fuzz_rewriter: the committed graph does not verify: %s\n", v.to_string().c_str());
      __builtin_trap();
    }
    const std::string text = kiln::ir::print_graph(graph);
    if (auto parsed = kiln::ir::parse_graph(text); !parsed.ok()) {
      std::fprintf(stderr, "fuzz_rewriter: the printed graph does not parse back: %s\n%s\n",
                   parsed.status().to_string().c_str(), text.c_str());
      __builtin_trap();
    }
  }
  return 0;
}

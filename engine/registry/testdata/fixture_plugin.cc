// Fixture plugins for the ABI tests, one source built into several small
// shared libraries whose descriptors are wrong in one way each (FIXTURE_KIND).
#include <stdexcept>

#include "kiln/kiln_plugin.hpp"

namespace {

using kiln::plugin::GraphView;
using kiln::plugin::Rewriter;

// Succeeds without edits.
class Noop : public kiln::plugin::Pass {
 public:
  void run(GraphView&, Rewriter& rw) override { rw.add_statistic("runs", 1); }
};

// Stages an edit, then fails: the edit must not reach the graph.
class Fail : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    for (kiln_node_id_t n : g.nodes()) rw.set_attr_int(n, "touched", 1);
    throw kiln::plugin::Error("the fixture fails on purpose", KILN_PLUGIN_FAILED_PRECONDITION);
  }
};

// Erases every node while their outputs are still used: an invalid graph.
class Invalid : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    for (kiln_node_id_t n : g.nodes()) rw.erase_node(n);
  }
};

// Throws a plain C++ exception.
class Throw : public kiln::plugin::Pass {
 public:
  void run(GraphView&, Rewriter&) override { throw std::runtime_error("fixture exploded"); }
};

// A valid rewrite: routes each graph output through a new Identity node.
class AddIdentity : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    for (kiln_value_id_t out : g.region_outputs()) {
      auto info = g.value(out);
      kiln_value_id_t copy = rw.add_value(info->name + "_copy", info->dtype);
      rw.replace_uses(out, copy);
      rw.add_node("Identity", {out}, {copy}, "copy_" + info->name);
      rw.annotate_node(g.value(copy)->producer, "fixture", "yes");
      rw.add_statistic("identities-added", 1);
    }
  }
};

// Makes a valid edit, then a refused one whose result it ignores (through the
// raw C table): the host must not commit half of what the pass meant.
class IgnoresRefusal : public kiln::plugin::Pass {
 public:
  void run(GraphView& g, Rewriter& rw) override {
    for (kiln_node_id_t n : g.nodes()) rw.set_attr_int(n, "touched", 1);
    (void)g.host()->rw_erase_node(rw.raw(), 123456);
  }
};

Noop noop;
IgnoresRefusal ignores_refusal;
Fail fail;
Invalid invalid;
Throw thrower;
AddIdentity add_identity;
Fail fail_optional;

const kiln_pass_t noop_pass = kiln::plugin::make_pass(noop, FIXTURE_PREFIX "noop", "does nothing");
const kiln_pass_t fail_pass = kiln::plugin::make_pass(fail, FIXTURE_PREFIX "fail", "fails", KILN_FACT_SHAPES, 0, true);
const kiln_pass_t fail_optional_pass =
    kiln::plugin::make_pass(fail_optional, FIXTURE_PREFIX "fail-optional", "fails, optional");
const kiln_pass_t invalid_pass =
    kiln::plugin::make_pass(invalid, FIXTURE_PREFIX "invalid", "breaks the graph", KILN_FACT_SHAPES, 0, true);
const kiln_pass_t throw_pass =
    kiln::plugin::make_pass(thrower, FIXTURE_PREFIX "throw", "throws", KILN_FACT_SHAPES, 0, true);
const kiln_pass_t add_identity_pass = kiln::plugin::make_pass(add_identity, FIXTURE_PREFIX "add-identity",
                                                              "adds Identity nodes", KILN_FACT_SHAPES, 0, true);
const kiln_pass_t needs_layouts_pass = kiln::plugin::make_pass(noop, FIXTURE_PREFIX "needs-layouts", "needs layouts",
                                                               KILN_FACT_LAYOUTS, 0, true);

const kiln_pass_t ignores_refusal_pass = kiln::plugin::make_pass(
    ignores_refusal, FIXTURE_PREFIX "ignores-refusal", "ignores a refused edit", KILN_FACT_SHAPES, 0, true);

const kiln_pass_t* const passes[] = {&noop_pass,         &fail_pass,          &fail_optional_pass,
                                     &invalid_pass,      &throw_pass,         &add_identity_pass,
                                     &needs_layouts_pass, &ignores_refusal_pass};

kiln_plugin_t make_descriptor() {
  kiln_plugin_t d = kiln::plugin::make_plugin(FIXTURE_NAME, "0.1", passes, sizeof(passes) / sizeof(passes[0]));
#if FIXTURE_KIND == 1
  d.abi_version = (2u << 16) | 0u;  // another major
#elif FIXTURE_KIND == 2
  d.abi_version = (KILN_PLUGIN_ABI_MAJOR << 16) | (KILN_PLUGIN_ABI_MINOR + 1u);  // newer minor
#elif FIXTURE_KIND == 3
  d.struct_size = 8;  // older than any released layout
#endif
  return d;
}

const kiln_plugin_t descriptor = make_descriptor();

}  // namespace

#if FIXTURE_KIND == 4
// No kiln_plugin_query at all: the host must refuse with dlerror's message.
extern "C" KILN_PLUGIN_EXPORT const kiln_plugin_t* kiln_plugin_query_misspelled(uint32_t) { return &descriptor; }
#elif FIXTURE_KIND == 5
// Speaks nothing the host accepts.
extern "C" KILN_PLUGIN_EXPORT const kiln_plugin_t* kiln_plugin_query(uint32_t) { return nullptr; }
#else
KILN_PLUGIN_DEFINE_QUERY(kiln_plugin_query, descriptor)
#endif

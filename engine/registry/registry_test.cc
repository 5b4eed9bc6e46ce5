// ABI tests: the loader's refusals and the pass runner's guarantees, driven by
// the fixture plugins in testdata/ (built as shared libraries).
#include <dlfcn.h>
#include <sys/stat.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/text.h"
#include "engine/ops/shape_inference.h"
#include "engine/registry/pass_manager.h"
#include "engine/registry/plugin_loader.h"
#include "kiln/kiln_plugin.hpp"

namespace kiln::registry {
namespace {

constexpr const char* kGraph = R"(graph @g opset 17 {
  input %x : f32[2,3]
  const %w : f32[3] = dense<[1.0,2.0,3.0]>
  %y = Mul(%x, %w) : f32[2,3]
  %z = Relu(%y) : f32[2,3]
  return %z
}
)";

std::unique_ptr<ir::Graph> parse(const char* text) {
  auto g = ir::parse_graph(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? std::move(*g) : nullptr;
}

TEST(PluginLoader, GoodPluginLoads) {
  PluginRegistry reg;
  Status s = reg.load_file(KILN_FIXTURE_GOOD);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(reg.plugins().size(), 1u);
  EXPECT_EQ(reg.plugins()[0].name, "test.good");
  EXPECT_EQ(reg.plugins()[0].version, "0.1");
  EXPECT_NE(reg.find_pass("test.noop"), nullptr);
  EXPECT_EQ(reg.find_pass("test.nope"), nullptr);
  EXPECT_EQ(reg.passes().size(), 8u);
}

TEST(PluginLoader, WrongMajorRefused) {
  PluginRegistry reg;
  Status s = reg.load_file(KILN_FIXTURE_MAJOR);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("speaks ABI 2.0, this Kiln speaks 1." + std::to_string(KILN_PLUGIN_ABI_MINOR)),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(reg.plugins().empty());
}

TEST(PluginLoader, NewerMinorRefused) {
  PluginRegistry reg;
  Status s = reg.load_file(KILN_FIXTURE_MINOR);
  ASSERT_FALSE(s.ok());
  const std::string want = "speaks ABI 1." + std::to_string(KILN_PLUGIN_ABI_MINOR + 1) + ", this Kiln speaks 1." +
                           std::to_string(KILN_PLUGIN_ABI_MINOR);
  EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
}

TEST(PluginLoader, ShortStructRefused) {
  PluginRegistry reg;
  Status s = reg.load_file(KILN_FIXTURE_SHORT);
  ASSERT_FALSE(s.ok());
  const std::string want = "descriptor struct_size 8 is smaller than the 1.0 layout " + std::to_string(sizeof(kiln_plugin_t));
  EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
}

TEST(PluginLoader, MissingSymbolRefused) {
  PluginRegistry reg;
  Status s = reg.load_file(KILN_FIXTURE_NOSYM);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exports no kiln_plugin_query"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("undefined symbol"), std::string::npos) << s.message();
}

TEST(PluginLoader, NullDescriptorRefused) {
  PluginRegistry reg;
  Status s = reg.load_file(KILN_FIXTURE_NULL);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("returned NULL"), std::string::npos) << s.message();
}

TEST(PluginLoader, MissingFileRefused) {
  PluginRegistry reg;
  Status s = reg.load_file("/nonexistent/libnothing.so");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent/libnothing.so"), std::string::npos);
}

// dlopen of a FIFO would block and of a device read without end: refused
// before dlopen, naming what the path is.
TEST(PluginLoader, FilesThatAreNotRegularRefused) {
  const std::string fifo = ::testing::TempDir() + "/kiln_registry_test_fifo.so";
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  PluginRegistry reg;
  for (const auto& [path, kind] : {std::pair{fifo, "a FIFO"}, std::pair{std::string("/dev/zero"), "a character device"},
                                   std::pair{::testing::TempDir(), "a directory"}}) {
    Status s = reg.load_file(path);
    ASSERT_FALSE(s.ok()) << path;
    EXPECT_NE(s.message().find("plugin '" + path + "' is " + kind + ", not a regular file"), std::string::npos)
        << s.message();
  }
  std::remove(fifo.c_str());
}

TEST(PluginLoader, DuplicateNameRefused) {
  PluginRegistry reg;
  ASSERT_TRUE(reg.load_file(KILN_FIXTURE_GOOD).ok());
  Status s = reg.load_file(KILN_FIXTURE_ZDUP);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("a plugin of that name is already loaded"), std::string::npos) << s.message();
  EXPECT_EQ(reg.plugins().size(), 1u);
}

TEST(PluginLoader, SearchPathLoadsGoodAndReportsBad) {
  PluginRegistry reg;
  Status s = reg.load_search_path(std::string(KILN_FIXTURE_DIR) + "::/nonexistent-dir");
  ASSERT_FALSE(s.ok());
  // The good fixture loads; each broken one is named in the error.
  EXPECT_NE(reg.find_pass("test.noop"), nullptr);
  EXPECT_NE(s.message().find("speaks ABI 2.0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("/nonexistent-dir"), std::string::npos) << s.message();
}

// The installed plugin directory: missing is fine (a build tree), and a file
// of a plugin that is also linked in is skipped rather than refused.
TEST(PluginLoader, InstalledDirectorySkipsLinkedInCopies) {
  PluginRegistry reg;
  EXPECT_TRUE(reg.load_installed("/nonexistent-dir").ok());
  EXPECT_TRUE(reg.load_installed("").ok());
  void* handle = dlopen(KILN_FIXTURE_GOOD, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto query = reinterpret_cast<kiln_plugin_query_fn>(dlsym(handle, "kiln_plugin_query"));
  ASSERT_TRUE(reg.load_static(query, "static:test.good").ok());
  // The fixture directory holds test.good twice (good, zdup) and broken ones.
  Status s = reg.load_installed(KILN_FIXTURE_DIR);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().find("already loaded"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("speaks ABI 2.0"), std::string::npos) << s.message();
  ASSERT_EQ(reg.plugins().size(), 1u);
  EXPECT_EQ(reg.plugins()[0].origin, "static:test.good");
  // A plain search path still refuses the duplicate.
  EXPECT_NE(reg.load_search_path(KILN_FIXTURE_DIR).message().find("already loaded"), std::string::npos);
  EXPECT_EQ(reg.plugins().size(), 1u);
  dlclose(handle);
}

TEST(PluginLoader, InstalledDirectoryIsBesideTheExecutable) {
  const std::string dir = PluginRegistry::installed_plugin_dir();
  // This test binary is not installed, so the directory does not exist and
  // the path keeps its relative part.
  EXPECT_NE(dir.find(KILN_PLUGIN_DIR_FROM_BINDIR_FOR_TEST), std::string::npos) << dir;
  EXPECT_EQ(dir[0], '/') << dir;
}

class PassRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status s = reg_.load_file(KILN_FIXTURE_GOOD);
    ASSERT_TRUE(s.ok()) << s.message();
    graph_ = parse(kGraph);
    ASSERT_NE(graph_, nullptr);
    before_ = ir::print_graph(*graph_);
    options_.log = [this](kiln_log_level_t level, const std::string& m) {
      if (level >= KILN_LOG_WARNING) warnings_.push_back(m);
    };
  }
  Status run(std::vector<std::string> passes) {
    options_.passes = std::move(passes);
    return pm_.run(*graph_, options_);
  }
  PluginRegistry reg_;
  PassManager pm_{reg_};
  PipelineOptions options_;
  std::unique_ptr<ir::Graph> graph_;
  std::string before_;
  std::vector<std::string> warnings_;
};

TEST_F(PassRunTest, ValidRewriteCommits) {
  Status s = run({"test.noop", "test.add-identity"});
  ASSERT_TRUE(s.ok()) << s.message();
  const std::string after = ir::print_graph(*graph_);
  // The annotation the pass attached is part of the text form too.
  EXPECT_NE(after.find("%z_copy = Identity(%z) #{fixture = \"yes\"} : f32[2,3]"), std::string::npos) << after;
  EXPECT_NE(after.find("return %z_copy"), std::string::npos) << after;
  ASSERT_EQ(pm_.records().size(), 2u);
  EXPECT_TRUE(pm_.records()[1].committed);
  EXPECT_EQ(pm_.records()[0].statistics.at("runs"), 1);
  EXPECT_EQ(pm_.records()[1].statistics.at("identities-added"), 1);
  const ir::Node& id_node = graph_->node(graph_->value(graph_->main().outputs[0]).producer);
  EXPECT_EQ(id_node.annotations.at("fixture"), "yes");
}

TEST_F(PassRunTest, FailingRequiredPassLeavesGraphAndNamesPass) {
  Status s = run({"test.fail"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("pass 'test.fail' failed: the fixture fails on purpose"), std::string::npos)
      << s.message();
  EXPECT_EQ(ir::print_graph(*graph_), before_);
}

TEST_F(PassRunTest, FailingOptionalPassIsSkippedWithWarning) {
  Status s = run({"test.fail-optional", "test.add-identity"});
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("optional pass 'test.fail-optional' skipped"), std::string::npos) << warnings_[0];
  EXPECT_TRUE(pm_.records()[0].skipped);
  EXPECT_TRUE(pm_.records()[1].committed);
  EXPECT_EQ(ir::print_graph(*graph_).find("touched"), std::string::npos);
}

TEST_F(PassRunTest, InvalidGraphIsDiscarded) {
  Status s = run({"test.invalid"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("pass 'test.invalid' produced an invalid graph"), std::string::npos) << s.message();
  EXPECT_EQ(ir::print_graph(*graph_), before_);
}

TEST_F(PassRunTest, ThrowingPassIsContained) {
  Status s = run({"test.throw"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("pass 'test.throw' failed: uncaught exception: fixture exploded"), std::string::npos)
      << s.message();
  EXPECT_EQ(ir::print_graph(*graph_), before_);
}

TEST_F(PassRunTest, IgnoredRefusedEditBlocksCommit) {
  Status s = run({"test.ignores-refusal"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("pass 'test.ignores-refusal' made an invalid edit, nothing was applied: erase_node: "
                             "123456 is not a live node"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(ir::print_graph(*graph_), before_);
}

TEST(HostApi, TableIsVersionedAndComplete) {
  const kiln_host_api_t* api = host_api();
  EXPECT_EQ(api->struct_size, sizeof(kiln_host_api_t));
  EXPECT_EQ(api->abi_version, KILN_PLUGIN_ABI_VERSION);
  EXPECT_TRUE(KILN_PLUGIN_HAS_FIELD(api, kiln_host_api_t, attr_name_at));
  // Every entry is filled: a NULL slot would crash the first plugin using it.
  const auto* slots = reinterpret_cast<const unsigned char*>(&api->make_status);
  const size_t n = (sizeof(kiln_host_api_t) - offsetof(kiln_host_api_t, make_status)) / sizeof(void (*)());
  for (size_t i = 0; i < n; ++i) {
    void (*fn)() = nullptr;
    std::memcpy(&fn, slots + i * sizeof(fn), sizeof(fn));
    EXPECT_NE(fn, nullptr) << "slot " << i;
  }
}

TEST_F(PassRunTest, MissingFactFailsNamingIt) {
  Status s = run({"test.needs-layouts"});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("pass 'test.needs-layouts': requires layouts"), std::string::npos) << s.message();
}

TEST_F(PassRunTest, PipelinesAndDisable) {
  pm_.define_pipeline("default", {"test.noop", "test.add-identity"});
  options_.disabled = {"test.add-identity"};
  auto names = pm_.resolve(options_);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"test.noop"});
  options_.disabled = {"test.unknown"};
  EXPECT_FALSE(pm_.resolve(options_).ok());
  options_.disabled.clear();
  options_.passes = {"test.unknown"};
  auto bad = pm_.resolve(options_);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown pass 'test.unknown'"), std::string::npos);
  options_.passes.clear();
  options_.pipeline = "nope";
  EXPECT_FALSE(pm_.resolve(options_).ok());
  EXPECT_EQ(split_pass_list("a, b,,c"), (std::vector<std::string>{"a", "b", "c"}));
}

// rw_set_value_dims (ABI 1.1): the dims are parsed and simplified by the
// host and survive the re-inference at commit where it knows less; a
// constant, unparsable text or a negative dim is a refused edit.
struct SetDims {
  const char* value;
  std::vector<const char*> dims;
};

kiln_plugin_status_t* set_dims_run(void* state, const kiln_host_api_t* host, const kiln_graph_t* g,
                                   kiln_rewriter_t* rw) {
  const auto* want = static_cast<const SetDims*>(state);
  for (kiln_value_id_t v = 0;; ++v) {
    kiln_value_info_t info{};
    info.struct_size = sizeof(info);
    if (!host->value_info(g, v, &info)) return host->make_status(KILN_PLUGIN_NOT_FOUND, want->value);
    if (std::strcmp(info.name, want->value) != 0) continue;
    host->rw_set_value_dims(rw, v, want->dims.data(), want->dims.size());
    return nullptr;
  }
}

TEST(HostApi, SetValueDims) {
  auto g = parse(R"(graph @g opset 17 {
  input %x : f32[?,4]
  const %w : f32[2] = dense<[1.0,2.0]>
  %y = Relu(%x) : f32[?,4]
  return %y
}
)");
  ASSERT_NE(g, nullptr);
  auto set = [&](SetDims d) {
    kiln_pass_t pass{};
    pass.struct_size = sizeof(pass);
    pass.name = "test.set-dims";
    pass.run = &set_dims_run;
    pass.pass_state = &d;
    return run_pass(pass, *g, LogFn());
  };
  auto ok = set({"x", {"(n*2)/2", "4"}});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(g->value(g->find_value("x")).shape.to_string(), "[n,4]");
  EXPECT_EQ(g->value(g->find_value("y")).shape.to_string(), "[n,4]");  // re-inferred from %x
  ASSERT_TRUE(set({"y", {"n", "?"}}).ok());
  EXPECT_EQ(g->value(g->find_value("y")).shape.to_string(), "[n,4]");  // inference knows the 4
  // A 26-digit dim is a refused edit, not an uncaught std::stoll exception.
  for (SetDims bad : {SetDims{"w", {"2"}}, SetDims{"x", {"(n", "4"}}, SetDims{"x", {"-1", "4"}},
                      SetDims{"x", {"12345678901234567890123456", "4"}}}) {
    auto refused = set(bad);
    ASSERT_FALSE(refused.ok()) << bad.value;
    EXPECT_NE(refused.status().message().find("set_value_dims '" + std::string(bad.value) + "'"), std::string::npos)
        << refused.status().message();
  }
  EXPECT_EQ(g->value(g->find_value("x")).shape.to_string(), "[n,4]");
}

// infer_node_dims (ABI 1.2): the op registry's inference on dims the plugin
// supplies, with shape data as values and constants from the graph; a node
// the host cannot infer is a refusal, not a failed edit.
class InferDims : public kiln::plugin::Pass {
 public:
  using Shapes = std::vector<kiln::plugin::ShapeText>;
  std::map<std::string, std::optional<Shapes>> got;

  void run(kiln::plugin::GraphView& g, kiln::plugin::Rewriter&) override {
    using kiln::plugin::InferInput;
    using Dims = std::vector<std::string>;
    ASSERT_TRUE(g.can_infer_dims());
    auto node = [&](const char* name) {
      for (kiln_node_id_t n : g.nodes())
        if (g.node(n)->name == name) return n;
      return KILN_NO_ID;
    };
    got["reshape"] = g.infer_dims(node("reshape"), {{Dims{"b", "s", "64"}, {}}, {Dims{"2"}, Dims{"b", "-1"}}});
    got["reshape-rank"] = g.infer_dims(node("reshape"), {{Dims{"b", "s", "64"}, {}}, {Dims{"2"}, {}}});
    got["reshape-const"] = g.infer_dims(node("reshape_c"), {{Dims{"n", "(h*2)", "8"}, {}}, {std::nullopt, {}}});
    got["transpose"] = g.infer_dims(node("transpose"), {{Dims{"n", "(h*2)", "?"}, {}}});
    got["transpose-unranked"] = g.infer_dims(node("transpose"), {{std::nullopt, {}}});
    got["concat-unranked"] = g.infer_dims(node("concat"), {{std::nullopt, {}}, {std::nullopt, {}}});
    got["shape"] = g.infer_dims(node("shape"), {{Dims{"n", "3", "w"}, {}}});
    got["bad-text"] = g.infer_dims(node("transpose"), {{Dims{"(n", "4", "5"}, {}}});
    got["bad-rank"] = g.infer_dims(node("transpose"), {{Dims{"n", "4"}, {}}});
    got["wrong-input-count"] = g.infer_dims(node("transpose"), {});
  }
};

TEST(HostApi, InferNodeDims) {
  auto g = parse(R"(graph @g opset 17 {
  input %x : f32[b,s,64]
  input %t : i64[2]
  const %c : i64[2] = dense<[-1,8]>
  %y = Reshape(%x, %t) : f32[?,?]
  %yc = Reshape(%x, %c) : f32[?,8]
  %z = Transpose(%x) {perm = [1,0,2]} : f32[s,b,64]
  %sh = Shape(%x) : i64[3]
  %cat = Concat(%x, %x) {axis = 0} : f32[?,s,64]
  return %y, %yc, %z, %sh, %cat
}
)");
  ASSERT_NE(g, nullptr);
  const char* names[] = {"reshape", "reshape_c", "transpose", "shape", "concat"};
  for (size_t i = 0; i < 5; ++i) g->node(g->main().nodes[i]).name = names[i];
  ASSERT_TRUE(ops::infer_graph_shapes(*g).ok());
  const std::string before = ir::print_graph(*g);
  InferDims infer;
  const kiln_pass_t pass = kiln::plugin::make_pass(infer, "test.infer-dims", "");
  auto run = run_pass(pass, *g, LogFn());
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(ir::print_graph(*g), before);  // nothing staged, nothing changed
  using Shapes = InferDims::Shapes;
  using Dims = std::vector<std::string>;
  EXPECT_EQ(infer.got["reshape"], Shapes{Dims({"b", "(s*64)"})});
  EXPECT_EQ(infer.got["reshape-rank"], Shapes{Dims({"?", "?"})});
  EXPECT_EQ(infer.got["reshape-const"], Shapes{Dims({"(n*(h*2))", "8"})});
  EXPECT_EQ(infer.got["transpose"], Shapes{Dims({"(h*2)", "n", "?"})});
  EXPECT_EQ(infer.got["transpose-unranked"], Shapes{Dims({"?", "?", "?"})});  // the rank is perm's
  EXPECT_EQ(infer.got["concat-unranked"], Shapes{std::nullopt});
  EXPECT_EQ(infer.got["shape"], Shapes{Dims({"3"})});
  EXPECT_EQ(infer.got["bad-text"], std::nullopt);
  EXPECT_EQ(infer.got["bad-rank"], std::nullopt);
  EXPECT_EQ(infer.got["wrong-input-count"], std::nullopt);
}

// op_mapping and annotation removal (ABI 1.3): the registry's mapping types
// through the table, and an annotation that a pass removes is gone after the
// commit while an empty one stays a value.
class Annotations : public kiln::plugin::Pass {
 public:
  std::map<std::string, int32_t> mapping;
  void run(kiln::plugin::GraphView& g, kiln::plugin::Rewriter& rw) override {
    for (const char* op : {"Relu", "Conv", "Reshape", "Transpose", "Expand", "If", "NoSuchOp"})
      mapping[op] = g.op_mapping("", op);
    mapping["kiln.Silu"] = g.op_mapping("kiln", "Silu");
    ASSERT_TRUE(rw.can_remove_annotations());
    for (kiln_node_id_t n : g.nodes()) {
      if (g.node(n)->op == "Mul") rw.remove_node_annotation(n, "a");
      if (g.node(n)->op == "Relu") rw.annotate_node(n, "a", "");
      rw.remove_node_annotation(n, "never-set");
      rw.remove_value_annotation(g.outputs(n)[0], "v");
    }
  }
};

TEST(HostApi, OpMappingAndRemoveAnnotation) {
  auto g = parse(R"(graph @g opset 17 {
  input %x : f32[2,3]
  %y = Mul(%x, %x) #{a = "1"} : f32[2,3] #{v = "2"}
  %z = Relu(%y) #{a = "1"} : f32[2,3]
  return %z
}
)");
  ASSERT_TRUE(g);
  Annotations pass;
  const kiln_pass_t p = kiln::plugin::make_pass(pass, "test.annotations", "");
  auto r = run_pass(p, *g, LogFn());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(pass.mapping["Relu"], KILN_MAPPING_ONE_TO_ONE);
  EXPECT_EQ(pass.mapping["Conv"], KILN_MAPPING_MANY_TO_MANY);
  EXPECT_EQ(pass.mapping["Reshape"], KILN_MAPPING_REORGANIZE);
  EXPECT_EQ(pass.mapping["Transpose"], KILN_MAPPING_SHUFFLE);
  EXPECT_EQ(pass.mapping["Expand"], KILN_MAPPING_ONE_TO_MANY);
  EXPECT_EQ(pass.mapping["If"], KILN_MAPPING_OTHER);
  EXPECT_EQ(pass.mapping["NoSuchOp"], KILN_MAPPING_UNKNOWN);
  EXPECT_EQ(pass.mapping["kiln.Silu"], KILN_MAPPING_ONE_TO_ONE);
  const std::string out = ir::print_graph(*g);
  EXPECT_NE(out.find("%y = Mul(%x, %x) : f32[2,3]\n"), std::string::npos) << out;
  EXPECT_NE(out.find("%z = Relu(%y) #{a = \"\"}"), std::string::npos) << out;
}

// target_info (ABI 1.3): the device the pipeline compiles for, copied up
// to the reader's struct_size; 0 without a device.
struct TargetProbe {
  int32_t full = -1, shorter = -1, tiny = -1, null_out = -1;
  kiln_target_info_t info{};
  kiln_target_info_t prefix{};
};

kiln_plugin_status_t* target_probe_run(void* state, const kiln_host_api_t* host, const kiln_graph_t* g,
                                       kiln_rewriter_t*) {
  auto& probe = *static_cast<TargetProbe*>(state);
  if (!KILN_PLUGIN_HAS_FIELD(host, kiln_host_api_t, target_info) || !host->target_info) return nullptr;
  std::memset(&probe.info, 0x5a, sizeof(probe.info));
  probe.info.struct_size = sizeof(probe.info);
  probe.full = host->target_info(g, &probe.info);
  // A reader built against a struct that ends at compute_units: nothing
  // past it is written.
  std::memset(&probe.prefix, 0x5a, sizeof(probe.prefix));
  probe.prefix.struct_size = static_cast<uint32_t>(offsetof(kiln_target_info_t, subgroup_size));
  probe.shorter = host->target_info(g, &probe.prefix);
  kiln_target_info_t tiny{};
  tiny.struct_size = 2;
  probe.tiny = host->target_info(g, &tiny);
  probe.null_out = host->target_info(g, nullptr);
  return nullptr;
}

TEST(HostApi, TargetInfo) {
  auto g = parse(R"(graph @g opset 17 {
  input %x : f32[4]
  %y = Relu(%x) : f32[4]
  return %y
}
)");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(KILN_PLUGIN_HAS_FIELD(host_api(), kiln_host_api_t, target_info));
  TargetProbe probe;
  kiln_pass_t pass{};
  pass.struct_size = sizeof(pass);
  pass.name = "test.target-probe";
  pass.run = &target_probe_run;
  pass.pass_state = &probe;

  // No device: 0, and the caller's struct is left as it was.
  ASSERT_TRUE(run_pass(pass, *g, LogFn()).ok());
  EXPECT_EQ(probe.full, 0);
  EXPECT_EQ(probe.info.compute_units, 0x5a5a5a5au);
  EXPECT_EQ(probe.null_out, 0);

  kiln_target_info_t target{};
  target.struct_size = sizeof(target);
  target.shared_memory_bytes = 49152;
  target.compute_units = 132;
  target.subgroup_size = 32;
  target.max_workgroup_invocations = 1024;
  target.max_image_dimension_2d = 32768;
  target.cooperative_matrix = 1;
  target.fp16_arithmetic = 1;
  target.vendor_id = 0x10de;
  std::snprintf(target.device_name, sizeof(target.device_name), "%s", "Test GPU");
  ASSERT_TRUE(run_pass(pass, *g, LogFn(), &target).ok());
  EXPECT_EQ(probe.full, 1);
  EXPECT_EQ(probe.info.struct_size, sizeof(kiln_target_info_t));
  EXPECT_EQ(probe.info.shared_memory_bytes, 49152u);
  EXPECT_EQ(probe.info.compute_units, 132u);
  EXPECT_EQ(probe.info.subgroup_size, 32u);
  EXPECT_EQ(probe.info.cooperative_matrix, 1);
  EXPECT_EQ(probe.info.vendor_id, 0x10deu);
  EXPECT_STREQ(probe.info.device_name, "Test GPU");
  EXPECT_EQ(probe.shorter, 1);
  EXPECT_EQ(probe.prefix.struct_size, offsetof(kiln_target_info_t, subgroup_size));
  EXPECT_EQ(probe.prefix.compute_units, 132u);
  EXPECT_EQ(probe.prefix.subgroup_size, 0x5a5a5a5au);  // past the reader's struct: untouched
  EXPECT_EQ(probe.tiny, 0);
  EXPECT_EQ(probe.null_out, 0);
}

}  // namespace
}  // namespace kiln::registry

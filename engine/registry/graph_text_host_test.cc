// graph_text and graph_text_external (ABI 1.4, 1.8) through the host's
// function table: the whole graph as text, or with its big constants as
// value ids whose bytes value_constant gives, which parse back (through
// ir::ParseOptions::external_constant) into the same graph.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "engine/ir/text.h"
#include "engine/registry/host_api.h"
#include "kiln/kiln_plugin.hpp"

namespace kiln::registry {
namespace {

struct TextProbe : kiln::plugin::Pass {
  std::string whole, external, everything;
  std::string reparsed;  // `external` parsed back with value_constant, printed whole
  void run(kiln::plugin::GraphView& g, kiln::plugin::Rewriter&) override {
    const kiln_host_api_t* host = g.host();
    ASSERT_TRUE(KILN_PLUGIN_HAS_FIELD(host, kiln_host_api_t, graph_text_external));
    size_t length = 0;
    whole = host->graph_text(g.raw(), &length);
    EXPECT_EQ(length, whole.size());
    external = host->graph_text_external(g.raw(), 4, &length);
    EXPECT_EQ(length, external.size());
    everything = host->graph_text_external(g.raw(), -1, nullptr);
    ir::ParseOptions options;
    options.external_constant = [&](int64_t id, DType dtype, const Shape& shape) -> StatusOr<Tensor> {
      size_t bytes = 0;
      const void* data = host->value_constant(g.raw(), static_cast<kiln_value_id_t>(id), &bytes);
      if (!data) return not_found("no constant " + std::to_string(id));
      KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype, shape));
      if (bytes != t.nbytes()) return internal_error("size mismatch");
      std::memcpy(t.raw_data(), data, bytes);
      return t;
    };
    auto parsed = ir::parse_graph(external, options);
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    reparsed = ir::print_graph(**parsed);
  }
};

TEST(HostApi, GraphTextWithExternalConstantsParsesBackToTheSameGraph) {
  auto g = ir::parse_graph(R"(graph @g opset 17 {
  input %x : f32[2,3]
  const %w : f32[3,2] = dense<[0.5,1,1.5,2,2.5,-3]>
  const %shape : i64[1] = dense<[-1]>
  %m = MatMul(%x, %w) : f32[2,2]
  %r = Reshape(%m, %shape) : f32[4]
  return %r
}
)");
  ASSERT_TRUE(g.ok()) << g.status().message();
  TextProbe probe;
  const kiln_pass_t p = kiln::plugin::make_pass(probe, "test.graph-text", "");
  auto r = run_pass(p, **g, LogFn());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NE(probe.whole.find("dense<[0.5,1.0,1.5,2.0,2.5,-3.0]>"), std::string::npos) << probe.whole;
  EXPECT_EQ(probe.external.find("dense<[0.5"), std::string::npos) << probe.external;  // 6 elements > 4
  EXPECT_NE(probe.external.find("dense<external("), std::string::npos) << probe.external;
  EXPECT_NE(probe.external.find("dense<[-1]>"), std::string::npos) << probe.external;  // small: inline
  EXPECT_EQ(probe.everything, probe.whole);
  EXPECT_EQ(probe.reparsed, probe.whole);
}

}  // namespace
}  // namespace kiln::registry

// What kiln_plugin.h/.hpp give plugins so they need not re-implement the
// engine: dtype numbers and sizes that match engine/base/dtype.h, and
// DimExpr, which must read every dim text the host prints the way the host
// does (checked against ir::Dim on the same text).
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/dtype.h"
#include "engine/ir/dim.h"
#include "kiln/kiln_plugin.hpp"

namespace {

using kiln::plugin::DimExpr;

TEST(PluginDtype, NumbersAndSizesAreTheEngines) {
  for (int32_t d = KILN_PLUGIN_DTYPE_FLOAT32; d <= KILN_PLUGIN_DTYPE_UINT64; ++d) {
    SCOPED_TRACE(d);
    EXPECT_EQ(kiln_plugin_dtype_size(d), kiln::dtype_size(static_cast<kiln::DType>(d)));
  }
  EXPECT_EQ(kiln_plugin_dtype_size(KILN_PLUGIN_DTYPE_UNDEFINED), 0u);
  EXPECT_EQ(kiln_plugin_dtype_size(99), 0u);
  EXPECT_EQ(kiln_plugin_dtype_size(-1), 0u);
  EXPECT_TRUE(kiln_plugin_dtype_is_int(KILN_PLUGIN_DTYPE_INT64));
  EXPECT_TRUE(kiln_plugin_dtype_is_int(KILN_PLUGIN_DTYPE_UINT16));
  EXPECT_FALSE(kiln_plugin_dtype_is_int(KILN_PLUGIN_DTYPE_BOOL));
  EXPECT_FALSE(kiln_plugin_dtype_is_int(KILN_PLUGIN_DTYPE_FLOAT16));
}

TEST(DimExpr, ParsesAndPrintsTheHostGrammar) {
  for (const char* text : {"64", "-3", "seq", "_v1_0", "?", "(h*2)", "((h*2)+1)", "((w-1)/2)", "(h%4)",
                           "cdiv(w,4)", "min(h,(w+1))", "max(?,3)", "((b*s)*64)"}) {
    SCOPED_TRACE(text);
    std::string error;
    auto e = DimExpr::parse(text, &error);
    ASSERT_TRUE(e) << error;
    EXPECT_EQ(e->to_string(), text);
  }
  auto e = DimExpr::parse(" ( h * 2 ) + cdiv( w , 4 ) ");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->to_string(), "((h*2)+cdiv(w,4))");
  EXPECT_EQ(e->kind(), DimExpr::Kind::kOp);
  EXPECT_EQ(e->op(), DimExpr::Op::kAdd);
  EXPECT_EQ(e->rhs().op(), DimExpr::Op::kCeilDiv);
  std::vector<std::string> symbols;
  e->collect_symbols(symbols);
  EXPECT_EQ(symbols, (std::vector<std::string>{"h", "w"}));
  // Left-associative, * before +.
  EXPECT_EQ(DimExpr::parse("a-b-c")->to_string(), "((a-b)-c)");
  EXPECT_EQ(DimExpr::parse("a+b*c/d")->to_string(), "(a+((b*c)/d))");
}

TEST(DimExpr, ReportsParseErrors) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : {Case{"(h*", "at offset 3: expected a dim"}, Case{"h $ 2", "at offset 2: unexpected trailing"},
                        Case{"", "at offset 0: expected a dim"}, Case{"(h", "at offset 2: expected ')'"},
                        Case{"min(h)", "at offset 5: expected ','"}, Case{"#", "at offset 0: unexpected character"},
                        Case{"99999999999999999999", "at offset 0: integer out of range"}, Case{"-", "expected digits"}}) {
    SCOPED_TRACE(c.text);
    std::string error;
    EXPECT_FALSE(DimExpr::parse(c.text, &error));
    EXPECT_NE(error.find(std::string("'") + c.text + "'"), std::string::npos) << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
  }
  EXPECT_FALSE(DimExpr::parse("(h*"));  // no error string wanted
}

TEST(DimExpr, EvaluatesWithBindings) {
  const std::map<std::string, int64_t> b = {{"h", 7}, {"w", -5}};
  auto eval = [&](const char* text, std::optional<int64_t> fallback = std::nullopt) {
    return DimExpr::parse(text)->evaluate(b, fallback);
  };
  EXPECT_EQ(eval("((h*2)+1)"), 15);
  EXPECT_EQ(eval("(h/2)"), 3);
  EXPECT_EQ(eval("(w/2)"), -3);  // floor
  EXPECT_EQ(eval("(w%3)"), 1);   // floor modulo
  EXPECT_EQ(eval("cdiv(h,2)"), 4);
  EXPECT_EQ(eval("cdiv(w,2)"), -2);
  EXPECT_EQ(eval("min(h,w)"), -5);
  EXPECT_EQ(eval("max(h,w)"), 7);
  EXPECT_EQ(eval("(h/0)"), std::nullopt);
  EXPECT_EQ(eval("(seq+1)"), std::nullopt);
  EXPECT_EQ(eval("(seq+1)", 64), 65);
  EXPECT_EQ(eval("?"), std::nullopt);
  EXPECT_EQ(eval("(?*2)", 3), 6);
}

// Every text the host prints reads back with the host's value, at several
// bindings (and the host's parser agrees with DimExpr on what parses).
TEST(DimExpr, AgreesWithTheHostsDim) {
  using kiln::ir::Dim;
  const Dim h = Dim::symbol("h"), w = Dim::symbol("w"), s = Dim::symbol("seq");
  const std::vector<Dim> dims = {Dim(12),
                                 h,
                                 h * Dim(2) + Dim(1),
                                 Dim::floor_div(h + Dim(-3), Dim(2)) + Dim(1),
                                 Dim::ceil_div(w * s, Dim(4)),
                                 Dim::mod(h - w, Dim(5)),
                                 Dim::min(h, w) - Dim::max(s, Dim(3)),
                                 Dim::floor_div(h * w, Dim(-3)),
                                 (h + w) * (s - Dim(7))};
  for (const Dim& d : dims) {
    const std::string text = d.to_string();
    SCOPED_TRACE(text);
    auto e = DimExpr::parse(text);
    ASSERT_TRUE(e);
    auto back = Dim::parse(e->to_string());
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->to_string(), text);
    for (int64_t hv : {0, 1, 7, 64})
      for (int64_t wv : {-4, 3, 9})
        for (int64_t sv : {1, 200}) {
          const std::map<std::string, int64_t> b = {{"h", hv}, {"w", wv}, {"seq", sv}};
          EXPECT_EQ(e->evaluate(b), d.evaluate(b)) << hv << "," << wv << "," << sv;
        }
  }
  for (const char* bad : {"(h*", "h $ 2", "min(h)", ""}) {
    EXPECT_FALSE(DimExpr::parse(bad)) << bad;
    EXPECT_FALSE(Dim::parse(bad).ok()) << bad;
  }
}

}  // namespace

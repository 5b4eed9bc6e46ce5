// Tests for symbolic dims: folding, simplification, evaluation, parsing.
#include "engine/ir/dim.h"

#include <gtest/gtest.h>

namespace kiln::ir {
namespace {

TEST(DimTest, ConstantsFold) {
  EXPECT_EQ((Dim(3) + Dim(4)).value(), 7);
  EXPECT_EQ((Dim(3) * Dim(4)).value(), 12);
  EXPECT_EQ(Dim::floor_div(Dim(-7), Dim(2)).value(), -4);
  EXPECT_EQ(Dim::ceil_div(Dim(7), Dim(2)).value(), 4);
  EXPECT_EQ(Dim::mod(Dim(-7), Dim(3)).value(), 2);
  EXPECT_TRUE(Dim::floor_div(Dim(1), Dim(0)).is_unknown());
}

TEST(DimTest, SymbolicSimplification) {
  Dim h = Dim::symbol("h");
  EXPECT_TRUE((h + 0).same_as(h));
  EXPECT_TRUE((h * 1).same_as(h));
  EXPECT_TRUE((h * 0).is_const());
  EXPECT_TRUE(Dim::floor_div(h * 4, Dim(4)).same_as(h));
  EXPECT_TRUE((h - h).is_const());
  EXPECT_TRUE(((h + 3) - 3).same_as(h));
  EXPECT_EQ((h * 2 + 1).to_string(), "((h*2)+1)");
  EXPECT_TRUE((Dim(2) * h).same_as(h * 2));  // constants go right
}

TEST(DimTest, UnknownAbsorbsAndNeverEquals) {
  Dim u;
  EXPECT_TRUE((u + 1).is_unknown());
  EXPECT_FALSE(u.same_as(Dim()));
  EXPECT_EQ(u.to_string(), "?");
}

TEST(DimTest, EvaluateWithBindings) {
  Dim e = Dim::floor_div(Dim::symbol("h") + 2 - 3, Dim(2)) + 1;
  EXPECT_EQ(e.evaluate({{"h", 224}}).value(), 112);
  EXPECT_FALSE(e.evaluate({}).has_value());
  std::vector<std::string> syms;
  e.collect_symbols(syms);
  ASSERT_EQ(syms.size(), 1u);
  EXPECT_EQ(syms[0], "h");
}

TEST(DimTest, ParseRoundTrip) {
  for (const char* text : {"3", "seq", "((h*2)+1)", "?", "min(a,(b+1))", "max(a,b)", "cdiv(w,4)", "((n%4)-1)"}) {
    auto d = Dim::parse(text);
    ASSERT_TRUE(d.ok()) << text << ": " << d.status().to_string();
    EXPECT_EQ(d->to_string(), text);
  }
  EXPECT_EQ(Dim::parse("h*2+1")->to_string(), "((h*2)+1)");
  EXPECT_EQ(Dim::parse("-5")->value(), -5);
}

TEST(DimTest, ParseErrorsNamePosition) {
  auto d = Dim::parse("(h*2");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("expected ')'"), std::string::npos);
  EXPECT_FALSE(Dim::parse("h $ 2").ok());
}

TEST(SymShapeTest, StaticAndPrinting) {
  SymShape s({Dim(1), Dim::symbol("seq"), Dim(64)});
  EXPECT_FALSE(s.is_static());
  EXPECT_EQ(s.to_string(), "[1,seq,64]");
  EXPECT_TRUE(SymShape::from_concrete({2, 3}).is_static());
  EXPECT_EQ(SymShape::unranked().to_string(), "[*]");
}

}  // namespace
}  // namespace kiln::ir

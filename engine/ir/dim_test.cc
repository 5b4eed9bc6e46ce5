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

TEST(DimTest, ConstantChainsFold) {
  Dim x = Dim::symbol("x");
  EXPECT_EQ(((x * 4) * 8).to_string(), "(x*32)");
  EXPECT_EQ((Dim(2) * (x * 3)).to_string(), "(x*6)");
  EXPECT_EQ(((x + 2) + 3).to_string(), "(x+5)");
  EXPECT_TRUE(((x - 1) + 1).same_as(x));
  EXPECT_EQ(((x - 3) + 1).to_string(), "(x-2)");
  EXPECT_EQ(((x - 1) + 3).to_string(), "(x+2)");
  EXPECT_TRUE(((x + Dim::symbol("y")) - x).same_as(Dim::symbol("y")));
  // (x*c1)/c2 with c2 | c1, and nested floor divisions.
  EXPECT_EQ(Dim::floor_div(x * 64, Dim(16)).to_string(), "(x*4)");
  EXPECT_EQ(Dim::floor_div(x * 6, Dim(4)).to_string(), "((x*6)/4)");
  EXPECT_EQ(Dim::floor_div(Dim::floor_div(x, Dim(2)), Dim(3)).to_string(), "(x/6)");
  EXPECT_EQ(Dim::ceil_div(x * 8, Dim(4)).to_string(), "(x*2)");
  EXPECT_TRUE(Dim::ceil_div(x * Dim::symbol("b"), Dim::symbol("b")).same_as(x));
  EXPECT_EQ(Dim::ceil_div(x, Dim(4)).to_string(), "cdiv(x,4)");
}

TEST(DimTest, ModSimplification) {
  Dim i = Dim::symbol("i");
  // i % Ca % Cb -> i % Cb when Cb divides Ca ...
  EXPECT_EQ(Dim::mod(Dim::mod(i, Dim(12)), Dim(4)).to_string(), "(i%4)");
  // ... and not otherwise (i=5: 5%6%4 = 1 but 5%4 = 1; i=7: 7%6%4 = 1, 7%4 = 3).
  EXPECT_EQ(Dim::mod(Dim::mod(i, Dim(6)), Dim(4)).to_string(), "((i%6)%4)");
  EXPECT_TRUE(Dim::mod(i * 8, Dim(4)).is_const());
  EXPECT_EQ(Dim::mod(i * 8, Dim(4)).value(), 0);
  EXPECT_EQ(Dim::mod(i * 6, Dim(4)).to_string(), "((i*6)%4)");
  EXPECT_EQ(Dim::mod(i * Dim::symbol("b"), Dim::symbol("b")).value(), 0);
  // The rewrites agree with evaluation.
  for (int64_t v = 0; v < 50; ++v) {
    const std::map<std::string, int64_t> at = {{"i", v}};
    EXPECT_EQ(Dim::mod(Dim::mod(i, Dim(12)), Dim(4)).evaluate(at), Dim::mod(Dim::mod(Dim(v), Dim(12)), Dim(4)).value());
    EXPECT_EQ(Dim::floor_div(Dim::floor_div(i, Dim(2)), Dim(3)).evaluate(at), v / 2 / 3);
  }
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

// Constant folding never wraps: a result beyond int64 is an unknown dim (and
// evaluate() gives nullopt), which shape inference and the size checks turn
// into an error naming the node.
TEST(DimOverflowTest, FoldsToUnknownInsteadOfWrapping) {
  const Dim big(INT64_MAX);
  EXPECT_TRUE((big + Dim(1)).is_unknown());
  EXPECT_TRUE((Dim(INT64_MIN) - Dim(1)).is_unknown());
  EXPECT_TRUE((Dim(int64_t{1} << 32) * Dim(int64_t{1} << 32)).is_unknown());
  EXPECT_TRUE(Dim::floor_div(Dim(INT64_MIN), Dim(-1)).is_unknown());
  EXPECT_TRUE(Dim::ceil_div(Dim(INT64_MIN), Dim(3)).is_unknown());
  EXPECT_EQ(Dim::mod(Dim(INT64_MIN), Dim(-1)).value(), 0);
  EXPECT_EQ((Dim(int64_t{1} << 31) * Dim(int64_t{1} << 31)).value(), int64_t{1} << 62);
  // Re-association of constants does not overflow either: (h*2^40)*2^40
  // stays a product instead of folding the constants.
  const Dim h = Dim::symbol("h");
  const Dim scaled = (h * Dim(int64_t{1} << 40)) * Dim(int64_t{1} << 40);
  EXPECT_TRUE(scaled.is_expr());
  EXPECT_EQ(scaled.evaluate({{"h", 1}}), std::nullopt);
  EXPECT_EQ(((h + Dim(INT64_MAX)) + Dim(1)).evaluate({{"h", 0}}), std::nullopt);
  EXPECT_EQ((h * Dim(3)).evaluate({{"h", INT64_MAX / 2}}), std::nullopt);
  EXPECT_EQ((h * Dim(3)).evaluate({{"h", 5}}), 15);
}

TEST(DimOverflowTest, ParseRefusesNumbersBeyondInt64) {
  // Reachable from plugins (rw_set_value_dims) and text IR: a status, never
  // an exception in an engine built without them.
  auto huge = Dim::parse("12345678901234567890123456");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("does not fit in int64"), std::string::npos) << huge.status().message();
  EXPECT_FALSE(Dim::parse("(h*99999999999999999999)").ok());
  EXPECT_EQ(Dim::parse("9223372036854775807").value().value(), INT64_MAX);
  EXPECT_EQ(Dim::parse("-9223372036854775808").value().value(), INT64_MIN);
}

}  // namespace
}  // namespace kiln::ir

// RDP's expressions print in the host's Dim syntax, parse it back, fold the
// way the host does, and cancel factors in quotients.
#include <gtest/gtest.h>

#include "engine/ir/dim.h"
#include "plugins/rdp/expr.h"

namespace kiln_rdp {
namespace {

TEST(Expr, FoldsAndPrintsLikeDim) {
  const Expr h = Expr::symbol("h"), w = Expr::symbol("w");
  EXPECT_EQ((h * Expr(2) + Expr(1)).text(), "((h*2)+1)");
  EXPECT_EQ((Expr(2) * h).text(), "(h*2)");
  EXPECT_EQ(((h * Expr(4)) * Expr(8)).text(), "(h*32)");
  EXPECT_EQ(Expr::floor_div(h * w, w).text(), "h");
  EXPECT_EQ(Expr::mod(Expr::mod(h, Expr(12)), Expr(4)).text(), "(h%4)");
  EXPECT_EQ(Expr::ceil_div(h, Expr(2)).text(), "cdiv(h,2)");
  EXPECT_EQ(Expr::max(h, w).text(), "max(h,w)");
  EXPECT_FALSE((h + Expr()).known());
  // Every printed form means the same to the host's parser.
  for (const Expr& e : {h * Expr(2) + Expr(1), Expr::ceil_div(h, Expr(2)), Expr::min(h, w - Expr(1)),
                        Expr::floor_div(h * Expr(3), Expr(2))}) {
    auto d = kiln::ir::Dim::parse(e.text());
    ASSERT_TRUE(d.ok()) << e.text();
    EXPECT_EQ(d->to_string(), e.text());
  }
}

// Constants that overflow int64 fold to undef (unknown to the analysis) as
// the host's Dim folds them to unknown: never a wrapped size.
TEST(Expr, FoldingNeverWraps) {
  const Expr h = Expr::symbol("h");
  EXPECT_FALSE((Expr(INT64_MAX) + Expr(1)).known());
  EXPECT_FALSE((Expr(INT64_MIN) - Expr(1)).known());
  EXPECT_FALSE((Expr(int64_t{1} << 32) * Expr(int64_t{1} << 32)).known());
  EXPECT_FALSE(Expr::floor_div(Expr(INT64_MIN), Expr(-1)).known());
  EXPECT_FALSE(Expr::ceil_div(Expr(INT64_MIN), Expr(2)).known());
  EXPECT_EQ(Expr::mod(Expr(INT64_MIN), Expr(-1)).value(), 0);
  EXPECT_EQ(Expr::mod(Expr(-7), Expr(3)).value(), 2);
  EXPECT_TRUE(kiln::ir::Dim::mod(kiln::ir::Dim(INT64_MIN), kiln::ir::Dim(-1)).is_const());
  // Re-associated constants that would overflow stay apart, as in Dim.
  const Expr big = (h * Expr(int64_t{1} << 40)) * Expr(int64_t{1} << 40);
  ASSERT_TRUE(big.known());
  auto d = kiln::ir::Dim::parse(big.text());
  ASSERT_TRUE(d.ok()) << big.text();
  EXPECT_EQ(d->to_string(), big.text());
  EXPECT_EQ(((h + Expr(INT64_MAX)) + Expr(1)).text(), "((h+9223372036854775807)+1)");
  // A quotient whose constant factors overflow keeps them as factors.
  EXPECT_TRUE(Expr::quotient({h, Expr(int64_t{1} << 40), Expr(int64_t{1} << 40)}, {Expr(2)}).known());
}

TEST(Expr, ParsesHostText) {
  EXPECT_EQ(Expr::parse("((seq*64)+1)").text(), "((seq*64)+1)");
  EXPECT_EQ(Expr::parse("-3").value(), -3);
  EXPECT_EQ(Expr::parse("cdiv(w,4)").text(), "cdiv(w,4)");
  EXPECT_FALSE(Expr::parse("?").known());
  EXPECT_FALSE(Expr::parse("(h*").known());
  EXPECT_FALSE(Expr::parse("h $ 2").known());
  EXPECT_FALSE(Expr::parse("99999999999999999999").known());  // out of range: unknown, no throw
  EXPECT_TRUE(Expr::parse("seq").is_symbol());
}

TEST(Expr, QuotientCancelsFactors) {
  const Expr b = Expr::symbol("b"), s = Expr::symbol("s");
  EXPECT_EQ(Expr::quotient({b, s, Expr(64)}, {b, Expr(64)}).text(), "s");
  EXPECT_EQ(Expr::quotient({b * s * Expr(12), Expr(64)}, {b, Expr(4)}).text(), "(s*192)");
  EXPECT_EQ(Expr::quotient({b, Expr(6)}, {Expr(4)}).text(), "((b*6)/4)");
  EXPECT_FALSE(Expr::quotient({b, Expr()}, {b}).known());
}

TEST(Expr, NonNegative) {
  EXPECT_TRUE((Expr::symbol("h") * Expr(2)).nonneg());
  EXPECT_FALSE((Expr::symbol("h") - Expr(1)).nonneg());
  EXPECT_FALSE(Expr(-1).nonneg());
}

}  // namespace
}  // namespace kiln_rdp

// Tests for numpy broadcasting (broadcast.h): symbolic and concrete shape
// rules, and BroadcastIndexer's index walk.
#include "engine/ops/broadcast.h"

#include <gtest/gtest.h>

namespace kiln::ops {
namespace {

using ir::Dim;
using ir::SymShape;

TEST(BroadcastTest, SymbolicOneAgainstSymbol) {
  const SymShape a({Dim(1), Dim::symbol("s")});
  const SymShape b({Dim(4), Dim(1)});
  auto r = broadcast_shapes(a, b);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->to_string(), "[4,s]");
}

TEST(BroadcastTest, SymbolicRankExtension) {
  const SymShape a({Dim::symbol("b"), Dim::symbol("s"), Dim(8)});
  const SymShape b({Dim(8)});
  auto r = broadcast_shapes(a, b);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->to_string(), "[b,s,8]");
}

TEST(BroadcastTest, SameSymbolStays) {
  auto r = broadcast_shapes(SymShape({Dim::symbol("n")}), SymShape({Dim::symbol("n")}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->to_string(), "[n]");
}

TEST(BroadcastTest, DifferentSymbolsGiveMax) {
  auto r = broadcast_shapes(SymShape({Dim::symbol("n")}), SymShape({Dim::symbol("m")}));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->dims[0].is_expr());
  EXPECT_EQ(r->dims[0].op(), Dim::Op::kMax);
}

// A symbolic dim against a constant c != 1 must be 1 or c: the result is c
// (what lets re-inference keep RDP's refinements).
TEST(BroadcastTest, SymbolAgainstConstantIsTheConstant) {
  auto r = broadcast_shapes(SymShape({Dim::symbol("n"), Dim::symbol("m")}), SymShape({Dim(3), Dim(1)}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->to_string(), "[3,m]");
}

TEST(BroadcastTest, UnknownDimAgainstConstantIsUnknown) {
  auto r = broadcast_shapes(SymShape({Dim()}), SymShape({Dim(3)}));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->dims[0].is_unknown());
}

TEST(BroadcastTest, UnrankedGivesUnranked) {
  auto r = broadcast_shapes(SymShape::unranked(), SymShape({Dim(3)}));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_rank);
}

TEST(BroadcastTest, SymbolicMismatchIsError) {
  auto r = broadcast_shapes(SymShape({Dim(2), Dim(3)}), SymShape({Dim(4)}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("[2,3]"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("[4]"), std::string::npos) << r.status().message();
}

TEST(BroadcastTest, ConcreteShapes) {
  auto r = broadcast_shapes(Shape{2, 1, 3}, Shape{4, 1});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (Shape{2, 4, 3}));
  auto scalar = broadcast_shapes(Shape{}, Shape{5});
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(*scalar, (Shape{5}));
  auto zero = broadcast_shapes(Shape{0, 3}, Shape{1, 3});
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(*zero, (Shape{0, 3}));
}

TEST(BroadcastTest, ConcreteMismatchIsError) {
  auto r = broadcast_shapes(Shape{3}, Shape{4});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot broadcast"), std::string::npos);
}

std::vector<int64_t> walk(const Shape& in, const Shape& out) {
  BroadcastIndexer idx(in, out);
  std::vector<int64_t> v;
  for (int64_t i = 0; i < shape_numel(out); ++i, idx.next()) v.push_back(idx.index());
  return v;
}

TEST(BroadcastTest, IndexerRowAndColumn) {
  EXPECT_EQ(walk({3}, {2, 3}), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(walk({2, 1}, {2, 3}), (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(walk({2, 3}, {2, 3}), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(BroadcastTest, IndexerMiddleAxisAndScalar) {
  // [2,1,2] into [2,3,2]: the middle axis repeats.
  EXPECT_EQ(walk({2, 1, 2}, {2, 3, 2}), (std::vector<int64_t>{0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3}));
  EXPECT_EQ(walk({}, {2, 2}), (std::vector<int64_t>{0, 0, 0, 0}));
}

}  // namespace
}  // namespace kiln::ops

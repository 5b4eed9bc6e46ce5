// Symbolic offsets: a stacking planned at one shape gives offsets that are
// valid at every shape, and no larger than the plan at the shape it came from.
#include "planner/memory/symbolic.h"

#include <gtest/gtest.h>

#include <random>

namespace kiln::memplan {
namespace {

TEST(Symbolic, OffsetsFromOneShapeAreValidAtEveryShape) {
  std::mt19937_64 rng(11);
  const ir::Dim seq = ir::Dim::symbol("seq");
  for (int trial = 0; trial < 100; ++trial) {
    // Sizes a*seq + b, a*seq*seq (attention-like) or constant, in bytes.
    const size_t n = 2 + rng() % 9;
    std::vector<Block> blocks(n);
    std::vector<ir::Dim> sizes(n);
    for (size_t i = 0; i < n; ++i) {
      blocks[i].first = static_cast<int64_t>(rng() % 10);
      blocks[i].last = blocks[i].first + static_cast<int64_t>(rng() % 5);
      blocks[i].align = uint64_t{1} << (rng() % 7);
      const int64_t a = 1 + static_cast<int64_t>(rng() % 300), b = static_cast<int64_t>(rng() % 100);
      switch (rng() % 3) {
        case 0: sizes[i] = ir::Dim(a) * seq + ir::Dim(b); break;
        case 1: sizes[i] = ir::Dim(a) * seq * seq; break;
        default: sizes[i] = ir::Dim(a * 7 + b); break;
      }
    }
    auto at = [&](int64_t s) {
      std::vector<Block> concrete = blocks;
      for (size_t i = 0; i < n; ++i) concrete[i].size = static_cast<uint64_t>(*sizes[i].evaluate({{"seq", s}}));
      return concrete;
    };
    const std::vector<Block> hint = at(8);
    const ArenaPlan planned = plan_arena(hint);
    const Stacking stacking = stacking_of(hint, planned);
    const SymbolicArena sym = symbolic_offsets(blocks, sizes, stacking);
    for (int64_t s : {1, 8, 64, 200}) {
      const std::vector<Block> concrete = at(s);
      ArenaPlan p;
      for (const ir::Dim& off : sym.offsets) p.offsets.push_back(static_cast<uint64_t>(*off.evaluate({{"seq", s}})));
      p.bytes = static_cast<uint64_t>(*sym.bytes.evaluate({{"seq", s}}));
      ASSERT_EQ(check_plan(concrete, p), "") << "trial " << trial << " seq " << s;
      // The expressions and the stacking evaluated directly agree.
      const ArenaPlan direct = evaluate_stacking(concrete, stacking);
      EXPECT_EQ(direct.offsets, p.offsets);
      EXPECT_EQ(direct.bytes, p.bytes);
      if (s == 8) {
        EXPECT_LE(p.bytes, planned.bytes) << "trial " << trial;
      }
    }
  }
}

}  // namespace
}  // namespace kiln::memplan

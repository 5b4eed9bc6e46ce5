// Tests for the 'pooling' ops: MaxPool (+Indices), AveragePool, LpPool and
// the Global* forms. Kernels against a naive reference written here,
// hand-computed cases for the ceil_mode / count_include_pad corner rules,
// symbolic shape inference and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/ops/op_registry.h"
#include "engine/ops/op_test_util.h"

namespace kiln::ops {
namespace {

using testing::expect_near;
using testing::run_op;
using Attrs = std::map<std::string, ir::Attribute>;

using testing::int_attr;
using testing::ints;
using testing::str;

// Pooling tests use a wider range so that max and average differ clearly.
Tensor random_f32(const Shape& shape, uint32_t seed) { return testing::random_f32(shape, seed, -4.0f, 4.0f); }

StatusOr<std::vector<Tensor>> run(const std::string& op, const Tensor& x, Attrs attrs, size_t outputs = 1) {
  return run_op(op, {x}, std::move(attrs), outputs);
}

void expect_error(const std::string& op, const Tensor& x, Attrs attrs, const std::string& needle) {
  auto r = run(op, x, std::move(attrs));
  ASSERT_FALSE(r.ok()) << op << " unexpectedly succeeded";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

// ---------------------------------------------------------------------------
// Naive reference

struct PoolCfg {
  Shape x;
  std::vector<int64_t> kernel, strides, pads, dilations;
  std::string auto_pad;
  bool ceil_mode = false;
  bool count_include_pad = false;
  int64_t storage_order = 0;
  int64_t p = 2;
};

Attrs pool_attrs(const PoolCfg& c) {
  Attrs a = {{"kernel_shape", ints(c.kernel)}};
  if (!c.strides.empty()) a["strides"] = ints(c.strides);
  if (!c.pads.empty()) a["pads"] = ints(c.pads);
  if (!c.dilations.empty()) a["dilations"] = ints(c.dilations);
  if (!c.auto_pad.empty()) a["auto_pad"] = str(c.auto_pad);
  if (c.ceil_mode) a["ceil_mode"] = int_attr(1);
  if (c.count_include_pad) a["count_include_pad"] = int_attr(1);
  if (c.storage_order) a["storage_order"] = int_attr(c.storage_order);
  if (c.p != 2) a["p"] = int_attr(c.p);
  return a;
}

struct Axis {
  int64_t in, k, s, d, pb, pe, out;
};

std::vector<Axis> pool_axes(const PoolCfg& c) {
  const size_t n = c.kernel.size();
  std::vector<Axis> axes(n);
  for (size_t i = 0; i < n; ++i) {
    Axis& a = axes[i];
    a.in = c.x[2 + i];
    a.k = c.kernel[i];
    a.s = c.strides.empty() ? 1 : c.strides[i];
    a.d = c.dilations.empty() ? 1 : c.dilations[i];
    const int64_t eff = (a.k - 1) * a.d + 1;
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      a.out = (a.in + a.s - 1) / a.s;
      const int64_t total = std::max<int64_t>(0, (a.out - 1) * a.s + eff - a.in);
      a.pb = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      a.pe = total - a.pb;
      continue;
    }
    const bool valid = c.auto_pad == "VALID";
    a.pb = valid || c.pads.empty() ? 0 : c.pads[i];
    a.pe = valid || c.pads.empty() ? 0 : c.pads[i + n];
    const int64_t span = a.in + a.pb + a.pe - eff;
    a.out = (c.ceil_mode ? (span + a.s - 1) / a.s : span / a.s) + 1;
    // PyTorch: the last window must start inside the input or left padding.
    if (c.ceil_mode && (a.out - 1) * a.s >= a.in + a.pb) --a.out;
  }
  return axes;
}

// Reference pooling of `x` (any dtype, read as double). For MaxPool also
// returns the indices.
std::pair<Tensor, Tensor> ref_pool(const std::string& op, const PoolCfg& c, const Tensor& x) {
  std::vector<Axis> ax = pool_axes(c);
  while (ax.size() < 3) ax.insert(ax.begin(), Axis{1, 1, 1, 1, 0, 0, 1});
  Shape os = {c.x[0], c.x[1]};
  for (size_t i = 3 - (c.x.size() - 2); i < 3; ++i) os.push_back(ax[i].out);
  Tensor y = Tensor::allocate(x.dtype(), os).value();
  Tensor idx = Tensor::allocate(DType::kInt64, os).value();
  const int64_t planes = c.x[0] * c.x[1], in_sz = ax[0].in * ax[1].in * ax[2].in;
  int64_t yi = 0;
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t o0 = 0; o0 < ax[0].out; ++o0)
      for (int64_t o1 = 0; o1 < ax[1].out; ++o1)
        for (int64_t o2 = 0; o2 < ax[2].out; ++o2, ++yi) {
          double best = 0, sum = 0;
          int64_t best_i = -1, valid = 0, with_pad = 0;
          for (int64_t k0 = 0; k0 < ax[0].k; ++k0)
            for (int64_t k1 = 0; k1 < ax[1].k; ++k1)
              for (int64_t k2 = 0; k2 < ax[2].k; ++k2) {
                const int64_t p[3] = {o0 * ax[0].s - ax[0].pb + k0 * ax[0].d, o1 * ax[1].s - ax[1].pb + k1 * ax[1].d,
                                      o2 * ax[2].s - ax[2].pb + k2 * ax[2].d};
                bool inside = true, in_padded = true;
                for (int a = 0; a < 3; ++a) {
                  inside = inside && p[a] >= 0 && p[a] < ax[a].in;
                  in_padded = in_padded && p[a] >= -ax[a].pb && p[a] < ax[a].in + ax[a].pe;
                }
                with_pad += in_padded;
                if (!inside) continue;
                ++valid;
                const int64_t at = (p[0] * ax[1].in + p[1]) * ax[2].in + p[2];
                const double v = x.get_f64(pl * in_sz + at);
                sum += op == "LpPool" ? std::pow(std::fabs(v), static_cast<double>(c.p)) : v;
                if (best_i < 0 || v > best) {
                  best = v;
                  best_i = c.storage_order == 1 ? p[0] + p[1] * ax[0].in + p[2] * ax[0].in * ax[1].in : at;
                }
              }
          if (op == "MaxPool") {
            y.set_f64(yi, best);
            idx.data<int64_t>()[yi] = pl * in_sz + best_i;
          } else if (op == "AveragePool") {
            y.set_f64(yi, sum / static_cast<double>(c.count_include_pad ? with_pad : valid));
          } else {
            y.set_f64(yi, std::pow(sum, 1.0 / static_cast<double>(c.p)));
          }
        }
  return {y, idx};
}

void check_pool(const std::string& op, const PoolCfg& c, DType dt = DType::kFloat32, uint32_t seed = 7) {
  SCOPED_TRACE(op + " x" + shape_to_string(c.x) + " k" + shape_to_string(c.kernel) + " auto_pad '" + c.auto_pad +
               "' ceil " + std::to_string(c.ceil_mode) + " " + std::string(dtype_name(dt)));
  Tensor x = random_f32(c.x, seed).cast(dt).value();
  const bool max = op == "MaxPool";
  auto r = run(op, x, pool_attrs(c), max ? 2 : 1);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  auto [y, idx] = ref_pool(op, c, x);
  if (dt == DType::kFloat16 && !max) {
    expect_near((*r)[0], y.cast(DType::kFloat16).value(), 2e-3, 2e-3);
  } else {
    expect_near((*r)[0], y, 1e-6, 1e-6);
  }
  if (max) {
    EXPECT_EQ((*r)[1].to_i64_vector(), idx.to_i64_vector());
  }
}

// ---------------------------------------------------------------------------
// MaxPool

TEST(MaxPool, HandComputedWithIndices) {
  const std::vector<float> plane = {1, 2, 5, 3, 4, 0, 1, 8, 7, 6, 9, 2, 3, 5, 4, 1};
  std::vector<float> both = plane;
  for (float v : plane) both.push_back(-v);  // channel 1: maxima are the minima of channel 0
  Tensor x = Tensor::from_vector<float>({1, 2, 4, 4}, both);
  Attrs attrs = {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}};
  auto r = run("MaxPool", x, attrs, 2);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  expect_near((*r)[0], Tensor::from_vector<float>({1, 2, 2, 2}, {4, 8, 7, 9, 0, -1, -3, -1}));
  EXPECT_EQ((*r)[1].dtype(), DType::kInt64);
  // Channel 0 maxima at (1,0), (1,3), (2,0), (2,2); channel 1 (offset 16) at
  // (1,1), (1,2), (3,0), (3,3).
  EXPECT_EQ((*r)[1].to_i64_vector(), (std::vector<int64_t>{4, 7, 8, 10, 16 + 5, 16 + 6, 16 + 12, 16 + 15}));
  attrs["storage_order"] = int_attr(1);
  auto c = run("MaxPool", x, attrs, 2);
  ASSERT_TRUE(c.ok());
  // Column major within the plane: h + w * H.
  EXPECT_EQ((*c)[1].to_i64_vector(), (std::vector<int64_t>{1, 13, 2, 10, 16 + 5, 16 + 9, 16 + 3, 16 + 15}));
}

TEST(MaxPool, CeilModeDropsWindowsStartingInThePadding) {
  Tensor x = Tensor::from_vector<float>({1, 1, 5}, {1, 2, 3, 4, 5});
  auto r = run("MaxPool", x, {{"kernel_shape", ints({2})}, {"strides", ints({2})}, {"pads", ints({1, 1})},
                              {"ceil_mode", int_attr(1)}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  // A fourth window would start at position 5, inside the end padding.
  expect_near((*r)[0], Tensor::from_vector<float>({1, 1, 3}, {1, 3, 5}));
  auto f = run("MaxPool", x, {{"kernel_shape", ints({2})}, {"strides", ints({2})}, {"ceil_mode", int_attr(1)}});
  ASSERT_TRUE(f.ok());
  expect_near((*f)[0], Tensor::from_vector<float>({1, 1, 3}, {2, 4, 5}));  // last window overhangs
}

TEST(MaxPool, PropagatesNaN) {
  Tensor x = Tensor::from_vector<float>({1, 1, 4}, {1, NAN, 3, 2});
  auto r = run("MaxPool", x, {{"kernel_shape", ints({2})}, {"strides", ints({2})}});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::isnan((*r)[0].get_f64(0)));
  EXPECT_EQ((*r)[0].get_f64(1), 3.0);
}

TEST(MaxPool, MatchesNaiveReference) {
  const std::vector<PoolCfg> cfgs = {
      {{1, 3, 9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}},
      {{2, 2, 10, 7}, {3, 2}, {2, 1}, {1, 0, 2, 1}, {}, "", true},
      {{1, 2, 11, 11}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {2, 2}, "", true},
      {{1, 2, 9, 8}, {3, 3}, {2, 2}, {}, {}, "SAME_UPPER"},
      {{1, 2, 9, 8}, {4, 2}, {3, 3}, {}, {}, "SAME_LOWER"},
      {{1, 2, 9, 8}, {3, 3}, {2, 2}, {}, {}, "VALID", true},
      {{1, 3, 112, 112}, {3, 3}, {2, 2}, {1, 1, 1, 1}},  // resnet stem
      {{2, 3, 17}, {4}, {3}, {2, 1}, {}, "", true},
      {{1, 2, 5, 6, 7}, {2, 3, 2}, {2, 2, 1}, {1, 1, 0, 0, 1, 1}, {1, 1, 2}},
  };
  for (const PoolCfg& c : cfgs) check_pool("MaxPool", c);
  PoolCfg col = cfgs[1];
  col.storage_order = 1;
  check_pool("MaxPool", col);
  PoolCfg col3 = cfgs.back();
  col3.storage_order = 1;
  check_pool("MaxPool", col3);
  for (DType dt : {DType::kFloat16, DType::kFloat64, DType::kInt8, DType::kUInt8}) check_pool("MaxPool", cfgs[1], dt);
}

// ---------------------------------------------------------------------------
// AveragePool, LpPool

TEST(AveragePool, CountIncludePadHandComputed) {
  Tensor x = Tensor::from_vector<float>({1, 1, 3, 3}, std::vector<float>(9, 9.0f));
  Attrs attrs = {{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}};
  auto r = run("AveragePool", x, attrs);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  expect_near((*r)[0], Tensor::from_vector<float>({1, 1, 3, 3}, std::vector<float>(9, 9.0f)));
  attrs["count_include_pad"] = int_attr(1);
  auto p = run("AveragePool", x, attrs);
  ASSERT_TRUE(p.ok());
  expect_near((*p)[0], Tensor::from_vector<float>({1, 1, 3, 3}, {4, 6, 4, 6, 9, 6, 4, 6, 4}));
}

TEST(AveragePool, CeilModeOverhangIsNotPadding) {
  // Windows start at -1, 1, 3, 5 over [1..6] padded by one on each side; the
  // last window covers 6, the end pad and one position past it.
  Tensor x = Tensor::from_vector<float>({1, 1, 6}, {1, 2, 3, 4, 5, 6});
  Attrs attrs = {{"kernel_shape", ints({3})}, {"strides", ints({2})}, {"pads", ints({1, 1})}, {"ceil_mode", int_attr(1)}};
  auto r = run("AveragePool", x, attrs);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  expect_near((*r)[0], Tensor::from_vector<float>({1, 1, 4}, {1.5, 3, 5, 6}));
  attrs["count_include_pad"] = int_attr(1);
  auto p = run("AveragePool", x, attrs);
  ASSERT_TRUE(p.ok());
  expect_near((*p)[0], Tensor::from_vector<float>({1, 1, 4}, {1, 3, 5, 3}));
}

TEST(AveragePool, MatchesNaiveReference) {
  std::vector<PoolCfg> cfgs = {
      {{1, 3, 9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}},
      {{2, 2, 10, 7}, {3, 2}, {2, 1}, {1, 0, 2, 1}, {}, "", true},
      {{1, 2, 11, 11}, {3, 3}, {2, 3}, {2, 1, 1, 2}, {2, 1}, "", true},
      {{1, 2, 9, 8}, {3, 3}, {2, 2}, {}, {}, "SAME_UPPER"},
      {{1, 2, 9, 8}, {4, 2}, {3, 3}, {}, {}, "SAME_LOWER"},
      {{1, 4, 7, 7}, {7, 7}},  // global-like
      {{2, 3, 17}, {4}, {3}, {2, 1}, {}, "", true},
      {{1, 2, 5, 6, 7}, {2, 3, 2}, {2, 2, 1}, {1, 1, 0, 0, 1, 1}, {1, 1, 2}},
  };
  for (PoolCfg c : cfgs) {
    check_pool("AveragePool", c);
    c.count_include_pad = true;
    check_pool("AveragePool", c);
  }
  check_pool("AveragePool", cfgs[1], DType::kFloat16);
  check_pool("AveragePool", cfgs[2], DType::kFloat64);
}

TEST(LpPool, HandComputedAndReference) {
  Tensor x = Tensor::from_vector<float>({1, 1, 2}, {-3, 4});
  auto r2 = run("LpPool", x, {{"kernel_shape", ints({2})}});
  ASSERT_TRUE(r2.ok()) << r2.status().to_string();
  expect_near((*r2)[0], Tensor::from_vector<float>({1, 1, 1}, {5}));
  auto r1 = run("LpPool", x, {{"kernel_shape", ints({2})}, {"p", int_attr(1)}});
  ASSERT_TRUE(r1.ok());
  expect_near((*r1)[0], Tensor::from_vector<float>({1, 1, 1}, {7}));
  PoolCfg c{{1, 3, 9, 8}, {3, 2}, {2, 2}, {1, 0, 1, 1}, {}, "", true};
  check_pool("LpPool", c);
  c.p = 3;
  check_pool("LpPool", c);
}

// ---------------------------------------------------------------------------
// Global pools

TEST(GlobalPool, HandComputed) {
  Tensor x = Tensor::from_vector<float>({1, 2, 2, 2}, {1, 2, 3, 6, -1, -5, -2, -4});
  auto avg = run("GlobalAveragePool", x, {});
  ASSERT_TRUE(avg.ok()) << avg.status().to_string();
  expect_near((*avg)[0], Tensor::from_vector<float>({1, 2, 1, 1}, {3, -3}));
  auto mx = run("GlobalMaxPool", x, {});
  ASSERT_TRUE(mx.ok());
  expect_near((*mx)[0], Tensor::from_vector<float>({1, 2, 1, 1}, {6, -1}));
  auto lp = run("GlobalLpPool", x, {{"p", int_attr(1)}});
  ASSERT_TRUE(lp.ok());
  expect_near((*lp)[0], Tensor::from_vector<float>({1, 2, 1, 1}, {12, 12}));
  Tensor x3 = random_f32({2, 3, 4, 5, 6}, 3);
  auto g3 = run("GlobalAveragePool", x3.cast(DType::kFloat64).value(), {});
  ASSERT_TRUE(g3.ok());
  ASSERT_EQ((*g3)[0].shape(), (Shape{2, 3, 1, 1, 1}));
  for (int64_t p = 0; p < 6; ++p) {
    double s = 0;
    for (int64_t i = 0; i < 120; ++i) s += x3.get_f64(p * 120 + i);
    EXPECT_NEAR((*g3)[0].get_f64(p), s / 120, 1e-12);
  }
}

// ---------------------------------------------------------------------------
// Errors and inference

TEST(Pooling, Errors) {
  Tensor x = random_f32({1, 2, 6, 6}, 1);
  expect_error("MaxPool", x, {}, "kernel_shape attribute is required");
  expect_error("MaxPool", x, {{"kernel_shape", ints({2})}}, "kernel_shape has 1 values, expected 2");
  expect_error("MaxPool", x, {{"kernel_shape", ints({2, 2})}, {"pads", ints({2, 0, 0, 0})}},
               "pads[0] = 2 must be smaller than kernel_shape[0] = 2");
  expect_error("MaxPool", x, {{"kernel_shape", ints({2, 2})}, {"storage_order", int_attr(2)}}, "storage_order = 2");
  expect_error("MaxPool", x, {{"kernel_shape", ints({2, 2})}, {"strides", ints({0, 1})}}, "strides[0] = 0");
  expect_error("MaxPool", x, {{"kernel_shape", ints({7, 2})}}, "would have output size 0");
  expect_error("MaxPool", random_f32({2, 6}, 1), {{"kernel_shape", ints({2})}}, "X must have rank >= 3");
  expect_error("MaxPool", x.cast(DType::kInt32).value(), {{"kernel_shape", ints({2, 2})}}, "X has dtype i32");
  expect_error("AveragePool", x.cast(DType::kInt8).value(), {{"kernel_shape", ints({2, 2})}}, "X has dtype i8");
  expect_error("AveragePool", x, {{"kernel_shape", ints({2, 2})}, {"auto_pad", str("FULL")}}, "unknown auto_pad");
  expect_error("LpPool", x, {{"kernel_shape", ints({2, 2})}, {"p", int_attr(0)}}, "p = 0 must be >= 1");
  expect_error("GlobalAveragePool", random_f32({6}, 1), {}, "X must have rank >= 2");
}

StatusOr<std::vector<ValueInfo>> infer(const std::string& op, ir::SymShape shape, Attrs attrs, size_t outputs = 1) {
  ir::Node node;
  node.op = op;
  node.name = "sym_" + op;
  node.attrs = std::move(attrs);
  for (size_t i = 0; i < outputs; ++i) node.outputs.push_back(static_cast<ir::ValueId>(i));
  ValueInfo v;
  v.dtype = DType::kFloat32;
  v.shape = std::move(shape);
  return infer_node(*OpRegistry::builtin().find("", op), node, {v});
}

TEST(Pooling, SymbolicInferenceEvaluatesLikeConcrete) {
  const ir::Dim n = ir::Dim::symbol("n"), c = ir::Dim::symbol("c"), h = ir::Dim::symbol("h");
  for (bool ceil : {false, true}) {
    PoolCfg cfg{{1, 1, 0, 10}, {3, 2}, {2, 3}, {1, 0, 1, 1}, {}, "", ceil};
    auto r = infer("MaxPool", ir::SymShape({n, c, h, 10}), pool_attrs(cfg), 2);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_EQ((*r).size(), 2u);
    EXPECT_EQ((*r)[1].dtype, DType::kInt64);
    const ir::SymShape& out = (*r)[0].shape;
    EXPECT_TRUE(out.dims[0].same_as(n));
    EXPECT_TRUE(out.dims[1].same_as(c));
    for (int64_t hv = 2; hv < 40; ++hv) {
      cfg.x[2] = hv;
      EXPECT_EQ(out.dims[2].evaluate({{"h", hv}}), pool_axes(cfg)[0].out) << "h=" << hv << " ceil " << ceil;
    }
    EXPECT_EQ(out.dims[3].value(), pool_axes(cfg)[1].out);
  }
  auto same = infer("AveragePool", ir::SymShape({n, c, h, h}),
                    {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"auto_pad", str("SAME_LOWER")}});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ((*same)[0].shape.to_string(), "[n,c,cdiv(h,2),cdiv(h,2)]");
  auto global = infer("GlobalMaxPool", ir::SymShape({n, c, h, 7}), {});
  ASSERT_TRUE(global.ok());
  EXPECT_EQ((*global)[0].shape.to_string(), "[n,c,1,1]");
  auto unranked = infer("MaxPool", ir::SymShape::unranked(), {{"kernel_shape", ints({2, 2})}});
  ASSERT_TRUE(unranked.ok());
  EXPECT_FALSE((*unranked)[0].shape.has_rank);
}

}  // namespace
}  // namespace kiln::ops

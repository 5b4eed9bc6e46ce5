// Tests for the 'linalg' ops (MatMul, Gemm, Conv, ConvTranspose) and the
// blocked sgemm behind them: kernels against naive loops written here
// (double accumulation) over many shapes and attribute combinations,
// hand-computed cases, symbolic shape inference and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/ops/gemm_kernel.h"
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
using testing::random_f32;

Tensor to_dtype(const Tensor& t, DType dt) { return t.cast(dt).value(); }

Tensor run1(const std::string& op, const std::vector<Tensor>& in, Attrs attrs = {}) {
  auto r = run_op(op, in, std::move(attrs));
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (!r.ok()) return Tensor();
  return r.value()[0];
}

// Runs and expects INVALID_ARGUMENT whose message contains `needle`.
void expect_error(const std::string& op, const std::vector<Tensor>& in, Attrs attrs, const std::string& needle) {
  auto r = run_op(op, in, std::move(attrs));
  ASSERT_FALSE(r.ok()) << op << " unexpectedly succeeded";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

// ---------------------------------------------------------------------------
// Naive references

// numpy.matmul in double.
Tensor ref_matmul(const Tensor& a, const Tensor& b) {
  Shape as = a.shape(), bs = b.shape();
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const size_t rank = std::max(as.size(), bs.size());
  Shape batch(rank - 2);
  auto batch_dim = [&](const Shape& s, size_t i) -> int64_t {  // i indexes `batch`, right-aligned
    const size_t nb = s.size() - 2;
    return i + nb >= rank - 2 ? s[i + nb - (rank - 2)] : 1;
  };
  for (size_t i = 0; i < rank - 2; ++i) batch[i] = std::max(batch_dim(as, i), batch_dim(bs, i));
  Shape out = batch;
  if (!a_vec) out.push_back(m);
  if (!b_vec) out.push_back(n);
  Tensor y = Tensor::allocate(a.dtype(), out).value();
  const int64_t nbatch = shape_numel(batch);
  for (int64_t t = 0; t < nbatch; ++t) {
    // Unravel t and map into A's and B's batch offsets.
    int64_t rem = t, a_off = 0, b_off = 0, a_stride = 1, b_stride = 1;
    for (size_t i = rank - 2; i-- > 0;) {
      const int64_t idx = rem % batch[i];
      rem /= batch[i];
      const int64_t ad = batch_dim(as, i), bd = batch_dim(bs, i);
      a_off += (ad == 1 ? 0 : idx) * a_stride;
      b_off += (bd == 1 ? 0 : idx) * b_stride;
      a_stride *= ad;
      b_stride *= bd;
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += a.get_f64((a_off * m + i) * k + p) * b.get_f64((b_off * k + p) * n + j);
        y.set_f64((t * m + i) * n + j, s);
      }
  }
  return y;
}

// Convolution geometry in the test's own terms: three spatial axes, leading
// axes of size 1 for 1-D/2-D.
struct Geo {
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, pb[3] = {0, 0, 0},
          pe[3] = {0, 0, 0}, out[3] = {1, 1, 1};
};

struct ConvCfg {
  Shape x, w;
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads;
  std::string auto_pad;
  bool bias = false;
  std::vector<int64_t> output_padding, output_shape;  // ConvTranspose only
};

Attrs conv_attrs(const ConvCfg& c) {
  Attrs a;
  if (c.group != 1) a["group"] = int_attr(c.group);
  if (!c.strides.empty()) a["strides"] = ints(c.strides);
  if (!c.dilations.empty()) a["dilations"] = ints(c.dilations);
  if (!c.pads.empty()) a["pads"] = ints(c.pads);
  if (!c.auto_pad.empty()) a["auto_pad"] = str(c.auto_pad);
  if (!c.output_padding.empty()) a["output_padding"] = ints(c.output_padding);
  if (!c.output_shape.empty()) a["output_shape"] = ints(c.output_shape);
  return a;
}

Geo conv_geo(const ConvCfg& c, bool transpose) {
  Geo g;
  const size_t n = c.x.size() - 2, off = 3 - n;
  for (size_t i = 0; i < n; ++i) {
    const size_t j = off + i;
    g.in[j] = c.x[2 + i];
    g.k[j] = c.w[2 + i];
    g.s[j] = c.strides.empty() ? 1 : c.strides[i];
    g.d[j] = c.dilations.empty() ? 1 : c.dilations[i];
    const int64_t eff = (g.k[j] - 1) * g.d[j] + 1;
    const bool same = c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER";
    const bool explicit_pads = c.auto_pad.empty() || c.auto_pad == "NOTSET";
    if (!transpose) {
      if (same) {
        g.out[j] = (g.in[j] + g.s[j] - 1) / g.s[j];
        const int64_t total = std::max<int64_t>(0, (g.out[j] - 1) * g.s[j] + eff - g.in[j]);
        g.pb[j] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        g.pe[j] = total - g.pb[j];
      } else {
        g.pb[j] = explicit_pads && !c.pads.empty() ? c.pads[i] : 0;
        g.pe[j] = explicit_pads && !c.pads.empty() ? c.pads[i + n] : 0;
        g.out[j] = (g.in[j] + g.pb[j] + g.pe[j] - eff) / g.s[j] + 1;
      }
    } else {
      const int64_t op = c.output_padding.empty() ? 0 : c.output_padding[i];
      if (!c.output_shape.empty() || same) {
        g.out[j] = !c.output_shape.empty() ? c.output_shape[i] : g.in[j] * g.s[j];
        const int64_t total = g.s[j] * (g.in[j] - 1) + op + eff - g.out[j];
        const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
        g.pb[j] = c.auto_pad == "SAME_UPPER" ? half : total - half;
        g.pe[j] = total - g.pb[j];
      } else {
        g.pb[j] = explicit_pads && !c.pads.empty() ? c.pads[i] : 0;
        g.pe[j] = explicit_pads && !c.pads.empty() ? c.pads[i + n] : 0;
        g.out[j] = g.s[j] * (g.in[j] - 1) + op + eff - g.pb[j] - g.pe[j];
      }
    }
  }
  return g;
}

Shape out_shape(const ConvCfg& c, const Geo& g, int64_t channels) {
  Shape s = {c.x[0], channels};
  for (size_t i = 3 - (c.x.size() - 2); i < 3; ++i) s.push_back(g.out[i]);
  return s;
}

Tensor ref_conv(const ConvCfg& c, const Tensor& x, const Tensor& w, const Tensor* b) {
  const Geo g = conv_geo(c, false);
  const int64_t nb = c.x[0], ch = c.x[1], m = c.w[0], cg = ch / c.group, mg = m / c.group;
  Tensor y = Tensor::allocate(x.dtype(), out_shape(c, g, m)).value();
  int64_t yi = 0;
  for (int64_t n = 0; n < nb; ++n)
    for (int64_t oc = 0; oc < m; ++oc)
      for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
        for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
            double s = b ? b->get_f64(oc) : 0.0;
            for (int64_t ic = 0; ic < cg; ++ic)
              for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
                for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    const int64_t i0 = o0 * g.s[0] - g.pb[0] + k0 * g.d[0];
                    const int64_t i1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
                    const int64_t i2 = o2 * g.s[2] - g.pb[2] + k2 * g.d[2];
                    if (i0 < 0 || i0 >= g.in[0] || i1 < 0 || i1 >= g.in[1] || i2 < 0 || i2 >= g.in[2]) continue;
                    const int64_t xc = n * ch + (oc / mg) * cg + ic;
                    s += x.get_f64(((xc * g.in[0] + i0) * g.in[1] + i1) * g.in[2] + i2) *
                         w.get_f64((((oc * cg + ic) * g.k[0] + k0) * g.k[1] + k1) * g.k[2] + k2);
                  }
            y.set_f64(yi++, s);
          }
  return y;
}

Tensor ref_conv_transpose(const ConvCfg& c, const Tensor& x, const Tensor& w, const Tensor* b) {
  const Geo g = conv_geo(c, true);
  const int64_t nb = c.x[0], ch = c.x[1], mg = c.w[1], m = mg * c.group, cg = ch / c.group;
  const Shape os = out_shape(c, g, m);
  std::vector<double> acc(static_cast<size_t>(shape_numel(os)), 0.0);
  const int64_t plane = g.out[0] * g.out[1] * g.out[2];
  for (int64_t n = 0; n < nb; ++n)
    for (int64_t ic = 0; ic < ch; ++ic)
      for (int64_t i0 = 0; i0 < g.in[0]; ++i0)
        for (int64_t i1 = 0; i1 < g.in[1]; ++i1)
          for (int64_t i2 = 0; i2 < g.in[2]; ++i2) {
            const double xv = x.get_f64((((n * ch + ic) * g.in[0] + i0) * g.in[1] + i1) * g.in[2] + i2);
            for (int64_t oc = 0; oc < mg; ++oc)
              for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
                for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    const int64_t o0 = i0 * g.s[0] - g.pb[0] + k0 * g.d[0];
                    const int64_t o1 = i1 * g.s[1] - g.pb[1] + k1 * g.d[1];
                    const int64_t o2 = i2 * g.s[2] - g.pb[2] + k2 * g.d[2];
                    if (o0 < 0 || o0 >= g.out[0] || o1 < 0 || o1 >= g.out[1] || o2 < 0 || o2 >= g.out[2]) continue;
                    const int64_t out_c = (ic / cg) * mg + oc;
                    acc[static_cast<size_t>((n * m + out_c) * plane + (o0 * g.out[1] + o1) * g.out[2] + o2)] +=
                        xv * w.get_f64((((ic * mg + oc) * g.k[0] + k0) * g.k[1] + k1) * g.k[2] + k2);
                  }
          }
  Tensor y = Tensor::allocate(x.dtype(), os).value();
  for (int64_t i = 0; i < y.numel(); ++i) y.set_f64(i, acc[static_cast<size_t>(i)] + (b ? b->get_f64((i / plane) % m) : 0.0));
  return y;
}

// Runs Conv or ConvTranspose for `c` on random data in `dt` and compares
// with the naive reference.
void check_conv(const std::string& op, const ConvCfg& c, DType dt = DType::kFloat32, uint32_t seed = 1) {
  SCOPED_TRACE(op + " x" + shape_to_string(c.x) + " w" + shape_to_string(c.w) + " group " + std::to_string(c.group) +
               " auto_pad '" + c.auto_pad + "' " + dtype_name(dt).data());
  const bool transpose = op == "ConvTranspose";
  const int64_t m = transpose ? c.w[1] * c.group : c.w[0];
  Tensor x = to_dtype(random_f32(c.x, seed), dt);
  Tensor w = to_dtype(random_f32(c.w, seed + 1), dt);
  Tensor b = to_dtype(random_f32({m}, seed + 2), dt);
  std::vector<Tensor> in = {x, w};
  if (c.bias) in.push_back(b);
  Tensor y = run1(op, in, conv_attrs(c));
  ASSERT_TRUE(y.defined());
  Tensor ref = transpose ? ref_conv_transpose(c, x, w, c.bias ? &b : nullptr) : ref_conv(c, x, w, c.bias ? &b : nullptr);
  if (dt == DType::kFloat64) {
    expect_near(y, ref, 1e-12, 1e-12);
  } else if (dt == DType::kFloat16) {
    expect_near(y, to_dtype(to_dtype(ref, DType::kFloat16), dt), 2e-3, 2e-3);
  } else {
    expect_near(y, ref, 1e-4, 1e-4);
  }
}

// ---------------------------------------------------------------------------
// sgemm

TEST(Sgemm, MatchesDoubleReferenceOnEverySupportedIsa) {
  struct Case {
    int64_t m, n, k;
    bool trans_a, trans_b, accumulate;
    float alpha;
  };
  const Case cases[] = {{1, 1, 1, false, false, false, 1.0f},   {7, 5, 3, false, false, false, 1.0f},
                        {13, 33, 17, true, false, false, 2.0f}, {64, 48, 300, false, true, true, 1.0f},
                        {150, 97, 513, true, true, false, -0.5f}, {300, 270, 530, false, false, true, 1.0f},
                        {5, 4096, 9, false, false, false, 1.0f}};
  for (SgemmIsa isa : {SgemmIsa::kGeneric, SgemmIsa::kAvx2, SgemmIsa::kAvx512}) {
    if (!sgemm_isa_supported(isa)) continue;
    for (const Case& c : cases) {
      SCOPED_TRACE("isa " + std::to_string(static_cast<int>(isa)) + " m=" + std::to_string(c.m) +
                   " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k));
      const Tensor a = random_f32({c.m * c.k}, 11), b = random_f32({c.k * c.n}, 12), c0 = random_f32({c.m * c.n}, 13);
      const float* ad = a.data<float>();
      const float* bd = b.data<float>();
      StridedMatrix am = c.trans_a ? StridedMatrix{ad, 1, c.m} : StridedMatrix{ad, c.k, 1};
      StridedMatrix bm = c.trans_b ? StridedMatrix{bd, 1, c.k} : StridedMatrix{bd, c.n, 1};
      std::vector<float> out1(c0.data<float>(), c0.data<float>() + c.m * c.n), out3 = out1;
      SgemmArgs args;
      args.m = c.m;
      args.n = c.n;
      args.k = c.k;
      args.alpha = c.alpha;
      args.a = am;
      args.b = strided_b_source(&bm);
      args.ldc = c.n;
      args.accumulate = c.accumulate;
      args.c = out1.data();
      ASSERT_TRUE(sgemm(args, 1, isa).ok());
      args.c = out3.data();
      ASSERT_TRUE(sgemm(args, 3, isa).ok());
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          double s = 0;
          for (int64_t p = 0; p < c.k; ++p)
            s += static_cast<double>(am.data[i * am.row_stride + p * am.col_stride]) *
                 bm.data[p * bm.row_stride + j * bm.col_stride];
          s = c.alpha * s + (c.accumulate ? c0.data<float>()[i * c.n + j] : 0.0);
          const size_t at = static_cast<size_t>(i * c.n + j);
          ASSERT_NEAR(out1[at], s, 1e-4 + 1e-4 * std::abs(s)) << "at " << i << "," << j;
          // Same bits whatever the thread count.
          ASSERT_EQ(out1[at], out3[at]) << "at " << i << "," << j;
        }
    }
  }
}

TEST(Sgemm, WritesOnlyItsTileOfALargerC) {
  // C is a 3x5 window of a 4x8 buffer: columns past n and rows past m stay.
  const Tensor a = random_f32({3 * 2}, 1), b = random_f32({2 * 5}, 2);
  StridedMatrix bm{b.data<float>(), 5, 1};
  std::vector<float> c(32, 42.0f);
  SgemmArgs args;
  args.m = 3;
  args.n = 5;
  args.k = 2;
  args.a = StridedMatrix{a.data<float>(), 2, 1};
  args.b = strided_b_source(&bm);
  args.c = c.data();
  args.ldc = 8;
  ASSERT_TRUE(sgemm(args, 2).ok());
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 8; ++j) {
      const float v = c[static_cast<size_t>(i * 8 + j)];
      if (i < 3 && j < 5) {
        const float e = a.data<float>()[i * 2] * b.data<float>()[j] + a.data<float>()[i * 2 + 1] * b.data<float>()[5 + j];
        EXPECT_NEAR(v, e, 1e-6);
      } else {
        EXPECT_EQ(v, 42.0f) << i << "," << j;
      }
    }
}

// ---------------------------------------------------------------------------
// MatMul

TEST(MatMul, HandComputed) {
  Tensor a = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_vector<float>({3, 2}, {7, 8, 9, 10, 11, 12});
  expect_near(run1("MatMul", {a, b}), Tensor::from_vector<float>({2, 2}, {58, 64, 139, 154}));
}

TEST(MatMul, OneDimensionalPromotion) {
  Tensor v = Tensor::from_vector<float>({3}, {1, 2, 3});
  Tensor m = Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  expect_near(run1("MatMul", {v, m}), Tensor::from_vector<float>({2}, {22, 28}));
  Tensor mt = Tensor::from_vector<float>({2, 3}, {1, 3, 5, 2, 4, 6});
  expect_near(run1("MatMul", {mt, v}), Tensor::from_vector<float>({2}, {22, 28}));
  expect_near(run1("MatMul", {v, v}), Tensor::from_vector<float>({}, {14}));
  // 1-D against a batched matrix: [4] x [2,4,3] -> [2,3].
  Tensor bv = random_f32({4}, 3), bb = random_f32({2, 4, 3}, 4);
  expect_near(run1("MatMul", {bv, bb}), ref_matmul(bv, bb), 1e-5, 1e-5);
  expect_near(run1("MatMul", {bb.reshaped({2, 3, 4}).value(), bv}), ref_matmul(bb.reshaped({2, 3, 4}).value(), bv),
              1e-5, 1e-5);
}

TEST(MatMul, BroadcastsBatchDimensions) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 1, 3, 4}, {5, 4, 6}}, {{3, 4, 5}, {3, 5, 2}}, {{4, 5}, {3, 5, 6}},     {{3, 4, 5}, {5, 6}},
      {{1, 3, 4}, {2, 1, 4, 2}}, {{2, 64, 128}, {128, 96}}, {{12, 197, 64}, {12, 64, 197}}, {{2, 3, 1, 7}, {3, 7, 9}}};
  uint32_t seed = 10;
  for (const auto& [as, bs] : shapes) {
    SCOPED_TRACE(shape_to_string(as) + " x " + shape_to_string(bs));
    Tensor a = random_f32(as, seed++), b = random_f32(bs, seed++);
    expect_near(run1("MatMul", {a, b}), ref_matmul(a, b), 1e-4, 1e-4);
  }
}

TEST(MatMul, LargeBlockedProduct) {
  Tensor a = random_f32({300, 530}, 1), b = random_f32({530, 270}, 2);
  expect_near(run1("MatMul", {a, b}), ref_matmul(a, b), 2e-4, 1e-4);
}

TEST(MatMul, OtherDtypesAreExact) {
  Tensor a = Tensor::from_vector<int32_t>({2, 2, 3}, {1, -2, 3, 4, 5, -6, 7, 8, 9, -10, 11, 12});
  Tensor b = Tensor::from_vector<int32_t>({3, 2}, {1, 2, -3, 4, 5, 6});
  Tensor y = run1("MatMul", {a, b});
  EXPECT_EQ(y.dtype(), DType::kInt32);
  EXPECT_EQ(y.to_i64_vector(), (std::vector<int64_t>{22, 12, -41, -8, 28, 100, 17, 96}));
  Tensor a64 = Tensor::from_vector<int64_t>({1, 2}, {int64_t{1} << 40, 3});
  Tensor b64 = Tensor::from_vector<int64_t>({2, 1}, {4, 5});
  EXPECT_EQ(run1("MatMul", {a64, b64}).to_i64_vector(), (std::vector<int64_t>{(int64_t{1} << 42) + 15}));

  Tensor af = random_f32({3, 5, 7}, 5), bf = random_f32({7, 4}, 6);
  Tensor ad = to_dtype(af, DType::kFloat64), bd = to_dtype(bf, DType::kFloat64);
  expect_near(run1("MatMul", {ad, bd}), ref_matmul(ad, bd), 1e-12, 1e-12);
  Tensor ah = to_dtype(af, DType::kFloat16), bh = to_dtype(bf, DType::kFloat16);
  expect_near(run1("MatMul", {ah, bh}), to_dtype(ref_matmul(ah, bh), DType::kFloat16), 2e-3, 2e-3);
}

TEST(MatMul, Errors) {
  expect_error("MatMul", {random_f32({2, 3}, 1), random_f32({4, 2}, 2)}, {}, "inner dimensions differ");
  expect_error("MatMul", {random_f32({2, 2, 3}, 1), random_f32({3, 3, 2}, 2)}, {}, "do not broadcast");
  expect_error("MatMul", {random_f32({2, 3}, 1), to_dtype(random_f32({3, 2}, 2), DType::kFloat64)}, {},
               "B has dtype f64");
  expect_error("MatMul", {Tensor::scalar_f32(1), random_f32({3, 2}, 2)}, {}, "scalar");
  expect_error("MatMul", {to_dtype(random_f32({2, 2}, 1), DType::kBool), to_dtype(random_f32({2, 2}, 1), DType::kBool)},
               {}, "not supported");
}

// ---------------------------------------------------------------------------
// Gemm

Tensor ref_gemm(const Tensor& a, const Tensor& b, const Tensor* c, bool ta, bool tb, double alpha, double beta) {
  const int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1), n = tb ? b.dim(0) : b.dim(1);
  Tensor y = Tensor::allocate(a.dtype(), {m, n}).value();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += a.get_f64(ta ? p * m + i : i * k + p) * b.get_f64(tb ? j * k + p : p * n + j);
      double cv = 0;
      if (c) {
        const Shape& cs = c->shape();
        const int64_t ci = cs.size() == 2 && cs[0] != 1 ? i : 0;
        const int64_t cj = !cs.empty() && cs.back() != 1 ? j : 0;
        cv = c->get_f64(ci * (cs.empty() ? 1 : cs.back()) + cj);
      }
      y.set_f64(i * n + j, alpha * s + beta * cv);
    }
  return y;
}

TEST(Gemm, TransposesAlphaBetaAndBroadcastC) {
  const int64_t m = 37, n = 29, k = 45;
  const std::vector<Shape> c_shapes = {{}, {n}, {1, n}, {m, 1}, {m, n}, {1}};
  uint32_t seed = 100;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (const Shape& cs : c_shapes) {
        SCOPED_TRACE(std::string("transA ") + (ta ? "1" : "0") + " transB " + (tb ? "1" : "0") + " C " +
                     shape_to_string(cs));
        Tensor a = random_f32(ta ? Shape{k, m} : Shape{m, k}, seed++);
        Tensor b = random_f32(tb ? Shape{n, k} : Shape{k, n}, seed++);
        Tensor c = random_f32(cs, seed++);
        Attrs attrs = {{"transA", int_attr(ta)}, {"transB", int_attr(tb)},
                       {"alpha", ir::Attribute::of_float(0.5f)}, {"beta", ir::Attribute::of_float(-2.0f)}};
        expect_near(run1("Gemm", {a, b, c}, attrs), ref_gemm(a, b, &c, ta, tb, 0.5, -2.0), 1e-4, 1e-4);
      }
  Tensor a = random_f32({m, k}, 1), b = random_f32({k, n}, 2);
  expect_near(run1("Gemm", {a, b}), ref_gemm(a, b, nullptr, false, false, 1.0, 1.0), 1e-4, 1e-4);
  Tensor c = random_f32({n}, 3);
  Tensor ad = to_dtype(a, DType::kFloat64), bd = to_dtype(b, DType::kFloat64), cd = to_dtype(c, DType::kFloat64);
  Attrs attrs = {{"transB", int_attr(0)}, {"alpha", ir::Attribute::of_float(1.5f)}};
  expect_near(run1("Gemm", {ad, bd, cd}, attrs), ref_gemm(ad, bd, &cd, false, false, 1.5, 1.0), 1e-12, 1e-12);
}

TEST(Gemm, HandComputedInteger) {
  Tensor a = Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4});
  Tensor b = Tensor::from_vector<int64_t>({2, 2}, {5, 6, 7, 8});
  Tensor c = Tensor::from_vector<int64_t>({2}, {100, 200});
  Attrs attrs = {{"transA", int_attr(1)}, {"alpha", ir::Attribute::of_float(2.0f)}};
  // A^T B = [[26, 30], [38, 44]]; 2 * that + C.
  EXPECT_EQ(run1("Gemm", {a, b, c}, attrs).to_i64_vector(), (std::vector<int64_t>{152, 260, 176, 288}));
}

TEST(Gemm, Errors) {
  expect_error("Gemm", {random_f32({2, 3, 1}, 1), random_f32({3, 2}, 2)}, {}, "A must be 2-D");
  expect_error("Gemm", {random_f32({2, 3}, 1), random_f32({2, 2}, 2)}, {}, "inner dimensions differ");
  expect_error("Gemm", {random_f32({2, 3}, 1), random_f32({3, 4}, 2), random_f32({3, 4}, 3)}, {}, "does not broadcast");
  expect_error("Gemm", {random_f32({2, 3}, 1), random_f32({3, 4}, 2), random_f32({1, 2, 4}, 3)}, {}, "rank <= 2");
  Tensor ai = Tensor::from_vector<int32_t>({1, 1}, {1});
  expect_error("Gemm", {ai, ai}, {{"alpha", ir::Attribute::of_float(0.5f)}}, "integral alpha");
}

// ---------------------------------------------------------------------------
// Conv

TEST(Conv, HandComputed) {
  // 1x1x3x3 input 0..8, 2x2 kernel of ones, no padding: sums of 2x2 blocks.
  Tensor x = Tensor::from_vector<float>({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  Tensor w = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 1, 1, 1});
  expect_near(run1("Conv", {x, w}), Tensor::from_vector<float>({1, 1, 2, 2}, {8, 12, 20, 24}));
  // With pads 1 and stride 2 and a bias of 10.
  Tensor b = Tensor::from_vector<float>({1}, {10});
  expect_near(run1("Conv", {x, w, b}, {{"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}}),
              Tensor::from_vector<float>({1, 1, 2, 2}, {10, 13, 19, 34}));
}

TEST(Conv, MatchesNaiveReference2D) {
  std::vector<ConvCfg> cfgs;
  auto add = [&](ConvCfg c) { cfgs.push_back(std::move(c)); };
  add({{1, 3, 9, 9}, {4, 3, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true});
  add({{2, 4, 10, 7}, {6, 4, 3, 2}, 1, {2, 1}, {}, {1, 0, 2, 1}, "", true});          // asymmetric pads
  add({{1, 3, 12, 12}, {5, 3, 3, 3}, 1, {1, 1}, {2, 3}, {2, 3, 2, 3}, "", false});    // dilation
  add({{1, 4, 8, 8}, {6, 2, 3, 3}, 2, {1, 1}, {}, {1, 1, 1, 1}, "", true});           // groups
  add({{2, 6, 9, 9}, {6, 1, 3, 3}, 6, {2, 2}, {}, {1, 1, 1, 1}, "", true});           // depthwise
  add({{1, 4, 11, 11}, {8, 1, 5, 5}, 4, {1, 1}, {2, 2}, {4, 4, 4, 4}, "", true});     // depthwise x2, dilated
  add({{1, 3, 14, 14}, {6, 1, 7, 7}, 3, {3, 2}, {}, {3, 1, 2, 3}, "", false});        // depthwise, multiplier 2
  add({{1, 8, 20, 37}, {8, 1, 3, 3}, 8, {}, {}, {1, 1, 1, 1}, "", true});            // depthwise, wide rows
  add({{2, 4, 9, 30}, {4, 1, 7, 7}, 4, {}, {}, {3, 3, 3, 3}, "", true});              // convnext-style 7x7
  add({{1, 2, 6, 29}, {2, 1, 3, 4}, 2, {}, {1, 3}, {1, 0, 0, 5}, "", false});         // asymmetric, dilated
  add({{1, 8, 7, 7}, {16, 8, 1, 1}, 1, {}, {}, {}, "", true});                        // pointwise
  add({{1, 8, 7, 7}, {16, 8, 1, 1}, 1, {2, 2}, {}, {}, "", false});                   // 1x1 stride 2
  add({{1, 8, 5, 5}, {4, 8, 1, 1}, 1, {}, {}, {1, 1, 1, 1}, "", false});              // 1x1 padded
  add({{1, 3, 10, 9}, {4, 3, 3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER", true});
  add({{1, 3, 10, 9}, {4, 3, 4, 2}, 1, {2, 3}, {}, {}, "SAME_LOWER", true});
  add({{1, 3, 10, 9}, {4, 3, 4, 4}, 1, {3, 3}, {2, 1}, {}, "SAME_UPPER", false});
  add({{1, 3, 10, 9}, {4, 3, 3, 3}, 1, {2, 2}, {}, {5, 5, 5, 5}, "VALID", true});     // VALID ignores pads
  add({{1, 64, 16, 16}, {32, 64, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true});          // K = 576 > one block
  add({{1, 3, 56, 56}, {64, 3, 7, 7}, 1, {2, 2}, {}, {3, 3, 3, 3}, "", true});        // resnet stem, smaller
  add({{3, 16, 6, 6}, {32, 4, 3, 3}, 4, {}, {}, {1, 1, 1, 1}, "", true});             // batch x groups tasks
  add({{1, 2, 3, 3}, {3, 2, 3, 3}, 1, {}, {}, {}, "", true});                         // output 1x1
  for (const ConvCfg& c : cfgs) check_conv("Conv", c);
}

TEST(Conv, OneAndThreeDimensional) {
  check_conv("Conv", {{2, 3, 20}, {4, 3, 5}, 1, {2}, {}, {2, 1}, "", true});
  check_conv("Conv", {{1, 4, 17}, {4, 1, 3}, 4, {1}, {3}, {3, 3}, "", true});
  check_conv("Conv", {{1, 3, 15}, {2, 3, 4}, 1, {3}, {}, {}, "SAME_LOWER", false});
  check_conv("Conv", {{1, 2, 6, 7, 5}, {3, 2, 3, 3, 2}, 1, {1, 2, 1}, {}, {1, 1, 0, 1, 1, 1}, "", true});
  check_conv("Conv", {{2, 4, 5, 6, 7}, {4, 2, 2, 3, 3}, 2, {2, 1, 2}, {1, 2, 1}, {0, 2, 1, 1, 0, 1}, "", true});
  check_conv("Conv", {{1, 3, 5, 5, 5}, {3, 1, 3, 3, 3}, 3, {}, {}, {}, "SAME_UPPER", true});  // 3-D depthwise
}

TEST(Conv, Float16AndFloat64) {
  for (DType dt : {DType::kFloat16, DType::kFloat64}) {
    check_conv("Conv", {{1, 3, 8, 8}, {4, 3, 3, 3}, 1, {2, 1}, {}, {1, 1, 1, 1}, "", true}, dt);
    check_conv("Conv", {{1, 4, 7, 7}, {4, 1, 3, 3}, 4, {}, {2, 2}, {2, 2, 2, 2}, "", true}, dt);
    check_conv("Conv", {{1, 2, 9}, {3, 2, 2}, 1, {}, {}, {}, "SAME_UPPER", false}, dt);
  }
}

TEST(Conv, KernelShapeAttributeMustMatchW) {
  Tensor x = random_f32({1, 2, 5, 5}, 1), w = random_f32({3, 2, 3, 3}, 2);
  ConvCfg c{{1, 2, 5, 5}, {3, 2, 3, 3}};
  expect_near(run1("Conv", {x, w}, {{"kernel_shape", ints({3, 3})}}), ref_conv(c, x, w, nullptr), 1e-5, 1e-5);
  expect_error("Conv", {x, w}, {{"kernel_shape", ints({3, 2})}}, "kernel_shape[1] = 2 does not match W");
}

TEST(Conv, Errors) {
  Tensor x = random_f32({1, 4, 6, 6}, 1);
  expect_error("Conv", {x, random_f32({2, 3, 3, 3}, 2)}, {}, "X has 4 channels but W");
  expect_error("Conv", {x, random_f32({3, 2, 3, 3}, 2)}, {{"group", int_attr(2)}}, "not divisible by group");
  expect_error("Conv", {x, random_f32({4, 2, 3, 3}, 2)}, {{"group", int_attr(0)}}, "group = 0 must be positive");
  expect_error("Conv", {x, random_f32({2, 4, 3}, 2)}, {}, "must have the same rank");
  expect_error("Conv", {random_f32({4, 6}, 1), random_f32({2, 4}, 2)}, {}, "X must have rank >= 3");
  expect_error("Conv", {x, random_f32({2, 4, 3, 3}, 2)}, {{"strides", ints({1, 0})}}, "strides[1] = 0 must be positive");
  expect_error("Conv", {x, random_f32({2, 4, 3, 3}, 2)}, {{"strides", ints({-1, 1})}}, "must be positive");
  expect_error("Conv", {x, random_f32({2, 4, 3, 3}, 2)}, {{"strides", ints({1})}}, "strides has 1 values, expected 2");
  expect_error("Conv", {x, random_f32({2, 4, 3, 3}, 2)}, {{"dilations", ints({0, 1})}}, "dilations[0] = 0");
  expect_error("Conv", {x, random_f32({2, 4, 3, 3}, 2)}, {{"pads", ints({1, 1})}}, "pads has 2 values, expected 4");
  expect_error("Conv", {x, random_f32({2, 4, 3, 3}, 2)}, {{"pads", ints({1, -1, 1, 1})}}, "pads[1] = -1");
  expect_error("Conv", {x, random_f32({2, 4, 3, 3}, 2)}, {{"auto_pad", str("SAME")}}, "unknown auto_pad 'SAME'");
  expect_error("Conv", {x, random_f32({2, 4, 7, 3}, 2)}, {}, "would have output size 0");
  expect_error("Conv", {x, random_f32({2, 4, 3, 3}, 2), random_f32({3}, 3)}, {}, "B has 3 elements");
  expect_error("Conv", {x, random_f32({2, 4, 3, 3}, 2), random_f32({2, 1}, 3)}, {}, "B must be 1-D");
  Tensor xi = to_dtype(x, DType::kInt32);
  expect_error("Conv", {xi, to_dtype(random_f32({2, 4, 3, 3}, 2), DType::kInt32)}, {}, "X has dtype i32");
  expect_error("Conv", {x, to_dtype(random_f32({2, 4, 3, 3}, 2), DType::kFloat64)}, {}, "W has dtype f64");
}

TEST(Conv, FourSpatialAxesAreUnimplementedNotACrash) {
  auto r = run_op("Conv", {random_f32({1, 1, 2, 2, 2, 2}, 1), random_f32({1, 1, 1, 1, 1, 1}, 2)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << r.status().to_string();
}

// ---------------------------------------------------------------------------
// ConvTranspose

TEST(ConvTranspose, OnnxPadsExample) {
  // The ONNX backend test 'convtranspose_pads' (values checked by hand).
  Tensor x = Tensor::from_vector<float>({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  Tensor w = Tensor::from_vector<float>({1, 2, 3, 3}, std::vector<float>(18, 1.0f));
  const std::vector<float> plane = {1, 1, 3, 1, 1, 3, 7, 4, 9, 7, 4, 9, 7, 4, 9, 13, 7, 15, 13, 7, 15};
  std::vector<float> expected = plane;
  expected.insert(expected.end(), plane.begin(), plane.end());
  expect_near(run1("ConvTranspose", {x, w}, {{"strides", ints({3, 2})}, {"pads", ints({1, 2, 1, 2})}}),
              Tensor::from_vector<float>({1, 2, 7, 3}, expected));
}

TEST(ConvTranspose, HandComputedStride2) {
  // [1, 2] upsampled with kernel [1, 10] and stride 2: [1, 10, 2, 20].
  Tensor x = Tensor::from_vector<float>({1, 1, 2}, {1, 2});
  Tensor w = Tensor::from_vector<float>({1, 1, 2}, {1, 10});
  expect_near(run1("ConvTranspose", {x, w}, {{"strides", ints({2})}}), Tensor::from_vector<float>({1, 1, 4}, {1, 10, 2, 20}));
  // Kernel 3, stride 2: overlaps add: [1, 10, 100+2, 20, 200].
  Tensor w3 = Tensor::from_vector<float>({1, 1, 3}, {1, 10, 100});
  expect_near(run1("ConvTranspose", {x, w3}, {{"strides", ints({2})}}),
              Tensor::from_vector<float>({1, 1, 5}, {1, 10, 102, 20, 200}));
}

TEST(ConvTranspose, MatchesNaiveReference) {
  std::vector<ConvCfg> cfgs;
  auto add = [&](ConvCfg c) { cfgs.push_back(std::move(c)); };
  add({{1, 3, 5, 5}, {3, 4, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, "", true});
  add({{2, 4, 4, 6}, {4, 3, 4, 4}, 1, {2, 2}, {}, {1, 1, 1, 1}, "", true, {1, 1}});     // output_padding
  add({{1, 4, 5, 5}, {4, 2, 3, 3}, 2, {2, 1}, {2, 1}, {0, 1, 2, 0}, "", true, {1, 0}});  // groups, dilation
  add({{1, 4, 6, 6}, {4, 1, 4, 4}, 4, {2, 2}, {}, {1, 1, 1, 1}, "", false});            // depthwise upsample
  add({{1, 3, 4, 5}, {3, 2, 3, 3}, 1, {2, 3}, {}, {}, "", true, {}, {10, 14}});          // output_shape
  add({{1, 3, 4, 5}, {3, 2, 3, 3}, 1, {2, 3}, {}, {}, "", true, {}, {7, 13}});           // output_shape, odd total
  add({{1, 2, 4, 5}, {2, 2, 3, 2}, 1, {2, 2}, {}, {}, "SAME_UPPER", true});
  add({{1, 2, 4, 5}, {2, 2, 3, 2}, 1, {2, 2}, {}, {}, "SAME_LOWER", true});
  add({{1, 2, 4, 5}, {2, 2, 3, 3}, 1, {3, 2}, {}, {}, "SAME_UPPER", false, {1, 1}});
  add({{1, 2, 4, 5}, {2, 3, 3, 3}, 1, {1, 1}, {}, {}, "VALID", true});
  add({{1, 32, 9, 9}, {32, 16, 4, 4}, 1, {2, 2}, {}, {1, 1, 1, 1}, "", true});         // GEMM-sized
  for (const ConvCfg& c : cfgs) check_conv("ConvTranspose", c);
  check_conv("ConvTranspose", {{2, 3, 7}, {3, 2, 3}, 1, {3}, {2}, {1, 2}, "", true, {2}});
  check_conv("ConvTranspose", {{1, 2, 3, 4, 3}, {2, 2, 2, 3, 2}, 1, {2, 1, 2}, {}, {0, 1, 0, 1, 0, 1}, "", true});
  check_conv("ConvTranspose", {{1, 3, 4, 4}, {3, 2, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, "", true, {1, 1}},
             DType::kFloat64);
  check_conv("ConvTranspose", {{1, 4, 3, 3}, {4, 1, 2, 2}, 2, {2, 2}, {}, {}, "", true}, DType::kFloat16);
}

TEST(ConvTranspose, Errors) {
  Tensor x = random_f32({1, 4, 3, 3}, 1);
  expect_error("ConvTranspose", {x, random_f32({3, 2, 3, 3}, 2)}, {}, "W.shape[0] = 3");
  expect_error("ConvTranspose", {x, random_f32({4, 2, 3, 3}, 2)}, {{"group", int_attr(3)}}, "not divisible by group");
  expect_error("ConvTranspose", {x, random_f32({4, 2, 3, 3}, 2)}, {{"output_padding", ints({1})}},
               "output_padding has 1 values");
  expect_error("ConvTranspose", {x, random_f32({4, 2, 3, 3}, 2)}, {{"output_shape", ints({5, 0})}},
               "output_shape[1] = 0 must be positive");
  expect_error("ConvTranspose", {x, random_f32({4, 2, 3, 3}, 2)}, {{"pads", ints({3, 3, 3, 3})}},
               "would have output size -1");
  expect_error("ConvTranspose", {x, random_f32({4, 2, 3, 3}, 2), random_f32({4}, 3)}, {}, "B has 4 elements");
}

// ---------------------------------------------------------------------------
// Symbolic shape inference

StatusOr<std::vector<ValueInfo>> infer(const std::string& op, std::vector<std::pair<DType, ir::SymShape>> ins,
                                       Attrs attrs = {}) {
  ir::Node node;
  node.op = op;
  node.name = "sym_" + op;
  node.attrs = std::move(attrs);
  node.outputs = {0};
  std::vector<ValueInfo> infos;
  for (auto& [dt, shape] : ins) {
    ValueInfo v;
    v.dtype = dt;
    v.shape = shape;
    infos.push_back(std::move(v));
  }
  const OpSchema* schema = OpRegistry::builtin().find("", op);
  if (!schema) return not_found(op);
  return infer_node(*schema, node, std::move(infos));
}

ir::SymShape sym(std::vector<ir::Dim> d) { return ir::SymShape(std::move(d)); }

TEST(LinalgInference, ConvOutputDimsAreExpressionsThatEvaluateCorrectly) {
  const ir::Dim n = ir::Dim::symbol("n"), h = ir::Dim::symbol("h"), w = ir::Dim::symbol("w");
  auto r = infer("Conv", {{DType::kFloat32, sym({n, 3, h, w})}, {DType::kFloat32, sym({8, 3, 3, 5})}},
                 {{"strides", ints({2, 3})}, {"pads", ints({1, 2, 1, 2})}, {"dilations", ints({1, 2})}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const ir::SymShape& out = (*r)[0].shape;
  ASSERT_EQ(out.rank(), 4);
  EXPECT_TRUE(out.dims[0].same_as(n));
  EXPECT_EQ(out.dims[1].value(), 8);
  for (int64_t hv : {1, 2, 7, 224, 225})
    for (int64_t wv : {5, 9, 31}) {
      const std::map<std::string, int64_t> b = {{"n", 1}, {"h", hv}, {"w", wv}};
      EXPECT_EQ(out.dims[2].evaluate(b), (hv + 2 - 3) / 2 + 1) << hv;
      EXPECT_EQ(out.dims[3].evaluate(b), (wv + 4 - 9) / 3 + 1) << wv;
    }
  auto same = infer("Conv", {{DType::kFloat32, sym({n, 3, h, w})}, {DType::kFloat32, sym({8, 3, 3, 3})}},
                    {{"strides", ints({2, 2})}, {"auto_pad", str("SAME_UPPER")}});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ((*same)[0].shape.dims[2].to_string(), "cdiv(h,2)");
}

TEST(LinalgInference, UnknownAndUnrankedInputsDoNotFail) {
  auto r = infer("Conv", {{DType::kFloat32, ir::SymShape::unranked()}, {DType::kFloat32, sym({8, 3, 3, 3})}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].shape.to_string(), "[?,8,?,?]");
  auto m = infer("MatMul", {{DType::kFloat32, sym({ir::Dim::symbol("b"), ir::Dim::symbol("s"), 64})},
                            {DType::kFloat32, sym({64, 32})}});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)[0].shape.to_string(), "[b,s,32]");
  auto u = infer("MatMul", {{DType::kFloat32, ir::SymShape::unranked()}, {DType::kFloat32, sym({64, 32})}});
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE((*u)[0].shape.has_rank);
  auto g = infer("Gemm", {{DType::kFloat32, sym({ir::Dim::symbol("m"), 4})}, {DType::kFloat32, sym({5, 4})}},
                 {{"transB", int_attr(1)}});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)[0].shape.to_string(), "[m,5]");
  auto t = infer("ConvTranspose", {{DType::kFloat32, sym({1, 4, ir::Dim::symbol("h"), 3})},
                                   {DType::kFloat32, sym({4, 2, 3, 3})}},
                 {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}, {"output_padding", ints({1, 1})}});
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ((*t)[0].shape.dims[2].evaluate({{"h", 5}}), 2 * 4 + 1 + 3 - 2);
  EXPECT_EQ((*t)[0].shape.dims[3].value(), 2 * 2 + 1 + 3 - 2);
}

TEST(LinalgInference, SymbolicChannelMismatchIsNotAnError) {
  // C is symbolic: it might equal W.shape[1] * group at run time.
  auto r = infer("Conv", {{DType::kFloat32, sym({1, ir::Dim::symbol("c"), 8, 8})}, {DType::kFloat32, sym({4, 3, 3, 3})}});
  EXPECT_TRUE(r.ok()) << r.status().to_string();
}

// ---------------------------------------------------------------------------
// Einsum

Tensor einsum(const std::string& eq, const std::vector<Tensor>& in) {
  return run1("Einsum", in, {{"equation", str(eq)}});
}

TEST(Einsum, MatrixProductsMatchMatMul) {
  Tensor a = random_f32({5, 7}, 1), b = random_f32({7, 3}, 2);
  expect_near(einsum("ij,jk->ik", {a, b}), ref_matmul(a, b), 1e-5, 1e-5);
  expect_near(einsum("ij,jk", {a, b}), ref_matmul(a, b), 1e-5, 1e-5);  // implicit output
  expect_near(einsum(" i j , j k -> i k ", {a, b}), ref_matmul(a, b), 1e-5, 1e-5);
  Tensor q = random_f32({2, 3, 5, 4}, 3), k = random_f32({2, 3, 6, 4}, 4);
  // bhqd,bhkd->bhqk is q x k^T per (b, h).
  Tensor kt = Tensor::allocate(DType::kFloat32, {2, 3, 4, 6}).value();
  for (int64_t bh = 0; bh < 6; ++bh)
    for (int64_t t = 0; t < 6; ++t)
      for (int64_t d = 0; d < 4; ++d) kt.data<float>()[(bh * 4 + d) * 6 + t] = k.data<float>()[(bh * 6 + t) * 4 + d];
  expect_near(einsum("bhqd,bhkd->bhqk", {q, k}), ref_matmul(q, kt), 1e-5, 1e-5);
  Tensor x = random_f32({2, 1, 3, 4}, 5), y = random_f32({5, 4, 6}, 6);
  expect_near(einsum("...ij,...jk->...ik", {x, y}), ref_matmul(x, y), 1e-5, 1e-5);
}

TEST(Einsum, HandComputed) {
  Tensor m = Tensor::from_vector<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect_near(einsum("ii->", {m}), Tensor::from_vector<float>({}, {15}));
  expect_near(einsum("ii", {m}), Tensor::from_vector<float>({}, {15}));  // implicit: trace
  expect_near(einsum("ii->i", {m}), Tensor::from_vector<float>({3}, {1, 5, 9}));
  expect_near(einsum("ij->j", {m}), Tensor::from_vector<float>({3}, {12, 15, 18}));
  expect_near(einsum("ij->", {m}), Tensor::from_vector<float>({}, {45}));
  expect_near(einsum("ji", {m}), Tensor::from_vector<float>({3, 3}, {1, 4, 7, 2, 5, 8, 3, 6, 9}));  // transpose
  // ASCII order puts 'A' before 'b': implicit "bA" is "Ab", a transpose.
  Tensor r = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_near(einsum("bA", {r}), Tensor::from_vector<float>({3, 2}, {1, 4, 2, 5, 3, 6}));
  Tensor u = Tensor::from_vector<float>({2}, {1, 2}), v = Tensor::from_vector<float>({3}, {3, 4, 5});
  expect_near(einsum("i,j->ij", {u, v}), Tensor::from_vector<float>({2, 3}, {3, 4, 5, 6, 8, 10}));
  expect_near(einsum("i,i,i->", {v, v, v}), Tensor::from_vector<float>({}, {27 + 64 + 125}));
  // Batched diagonal with '...' and a size-1 labelled axis broadcasting.
  Tensor bd = Tensor::from_vector<float>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_near(einsum("...ii->...i", {bd}), Tensor::from_vector<float>({2, 2}, {1, 4, 5, 8}));
  Tensor one = Tensor::from_vector<float>({1, 3}, {1, 2, 3}), two = Tensor::from_vector<float>({2, 3}, {1, 1, 1, 2, 2, 2});
  expect_near(einsum("ij,ij->ij", {one, two}), Tensor::from_vector<float>({2, 3}, {1, 2, 3, 2, 4, 6}));
  Tensor iv = Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(einsum("ij,jk->ik", {iv, iv}).to_i64_vector(), (std::vector<int64_t>{7, 10, 15, 22}));
  Tensor dv = to_dtype(random_f32({4, 5}, 9), DType::kFloat64), dw = to_dtype(random_f32({5, 2}, 10), DType::kFloat64);
  expect_near(einsum("ij,jk->ik", {dv, dw}), ref_matmul(dv, dw), 1e-12, 1e-12);
}

TEST(Einsum, Errors) {
  Tensor m = random_f32({3, 4}, 1);
  auto err = [&](const std::string& eq, const std::vector<Tensor>& in, const std::string& needle) {
    SCOPED_TRACE(eq);
    expect_error("Einsum", in, {{"equation", str(eq)}}, needle);
  };
  err("ij->k", {m}, "output label 'k' does not appear");
  err("ij->ii", {m}, "appears twice");
  err("ij,jk->ik", {m}, "has 2 input terms but the node has 1 inputs");
  err("ijk->i", {m}, "input 0 has rank 2 but its term 'ijk' has 3 labels");
  err("i1->i", {m}, "invalid character '1'");
  err("......->", {m}, "more than one '...'");
  err("ii->i", {m}, "label 'i' has sizes 3 and 4");
  err("ij,jk->ik", {m, random_f32({3, 2}, 2)}, "label 'j' has sizes 4 and 3");
  expect_error("Einsum", {m}, {}, "equation attribute is missing");
}

TEST(LinalgInference, EinsumSymbolic) {
  const ir::Dim b = ir::Dim::symbol("b"), s = ir::Dim::symbol("s");
  auto r = infer("Einsum", {{DType::kFloat32, sym({b, s, 8})}, {DType::kFloat32, sym({b, 8, 5})}},
                 {{"equation", str("bij,bjk->bik")}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].shape.to_string(), "[b,s,5]");
  auto e = infer("Einsum", {{DType::kFloat32, sym({s, 1, 4})}, {DType::kFloat32, sym({3, 4, 2})}},
                 {{"equation", str("...ij,...jk")}});
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ((*e)[0].shape.to_string(), "[3,1,2]");  // s must be 1 or 3: broadcasting gives 3
  auto u = infer("Einsum", {{DType::kFloat32, ir::SymShape::unranked()}}, {{"equation", str("ij->ji")}});
  ASSERT_TRUE(u.ok());
  EXPECT_EQ((*u)[0].shape.to_string(), "[?,?]");
}

}  // namespace
}  // namespace kiln::ops

// Op family 'recurrent': LSTM, GRU and RNN — schemas, shape inference and
// reference kernels, exact to the ONNX definitions (attributes: see
// recurrent.h).
//
// The kernels convert every input to double once, run each direction and
// each batch row step by step (accumulating in double), and convert the
// outputs back. Batch row b runs sequence_lens[b] steps (all of them when the
// input is absent): a reverse direction walks that prefix backwards, Y is
// zero past it, and Y_h/Y_c hold the state after its last step (the initial
// state for a length of 0) — onnxruntime's reading of the definition.
#include <algorithm>
#include <cassert>
#include <string>
#include <vector>

#include "engine/ops/op_registry.h"
#include "engine/ops/recurrent.h"

namespace kiln::ops {
namespace {

using ir::Dim;
using ir::SymShape;

enum Input : size_t { kX = 0, kW, kR, kB, kSeqLens, kInitialH, kInitialC, kPeepholes };

// hidden_size from the attribute, or from R's last dim when it is known.
std::optional<Dim> hidden_dim(const RecurrentAttrs& a, const InferContext& ctx) {
  if (a.hidden_size > 0) return Dim(a.hidden_size);
  const SymShape& r = ctx.input_shape(kR);
  if (r.has_rank && r.rank() == 3) return r.dims[2];
  return std::nullopt;
}

// Checks that input `i` (when present and ranked) has the expected dims
// (null entries are not checked).
Status check_dims(const InferContext& ctx, size_t i, const char* name, const std::vector<std::optional<Dim>>& want) {
  if (!ctx.has_input(i)) return ok_status();
  const SymShape& s = ctx.input_shape(i);
  if (!s.has_rank) return ok_status();
  if (s.rank() != static_cast<int64_t>(want.size()))
    return ctx.error(std::string(name) + " (input " + std::to_string(i) + ") has shape " + s.to_string() +
                     "; expected rank " + std::to_string(want.size()));
  for (size_t k = 0; k < want.size(); ++k) {
    if (!want[k] || !want[k]->is_const() || !s.dims[k].is_const()) continue;
    if (want[k]->value() != s.dims[k].value())
      return ctx.error(std::string(name) + " (input " + std::to_string(i) + ") has shape " + s.to_string() +
                       "; dim " + std::to_string(k) + " should be " + want[k]->to_string());
  }
  return ok_status();
}

Status infer_recurrent(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(RecurrentAttrs a, parse_recurrent_attrs(ctx.node()));
  const DType dt = ctx.input_dtype(kX);
  if (dt != DType::kFloat32 && dt != DType::kFloat16 && dt != DType::kFloat64)
    return ctx.error("X has dtype " + std::string(dtype_name(dt)) + "; expected float16, float32 or float64");
  for (size_t i : {kW, kR, kB, kInitialH, kInitialC, kPeepholes})
    if (ctx.has_input(i) && ctx.input_dtype(i) != dt)
      return ctx.error("input " + std::to_string(i) + " has dtype " + std::string(dtype_name(ctx.input_dtype(i))) +
                       " but X has " + std::string(dtype_name(dt)));
  if (ctx.has_input(kSeqLens) && ctx.input_dtype(kSeqLens) != DType::kInt32)
    return ctx.error("sequence_lens (input 4) must be int32, got " + std::string(dtype_name(ctx.input_dtype(kSeqLens))));

  const SymShape& x = ctx.input_shape(kX);
  std::optional<Dim> hidden = hidden_dim(a, ctx);
  if (!x.has_rank || !hidden) {
    for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, dt, SymShape::unranked());
    return ok_status();
  }
  if (x.rank() != 3) return ctx.error("X has shape " + x.to_string() + "; expected rank 3");
  const Dim seq = a.layout == 0 ? x.dims[0] : x.dims[1];
  const Dim batch = a.layout == 0 ? x.dims[1] : x.dims[0];
  const Dim dirs(a.num_directions);
  const Dim gates_h = hidden->is_const() ? Dim(a.num_gates * hidden->value()) : Dim();
  auto known = [](const Dim& d) { return d.is_const() ? std::optional<Dim>(d) : std::nullopt; };
  KILN_RETURN_IF_ERROR(check_dims(ctx, kW, "W", {dirs, known(gates_h), x.dims[2]}));
  KILN_RETURN_IF_ERROR(check_dims(ctx, kR, "R", {dirs, known(gates_h), *hidden}));
  if (ctx.has_input(kB) && hidden->is_const())
    KILN_RETURN_IF_ERROR(check_dims(ctx, kB, "B", {dirs, Dim(2 * a.num_gates * hidden->value())}));
  KILN_RETURN_IF_ERROR(check_dims(ctx, kSeqLens, "sequence_lens", {batch}));
  const std::vector<std::optional<Dim>> state =
      a.layout == 0 ? std::vector<std::optional<Dim>>{dirs, batch, *hidden}
                    : std::vector<std::optional<Dim>>{batch, dirs, *hidden};
  KILN_RETURN_IF_ERROR(check_dims(ctx, kInitialH, "initial_h", state));
  if (a.kind == RecurrentKind::kLstm) {
    KILN_RETURN_IF_ERROR(check_dims(ctx, kInitialC, "initial_c", state));
    if (hidden->is_const()) KILN_RETURN_IF_ERROR(check_dims(ctx, kPeepholes, "P", {dirs, Dim(3 * hidden->value())}));
  }

  const SymShape y = a.layout == 0 ? SymShape({seq, dirs, batch, *hidden}) : SymShape({batch, seq, dirs, *hidden});
  const SymShape last = a.layout == 0 ? SymShape({dirs, batch, *hidden}) : SymShape({batch, dirs, *hidden});
  for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, dt, i == 0 ? y : last);
  return ok_status();
}

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get_f64(i);
  return v;
}

// One node's dims and weights as doubles, shared by the step functions.
struct Problem {
  RecurrentAttrs a;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
  std::vector<double> x, w, r, bias, p;  // bias: [dirs, 2 * G * H] (zeros when absent)

  double x_at(int64_t t, int64_t b, int64_t i) const {
    return x[static_cast<size_t>((a.layout == 0 ? t * batch + b : b * seq + t) * input + i)];
  }
  // Flat index of state (d, b, k) in initial_h / Y_h ([D,B,H] or [B,D,H]).
  size_t state_index(int64_t d, int64_t b, int64_t k) const {
    const int64_t dirs = a.num_directions;
    return static_cast<size_t>((a.layout == 0 ? d * batch + b : b * dirs + d) * hidden + k);
  }
  // Flat index of Y (t, d, b, k) ([T,D,B,H] or [B,T,D,H]).
  size_t y_index(int64_t t, int64_t d, int64_t b, int64_t k) const {
    const int64_t dirs = a.num_directions;
    return static_cast<size_t>((a.layout == 0 ? (t * dirs + d) * batch + b : (b * seq + t) * dirs + d) * hidden + k);
  }
  // Row `row` of W[d] times x_t, plus row `row` of R[d] times h, plus both
  // biases of that row.
  double gate(int64_t d, int64_t row, int64_t t, int64_t b, const std::vector<double>& h) const {
    const int64_t g_rows = a.num_gates * hidden;
    double s = bias[static_cast<size_t>(d * 2 * g_rows + row)] + bias[static_cast<size_t>(d * 2 * g_rows + g_rows + row)];
    const double* wr = &w[static_cast<size_t>((d * g_rows + row) * input)];
    for (int64_t i = 0; i < input; ++i) s += wr[i] * x_at(t, b, i);
    const double* rr = &r[static_cast<size_t>((d * g_rows + row) * hidden)];
    for (int64_t j = 0; j < hidden; ++j) s += rr[j] * h[static_cast<size_t>(j)];
    return s;
  }
  double clip(double v) const {
    return a.has_clip ? std::max<double>(-a.clip, std::min<double>(a.clip, v)) : v;
  }
  const RecurrentActivation& fn(int64_t d, int64_t j) const {
    return a.activations[static_cast<size_t>(d * a.num_functions + j)];
  }
};

// One LSTM step of direction d, batch row b (gates i o f c; P = [Pi Po Pf]).
void lstm_step(const Problem& pr, int64_t d, int64_t t, int64_t b, std::vector<double>& h, std::vector<double>& c) {
  const int64_t H = pr.hidden;
  std::vector<double> h_new(static_cast<size_t>(H)), c_new(static_cast<size_t>(H));
  auto peephole = [&](int64_t which, int64_t k) {
    return pr.p.empty() ? 0.0 : pr.p[static_cast<size_t>(d * 3 * H + which * H + k)];
  };
  for (int64_t k = 0; k < H; ++k) {
    const size_t kk = static_cast<size_t>(k);
    const double c_prev = c[kk];
    const double i = pr.fn(d, 0).apply(pr.clip(pr.gate(d, 0 * H + k, t, b, h) + peephole(0, k) * c_prev));
    const double f = pr.a.input_forget ? 1.0 - i
                                       : pr.fn(d, 0).apply(pr.clip(pr.gate(d, 2 * H + k, t, b, h) + peephole(2, k) * c_prev));
    const double g = pr.fn(d, 1).apply(pr.clip(pr.gate(d, 3 * H + k, t, b, h)));
    c_new[kk] = f * c_prev + i * g;
    const double o = pr.fn(d, 0).apply(pr.clip(pr.gate(d, 1 * H + k, t, b, h) + peephole(1, k) * c_new[kk]));
    h_new[kk] = o * pr.fn(d, 2).apply(c_new[kk]);
  }
  h.swap(h_new);
  c.swap(c_new);
}

// One GRU step (gates z r h).
void gru_step(const Problem& pr, int64_t d, int64_t t, int64_t b, std::vector<double>& h) {
  const int64_t H = pr.hidden, g_rows = 3 * H;
  std::vector<double> z(static_cast<size_t>(H)), rh(static_cast<size_t>(H));
  std::vector<double> r(static_cast<size_t>(H));
  for (int64_t k = 0; k < H; ++k) {
    z[static_cast<size_t>(k)] = pr.fn(d, 0).apply(pr.clip(pr.gate(d, k, t, b, h)));
    r[static_cast<size_t>(k)] = pr.fn(d, 0).apply(pr.clip(pr.gate(d, H + k, t, b, h)));
  }
  for (int64_t k = 0; k < H; ++k) rh[static_cast<size_t>(k)] = r[static_cast<size_t>(k)] * h[static_cast<size_t>(k)];
  std::vector<double> h_new(static_cast<size_t>(H));
  for (int64_t k = 0; k < H; ++k) {
    const int64_t row = 2 * H + k;
    const double wb = pr.bias[static_cast<size_t>(d * 2 * g_rows + row)];
    const double rb = pr.bias[static_cast<size_t>(d * 2 * g_rows + g_rows + row)];
    double xw = wb;
    for (int64_t i = 0; i < pr.input; ++i)
      xw += pr.w[static_cast<size_t>((d * g_rows + row) * pr.input + i)] * pr.x_at(t, b, i);
    const double* rr = &pr.r[static_cast<size_t>((d * g_rows + row) * H)];
    double pre;
    if (pr.a.linear_before_reset) {
      double hr = rb;
      for (int64_t j = 0; j < H; ++j) hr += rr[j] * h[static_cast<size_t>(j)];
      pre = xw + r[static_cast<size_t>(k)] * hr;
    } else {
      double hr = rb;
      for (int64_t j = 0; j < H; ++j) hr += rr[j] * rh[static_cast<size_t>(j)];
      pre = xw + hr;
    }
    const double cand = pr.fn(d, 1).apply(pr.clip(pre));
    const double zk = z[static_cast<size_t>(k)];
    h_new[static_cast<size_t>(k)] = (1.0 - zk) * cand + zk * h[static_cast<size_t>(k)];
  }
  h.swap(h_new);
}

void rnn_step(const Problem& pr, int64_t d, int64_t t, int64_t b, std::vector<double>& h) {
  std::vector<double> h_new(h.size());
  for (int64_t k = 0; k < pr.hidden; ++k)
    h_new[static_cast<size_t>(k)] = pr.fn(d, 0).apply(pr.clip(pr.gate(d, k, t, b, h)));
  h.swap(h_new);
}

Status recurrent_kernel(KernelContext& ctx) {
  Problem pr;
  KILN_ASSIGN_OR_RETURN(pr.a, parse_recurrent_attrs(ctx.node()));
  const RecurrentAttrs& a = pr.a;
  const Tensor& x = ctx.input(kX);
  if (x.rank() != 3) return ctx.error("X has shape " + shape_to_string(x.shape()) + "; expected rank 3");
  pr.seq = a.layout == 0 ? x.dim(0) : x.dim(1);
  pr.batch = a.layout == 0 ? x.dim(1) : x.dim(0);
  pr.input = x.dim(2);
  const Tensor& r = ctx.input(kR);
  if (r.rank() != 3) return ctx.error("R has shape " + shape_to_string(r.shape()) + "; expected rank 3");
  pr.hidden = a.hidden_size > 0 ? a.hidden_size : r.dim(2);
  const int64_t D = a.num_directions, H = pr.hidden, g_rows = a.num_gates * H;
  auto expect = [&](size_t i, const char* name, const Shape& want) -> Status {
    if (!ctx.has_input(i)) return ok_status();
    if (ctx.input(i).shape() != want)
      return ctx.error(std::string(name) + " has shape " + shape_to_string(ctx.input(i).shape()) + "; expected " +
                       shape_to_string(want));
    return ok_status();
  };
  KILN_RETURN_IF_ERROR(expect(kW, "W", {D, g_rows, pr.input}));
  KILN_RETURN_IF_ERROR(expect(kR, "R", {D, g_rows, H}));
  KILN_RETURN_IF_ERROR(expect(kB, "B", {D, 2 * g_rows}));
  KILN_RETURN_IF_ERROR(expect(kSeqLens, "sequence_lens", {pr.batch}));
  const Shape state_shape = a.layout == 0 ? Shape{D, pr.batch, H} : Shape{pr.batch, D, H};
  KILN_RETURN_IF_ERROR(expect(kInitialH, "initial_h", state_shape));
  const bool lstm = a.kind == RecurrentKind::kLstm;
  if (lstm) {
    KILN_RETURN_IF_ERROR(expect(kInitialC, "initial_c", state_shape));
    KILN_RETURN_IF_ERROR(expect(kPeepholes, "P", {D, 3 * H}));
  }

  pr.x = to_doubles(x);
  pr.w = to_doubles(ctx.input(kW));
  pr.r = to_doubles(r);
  pr.bias = ctx.has_input(kB) ? to_doubles(ctx.input(kB)) : std::vector<double>(static_cast<size_t>(D * 2 * g_rows));
  if (lstm && ctx.has_input(kPeepholes)) pr.p = to_doubles(ctx.input(kPeepholes));
  std::vector<int64_t> lens(static_cast<size_t>(pr.batch), pr.seq);
  if (ctx.has_input(kSeqLens)) {
    lens = ctx.input(kSeqLens).to_i64_vector();
    for (size_t b = 0; b < lens.size(); ++b)
      if (lens[b] < 0 || lens[b] > pr.seq)
        return ctx.error("sequence_lens[" + std::to_string(b) + "] is " + std::to_string(lens[b]) +
                         "; it must lie in [0, " + std::to_string(pr.seq) + "] (the sequence length)");
  }
  const size_t state_n = static_cast<size_t>(D * pr.batch * H);
  std::vector<double> h0 = ctx.has_input(kInitialH) ? to_doubles(ctx.input(kInitialH)) : std::vector<double>(state_n);
  std::vector<double> c0 =
      lstm && ctx.has_input(kInitialC) ? to_doubles(ctx.input(kInitialC)) : std::vector<double>(state_n);

  const DType dt = x.dtype();
  const Shape y_shape = a.layout == 0 ? Shape{pr.seq, D, pr.batch, H} : Shape{pr.batch, pr.seq, D, H};
  std::vector<double> y(static_cast<size_t>(shape_numel(y_shape)), 0.0);
  std::vector<double> y_h(state_n), y_c(state_n);
  for (int64_t d = 0; d < D; ++d) {
    for (int64_t b = 0; b < pr.batch; ++b) {
      std::vector<double> h(static_cast<size_t>(H)), c(static_cast<size_t>(H));
      for (int64_t k = 0; k < H; ++k) {
        h[static_cast<size_t>(k)] = h0[pr.state_index(d, b, k)];
        c[static_cast<size_t>(k)] = c0[pr.state_index(d, b, k)];
      }
      const int64_t len = lens[static_cast<size_t>(b)];
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = a.reversed(d) ? len - 1 - s : s;
        switch (a.kind) {
          case RecurrentKind::kLstm: lstm_step(pr, d, t, b, h, c); break;
          case RecurrentKind::kGru: gru_step(pr, d, t, b, h); break;
          case RecurrentKind::kRnn: rnn_step(pr, d, t, b, h); break;
        }
        for (int64_t k = 0; k < H; ++k) y[pr.y_index(t, d, b, k)] = h[static_cast<size_t>(k)];
      }
      for (int64_t k = 0; k < H; ++k) {
        y_h[pr.state_index(d, b, k)] = h[static_cast<size_t>(k)];
        y_c[pr.state_index(d, b, k)] = c[static_cast<size_t>(k)];
      }
    }
  }
  const std::vector<double>* results[] = {&y, &y_h, &y_c};
  for (size_t i = 0; i < ctx.num_outputs() && i < 3; ++i) {
    KILN_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(i, dt, i == 0 ? y_shape : state_shape));
    const std::vector<double>& v = *results[i];
    for (size_t j = 0; j < v.size(); ++j) out->set_f64(static_cast<int64_t>(j), v[j]);
  }
  return ok_status();
}

void add_op(OpRegistry& r, OpSchema schema) {
  schema.mapping = MappingType::kOther;  // a sequential scan: opaque to fusion
  Status s = r.add(std::move(schema));
  assert(s.ok() && "recurrent op registered twice");
  (void)s;
}

}  // namespace

void register_recurrent_ops(OpRegistry& r) {
  add_op(r, {"LSTM", "", 3, 8, 0, 3, infer_recurrent, recurrent_kernel});
  add_op(r, {"GRU", "", 3, 6, 0, 2, infer_recurrent, recurrent_kernel});
  add_op(r, {"RNN", "", 3, 6, 0, 2, infer_recurrent, recurrent_kernel});
}

}  // namespace kiln::ops

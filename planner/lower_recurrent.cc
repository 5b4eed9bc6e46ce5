// LSTM, GRU and RNN on the device, with the ONNX semantics of the reference
// kernels (engine/ops/recurrent.cc; attributes parsed by the same
// parse_recurrent_attrs).
//
// The sequence length T must be known when the plan is built: the
// recurrence is unrolled into T small dispatches recorded in one command
// buffer, so a run makes no host round-trip per step (a device Loop would
// submit and wait once per iteration; see control_flow.h). Dispatches:
//   1. rnn_project (map): XP[t, d, b, row] = X_t · W[d, row] + Wb[d, row]
//      for every step at once — the input projection as one matrix product
//      over the whole sequence.
//   2. rnn_init (custom): state slot 0 of the history S from initial_h /
//      initial_c (zeros when absent).
//   3. per step s = 0..T-1 (for GRU without linear_before_reset first
//      gru_reset, which stores r ⊙ h_{s} for the candidate's product):
//      <op>_step (custom) computes slot s+1 of S from slot s for every
//      (direction, batch row, hidden unit): one dot product of R's rows with
//      the previous hidden state per gate, then the gate arithmetic. A batch
//      row past its sequence_lens keeps its state; a reverse direction
//      visits step s at time len-1-s.
//   4. rnn_y, rnn_y_h, rnn_y_c (map): the outputs from S, in either layout
//      and storage (Y is zero past a row's length).
// S is an fp32 buffer [T+1, NS, D, B, H] (NS = 2 for LSTM: h and c), so the
// state never round-trips through fp16 storage and Y can be read from it.
// Constant W and R are uploaded transposed, [D, K, G*H]: the invocations of
// neighbouring rows then read neighbouring memory in their dot-product
// loops (kiln_w / kiln_r hide which form a kernel binds).
// The step index is a push constant: the T step kernels share one pipeline.
#include <string>
#include <vector>

#include "engine/ops/recurrent.h"
#include "planner/lower_util.h"
#include "planner/lowering.h"

namespace kiln::planner {
namespace {

using ops::RecurrentActivation;
using ops::RecurrentAttrs;
using ops::RecurrentKind;

// Unrolling beyond this many steps would record an unreasonable number of
// dispatches; such a node runs on the host.
constexpr int64_t kMaxUnrolledSteps = 4096;
constexpr uint32_t kLocal = 64;

enum Input : size_t { kX = 0, kW, kR, kB, kSeqLens, kInitialH, kInitialC, kPeepholes };

std::string activation_expr(const RecurrentActivation& a, const std::string& x) {
  const std::string al = glsl_float(a.alpha), be = glsl_float(a.beta);
  using Fn = RecurrentActivation::Fn;
  switch (a.fn) {
    case Fn::kRelu: return "max(" + x + ", 0.0)";
    case Fn::kTanh: return "tanh(clamp(" + x + ", -15.0, 15.0))";
    case Fn::kSigmoid: return "(1.0 / (1.0 + exp(-" + x + ")))";
    case Fn::kAffine: return "(" + al + " * " + x + " + " + be + ")";
    case Fn::kLeakyRelu: return "(" + x + " >= 0.0 ? " + x + " : " + al + " * " + x + ")";
    case Fn::kThresholdedRelu: return "(" + x + " > " + al + " ? " + x + " : 0.0)";
    case Fn::kScaledTanh: return "(" + al + " * tanh(clamp(" + be + " * " + x + ", -15.0, 15.0)))";
    case Fn::kHardSigmoid: return "clamp(" + al + " * " + x + " + " + be + ", 0.0, 1.0)";
    case Fn::kElu: return "(" + x + " >= 0.0 ? " + x + " : " + al + " * (exp(" + x + ") - 1.0))";
    case Fn::kSoftsign: return "(" + x + " / (1.0 + abs(" + x + ")))";
    case Fn::kSoftplus: return "(" + x + " > 20.0 ? " + x + " : log(1.0 + exp(" + x + ")))";
  }
  return x;
}

// GLSL helpers shared by the step kernels: kiln_act(j, d, x) applies
// direction d's function j, kiln_clip the clip attribute, kiln_rev(d)
// whether direction d walks backwards.
std::string step_helpers(const RecurrentAttrs& a) {
  std::string s = "float kiln_act(int j, int d, float x) {\n";
  for (int64_t d = 0; d < a.num_directions; ++d)
    for (int64_t j = 0; j < a.num_functions; ++j) {
      const RecurrentActivation& fn = a.activations[static_cast<size_t>(d * a.num_functions + j)];
      s += "  if (j == " + std::to_string(j) + " && d == " + std::to_string(d) + ") return " +
           activation_expr(fn, "x") + ";\n";
    }
  s += "  return x;\n}\n";
  s += "float kiln_clip(float x) { return " +
       (a.has_clip ? "clamp(x, -" + glsl_float(a.clip) + ", " + glsl_float(a.clip) + ")" : std::string("x")) + "; }\n";
  s += std::string("bool kiln_rev(int d) { return ") +
       (a.direction == "reverse" ? "true" : a.direction == "bidirectional" ? "d == 1" : "false") + "; }\n";
  return s;
}

// The invocation prologue of a custom kernel over (d, b, k): declares d, b,
// k, the row's length `len` and returns past the end.
std::string unit_prologue(bool has_lens) {
  return "  int kiln_gid = int(gl_GlobalInvocationID.x) + int(gl_GlobalInvocationID.y) * int(gl_NumWorkGroups.x) * " +
         std::to_string(kLocal) +
         ";\n"
         "  if (kiln_gid >= UNITS) return;\n"
         "  int k = kiln_gid % HID; int kiln_rest = kiln_gid / HID; int b = kiln_rest % BATCH; int d = kiln_rest / BATCH;\n" +
         (has_lens ? "  int len = clamp(L_at(b), 0, STEPS);\n" : "  int len = STEPS;\n");
}

class RecurrentLowering {
 public:
  RecurrentLowering(LoweringContext& ctx, RecurrentAttrs a) : ctx_(ctx), a_(std::move(a)) {}

  Status lower() {
    const std::vector<ir::Dim>& x = ctx_.input_shape(kX);
    if (x.size() != 3) return ctx_.error("X must have rank 3");
    const ir::Dim& t_dim = a_.layout == 0 ? x[0] : x[1];
    if (!t_dim.is_const()) return ctx_.unsupported("the sequence length is not known when the plan is built");
    steps_ = t_dim.value();
    if (steps_ < 1 || steps_ > kMaxUnrolledSteps)
      return ctx_.unsupported("sequence length " + std::to_string(steps_) + " is outside [1, " +
                              std::to_string(kMaxUnrolledSteps) + "] (the device unrolls the recurrence)");
    batch_ = a_.layout == 0 ? x[1] : x[0];
    const std::vector<ir::Dim>& r = ctx_.input_shape(kR);
    if (r.size() != 3 || !r[2].is_const()) return ctx_.unsupported("R's hidden size is not known when the plan is built");
    hidden_ = r[2].value();
    ns_ = a_.kind == RecurrentKind::kLstm ? 2 : 1;
    has_lens_ = ctx_.has_input(kSeqLens);
    const std::vector<ir::Dim> dirs_b_h = {ir::Dim(a_.num_directions), batch_, ir::Dim(hidden_)};
    units_ = ir::Dim(a_.num_directions) * batch_ * ir::Dim(hidden_);

    DeviceLayout f32_buffer;  // Storage::kBuffer, kF32
    xp_ = ctx_.add_temporary(DType::kFloat32, {ir::Dim(steps_), ir::Dim(a_.num_directions), batch_,
                                               ir::Dim(a_.num_gates * hidden_)}, f32_buffer);
    state_ = ctx_.add_temporary(DType::kFloat32, {ir::Dim(steps_ + 1), ir::Dim(ns_), ir::Dim(a_.num_directions),
                                                  batch_, ir::Dim(hidden_)}, f32_buffer);
    if (a_.kind == RecurrentKind::kGru && !a_.linear_before_reset)
      reset_ = ctx_.add_temporary(DType::kFloat32, dirs_b_h, f32_buffer);

    emit_projection();
    emit_init();
    for (int64_t s = 0; s < steps_; ++s) {
      if (reset_ != kNoTensor) emit_step("gru_reset", gru_reset_body(), reset_, s);
      emit_step(lower_case(ctx_.node().op) + "_step", step_body(), state_, s);
    }
    if (ctx_.has_output(0)) emit_y();
    for (size_t out = 1; out <= 2; ++out)
      if (ctx_.has_output(out)) emit_last_state(out);
    return ok_status();
  }

 private:
  // The parameters every custom kernel uses. The step index is a push
  // constant (a host parameter of fixed value), so the T step dispatches
  // share one pipeline: as a specialization constant each value would
  // compile its own.
  std::vector<KernelParam> unit_params(int64_t step) const {
    const ir::Dim step_param = ctx_.host_param([step](const HostParamInputs&) -> StatusOr<int64_t> { return step; });
    return {{"UNITS", units_}, {"HID", ir::Dim(hidden_)}, {"BATCH", batch_}, {"STEPS", ir::Dim(steps_)},
            {"STEP", step_param}};
  }

  // X_t's element i for batch row b, in either layout.
  std::string x_at(const std::string& t, const std::string& b, const std::string& i) const {
    return a_.layout == 0 ? "X_at(" + t + ", " + b + ", " + i + ")" : "X_at(" + b + ", " + t + ", " + i + ")";
  }

  // Binds W or R as `name`, transposed to [D, K, G*H] when it is a
  // constant (one copy per node, made on first use), and returns the GLSL
  // function `fn(d, row, k)` reading it.
  std::string bind_weights(std::vector<KernelTensor>& tensors, const char* name, size_t input, const char* fn) {
    const std::string n = name;
    Weights& w = input == kW ? w_ : r_;
    if (w.id == kNoTensor) w = prepare_weights(input);
    tensors.push_back(ctx_.bind(n, w.id));
    return std::string("float ") + fn + "(int d, int row, int k) { return " + n +
           (w.transposed ? "_at(d, k, row)" : "_at(d, row, k)") + "; }\n";
  }

  struct Weights {
    TensorId id = kNoTensor;
    bool transposed = false;
  };

  Weights prepare_weights(size_t input) {
    Weights w{ctx_.input(input), false};
    if (const Tensor* c = ctx_.input_constant(input); c && c->rank() == 3) {
      auto t = Tensor::allocate(c->dtype(), {c->dim(0), c->dim(2), c->dim(1)});
      if (t.ok()) {
        const int64_t rows = c->dim(1), cols = c->dim(2);
        for (int64_t d = 0; d < c->dim(0); ++d)
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t k = 0; k < cols; ++k)
              t->set_f64((d * cols + k) * rows + r, c->get_f64((d * rows + r) * cols + k));
        w = {ctx_.add_constant(std::move(t).value(), {Storage::kBuffer, ctx_.input_elem_type(input)}), true};
      }
    }
    return w;
  }

  void emit_projection() {
    std::vector<KernelTensor> tensors = {ctx_.bind("X", ctx_.input(kX))};
    const std::string w_fn = bind_weights(tensors, "W", kW, "kiln_w");
    std::string body = "float acc = 0.0;\n";
    if (ctx_.has_input(kB)) {
      tensors.push_back(ctx_.bind("Bias", ctx_.input(kB)));
      body += "acc = Bias_at(oc1, oc3);\n";
    }
    body += "for (int i = 0; i < X_D2; ++i) acc += " + x_at("oc0", "oc2", "i") + " * kiln_w(oc1, oc3, i);\nv = acc;\n";
    tensors.push_back(ctx_.bind("XP", xp_, true));
    KernelDesc k = map_kernel("rnn_project", std::move(tensors), body, w_fn);
    const std::vector<ir::Dim>& x = ctx_.input_shape(kX);
    k.flops = ir::Dim(2 * steps_ * a_.num_directions * a_.num_gates * hidden_) * batch_ * x[2];
    ctx_.emit(std::move(k));
  }

  void emit_init() {
    std::vector<KernelTensor> tensors;
    std::string body = "void main() {\n" + unit_prologue(false);
    const char* names[] = {"H0", "C0"};
    for (int64_t n = 0; n < ns_; ++n) {
      const size_t in = n == 0 ? kInitialH : kInitialC;
      std::string value = "0.0";
      if (ctx_.has_input(in)) {
        tensors.push_back(ctx_.bind(names[n], ctx_.input(in)));
        value = std::string(names[n]) + (a_.layout == 0 ? "_at(d, b, k)" : "_at(b, d, k)");
      }
      body += "  S_st(S_index(0, " + std::to_string(n) + ", d, b, k), " + value + ");\n";
    }
    body += "}\n";
    tensors.push_back(ctx_.bind("S", state_, true));
    ctx_.emit(custom_kernel("rnn_init", std::move(tensors), body, 0));
  }

  KernelDesc custom_kernel(std::string name, std::vector<KernelTensor> tensors, std::string body, int64_t step,
                           const std::string& extra_helpers = {}) const {
    KernelDesc k;
    k.name = std::move(name);
    k.family = KernelDesc::Family::kCustom;
    k.tensors = std::move(tensors);
    k.params = unit_params(step);
    k.helpers = step_helpers(a_) + extra_helpers;
    k.body = std::move(body);
    k.local_size = {kLocal, 1, 1};
    const ir::Dim wg = ir::Dim::ceil_div(units_, ir::Dim(static_cast<int64_t>(kLocal)));
    const ir::Dim max_x(static_cast<int64_t>(ctx_.target().max_workgroup_count_x));
    k.groups = {ir::Dim::min(wg, max_x), ir::Dim::ceil_div(wg, max_x), ir::Dim(1)};
    return k;
  }

  void emit_step(std::string name, const std::string& body, TensorId written, int64_t step) {
    std::vector<KernelTensor> tensors = {ctx_.bind("XP", xp_)};
    const std::string r_fn = bind_weights(tensors, "R", kR, "kiln_r");
    if (ctx_.has_input(kB)) tensors.push_back(ctx_.bind("Bias", ctx_.input(kB)));
    if (has_lens_) tensors.push_back(ctx_.bind("L", ctx_.input(kSeqLens)));
    if (a_.kind == RecurrentKind::kLstm && ctx_.has_input(kPeepholes))
      tensors.push_back(ctx_.bind("P", ctx_.input(kPeepholes)));
    if (written == state_) {
      if (reset_ != kNoTensor) tensors.push_back(ctx_.bind("RH", reset_));
      tensors.push_back(ctx_.bind("S", state_, true));
    } else {
      tensors.push_back(ctx_.bind("S", state_));
      tensors.push_back(ctx_.bind("RH", reset_, true));
    }
    KernelDesc k = custom_kernel(std::move(name), std::move(tensors), body, step, r_fn);
    k.flops = units_ * ir::Dim(2 * a_.num_gates * hidden_);
    ctx_.emit(std::move(k));
  }

  // Gate `g`'s pre-activation for unit k at time t without the recurrent
  // bias: the projection plus R[d, g*H + k] · h (h read by `h_expr(j)`).
  std::string gate_sum(int64_t g, const std::string& h_expr_j, bool with_recurrent_bias) const {
    const std::string row = std::to_string(g) + " * HID + k";
    std::string e = "XP_at(t, d, b, " + row + ")";
    if (with_recurrent_bias && ctx_.has_input(kB)) e += " + Bias_at(d, " + std::to_string(a_.num_gates) + " * HID + " + row + ")";
    return "  { float acc = " + e + ";\n    for (int j = 0; j < HID; ++j) acc += kiln_r(d, " + row + ", j) * " + h_expr_j +
           ";\n    pre" + std::to_string(g) + " = acc; }\n";
  }

  // Common head of a step: a row past its length keeps its state.
  std::string step_head(bool keeps_state) const {
    std::string s = "void main() {\n" + unit_prologue(has_lens_);
    if (keeps_state) {
      s += "  if (STEP >= len) {\n";
      for (int64_t n = 0; n < ns_; ++n)
        s += "    S_st(S_index(STEP + 1, " + std::to_string(n) + ", d, b, k), S_at(STEP, " + std::to_string(n) +
             ", d, b, k));\n";
      s += "    return;\n  }\n";
    } else {
      s += "  if (STEP >= len) return;\n";
    }
    s += "  int t = kiln_rev(d) ? len - 1 - STEP : STEP;\n";
    return s;
  }

  std::string gru_reset_body() const {
    std::string s = step_head(false) + "  float pre1;\n" + gate_sum(1, "S_at(STEP, 0, d, b, j)", true);
    s += "  RH_st(RH_index(d, b, k), kiln_act(0, d, kiln_clip(pre1)) * S_at(STEP, 0, d, b, k));\n}\n";
    return s;
  }

  std::string step_body() const {
    const std::string h = "S_at(STEP, 0, d, b, j)";
    std::string s = step_head(true);
    const std::string out_h = "  S_st(S_index(STEP + 1, 0, d, b, k), ";
    switch (a_.kind) {
      case RecurrentKind::kRnn:
        s += "  float pre0;\n" + gate_sum(0, h, true);
        s += out_h + "kiln_act(0, d, kiln_clip(pre0)));\n";
        break;
      case RecurrentKind::kLstm: {
        const bool p = ctx_.has_input(kPeepholes);
        s += "  float pre0, pre1, pre2, pre3;\n";
        for (int64_t g = 0; g < 4; ++g)
          if (!(g == 2 && a_.input_forget)) s += gate_sum(g, h, true);
        s += "  float c_prev = S_at(STEP, 1, d, b, k);\n";
        s += std::string("  float gi = kiln_act(0, d, kiln_clip(pre0") + (p ? " + P_at(d, k) * c_prev" : "") + "));\n";
        s += a_.input_forget ? "  float gf = 1.0 - gi;\n"
                             : std::string("  float gf = kiln_act(0, d, kiln_clip(pre2") +
                                   (p ? " + P_at(d, 2 * HID + k) * c_prev" : "") + "));\n";
        s += "  float gc = kiln_act(1, d, kiln_clip(pre3));\n";
        s += "  float c = gf * c_prev + gi * gc;\n";
        s += std::string("  float go = kiln_act(0, d, kiln_clip(pre1") + (p ? " + P_at(d, HID + k) * c" : "") + "));\n";
        s += out_h + "go * kiln_act(2, d, c));\n";
        s += "  S_st(S_index(STEP + 1, 1, d, b, k), c);\n";
        break;
      }
      case RecurrentKind::kGru: {
        s += "  float pre0, pre2;\n" + gate_sum(0, h, true);
        s += "  float z = kiln_act(0, d, kiln_clip(pre0));\n";
        const std::string rb =
            ctx_.has_input(kB) ? " + Bias_at(d, 3 * HID + 2 * HID + k)" : std::string();
        if (a_.linear_before_reset) {
          s += "  float pre1;\n" + gate_sum(1, h, true);
          s += "  float r = kiln_act(0, d, kiln_clip(pre1));\n";
          s += "  { float acc = 0.0;\n    for (int j = 0; j < HID; ++j) acc += kiln_r(d, 2 * HID + k, j) * " + h +
               ";\n    pre2 = XP_at(t, d, b, 2 * HID + k) + r * (acc" + rb + "); }\n";
        } else {
          s += gate_sum(2, "RH_at(d, b, j)", true);
        }
        s += "  float hc = kiln_act(1, d, kiln_clip(pre2));\n";
        s += out_h + "(1.0 - z) * hc + z * S_at(STEP, 0, d, b, k));\n";
        break;
      }
    }
    s += "}\n";
    return s;
  }

  void emit_y() {
    std::vector<KernelTensor> tensors = {ctx_.bind("S", state_)};
    if (has_lens_) tensors.push_back(ctx_.bind("L", ctx_.input(kSeqLens)));
    std::string body = a_.layout == 0 ? "int t = oc0, d = oc1, b = oc2, k = oc3;\n"
                                      : "int b = oc0, t = oc1, d = oc2, k = oc3;\n";
    body += has_lens_ ? "int len = clamp(L_at(b), 0, S_D0 - 1);\n" : "int len = S_D0 - 1;\n";
    body += "int s = " + std::string(a_.direction == "reverse"         ? "len - 1 - t"
                                     : a_.direction == "bidirectional" ? "(d == 1 ? len - 1 - t : t)"
                                                                       : "t") +
            ";\n";
    body += "v = t < len ? S_at(s + 1, 0, d, b, k) : 0.0;\n";
    tensors.push_back(ctx_.bind("Y", ctx_.output(0), true));
    ctx_.emit(map_kernel("rnn_y", std::move(tensors), body));
  }

  void emit_last_state(size_t out) {
    std::string body = a_.layout == 0 ? "int d = oc0, b = oc1, k = oc2;\n" : "int b = oc0, d = oc1, k = oc2;\n";
    body += "v = S_at(S_D0 - 1, " + std::to_string(out - 1) + ", d, b, k);\n";
    ctx_.emit(map_kernel(out == 1 ? "rnn_y_h" : "rnn_y_c",
                         {ctx_.bind("S", state_), ctx_.bind("Y", ctx_.output(out), true)}, body));
  }

  LoweringContext& ctx_;
  RecurrentAttrs a_;
  int64_t steps_ = 0, hidden_ = 0, ns_ = 1;
  ir::Dim batch_, units_;
  bool has_lens_ = false;
  TensorId xp_ = kNoTensor, state_ = kNoTensor, reset_ = kNoTensor;
  Weights w_, r_;
};

Status lower_recurrent(LoweringContext& ctx) {
  auto attrs = ops::parse_recurrent_attrs(ctx.node());
  if (!attrs.ok()) return attrs.status();
  return RecurrentLowering(ctx, std::move(attrs).value()).lower();
}

}  // namespace

void register_recurrent_lowerings(LoweringRegistry& r) {
  r.add("", "LSTM", lower_recurrent);
  r.add("", "GRU", lower_recurrent);
  r.add("", "RNN", lower_recurrent);
}

}  // namespace kiln::planner

// Attention as one kernel (see fusion_attention.h).
#include "planner/fusion_attention.h"

#include <algorithm>
#include <set>
#include <string>

#include "planner/fusion.h"
#include "planner/gemm_coopmat.h"
#include "planner/gemm_kernels.h"
#include "planner/index_view.h"
#include "planner/lower_util.h"
#include "planner/plan_hints.h"
#include "planner/shader_template.h"

namespace kiln::planner {
namespace {

// How a workgroup of kThreadsPerWorkgroup invocations covers the queries:
// `rows` query rows of `tpr` invocations each, key blocks of `bk`.
constexpr int64_t kThreadsPerWorkgroup = 128;
struct Tiling {
  int64_t tpr = 0, rows = 0, bk = 0;
};

// Every K and V block staged in shared memory serves the workgroup's rows,
// so more rows per workgroup mean fewer loads (and index-view arithmetic)
// per score, fewer rows more workgroups. The most rows (64, 32, 16, 8)
// whose grid still gives every compute unit a workgroup (unknown count: 1,
// so a CPU takes the fewest loads); 16 rows when the grid is symbolic. At
// most 8 vec4 accumulators per invocation; the largest key block (32, 16,
// 8, at least tpr) whose tiles fit the shared memory. A kiln.kernel hint
// attention_rows=R on the last MatMul picks R rows when they fit.
std::optional<Tiling> choose_tiling(const ir::Dim& batch, const ir::Dim& m, int64_t d, int64_t dv,
                                    const TargetInfo& target, std::optional<int> hinted_rows) {
  std::vector<Tiling> fitting;
  for (int64_t tpr : {2, 4, 8, 16}) {
    const int64_t rows = kThreadsPerWorkgroup / tpr, nch = (dv + 4 * tpr - 1) / (4 * tpr);
    if (nch > 8) continue;
    const int64_t d4p = (d + 3) / 4 + 1;
    for (int64_t bk : {32, 16, 8}) {
      const int64_t bytes = 16 * (rows * d4p + bk * d4p + bk * nch * tpr) + 4 * 2 * rows * (bk + 1);
      if (bk >= tpr && bytes <= static_cast<int64_t>(target.max_shared_memory)) {
        fitting.push_back({tpr, rows, bk});
        break;
      }
    }
  }
  if (fitting.empty()) return std::nullopt;
  for (const Tiling& t : fitting)
    if (hinted_rows && t.rows == *hinted_rows) return t;
  if (!batch.is_const() || !m.is_const()) {
    for (const Tiling& t : fitting)
      if (t.rows <= 16) return t;
    return fitting.back();
  }
  const int64_t units = std::max<int64_t>(1, target.compute_units);
  for (const Tiling& t : fitting)
    if (batch.value() * ((m.value() + t.rows - 1) / t.rows) >= units) return t;
  return fitting.back();
}

// The tensor-core kernel (shaders/attention_coopmat.comp): FM query rows
// per workgroup, its subgroups splitting the keys in blocks of `bkey`.
struct CoopMatTiling {
  CoopMatShape shape;
  int64_t nsg = 0, bkey = 16, dp = 0, dvp = 0;
};

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

int64_t coopmat_shared_bytes(const CoopMatTiling& t, uint32_t sg) {
  const int64_t fm = t.shape.m, ldq = t.dp + 8, ldv = t.dvp + 8, lds = std::max(t.bkey, t.dvp) + 4;
  const int64_t per_subgroup = 2 * t.bkey * ldq + 2 * t.bkey * ldv + 4 * fm * lds + 2 * fm * (t.bkey + 8) + 8 * fm;
  // (The per-lane reduction slots are counted even where subgroup shuffles
  // replace them: the tiling is chosen before the shuffles are.)
  return 2 * fm * ldq + t.nsg * per_subgroup + 4 * t.nsg * int64_t{sg};
}

// The tensor-core tiling, when the plan is fp16, the device has NV
// cooperative matrices with fp32 accumulators whose fragment rows a
// subgroup's lanes share evenly, and Q, K and V are fp16 (a tensor the
// precision policy keeps in fp32 would be rounded). Workgroups of FM rows
// (vit_b_16's 197 tokens x 12 heads: 156 of them); subgroups per workgroup
// and keys per block: the most parallel chains of key blocks (subgroups
// that have a block, 4, 2 or 1), then the longer blocks (32 or 16 keys,
// fewer synchronizations), within the shared memory. Measured on an H100
// (fp16, per layer, bench/results/h100-2026-11-26-session12): vit_b_16
// (197 tokens, d 64) 38 us with 64-row workgroups whose subgroups shared
// each key block staged per element through the index views, 29 us with
// the staging 8 halves per load, 26 us with the keys split; bert-base at
// 128 tokens 18.7 -> 10.7 us (the scalar kernel's -> this one).
//
// Only for at least kCoopMatAttentionRows constant query rows: swin_t's
// 49-token windows took 15.3 us per layer here against the scalar
// kernel's 14.5.
constexpr int64_t kCoopMatAttentionRows = 64;

std::optional<CoopMatTiling> choose_coopmat_tiling(const ir::Dim& m, const ir::Dim& keys, int64_t d, int64_t dv,
                                                   const TargetInfo& target, bool fp16_operands) {
  const std::optional<CoopMatShape> shape = pick_coopmat_shape(target);
  const uint32_t sg = target.subgroup_size;
  if (!fp16_operands || !shape || !shape->f32_accumulator || sg < shape->m || sg % shape->m != 0 || sg > 128)
    return std::nullopt;
  if (!m.is_const() || m.value() < kCoopMatAttentionRows) return std::nullopt;
  std::optional<CoopMatTiling> best;
  int64_t best_chains = 0;
  for (int64_t nsg : {4, 2, 1})
    for (int64_t bkey : {32, 16}) {
      CoopMatTiling t;
      t.shape = *shape;
      t.dp = round_up(d, shape->k);
      t.dvp = round_up(dv, shape->n);
      t.nsg = nsg;
      t.bkey = bkey;
      if (nsg * sg > target.max_workgroup_invocations || coopmat_shared_bytes(t, sg) > target.max_shared_memory)
        continue;
      const int64_t chains = keys.is_const() ? std::min(nsg, (keys.value() + bkey - 1) / bkey) : nsg;
      if (chains > best_chains) best = t, best_chains = chains;
    }
  return best;
}

// The output's batch dims followed by x's last two: the frame in which an
// operand's helper reads it (its batch coordinates are the workgroup's).
std::vector<ir::Dim> with_last2(const std::vector<ir::Dim>& ys, const std::vector<ir::Dim>& x) {
  std::vector<ir::Dim> s(ys.begin(), ys.end() - 2);
  s.push_back(x[x.size() - 2]);
  s.push_back(x.back());
  return s;
}

// `t` (rank >= 2, maybe read through a view) seen with its last two axes
// swapped, as binding `name`.
KernelTensor transposed_last2(const KernelTensor& t, std::string name) {
  const size_t r = t.shape.size();
  std::vector<int> perm;
  for (size_t k = 0; k < r; ++k) perm.push_back(static_cast<int>(k));
  std::swap(perm[r - 2], perm[r - 1]);
  auto view = std::make_shared<IndexView>(t.view ? *t.view : IndexView::identity(t.shape));
  view->transpose(perm);
  view->vec_axis = -1;
  KernelTensor out = t;
  out.name = std::move(name);
  out.shape = view->shape;
  out.view = std::move(view);
  return out;
}

// `uvec4 FN(int row, int col)`: binding x's elements (row, col .. col + 7)
// of the workgroup's batch element as packed halves, zeros from `inner` on.
// One X_ld8h (a 16-byte load where the runs of 8 are contiguous in an fp16
// buffer, glsl_codegen.h) when x's batch dims are the output's and its rows
// hold whole units; else eight reads through `scalar`(row, col).
std::string staging_helper(const std::string& fn, const KernelTensor& x, const std::vector<ir::Dim>& ys,
                           int64_t inner, const std::string& scalar) {
  const size_t r = ys.size();
  bool direct = x.shape.size() == r && inner % 8 == 0;
  for (size_t k = 0; direct && k + 2 < r; ++k) direct = x.shape[k].same_as(ys[k]);
  const std::string& n = x.name;
  std::string s = "uvec4 " + fn + "(int row, int col) {\n";
  if (direct) {
    s += "  return col < " + std::to_string(inner) + " ? " + n + "_ld8h((att_b * " + n + "_D" + std::to_string(r - 2) +
         " + row) * " + n + "_D" + std::to_string(r - 1) + " + col) : uvec4(0);\n}\n";
    return s;
  }
  s += "  float e[8];\n  for (int j = 0; j < 8; ++j) e[j] = col + j < " + std::to_string(inner) + " ? " + scalar +
       "(row, col + j) : 0.0;\n";
  s += "  return uvec4(packHalf2x16(vec2(e[0], e[1])), packHalf2x16(vec2(e[2], e[3])), "
       "packHalf2x16(vec2(e[4], e[5])), packHalf2x16(vec2(e[6], e[7])));\n}\n";
  return s;
}

// The tensor-core kernel's staging reads (attention_coopmat.comp): Q rows,
// keys (through KT, K with its last two axes swapped) and values, 8 halves
// at a time.
std::string staging_helpers(const KernelTensor& q, const KernelTensor& kt, const KernelTensor& v,
                            const std::vector<ir::Dim>& ys, int64_t d, int64_t dv) {
  const size_t r = ys.size();
  const std::string last2 = "int oc" + std::to_string(r - 2) + ", int oc" + std::to_string(r - 1);
  std::string h = "float attn_kt(" + last2 + ") { return KT_at(" +
                  join_args(broadcast_coords("KT", kt.shape, with_last2(ys, kt.shape))) + "); }\n";
  h += staging_helper("attn_q8", q, ys, d, "attn_q");
  h += staging_helper("attn_k8", kt, ys, d, "attn_kt");
  h += staging_helper("attn_v8", v, ys, dv, "attn_v");
  return h;
}

bool is_op(const ir::Node& node, const char* op) { return node.domain.empty() && node.op == op; }

// The value of a float constant with one element.
std::optional<double> scalar_constant(const ir::Graph& graph, ir::ValueId v) {
  if (v == ir::kNoValue) return std::nullopt;
  const ir::Value& value = graph.value(v);
  if (!value.is_constant() || value.constant.numel() != 1 || !dtype_is_float(value.constant.dtype()))
    return std::nullopt;
  return value.constant.get_f64(0);
}

size_t rank_of(const ir::Graph& graph, ir::ValueId v) {
  const ir::SymShape& s = graph.value(v).shape;
  return s.has_rank ? s.dims.size() : 0;
}

// A Mul or Div by a scalar constant that keeps its data operand's shape
// (the constant's rank is not larger): which input is the data and the
// factor it is multiplied by (a Div's reciprocal).
struct Scaling {
  size_t data = 0;
  double factor = 1.0;
};
std::optional<Scaling> scalar_scaling(const ir::Graph& graph, const ir::Node& node) {
  if (node.inputs.size() != 2 || node.outputs.size() != 1) return std::nullopt;
  const auto keeps_shape = [&](size_t data) {
    return graph.value(node.inputs[data]).shape.has_rank &&
           rank_of(graph, node.inputs[1 - data]) <= rank_of(graph, node.inputs[data]);
  };
  if (is_op(node, "Mul")) {
    for (size_t c = 0; c < 2; ++c)
      if (auto f = scalar_constant(graph, node.inputs[c]); f && keeps_shape(1 - c)) return Scaling{1 - c, *f};
  } else if (is_op(node, "Div")) {
    if (auto f = scalar_constant(graph, node.inputs[1]); f && keeps_shape(0)) return Scaling{0, 1.0 / *f};
  }
  return std::nullopt;
}

std::string dim_list(size_t first, size_t count, const std::string& prefix) {
  std::string s;
  for (size_t k = first; k < first + count; ++k) s += (s.empty() ? "" : ", ") + prefix + std::to_string(k);
  return s;
}

}  // namespace

std::optional<AttentionPattern> match_attention(const ir::Graph& graph, const FusionGroup& group) {
  if (group.in_subgraph || group.nodes.size() < 3) return std::nullopt;
  const std::set<ir::NodeId> members(group.nodes.begin(), group.nodes.end());
  // The group's node that makes `v`, or null.
  const auto made_by_group = [&](ir::ValueId v) -> const ir::Node* {
    if (v == ir::kNoValue) return nullptr;
    const ir::NodeId p = graph.value(v).producer;
    return p != ir::kNoNode && members.count(p) ? &graph.node(p) : nullptr;
  };
  std::set<ir::NodeId> matched;
  AttentionPattern pat;
  const ir::Node& out = graph.node(group.nodes.back());
  if (!is_op(out, "MatMul") || out.inputs.size() != 2) return std::nullopt;
  const ir::Node* softmax = made_by_group(out.inputs[0]);
  if (!softmax || !is_op(*softmax, "Softmax") || softmax->inputs.size() != 1 || made_by_group(out.inputs[1]))
    return std::nullopt;
  pat.v = out.inputs[1];
  pat.softmax = softmax->id;
  matched.insert(out.id);
  matched.insert(softmax->id);
  // Softmax over the last axis only (before opset 13 an axis flattens the
  // axes after it: the same only for the last one).
  const int64_t rank = static_cast<int64_t>(rank_of(graph, softmax->inputs[0]));
  const std::optional<int64_t> axis = normalize_axis(softmax->attr_int("axis", graph.opset < 13 ? 1 : -1), rank);
  if (rank < 2 || !axis || *axis != rank - 1) return std::nullopt;
  // Back from the softmax to the scores' MatMul: scalings and Adds.
  std::vector<AttentionPattern::Step> steps;
  ir::ValueId s = softmax->inputs[0];
  for (;;) {
    const ir::Node* p = made_by_group(s);
    if (!p || matched.count(p->id)) return std::nullopt;
    matched.insert(p->id);
    if (is_op(*p, "MatMul") && p->inputs.size() == 2) {
      pat.scores = p->id;
      break;
    }
    if (is_op(*p, "Add") && p->inputs.size() == 2) {
      const bool first = made_by_group(p->inputs[0]) != nullptr, second = made_by_group(p->inputs[1]) != nullptr;
      if (first == second) return std::nullopt;  // which one is the scores, and the other must come from outside
      s = p->inputs[first ? 0 : 1];
      steps.push_back({p->inputs[first ? 1 : 0], 1.0, s, p->outputs[0]});
    } else if (is_op(*p, "Reshape") && p->inputs.size() == 2 && !made_by_group(p->inputs[1])) {
      s = p->inputs[0];  // renames the batch coordinates (checked when lowering)
    } else if (auto sc = scalar_scaling(graph, *p)) {
      steps.push_back({ir::kNoValue, sc->factor});
      s = p->inputs[sc->data];
    } else {
      return std::nullopt;
    }
  }
  std::reverse(steps.begin(), steps.end());
  size_t first_add = 0;
  while (first_add < steps.size() && steps[first_add].add == ir::kNoValue) pat.scale *= steps[first_add++].factor;
  pat.steps.assign(steps.begin() + static_cast<std::ptrdiff_t>(first_add), steps.end());
  // The operands of the scores, before their scalings.
  const ir::Node& scores = graph.node(pat.scores);
  for (size_t i = 0; i < 2; ++i) {
    ir::ValueId x = scores.inputs[i];
    while (const ir::Node* p = made_by_group(x)) {
      const std::optional<Scaling> sc = scalar_scaling(graph, *p);
      if (!sc || !matched.insert(p->id).second) return std::nullopt;
      pat.scale *= sc->factor;
      x = p->inputs[sc->data];
    }
    (i == 0 ? pat.a : pat.b) = x;
  }
  if (matched != members) return std::nullopt;
  for (ir::ValueId x : {pat.a, pat.b, pat.v})
    if (x == ir::kNoValue || rank_of(graph, x) < 2) return std::nullopt;
  return pat;
}

Status lower_attention(PlanBuilder& builder, const ir::Graph& graph, const FusionGroup& group,
                       const AttentionPattern& pat) {
  const ir::Node& out = graph.node(group.nodes.back());
  const auto refuse = [&](const std::string& why) {
    return unimplemented("attention ending in " + out.describe() + " " + why);
  };
  const ir::Node& scores = graph.node(pat.scores);
  const ir::Node& softmax = graph.node(pat.softmax);
  std::vector<ir::ValueId> ranked = {pat.a, pat.b, pat.v, scores.outputs[0], softmax.inputs[0], out.outputs[0]};
  for (const AttentionPattern::Step& st : pat.steps)
    if (st.add != ir::kNoValue) ranked.push_back(st.add);
  for (ir::ValueId v : ranked)
    if (!builder.value_ranked(v)) return refuse("has a value of unknown rank");
  const std::vector<ir::Dim>& as = builder.value_shape(pat.a);
  const std::vector<ir::Dim>& bs = builder.value_shape(pat.b);
  const std::vector<ir::Dim>& vs = builder.value_shape(pat.v);
  const std::vector<ir::Dim>& ss = builder.value_shape(scores.outputs[0]);
  const std::vector<ir::Dim>& ys = builder.value_shape(out.outputs[0]);
  const size_t r = ys.size();
  if (r < 2 || ss.size() != r) return refuse("has scores of another rank than its output");
  // Every value of the chain holds the scores in the same order: the last
  // two dims kept, the batch dims only regrouped by Reshapes; an Add does
  // not broadcast them to more elements.
  ir::Dim count(1);
  for (size_t k = 0; k + 2 < r; ++k) count = count * ss[k];
  const auto same_rows = [&](ir::ValueId v) {
    const std::vector<ir::Dim>& x = builder.value_shape(v);
    if (x.size() < 2 || !x[x.size() - 2].same_as(ss[r - 2]) || !x.back().same_as(ss[r - 1])) return false;
    ir::Dim n(1);
    for (size_t k = 0; k + 2 < x.size(); ++k) n = n * x[k];
    return n.same_as(count);
  };
  for (const AttentionPattern::Step& st : pat.steps)
    if (st.add != ir::kNoValue && (!same_rows(st.frame) || !same_shape(builder.value_shape(st.result),
                                                                         builder.value_shape(st.frame))))
      return refuse("adds a tensor that broadcasts the scores to another shape");
  if (!same_rows(softmax.inputs[0])) return refuse("reshapes the scores to other rows");
  for (size_t k = 0; k + 2 < r; ++k)
    if (!ss[k].same_as(ys[k])) return refuse("broadcasts the scores' batch dims against the values'");
  const ir::Dim& d = as.back();
  const ir::Dim& dv = vs.back();
  if (!d.is_const() || !dv.is_const() || d.value() < 1 || dv.value() < 1 || d.value() > kMaxAttentionHeadDim ||
      dv.value() > kMaxAttentionHeadDim)
    return refuse("has head dims " + d.to_string() + " and " + dv.to_string() + " (constants of at most " +
                  std::to_string(kMaxAttentionHeadDim) + " fuse)");

  LoweringContext ctx(builder, graph, out.id);
  const int64_t hd = d.value(), hdv = dv.value();
  const int64_t d4 = (hd + 3) / 4, d4p = d4 + 1;
  ir::Dim batch(1);
  for (size_t k = 0; k + 2 < r; ++k) batch = batch * ys[k];
  KILN_ASSIGN_OR_RETURN(const KernelHint hint, kernel_hint(out));
  const std::optional<Tiling> tiling = choose_tiling(batch, ys[r - 2], hd, hdv, ctx.target(), hint.attention_rows);
  if (!tiling) return refuse("needs more shared memory than the device has");
  const int64_t tpr = tiling->tpr, rows = tiling->rows, bk = tiling->bk;
  const int64_t nch = (hdv + 4 * tpr - 1) / (4 * tpr);
  const int64_t dv4 = nch * tpr;
  if (batch.is_const() && batch.value() > static_cast<int64_t>(ctx.target().max_workgroup_count_x))
    return refuse("has more batch elements than a dispatch has workgroups");

  KernelDesc kd;
  kd.family = KernelDesc::Family::kCustom;
  kd.name = "attention_d" + std::to_string(hd) + "x" + std::to_string(hdv);
  kd.tensors.push_back(ctx.bind("Q", builder.tensor_of(pat.a)));
  kd.tensors.push_back(ctx.bind("K", builder.tensor_of(pat.b)));
  kd.tensors.push_back(ctx.bind("V", builder.tensor_of(pat.v)));
  // Batch coordinates are globals oc0..; a helper's own two coordinates are
  // its parameters oc<r-2>, oc<r-1>, so broadcast_coords' text applies.
  const std::string last2 = "int oc" + std::to_string(r - 2) + ", int oc" + std::to_string(r - 1);
  std::string h;
  if (r > 2) h += "int " + dim_list(0, r - 2, "oc") + ";  // the workgroup's batch coordinates\n";
  h += "float attn_q(" + last2 + ") { return Q_at(" + join_args(broadcast_coords("Q", as, with_last2(ys, as))) + "); }\n";
  const std::string attn_k =
      "float attn_k(" + last2 + ") { return K_at(" + join_args(broadcast_coords("K", bs, with_last2(ys, bs))) + "); }\n";
  h += "float attn_v(" + last2 + ") { return V_at(" + join_args(broadcast_coords("V", vs, with_last2(ys, vs))) + "); }\n";
  h += "int att_b;  // the workgroup's batch element, row-major over Y's batch dims\n";
  h += "float attn_score(int att_m, int att_n, float s) {\n  s *= " + glsl_float(pat.scale) + ";\n";
  size_t biases = 0;
  for (const AttentionPattern::Step& st : pat.steps) {
    if (st.add == ir::kNoValue) {
      h += "  s *= " + glsl_float(st.factor) + ";\n";
      continue;
    }
    const std::string name = "B" + std::to_string(biases++);
    kd.tensors.push_back(ctx.bind(name, builder.tensor_of(st.add)));
    // The bias broadcast against the value it adds to, whose coordinates
    // are oc0.. (a block's locals hide the globals for a reshaped frame).
    const std::vector<ir::Dim>& frame = builder.value_shape(st.frame);
    const size_t rf = frame.size();
    h += "  {\n";
    if (!same_shape(frame, ss)) {
      h += "    int bi = att_b;\n";
      for (size_t k = rf - 2; k-- > 0;) {
        const std::string dim = "ATT_" + name + "_F" + std::to_string(k);
        kd.params.push_back({dim, frame[k]});
        h += "    int oc" + std::to_string(k) + " = bi % " + dim + ";\n    bi /= " + dim + ";\n";
      }
    }
    h += "    int oc" + std::to_string(rf - 2) + " = att_m, oc" + std::to_string(rf - 1) + " = att_n;\n";
    h += "    s += " + name + "_at(" + join_args(broadcast_coords(name, builder.value_shape(st.add), frame)) + ");\n  }\n";
  }
  h += "  return s;\n}\n";

  // Y: the output, or a row-major scratch when it is an image packed on
  // another axis than the last (a vec4 of one row is four of its columns).
  const GemmOutput y = bind_gemm_output(ctx, ctx.layout(ctx.output(0)).packed_axis == static_cast<int>(r) - 1);
  kd.tensors.push_back(y.y);
  std::string store;
  if (y.is_buffer()) {
    store = "for (int e = 0; e < 4; ++e)\n"
            "  if (c + e < DV) Y_st((int(gl_WorkGroupID.y) * nq + row) * DV + c + e, o[e]);\n";
  } else {
    store = "Y_st4(" + (r > 2 ? dim_list(0, r - 2, "oc") + ", " : std::string()) + "row, c, o);\n";
  }
  std::string coords = "att_b = bi;\n";
  for (size_t k = r - 2; k-- > 0;)
    coords += "oc" + std::to_string(k) + " = bi % Y_D" + std::to_string(k) + ";\nbi /= Y_D" + std::to_string(k) + ";\n";
  kd.helpers = std::move(h);
  const bool fp16_operands = ctx.float_type() == ElemType::kF16 &&
                             std::all_of(kd.tensors.begin(), kd.tensors.begin() + 3, [](const KernelTensor& t) {
                               return t.layout.type == ElemType::kF16;
                             });
  const std::optional<CoopMatTiling> cm =
      hint.coopmat.value_or(true) ? choose_coopmat_tiling(ys[r - 2], vs[vs.size() - 2], hd, hdv, ctx.target(), fp16_operands)
                                  : std::nullopt;
  if (cm) {
    kd.name += "_coopmat";
    // K^T is staged key by key: read K through a view with its last two
    // axes swapped back, whose runs along the head dim are contiguous
    // where the source's are.
    kd.tensors[1] = transposed_last2(kd.tensors[1], "KT");
    kd.helpers += staging_helpers(kd.tensors[0], kd.tensors[1], kd.tensors[2], ys, hd, hdv);
    kd.extensions = {"GL_EXT_control_flow_attributes", "GL_EXT_shader_explicit_arithmetic_types_float16",
                     "GL_KHR_memory_scope_semantics", "GL_KHR_shader_subgroup_basic", "GL_NV_cooperative_matrix"};
    // Rows' maxima and sums meet through subgroup shuffles, and the
    // rescale test is one subgroup reduction, where the device has them.
    const bool shuffle = ctx.target().subgroup_shuffle, arith = ctx.target().subgroup_arithmetic;
    if (shuffle) kd.extensions.push_back("GL_KHR_shader_subgroup_shuffle");
    if (arith) kd.extensions.push_back("GL_KHR_shader_subgroup_arithmetic");
    kd.helpers += std::string("#define ATT_SHUFFLE ") + (shuffle ? "1" : "0") + "\n#define ATT_SUBGROUP_ARITH " +
                  (arith ? "1" : "0") + "\n";
    kd.body = fill_shader("attention_coopmat.comp", ShaderArgs()
                                                        .set("FM", cm->shape.m)
                                                        .set("FN", cm->shape.n)
                                                        .set("FK", cm->shape.k)
                                                        .set("NSG", cm->nsg)
                                                        .set("SG", ctx.target().subgroup_size)
                                                        .set("BKEY", cm->bkey)
                                                        .set("D", hd)
                                                        .set("DP", cm->dp)
                                                        .set("DV", hdv)
                                                        .set("DVP", cm->dvp)
                                                        .set("ATT_M", "Y_D" + std::to_string(r - 2))
                                                        .set("ATT_N", "V_D" + std::to_string(vs.size() - 2))
                                                        .set("BATCH_COORDS", coords)
                                                        .set("STORE", store));
    const int64_t bq = cm->shape.m;
    kd.local_size = {static_cast<uint32_t>(cm->nsg) * ctx.target().subgroup_size, 1, 1};
    kd.groups = {ir::Dim::ceil_div(ys[r - 2], ir::Dim(bq)), batch, ir::Dim(1)};
    kd.flops = ir::Dim(2 * (hd + hdv)) * batch * ys[r - 2] * vs[vs.size() - 2];
    ctx.emit(std::move(kd));
    finish_gemm_output(ctx, y);
    return ok_status();
  }
  kd.helpers += attn_k;
  kd.body = fill_shader("attention.comp", ShaderArgs()
                                              .set("BQ", rows)
                                              .set("BK", bk)
                                              .set("TPR", tpr)
                                              .set("D", hd)
                                              .set("D4", d4)
                                              .set("D4P", d4p)
                                              .set("DV", hdv)
                                              .set("DV4", dv4)
                                              .set("NCH", nch)
                                              .set("ATT_M", "Y_D" + std::to_string(r - 2))
                                              .set("ATT_N", "V_D" + std::to_string(vs.size() - 2))
                                              .set("BATCH_COORDS", coords)
                                              .set("STORE", store));
  kd.local_size = {static_cast<uint32_t>(kThreadsPerWorkgroup), 1, 1};
  kd.groups = {ir::Dim::ceil_div(ys[r - 2], ir::Dim(rows)), batch, ir::Dim(1)};
  kd.flops = ir::Dim(2 * (hd + hdv)) * batch * ys[r - 2] * vs[vs.size() - 2];
  ctx.emit(std::move(kd));
  finish_gemm_output(ctx, y);
  return ok_status();
}

}  // namespace kiln::planner

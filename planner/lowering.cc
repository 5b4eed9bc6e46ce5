// LoweringContext and LoweringRegistry (see lowering.h).
#include "planner/lowering.h"

#include <algorithm>
#include <bit>

#include "planner/lower_quantization.h"
#include "planner/plan_builder.h"

namespace kiln::planner {

LoweringContext::LoweringContext(PlanBuilder& builder, const ir::Graph& graph, ir::NodeId node)
    : builder_(builder), graph_(graph), node_(graph.node(node)) {}

const TargetInfo& LoweringContext::target() const { return builder_.target(); }
ElemType LoweringContext::float_type() const { return builder_.options().precision; }
bool LoweringContext::m_major_store_hint() const { return builder_.m_major_store_hint(); }
ElemType LoweringContext::input_elem_type(size_t i) const { return builder_.value_elem_type(node_.inputs[i]); }

bool LoweringContext::has_input(size_t i) const { return i < node_.inputs.size() && node_.inputs[i] != ir::kNoValue; }
bool LoweringContext::has_output(size_t i) const {
  return i < node_.outputs.size() && node_.outputs[i] != ir::kNoValue;
}
DType LoweringContext::input_dtype(size_t i) const { return graph_.value(node_.inputs[i]).dtype; }
const std::vector<ir::Dim>& LoweringContext::input_shape(size_t i) const {
  return builder_.value_shape(node_.inputs[i]);
}
DType LoweringContext::output_dtype(size_t i) const { return graph_.value(node_.outputs[i]).dtype; }
const std::vector<ir::Dim>& LoweringContext::output_shape(size_t i) const {
  return builder_.value_shape(node_.outputs[i]);
}

const Tensor* node_input_constant(const ir::Graph& graph, const ir::Node& node, size_t i) {
  if (i >= node.inputs.size() || node.inputs[i] == ir::kNoValue) return nullptr;
  const ir::Value& v = graph.value(node.inputs[i]);
  return v.is_constant() ? &v.constant : nullptr;
}

const Tensor* LoweringContext::input_constant(size_t i) const { return node_input_constant(graph_, node_, i); }

std::optional<std::vector<ir::Dim>> LoweringContext::input_dims_value(size_t i) const {
  if (!has_input(i)) return std::nullopt;
  if (const Tensor* t = input_constant(i)) {
    if (dtype_is_float(t->dtype()) || t->shape().size() > 1) return std::nullopt;
    std::vector<ir::Dim> dims;
    for (int64_t k = 0; k < t->numel(); ++k) dims.emplace_back(t->get_i64(k));  // not through double: INT64_MAX bounds
    return dims;
  }
  return builder_.dims_value(node_.inputs[i]);
}

bool LoweringContext::input_on_host(size_t i) const {
  if (!has_input(i)) return false;
  if (input_constant(i)) return true;
  const auto& vt = builder_.plan().value_tensor;
  auto it = vt.find(node_.inputs[i]);
  return it != vt.end() && builder_.tensor(it->second).host_resident;
}

ir::Dim LoweringContext::host_param(HostParamFn fn) {
  ExecutionPlan& plan = builder_.plan();
  HostParam p;
  p.symbol = "_h" + std::to_string(plan.host_params.size());
  p.node = node_.id;
  p.fn = std::move(fn);
  plan.host_params.push_back(std::move(p));
  return ir::Dim::symbol(plan.host_params.back().symbol);
}

int64_t float_param_bits(float f) { return static_cast<int32_t>(std::bit_cast<uint32_t>(f)); }

TensorId LoweringContext::input(size_t i) {
  const TensorId t = builder_.tensor_of(node_.inputs[i]);
  PlanTensor& pt = builder_.tensor(t);
  if (pt.host_resident) pt.device_needed = true;
  return t;
}
TensorId LoweringContext::output(size_t i) { return builder_.tensor_of(node_.outputs[i]); }
const DeviceLayout& LoweringContext::layout(TensorId t) const { return builder_.tensor(t).layout; }
const std::vector<ir::Dim>& LoweringContext::shape(TensorId t) const { return builder_.tensor(t).shape; }

KernelTensor LoweringContext::bind(std::string name, TensorId t, bool written) const {
  KernelTensor k;
  k.name = std::move(name);
  k.tensor = t;
  k.layout = builder_.tensor(t).layout;
  k.shape = builder_.tensor(t).shape;
  k.written = written;
  return k;
}

KernelTensor LoweringContext::bind_as(std::string name, TensorId t, std::vector<ir::Dim> view_shape,
                                      bool written) const {
  KernelTensor k = bind(std::move(name), t, written);
  if (k.layout.storage == Storage::kBuffer) k.shape = std::move(view_shape);
  return k;
}

TensorId LoweringContext::add_constant(Tensor host, DeviceLayout layout) {
  PlanTensor t;
  t.origin = PlanTensor::Origin::kConstant;
  t.dtype = host.dtype();
  for (int64_t d : host.shape()) t.shape.emplace_back(d);
  t.layout = layout;
  t.constant = std::move(host);
  return builder_.add_tensor(std::move(t));
}

TensorId LoweringContext::add_temporary(DType dtype, std::vector<ir::Dim> shape, DeviceLayout layout) {
  PlanTensor t;
  t.origin = PlanTensor::Origin::kTemporary;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.layout = layout;
  return builder_.add_tensor(std::move(t));
}

TensorId LoweringContext::add_state(DType dtype, std::vector<int64_t> shape, ElemType type) {
  PlanTensor t;
  t.origin = PlanTensor::Origin::kState;
  t.dtype = dtype;
  for (int64_t d : shape) t.shape.emplace_back(d);
  t.layout = {Storage::kBuffer, type};
  return builder_.add_tensor(std::move(t));
}

Status LoweringContext::alias_output(size_t out, TensorId source) {
  const TensorId o = output(out);
  PlanTensor& ot = builder_.tensor(o);
  const PlanTensor& st = builder_.tensor(source);
  if (ot.layout.storage != Storage::kBuffer || st.layout.storage != Storage::kBuffer || ot.layout.type != st.layout.type)
    return unsupported("alias needs two buffers of one element type");
  if (st.host_resident) return unsupported("alias of a host value");
  TensorId root = source;
  while (builder_.tensor(root).alias_of != kNoTensor) root = builder_.tensor(root).alias_of;
  ot.alias_of = root;
  return ok_status();
}

void LoweringContext::emit(KernelDesc desc) { builder_.pending_kernels().push_back(std::move(desc)); }

Status LoweringContext::unsupported(std::string_view why) const {
  return unimplemented(node_.describe() + ": no device kernel: " + std::string(why));
}

Status LoweringContext::error(std::string_view why) const {
  return invalid_argument(node_.describe() + ": " + std::string(why));
}

void LoweringRegistry::add(std::string domain, std::string op, LowerFn fn) {
  if (find(domain, op) != nullptr) {
    errors_.push_back("duplicate lowering for " + (domain.empty() ? op : domain + "." + op));
    return;
  }
  entries_.push_back({{std::move(domain), std::move(op)}, fn});
}

LowerFn LoweringRegistry::find(std::string_view domain, std::string_view op) const {
  for (const auto& [key, fn] : entries_)
    if (key.first == domain && key.second == op) return fn;
  return nullptr;
}

std::vector<std::string> LoweringRegistry::ops() const {
  std::vector<std::string> out;
  for (const auto& [key, fn] : entries_) out.push_back(key.first.empty() ? key.second : key.first + "." + key.second);
  std::sort(out.begin(), out.end());
  return out;
}

const LoweringRegistry& LoweringRegistry::builtin() {
  static const LoweringRegistry* registry = [] {
    auto* r = new LoweringRegistry();
    register_elementwise_lowerings(*r);
    register_data_movement_lowerings(*r);
    register_reduction_lowerings(*r);
    register_pooling_lowerings(*r);
    register_linalg_lowerings(*r);
    register_topk_lowerings(*r);
    register_recurrent_lowerings(*r);
    register_einsum_lowerings(*r);
    register_quantize_lowerings(*r);
    register_integer_linalg_lowerings(*r);
    register_qlinear_contrib_lowerings(*r);
    return r;
  }();
  return *registry;
}

}  // namespace kiln::planner

// Rewrites older opsets' node forms to the latest form the op registry
// implements; see onnx_graph_builder.h.
//
// Kiln's ops have one semantics each — the latest. Models written for opsets
// 7–17 are brought up to it here, node by node, the way onnx's version
// converter would: attributes that later became inputs turn into constant
// inputs, renamed ops get their new names, and ops whose meaning changed
// (Softmax before 13, Resize 10, Upsample) are re-expressed. Forms Kiln cannot
// express faithfully are rejected with a message naming the node.
//
// Opsets 19–21 changed these ops Kiln implements, all already in the
// registry's form: AveragePool-19 gained `dilations`; Pad-19 the `wrap`
// mode; Resize-19 the `half_pixel_symmetric` transformation;
// Cast/CastLike-19 `saturate`, which only affects float8 targets (refused
// as a type, so the attribute is left unread); GroupNormalization-21 takes
// scale and bias per channel where 18 took them per group (the kernels
// accept both: the element count tells); Gelu-20 is in the registry with
// `approximate`. The other 19–21 versions of supported ops only add element
// types (float8, int4, uint4), which the importer refuses by name. Ops new
// in 19–21 (DeformConv, DFT-20's input form, AffineGrid, GridSample, ...)
// are refused as unsupported ops.
#include <cmath>
#include <optional>

#include "frontends/onnx/onnx_graph_builder.h"

namespace kiln::onnx {

namespace {

using Draft = GraphBuilder::Draft;

std::string describe(const Draft& d) {
  return "node '" + d.name + "' (" + (d.domain.empty() ? "" : d.domain + ".") + d.op + ")";
}

std::optional<ir::Attribute> take_attr(Draft& d, const std::string& name) {
  auto it = d.attrs.find(name);
  if (it == d.attrs.end()) return std::nullopt;
  ir::Attribute a = std::move(it->second);
  d.attrs.erase(it);
  return a;
}

void set_input(Draft& d, size_t index, ir::ValueId id) {
  if (d.inputs.size() <= index) d.inputs.resize(index + 1, ir::kNoValue);
  d.inputs[index] = id;
}

bool has_input(const Draft& d, size_t index) { return index < d.inputs.size() && d.inputs[index] != ir::kNoValue; }

Tensor i64_vector(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// A scalar of `dtype` holding `value` (float32 when the dtype is unknown).
StatusOr<Tensor> scalar_of(DType dtype, double value) {
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(dtype == DType::kUndefined ? DType::kFloat32 : dtype, {}));
  t.set_f64(0, value);
  return t;
}

bool is_reduce_with_axes_attr(const std::string& op, int64_t opset) {
  if (op == "ReduceSum") return opset < 13;
  return opset < 18 && (op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" || op == "ReduceProd" ||
                        op == "ReduceL1" || op == "ReduceL2" || op == "ReduceLogSum" || op == "ReduceLogSumExp" ||
                        op == "ReduceSumSquare");
}

}  // namespace

Status GraphBuilder::upgrade_node(Draft& d, Scope& scope) {
  const std::string& op = d.op;
  const int64_t opset = opset_;
  // An in-place hint of opsets 1-5 that never changed results.
  if (opset < 7) d.attrs.erase("consumed_inputs");

  // An attribute that became a 1-D int64 input.
  auto ints_attr_to_input = [&](const std::string& attr, size_t index, const std::string& suffix) {
    std::optional<ir::Attribute> a = take_attr(d, attr);
    if (!a) return false;
    set_input(d, index, add_helper_constant(d.name + "/" + suffix, i64_vector(a->ints), scope));
    return true;
  };

  if (op == "Split") {
    if (opset < 13) ints_attr_to_input("split", 1, "split");
    // Before 18 the output count alone meant "equal parts"; 18 spells that
    // num_outputs.
    if (opset < 18 && !has_input(d, 1) && !d.attrs.count("num_outputs"))
      d.attrs["num_outputs"] = ir::Attribute::of_int(static_cast<int64_t>(d.outputs.size()));
    return ok_status();
  }
  if ((op == "Squeeze" || op == "Unsqueeze") && opset < 13) {
    ints_attr_to_input("axes", 1, "axes");
    return ok_status();
  }
  if (is_reduce_with_axes_attr(op, opset)) {
    std::optional<ir::Attribute> axes = take_attr(d, "axes");
    if (axes && !axes->ints.empty())
      set_input(d, 1, add_helper_constant(d.name + "/axes", i64_vector(axes->ints), scope));
    return ok_status();
  }
  if (op == "Pad" && opset < 11) {
    std::optional<ir::Attribute> pads = take_attr(d, "pads");
    if (!pads) return invalid_argument(describe(d) + ": opset-" + std::to_string(opset) + " Pad needs attribute 'pads'");
    std::optional<ir::Attribute> value = take_attr(d, "value");
    set_input(d, 1, add_helper_constant(d.name + "/pads", i64_vector(pads->ints), scope));
    const DType dtype = has_input(d, 0) ? graph_->value(d.inputs[0]).dtype : DType::kUndefined;
    KILN_ASSIGN_OR_RETURN(Tensor v, scalar_of(dtype, value ? value->f : 0.0f));
    set_input(d, 2, add_helper_constant(d.name + "/constant_value", std::move(v), scope));
    return ok_status();
  }
  if (op == "Clip" && opset < 11) {
    std::optional<ir::Attribute> lo = take_attr(d, "min");
    std::optional<ir::Attribute> hi = take_attr(d, "max");
    const DType dtype = has_input(d, 0) ? graph_->value(d.inputs[0]).dtype : DType::kUndefined;
    if (lo) {
      KILN_ASSIGN_OR_RETURN(Tensor t, scalar_of(dtype, lo->f));
      set_input(d, 1, add_helper_constant(d.name + "/min", std::move(t), scope));
    }
    if (hi) {
      KILN_ASSIGN_OR_RETURN(Tensor t, scalar_of(dtype, hi->f));
      set_input(d, 2, add_helper_constant(d.name + "/max", std::move(t), scope));
    }
    return ok_status();
  }
  if (op == "Slice" && opset < 10) {
    if (!ints_attr_to_input("starts", 1, "starts") || !ints_attr_to_input("ends", 2, "ends"))
      return invalid_argument(describe(d) + ": opset-" + std::to_string(opset) +
                              " Slice needs attributes 'starts' and 'ends'");
    ints_attr_to_input("axes", 3, "axes");
    return ok_status();
  }
  if (op == "TopK" && opset < 10) {
    std::optional<ir::Attribute> k = take_attr(d, "k");
    if (!k) return invalid_argument(describe(d) + ": opset-" + std::to_string(opset) + " TopK needs attribute 'k'");
    set_input(d, 1, add_helper_constant(d.name + "/k", i64_vector({k->i}), scope));
    return ok_status();
  }
  if (op == "Dropout" && opset < 12) {
    if (opset < 10 && d.outputs.size() > 1 && !d.outputs[1].empty())
      return unimplemented(describe(d) + ": the opset-" + std::to_string(opset) +
                           " mask output (typed like the data, not bool) is not supported");
    if (std::optional<ir::Attribute> ratio = take_attr(d, "ratio"))
      set_input(d, 1, add_helper_constant(d.name + "/ratio", Tensor::scalar_f32(ratio->f), scope));
    return ok_status();
  }
  if (op == "Dropout" && has_input(d, 2) && has_input(d, 1)) {
    // Training-mode dropout with a constant ratio of 0 keeps every element
    // and scales by 1/(1-0): inference-mode dropout. PyTorch exports exactly
    // that for F.dropout(p=0.0) left in training mode (torchvision's swin_t).
    const ir::Value& ratio = graph_->value(d.inputs[1]);
    bool zero = ratio.is_constant() && ratio.constant.numel() == 1;
    for (int64_t i = 0; zero && i < ratio.constant.numel(); ++i) zero = ratio.constant.get_f64(i) == 0.0;
    if (zero) d.inputs.resize(2);
    return ok_status();
  }
  if (op == "BatchNormalization") {
    if (opset < 9) {
      std::optional<ir::Attribute> spatial = take_attr(d, "spatial");
      if (spatial && spatial->i == 0)
        return unimplemented(describe(d) + ": spatial=0 (per-activation statistics) is not supported");
    }
    if (opset < 14) {
      for (size_t i = 1; i < d.outputs.size(); ++i)
        if (!d.outputs[i].empty())
          return unimplemented(describe(d) + ": the training-mode outputs of opset-" + std::to_string(opset) +
                               " BatchNormalization are not supported");
    }
    return ok_status();
  }
  if (op == "Scatter") {  // deprecated in 11; the same op as ScatterElements
    d.op = "ScatterElements";
    return ok_status();
  }
  if (op == "Scan" && opset < 9)
    return unimplemented(describe(d) + ": the opset-8 form of Scan (with sequence_lens and a batch axis) is not supported");
  if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset < 13) return upgrade_softmax(d, scope);
  if (op == "RoiAlign" && opset < 16) {
    // RoiAlign-10 had no attribute and behaved as 'output_half_pixel'; 16's
    // default is 'half_pixel'.
    if (!d.attrs.count("coordinate_transformation_mode"))
      d.attrs["coordinate_transformation_mode"] = ir::Attribute::of_string("output_half_pixel");
    return ok_status();
  }

  if (op == "Upsample" || (op == "Resize" && opset < 11)) {
    // Upsample-7/9 and Resize-10 are the same operation: output = floor(in *
    // scale), source coordinate = out / scale (asymmetric), nearest rounds
    // down when upsampling (onnxruntime's rule; Resize-10 rounds up when
    // downsampling).
    std::string mode = d.attr_string_or("mode", "nearest");
    if (mode == "bilinear") mode = "linear";
    if (mode != "nearest" && mode != "linear")
      return invalid_argument(describe(d) + ": unknown mode '" + mode + "'");
    ir::ValueId scales = ir::kNoValue;
    if (op == "Upsample" && opset < 9) {
      std::optional<ir::Attribute> s = take_attr(d, "scales");
      if (!s) return invalid_argument(describe(d) + ": opset-" + std::to_string(opset) + " Upsample needs attribute 'scales'");
      scales = add_helper_constant(d.name + "/scales",
                                   Tensor::from_vector<float>({static_cast<int64_t>(s->floats.size())}, s->floats), scope);
    } else {
      if (!has_input(d, 1)) return invalid_argument(describe(d) + ": input 1 'scales' is missing");
      scales = d.inputs[1];
    }
    std::string nearest_mode = "floor";
    if (op == "Resize" && graph_->value(scales).is_constant()) {
      const Tensor& s = graph_->value(scales).constant;
      bool any_down = false, any_up = false;
      for (int64_t i = 0; i < s.numel(); ++i) {
        any_down |= s.get_f64(i) < 1.0;
        any_up |= s.get_f64(i) > 1.0;
      }
      if (any_down && any_up && mode == "nearest")
        return unimplemented(describe(d) + ": opset-10 nearest Resize that up- and downsamples at once is not supported");
      if (any_down) nearest_mode = "ceil";
    }
    d.op = "Resize";
    d.inputs = {d.inputs.empty() ? ir::kNoValue : d.inputs[0], ir::kNoValue, scales};
    d.attrs.clear();
    d.attrs["mode"] = ir::Attribute::of_string(mode);
    d.attrs["coordinate_transformation_mode"] = ir::Attribute::of_string("asymmetric");
    d.attrs["nearest_mode"] = ir::Attribute::of_string(nearest_mode);
    return ok_status();
  }
  if (op == "Resize") {
    if (opset < 13 && d.attr_string_or("coordinate_transformation_mode", "") == "tf_half_pixel_for_nn")
      return unimplemented(describe(d) + ": coordinate_transformation_mode 'tf_half_pixel_for_nn' (removed in opset 13) "
                                         "is not supported");
    // Opsets 11-12 had to pass an empty tensor for an unused roi/scales;
    // later ones leave the input out. Normalize to "left out".
    for (size_t i = 1; i <= 2 && i < d.inputs.size(); ++i) {
      const ir::ValueId id = d.inputs[i];
      if (id != ir::kNoValue && graph_->value(id).is_constant() && graph_->value(id).constant.numel() == 0)
        d.inputs[i] = ir::kNoValue;
    }
    return ok_status();
  }
  return ok_status();
}

// Softmax, LogSoftmax and Hardmax before opset 13 flattened the input to 2-D
// at `axis` and normalized over everything after it. Where that is the last
// axis alone, the new op is the same; otherwise Flatten → op → Reshape back.
Status GraphBuilder::upgrade_softmax(Draft& d, Scope& scope) {
  int64_t axis = 1;
  if (std::optional<ir::Attribute> a = take_attr(d, "axis")) axis = a->i;
  if (!has_input(d, 0)) return invalid_argument(describe(d) + ": input 0 is missing");
  const ir::ValueId x = d.inputs[0];
  const ir::SymShape& shape = graph_->value(x).shape;
  if (shape.has_rank) {
    const int64_t rank = shape.rank();
    if (axis < -rank || axis > rank - (rank > 0 ? 1 : 0))
      return invalid_argument(describe(d) + ": axis " + std::to_string(axis) + " is out of range for rank " +
                              std::to_string(rank));
    if (axis < 0) axis += rank;
    if (axis == rank - 1 || rank <= 1) {
      d.attrs["axis"] = ir::Attribute::of_int(-1);
      return ok_status();
    }
  }
  const std::string context = "converting opset-" + std::to_string(opset_) + " " + d.op;
  auto helper = [&](const std::string& op, std::vector<ir::ValueId> inputs, std::map<std::string, ir::Attribute> attrs,
                    const std::string& suffix) -> StatusOr<ir::ValueId> {
    auto r = emit_helper(op, std::move(inputs), std::move(attrs), d.name + "/" + suffix, scope);
    if (!r.ok()) return std::move(r).status().add_context(context);
    return r;
  };
  KILN_ASSIGN_OR_RETURN(ir::ValueId flat, helper("Flatten", {x}, {{"axis", ir::Attribute::of_int(axis)}}, "flatten"));
  KILN_ASSIGN_OR_RETURN(ir::ValueId normalized, helper(d.op, {flat}, {{"axis", ir::Attribute::of_int(-1)}}, "2d"));
  KILN_ASSIGN_OR_RETURN(ir::ValueId shape_of_x, helper("Shape", {x}, {}, "shape"));
  d.op = "Reshape";
  d.inputs = {normalized, shape_of_x};
  d.attrs.clear();
  return ok_status();
}

}  // namespace kiln::onnx

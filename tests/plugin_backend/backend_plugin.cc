// test.eltwise: a backend plugin (kiln_backend_v1_t) for the backend
// interface test. It runs graphs of float32 Relu, Add and Mul over inputs of
// one shape on the CPU, and refuses anything else at compile time naming the
// node — enough to show that the engine session compiles and runs a model on
// a backend a plugin provides, as it will on the OpenCL plugin.
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/kiln_plugin.hpp"

namespace {

struct Step {
  std::string op;
  std::vector<kiln_value_id_t> inputs;
  kiln_value_id_t output;
};

struct Model {
  std::vector<kiln_value_id_t> inputs, outputs;
  std::vector<Step> steps;
};

kiln_plugin_status_t* compile(void*, const kiln_host_api_t* host, const kiln_graph_t* graph, void** out_model) {
  kiln::plugin::GraphView g(host, graph);
  auto model = std::make_unique<Model>();
  model->inputs = g.region_inputs();
  model->outputs = g.region_outputs();
  for (kiln_node_id_t n : g.nodes()) {
    const auto info = g.node(n);
    const bool known = info && info->domain.empty() && (info->op == "Relu" || info->op == "Add" || info->op == "Mul");
    if (!known) {
      const std::string what = info ? "node '" + info->name + "' (" + info->op + ")" : "a node";
      return host->make_status(KILN_PLUGIN_UNIMPLEMENTED, (what + ": test.eltwise runs Relu, Add and Mul only").c_str());
    }
    for (kiln_value_id_t v : g.inputs(n)) {
      const auto value = g.value(v);
      if (!value || value->dtype != KILN_PLUGIN_DTYPE_FLOAT32 || value->is_constant)
        return host->make_status(KILN_PLUGIN_UNIMPLEMENTED, "test.eltwise takes float32 activations only");
    }
    model->steps.push_back({info->op, g.inputs(n), g.outputs(n).at(0)});
  }
  *out_model = model.release();
  return nullptr;
}

kiln_plugin_status_t* run(void* opaque, const kiln_host_api_t* host, const kiln_tensor_view_t* const* inputs,
                          size_t input_count, kiln_backend_alloc_output_fn alloc_output, void* alloc_ctx) {
  const Model& model = *static_cast<const Model*>(opaque);
  if (input_count != model.inputs.size()) return host->make_status(KILN_PLUGIN_INVALID_ARGUMENT, "wrong input count");
  const kiln_tensor_view_t& first = *inputs[0];
  size_t count = 1;
  for (size_t k = 0; k < first.rank; ++k) count *= static_cast<size_t>(first.dims[k]);
  std::map<kiln_value_id_t, std::vector<float>> values;
  for (size_t i = 0; i < input_count; ++i) {
    const kiln_tensor_view_t& t = *inputs[i];
    if (t.dtype != KILN_PLUGIN_DTYPE_FLOAT32 || t.rank != first.rank ||
        std::memcmp(t.dims, first.dims, t.rank * sizeof(int64_t)) != 0)
      return host->make_status(KILN_PLUGIN_INVALID_ARGUMENT, "test.eltwise inputs must be float32 of one shape");
    const float* data = static_cast<const float*>(t.data);
    values[model.inputs[i]].assign(data, data + count);
  }
  for (const Step& s : model.steps) {
    const std::vector<float>& a = values.at(s.inputs[0]);
    std::vector<float> y(count);
    for (size_t e = 0; e < count; ++e) {
      if (s.op == "Relu") y[e] = a[e] > 0.0f ? a[e] : 0.0f;
      else if (s.op == "Add") y[e] = a[e] + values.at(s.inputs[1])[e];
      else y[e] = a[e] * values.at(s.inputs[1])[e];
    }
    values[s.output] = std::move(y);
  }
  for (size_t i = 0; i < model.outputs.size(); ++i) {
    void* out = alloc_output(alloc_ctx, i, KILN_PLUGIN_DTYPE_FLOAT32, first.rank, first.dims);
    if (!out) return host->make_status(KILN_PLUGIN_INTERNAL, "the host refused an output");
    std::memcpy(out, values.at(model.outputs[i]).data(), count * sizeof(float));
  }
  return nullptr;
}

void destroy(void* model) { delete static_cast<Model*>(model); }

const kiln_backend_v1_t backend = {sizeof(kiln_backend_v1_t), "test.eltwise", nullptr, compile, run, destroy};

const void* get_interface(const char* name) {
  return std::strcmp(name, KILN_INTERFACE_BACKEND_V1) == 0 ? &backend : nullptr;
}

kiln_plugin_t make_descriptor() {
  kiln_plugin_t p = kiln::plugin::make_plugin("test.backend", "1.0.0", nullptr, 0);
  p.get_interface = get_interface;
  return p;
}

const kiln_plugin_t plugin = make_descriptor();

}  // namespace

KILN_PLUGIN_DEFINE_QUERY(kiln_plugin_query, plugin)

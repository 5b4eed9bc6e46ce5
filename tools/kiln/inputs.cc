// Inputs for `kiln run` and `kiln bench` through libkiln; see inputs.h.
#include "tools/kiln/inputs.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>

namespace kiln::cli {

// See inputs.h.
bool split_assignment(const std::string& flag, const std::string& s, std::pair<std::string, std::string>& out,
                      std::string& error) {
  auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
    error = "INVALID_ARGUMENT: --" + flag + " expects NAME=VALUE, got '" + s + "'";
    return false;
  }
  out = {s.substr(0, eq), s.substr(eq + 1)};
  return true;
}

bool parse_shape_text(const std::string& s, std::vector<int64_t>& shape, std::string& error) {
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, 'x')) {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec == std::errc::result_out_of_range) {
      error = "INVALID_ARGUMENT: bad shape '" + s + "': dim " + item + " does not fit in int64";
      return false;
    }
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || v < 0) {
      error = "INVALID_ARGUMENT: bad shape '" + s + "' (expected e.g. 1x3x224x224)";
      return false;
    }
    shape.push_back(v);
  }
  return true;
}

bool is_float(kiln_dtype_t t) {
  return t == KILN_DTYPE_FLOAT32 || t == KILN_DTYPE_FLOAT16 || t == KILN_DTYPE_FLOAT64;
}

namespace {

// A seeded random tensor: floats in [-1, 1), bools 0/1, integers 0..9.
bool random_tensor(kiln_dtype_t dtype, const std::vector<int64_t>& shape, std::mt19937_64& rng, api::Tensor& out,
                   std::string& error) {
  if (api::Error e = api::Tensor::create(dtype, shape, out)) {
    error = e.to_string();
    return false;
  }
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> small(0, 9);
  for (size_t i = 0, n = out.numel(); i < n; ++i) {
    double v = 0;
    if (is_float(dtype)) v = real(rng);
    else if (dtype == KILN_DTYPE_BOOL) v = static_cast<double>(rng() & 1u);
    else v = static_cast<double>(small(rng));
    if (api::Error e = out.set_f64(i, v)) {
      error = e.to_string();
      return false;
    }
  }
  return true;
}

}  // namespace

bool build_inputs(const api::Model& model, const Args& args, int run_index, std::vector<api::Tensor>& inputs,
                  std::string& error) {
  std::vector<std::string> names;
  for (size_t i = 0; i < model.input_count(); ++i) names.push_back(model.input_name(i));
  auto known = [&](const std::string& name) { return std::find(names.begin(), names.end(), name) != names.end(); };
  // A weight or an intermediate value is no input: say which names are.
  auto no_such_input = [&](const char* flag, const std::string& name) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "'" : ", '") + n + "'";
    error = "INVALID_ARGUMENT: --" + std::string(flag) + ": the model has no input named '" + name + "'; its inputs are " +
            (list.empty() ? std::string("none") : list);
    return false;
  };
  std::map<std::string, api::Tensor> given;
  for (const std::string& spec : args.all("input")) {
    std::pair<std::string, std::string> kv;
    if (!split_assignment("input", spec, kv, error)) return false;
    if (!known(kv.first)) return no_such_input("input", kv.first);
    api::Tensor t;
    if (api::Error e = api::Tensor::load(kv.second, t)) {
      error = std::string(kiln_status_code_name(e.code())) + ": --input " + kv.first + ": " + e.message();
      return false;
    }
    given[kv.first] = std::move(t);
  }
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const std::string& spec : args.all("shape")) {
    std::pair<std::string, std::string> kv;
    std::vector<int64_t> s;
    if (!split_assignment("shape", spec, kv, error) || !parse_shape_text(kv.second, s, error)) return false;
    if (!known(kv.first)) return no_such_input("shape", kv.first);
    shapes[kv.first] = std::move(s);
  }
  // Symbols bound by given inputs and explicit shapes.
  std::map<std::string, int64_t> bindings;
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<int64_t> concrete;
    if (auto it = given.find(names[i]); it != given.end()) concrete = it->second.shape();
    else if (auto sit = shapes.find(names[i]); sit != shapes.end()) concrete = sit->second;
    else continue;
    kiln_input_info_t info;
    if (model.input_info(i, info) || info.rank != static_cast<int64_t>(concrete.size())) continue;
    for (size_t k = 0; k < concrete.size(); ++k) {
      kiln_input_dim_t dim;
      if (!model.input_dim(i, k, dim) && dim.symbol && !dim.is_expression) bindings.emplace(dim.symbol, concrete[k]);
    }
  }
  std::mt19937_64 rng(static_cast<uint64_t>(std::strtoll(args.get("seed", "0").c_str(), nullptr, 10)) +
                      static_cast<uint64_t>(run_index));
  inputs.clear();
  for (size_t i = 0; i < names.size(); ++i) {
    if (auto it = given.find(names[i]); it != given.end()) {
      inputs.push_back(std::move(it->second));
      continue;
    }
    kiln_input_info_t info;
    if (api::Error e = model.input_info(i, info)) {
      error = e.to_string();
      return false;
    }
    std::vector<int64_t> shape;
    if (auto sit = shapes.find(names[i]); sit != shapes.end()) {
      shape = sit->second;
    } else if (info.rank < 0) {
      error = "INVALID_ARGUMENT: input '" + names[i] + "' has unknown rank: give --input or --shape";
      return false;
    } else if (model.input_shape(i, bindings, shape)) {
      error = "INVALID_ARGUMENT: input '" + names[i] + "' has dynamic shape " + info.shape_text + ": give --shape " +
              names[i] + "=AxBx... or --input " + names[i] + "=FILE.npy";
      return false;
    }
    api::Tensor t;
    if (!random_tensor(info.dtype == KILN_DTYPE_UNDEFINED ? KILN_DTYPE_FLOAT32 : info.dtype, shape, rng, t, error)) {
      // "OUT_OF_MEMORY: input 'X' [1099511627776,3]: a float32 tensor ... needs ..."
      const size_t colon = error.find(": ");
      if (colon != std::string::npos)
        error.insert(colon + 2, "input '" + names[i] + "' " + shape_text(shape) + ": ");
      return false;
    }
    inputs.push_back(std::move(t));
  }
  return true;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace kiln::cli

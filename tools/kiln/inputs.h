// The inputs of `kiln run` and `kiln bench`, built through libkiln
// (kiln.hpp): --input files (.npy, ONNX .pb), --shape overrides and seeded
// random tensors, with the model's declared symbols bound from them.
// Errors are returned as "CODE: message" text naming the flag and input.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kiln/kiln.hpp"
#include "tools/kiln/cli_args.h"

namespace kiln::cli {

// "NAME=VALUE" -> {NAME, VALUE}; false with `error` set when malformed.
bool split_assignment(const std::string& flag, const std::string& s, std::pair<std::string, std::string>& out,
                      std::string& error);
// "1x3x224x224" -> {1, 3, 224, 224}.
bool parse_shape_text(const std::string& s, std::vector<int64_t>& shape, std::string& error);
bool is_float(kiln_dtype_t t);
// "[1,3,224,224]".
std::string shape_text(const std::vector<int64_t>& shape);

// The inputs of one run, in the model's input order: --input files first
// (they bind symbols), then --shape overrides, then random tensors seeded by
// --seed + run_index for whatever is left.
bool build_inputs(const api::Model& model, const Args& args, int run_index, std::vector<api::Tensor>& inputs,
                  std::string& error);

}  // namespace kiln::cli

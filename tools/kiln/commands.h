// The kiln subcommands and the shared way they report errors.
#pragma once

#include <string>
#include <vector>

#include "engine/base/status.h"
#include "engine/base/tensor.h"
#include "engine/ir/graph.h"
#include "tools/kiln/cli_args.h"

namespace kiln::cli {

int cmd_run(const std::vector<std::string>& argv);
int cmd_info(const std::vector<std::string>& argv);
int cmd_graph(const std::vector<std::string>& argv);
int cmd_passes(const std::vector<std::string>& argv);
int cmd_bench(const std::vector<std::string>& argv);
// `kiln bench compare FILE.json...` (cmd_bench_compare.cc), reached through cmd_bench.
int cmd_bench_compare(const std::vector<std::string>& argv);

// The inputs of one run of `g` (kiln run and kiln bench): --input files
// first (they bind symbols), then --shape overrides, then random tensors
// seeded by --seed + run_index. Errors name the input.
StatusOr<std::vector<Tensor>> build_inputs(const ir::Graph& g, const Args& args, int run_index);

// A tensor file given to --input: .npy, or an ONNX TensorProto (.pb).
StatusOr<Tensor> load_input_file(const std::string& path);

// Prints "kiln: <status>" to stderr; returns the process exit code (1).
int fail(const Status& status);
// Prints "kiln: <message>" and a hint to run `kiln help`; returns 2.
int usage_error(const std::string& message);

}  // namespace kiln::cli

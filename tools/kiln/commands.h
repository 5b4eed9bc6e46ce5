// The kiln subcommands and the shared way they report errors.
#pragma once

#include <string>
#include <vector>

#include "engine/base/status.h"
#include "kiln/kiln.hpp"
#include "tools/kiln/cli_args.h"

namespace kiln::cli {

int cmd_run(const std::vector<std::string>& argv);
int cmd_info(const std::vector<std::string>& argv);
int cmd_graph(const std::vector<std::string>& argv);
int cmd_passes(const std::vector<std::string>& argv);
int cmd_bench(const std::vector<std::string>& argv);
// `kiln bench compare FILE.json...` (cmd_bench_compare.cc), reached through cmd_bench.
int cmd_bench_compare(const std::vector<std::string>& argv);
// `kiln tune ...`: runs the kiln-tune program (cmd_tune.cc, tools/tune).
int cmd_tune(const std::vector<std::string>& argv);

// Prints "kiln: <status>" to stderr; returns the process exit code (1).
int fail(const Status& status);
int fail(const api::Error& error);
// Prints "kiln: <message>" and a hint to run `kiln help`; returns 2.
int usage_error(const std::string& message);

}  // namespace kiln::cli

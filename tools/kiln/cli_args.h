// A tiny argument reader for the kiln subcommands: flags with values
// (`--input x=a.npy`, `--stats=f.json`), repeated flags, positionals, and
// the `--then` separator that splits one command line into several runs.
#pragma once

#include <string>
#include <vector>

#include "engine/base/json_writer.h"  // json_escape, for the commands
#include "engine/base/status.h"

namespace kiln::cli {

class Args {
 public:
  // `value_flags` take a value; `bool_flags` do not. Unknown flags are errors.
  static StatusOr<Args> parse(const std::vector<std::string>& argv, const std::vector<std::string>& value_flags,
                              const std::vector<std::string>& bool_flags);

  bool has(const std::string& flag) const;
  // The last value given for `flag`, or `fallback`.
  std::string get(const std::string& flag, const std::string& fallback = "") const;
  // Every value given for a repeated flag, in order.
  std::vector<std::string> all(const std::string& flag) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  std::vector<std::pair<std::string, std::string>> flags_;
  std::vector<std::string> positionals_;
};

// Splits argv at each "--then": segment 0 is before the first one.
std::vector<std::vector<std::string>> split_on_then(const std::vector<std::string>& argv);

}  // namespace kiln::cli

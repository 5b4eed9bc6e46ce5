// Argument reading for the kiln tool; see cli_args.h.
#include "tools/kiln/cli_args.h"

#include <algorithm>

namespace kiln::cli {

StatusOr<Args> Args::parse(const std::vector<std::string>& argv, const std::vector<std::string>& value_flags,
                           const std::vector<std::string>& bool_flags) {
  Args a;
  auto contains = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      a.positionals_.push_back(arg);
      continue;
    }
    std::string flag = arg.substr(2), value;
    bool has_inline = false;
    if (auto eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_inline = true;
    }
    if (contains(bool_flags, flag)) {
      if (has_inline) return invalid_argument("--" + flag + " takes no value");
      a.flags_.emplace_back(flag, "");
    } else if (contains(value_flags, flag)) {
      if (!has_inline) {
        if (i + 1 >= argv.size()) return invalid_argument("--" + flag + " needs a value");
        value = argv[++i];
      }
      a.flags_.emplace_back(flag, value);
    } else {
      return invalid_argument("unknown option --" + flag);
    }
  }
  return a;
}

bool Args::has(const std::string& flag) const {
  for (const auto& [f, v] : flags_)
    if (f == flag) return true;
  return false;
}

std::string Args::get(const std::string& flag, const std::string& fallback) const {
  std::string out = fallback;
  for (const auto& [f, v] : flags_)
    if (f == flag) out = v;
  return out;
}

std::vector<std::string> Args::all(const std::string& flag) const {
  std::vector<std::string> out;
  for (const auto& [f, v] : flags_)
    if (f == flag) out.push_back(v);
  return out;
}

std::vector<std::vector<std::string>> split_on_then(const std::vector<std::string>& argv) {
  std::vector<std::vector<std::string>> segments(1);
  for (const std::string& a : argv) {
    if (a == "--then") segments.emplace_back();
    else segments.back().push_back(a);
  }
  return segments;
}

}  // namespace kiln::cli

// SHA-256 (FIPS 180-4) of a file, for the model hashes `kiln bench`
// records. Tool-side code: the library never needs it.
#pragma once

#include <string>

namespace kiln::tools {

// The lowercase hex digest of the file at `path`; false (and `error` set)
// when it cannot be read.
bool file_sha256(const std::string& path, std::string& hex, std::string& error);

}  // namespace kiln::tools

// Linked into every fuzz target: the engine's tensor limit
// (KILN_MAX_TENSOR_BYTES, engine/base/limits.h) set below libFuzzer's
// -rss_limit_mb, so an input asking for more memory than the fuzzer allows
// must meet Kiln's own named error (which is what users get on a machine
// smaller than the model wants) rather than an out-of-memory report. The
// default limit is the host's physical memory, far above any RSS cap. A
// value already in the environment is kept.
#include <cstdlib>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("KILN_MAX_TENSOR_BYTES", "268435456", /*overwrite=*/0);  // 256 MiB
  return 0;
}

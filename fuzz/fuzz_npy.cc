// libFuzzer target: the .npy reader (engine/base/npy.h) on arbitrary bytes.
//
// parse_npy is what read_npy runs on a file's bytes, so this covers the file
// reader too. Whatever it accepts must encode and parse back to the same
// dtype, shape and bytes: a header the reader misread would show there.
#include <cstdint>
#include <cstring>

#include "engine/base/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = kiln::parse_npy(data, size, "fuzz input");
  if (!parsed.ok()) return 0;
  const kiln::Tensor& tensor = *parsed;
  auto encoded = kiln::encode_npy(tensor);
  if (!encoded.ok()) __builtin_trap();  // every dtype parse_npy accepts has a descr
  auto again = kiln::parse_npy(encoded->data(), encoded->size(), "re-encoded");
  if (!again.ok()) __builtin_trap();
  if (again->dtype() != tensor.dtype() || again->shape() != tensor.shape() ||
      again->nbytes() != tensor.nbytes() ||
      (tensor.nbytes() != 0 && std::memcmp(again->raw_data(), tensor.raw_data(), tensor.nbytes()) != 0))
    __builtin_trap();
  return 0;
}

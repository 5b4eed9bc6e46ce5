// Reading and writing NumPy .npy files as host tensors.
//
// The model-zoo tests and the `kiln` CLI exchange inputs and reference
// outputs with PyTorch as .npy files (np.save), the simplest format both
// sides speak without extra dependencies. Supported: format versions 1.0,
// 2.0 and 3.0, C order, little-endian element types <f4 <f2 <f8 <i8 <i4 <i2
// <u2 <u4 <u8 and the byte types |u1 |i1 |b1. Fortran order, big-endian data,
// object/string/complex arrays and truncated files are errors naming the
// file.
//
// Thread-safety: the functions are re-entrant.
#pragma once

#include <cstddef>
#include <string>

#include "engine/base/status.h"
#include "engine/base/tensor.h"

namespace kiln {

// Parses .npy bytes. `what` names the source in errors ("'input.npy'").
// INVALID_ARGUMENT for a malformed header, UNIMPLEMENTED for an unsupported
// dtype or Fortran order, DATA_LOSS when the data is shorter than the shape.
StatusOr<Tensor> parse_npy(const void* data, size_t size, const std::string& what = "npy data");
// Reads a .npy file; NOT_FOUND if it cannot be opened, INVALID_ARGUMENT if
// it is not a regular file (a FIFO, a device, a directory), else as
// parse_npy. Reads only the header and the data it declares, each checked
// against the file's size first (file_checks.h).
StatusOr<Tensor> read_npy(const std::string& path);

// Serializes a tensor as .npy (format 1.0, or 2.0 if the header needs it).
// UNIMPLEMENTED for dtypes without a .npy descr (none today).
StatusOr<std::string> encode_npy(const Tensor& tensor);
// Writes a .npy file; NOT_FOUND/PERMISSION_DENIED style errors name the path.
Status write_npy(const std::string& path, const Tensor& tensor);

}  // namespace kiln

// The vector path of the map harness (glsl_codegen.h, shaders/map.comp).
//
// A map kernel's invocation owns four consecutive elements along its written
// tensor Y's vector axis. For a buffer Y (no view) that axis is the last, so
// the four are Y's linear indices oi0 .. oi0+3. When oi0 is a multiple of 4
// and all four lie inside the row, they are one aligned vector of Y's memory
// (16 bytes for f32 and i32, 8 for f16), and so are the same four elements
// of every buffer input of Y's very shape. The harness then loads each such
// input once as a vector, runs the op's body per lane on the vector's lane
// where it read `X_ld(oi)`, and stores the four results as one vector
// (through Y_st4 instead when Y has a store epilogue). Memory-bound maps
// move 4x fewer, 4x wider accesses that way; on a 64 MiB Relu the scalar
// accesses reached 20 % of an H200's bandwidth.
//
// The condition is tested per invocation at run time, so symbolic shapes,
// rows that are not a multiple of 4 (only some blocks are aligned) and the
// last partial block need nothing at plan time: those invocations take the
// scalar path, which stays for every case the vector path does not cover
// (images, views, broadcast inputs, inputs read otherwise than X_ld(oi)).
// The path exists only in maps with at least one vector input: it repeats
// the body, which is worth its compile time in the memory-bound maps
// (elementwise ops, copies) and not in gathers and broadcasts, whose loads
// stay scalar anyway.
//
// Alignment: the vector arrays alias the tensors' bindings (same binding,
// a second block declaration), indexed from the binding's start; every
// tensor binding starts at a multiple of the device's
// minStorageBufferOffsetAlignment (the memory plan aligns to at least 64
// bytes; bound user buffers are checked), which is the alignment the device
// asks for its storage-buffer accesses.
//
// Kernels of other families opt into the same vector accesses by calling
// the vector accessors (generated for the tensors a kernel's helpers or
// body name them for; glsl_codegen.h):
//   V X_load4(int c0, ...)          X_at4's contract; one vector load when X
//                                   is a buffer read as it is (no view) and
//                                   the four lanes are whole and start at a
//                                   multiple of 4 in memory, else X_at4
//   void Y_store4(int c0, ..., V v) Y_st4's contract; one vector store
//                                   likewise when Y is a buffer without
//                                   store epilogue or view, else Y_st4
// They exist for every storage and for views, so fusion may still read a
// tensor through a view or attach a store epilogue (fusion.h) to a kernel
// that uses them.
#pragma once

#include <string>
#include <vector>

#include "planner/kernel.h"

namespace kiln::planner {

struct MapVectorPath {
  // Y's four values are stored as one vector (Y is a plain buffer without
  // store epilogue); otherwise the path stores through Y_st4.
  bool vector_store = false;
  // The inputs loaded as vectors: buffers of Y's shape, no view, read as
  // X_ld(oi) by the body.
  std::vector<const KernelTensor*> vector_loads;
  bool enabled() const { return !vector_loads.empty(); }
  bool loads_vector(const KernelTensor& t) const;
};

// The vector path of map kernel `desc` writing `y` (disabled unless y is a
// buffer without a view and some input is loaded as a vector).
// `y_has_epilogue`: y's stores go through a store epilogue. The tensors
// pointed to are desc's.
MapVectorPath plan_map_vector_path(const KernelDesc& desc, const KernelTensor& y, bool y_has_epilogue);

// The vector-typed name of a buffer's alias array: "<name>_data4".
std::string vector_data_name(const KernelTensor& t);
// The storage type of that array: vec4, f16vec4 or ivec4.
const char* storage_vec4(ElemType t);

// Whether `text` calls `<t.name>_<accessor>(`: e.g. "load4" or "store4".
bool calls_accessor(const std::string& text, const KernelTensor& t, const std::string& accessor);

// Statements of the vector path loading each vector input (declaring
// `V kiln_<name>_v`, V the accessor's vec4 type) for the block at linear
// index `base` (a multiple of 4).
std::string vector_loads_glsl(const MapVectorPath& path, const std::string& base);
// `body` with every `X_ld(oi)` of a vector input replaced by its lane of
// the loaded vector, `kiln_X_v[kiln_lane]`.
std::string vectorize_body(std::string body, const MapVectorPath& path);

}  // namespace kiln::planner

// The planner's generated GLSL compute shader (planner/glsl_codegen.h) as
// an OpenCL C 1.2 program, so that the OpenCL backend runs the same kernel
// descriptions, accessors and bodies as Vulkan without a second code
// generator per op family.
//
// The rewrite is lexical and relies on the shape of what glsl_codegen emits:
//   * each storage-buffer binding (one line `layout(std430, set = 0, binding
//     = B) ... buffer NAME { T ARRAY[]; };`) becomes a kernel argument
//     `global T* ARRAY` plus a byte offset into it (the tensor's place in
//     the runtime's arena); a second block on the same binding (the vector
//     views of a buffer) becomes a macro casting the first;
//   * an image binding (glsl_codegen's 2.5D textures: `sampler2D X_tex`
//     read with texelFetch, `writeonly image2D X_img` written with
//     imageStore) becomes a `read_only` or `write_only image2d_t` kernel
//     argument, read with read_imagef through a nearest, unnormalized,
//     clamping sampler and written with write_imagef (prelude);
//   * specialization constants become #defines of their plan-time values;
//   * the push-constant block becomes a struct passed by value (kiln_pc);
//   * `shared` arrays become `local` arrays of the kernel function;
//   * since OpenCL C has no program-scope buffers, every function of the
//     shader takes the buffers, kiln_pc and the local arrays as hidden
//     leading parameters (KILN_PARAMS / KILN_ARGS), and is renamed kg_NAME
//     (no clash with OpenCL built-ins) and made overloadable (GLSL
//     overloads by parameter types);
//   * program-scope scalar `const`s become macros (they size arrays),
//     program-scope variables one-element arrays of the kernel passed down
//     like the buffers; structs get a typedef; array constructors become
//     initializer lists; `out`/`inout` parameters become pointers;
//     main() is called by the kernel `kiln_kernel`.
// The GLSL built-ins whose OpenCL form differs are macros and overloads of
// the prelude (opencl_prelude.cl). What the rewrite cannot express is an
// error naming the construct (an fp16 image, an unknown layout). One
// rewrite works around PoCL: see TranslatedKernel::requires_exact_grid.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/status.h"

namespace kiln::opencl {

struct TranslatedKernel {
  std::string source;  // prelude + rewritten shader
  // Kernel argument k is binding k's buffer or image (k < bindings); then,
  // when has_push, the push-constant struct of push_count ints; then one
  // `ulong` byte offset per buffer binding, where its tensor starts in the
  // buffer (kernels read tensors placed in one arena allocation without
  // sub-buffers, which some drivers mishandle).
  size_t bindings = 0;
  std::vector<bool> image_bindings;  // per binding: an image2d_t (else a buffer)
  bool has_push = false;
  size_t push_count = 0;
  std::vector<int> offset_args;  // per binding: the argument index of its byte offset; -1 for an image
  std::array<uint32_t, 3> local_size{1, 1, 1};
  // The kernel's guard against groups past KILN_GROUPS was removed (a PoCL
  // miscompile, see glsl_to_opencl.cc): it must run on exactly KILN_GROUPS
  // workgroups.
  bool requires_exact_grid = false;
};

// `spec[i]` is the value of constant_id i (GeneratedKernel::spec).
StatusOr<TranslatedKernel> glsl_to_opencl(const std::string& glsl, const std::vector<int64_t>& spec);

// The prelude alone (opencl_prelude.cl).
const char* opencl_prelude();

}  // namespace kiln::opencl

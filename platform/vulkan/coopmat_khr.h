// SPV_NV_cooperative_matrix -> SPV_KHR_cooperative_matrix, at the SPIR-V level.
//
// Kiln's tensor-core kernels (shaders/gemm_coopmat.comp,
// shaders/attention_coopmat.comp) are GLSL in the GL_NV_cooperative_matrix
// dialect, the only one the available glslang (Debian's 12) compiles, and
// its SPIRV-Tools (2023.1) does not know SPV_KHR_cooperative_matrix at all.
// Devices without VK_NV_cooperative_matrix (AMD RDNA3, Intel Arc, mobile
// parts) expose only VK_KHR_cooperative_matrix, so the compiled NV module is
// rewritten into the KHR form (CompileOptions::cooperative_matrix_khr):
//
// * OpCapability CooperativeMatrixNV -> CooperativeMatrixKHR, OpExtension
//   "SPV_NV_cooperative_matrix" -> "SPV_KHR_cooperative_matrix". The
//   VulkanMemoryModel capability both extensions need is already there
//   (SPIR-V 1.3 or later, which both need too).
// * OpTypeCooperativeMatrixNV -> OpTypeCooperativeMatrixKHR, which also
//   names the matrix's Use (A, B or Accumulator). NV types carry none, and
//   one NV type (e.g. fp16 16x16) may serve as both A and B, so each value's
//   Use is inferred: values that must share a type (through loads and stores,
//   access chains, phis, selects, copies, arithmetic and conversions, array
//   constructs and extracts) form classes by union-find, seeded by
//   OpCooperativeMatrixMulAddNV's A, B and C operands and result; classes
//   that reach no multiply-add are Accumulators. Every matrix type, and every
//   pointer / array type built on one, gets one variant per Use its values
//   need (the first keeps the original id; the others are new ids declared
//   right after it), and each value takes its class's variant.
// * OpCooperativeMatrix{Load,Store,MulAdd,Length}NV -> their KHR forms:
//   the NV column-major bool becomes the MemoryLayout constant (RowMajorKHR
//   = 0, ColumnMajorKHR = 1) before the stride; signed integer components
//   get the MulAdd's Matrix{A,B,C,Result}SignedComponentsKHR operands (NV
//   took signedness from the component type).
//
// Everything else is copied word for word; new ids come from raising the
// module's id bound. The encodings follow SPIRV-Registry's
// SPV_KHR_cooperative_matrix (revision 10) and SPV_NV_cooperative_matrix.
//
// Limits (each an error, after which the caller keeps the NV kernel or none):
// a class that needs two Uses (e.g. an fp32 accumulator converted into an A
// operand: KHR conversions keep the Use); a column-major operand that is not
// a constant (MemoryLayout must be one); cooperative matrices crossing a
// function boundary or inside a struct (shaderc's optimizer inlines Kiln's
// kernels, so none do); an instruction on matrices the pass does not know.
// OpCooperativeMatrixLengthKHR takes the type's first variant: the length
// could differ per Use, and no Kiln kernel asks for it.
//
// spirv-val of this SPIRV-Tools cannot validate the result (it rejects the
// KHR capability), so check_khr_cooperative_matrix() checks the structure
// the KHR extension requires; the pass runs it on every module it makes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/base/status.h"

namespace kiln::vk {

// Whether `spirv` declares OpCapability CooperativeMatrixNV.
bool uses_nv_cooperative_matrix(std::span<const uint32_t> spirv);

// The KHR form of `spirv` (see above); a module without NV cooperative
// matrices comes back unchanged. Errors: kInvalidArgument for a malformed
// module or one of the limits above, naming the ids involved.
StatusOr<std::vector<uint32_t>> nv_to_khr_cooperative_matrix(std::span<const uint32_t> spirv);

// Structural checks of a KHR cooperative-matrix module: no NV cooperative-
// matrix capability, extension or instruction left; CooperativeMatrixKHR,
// VulkanMemoryModel and the KHR extension declared; every
// OpTypeCooperativeMatrixKHR's Use a constant 0-2; every
// OpCooperativeMatrixMulAddKHR's A, B, C and result of Uses A, B,
// Accumulator, Accumulator with M x K, K x N and M x N constant sizes; every
// Load / Store's MemoryLayout a constant 0 or 1; every result id under the
// bound and defined once. Errors: kInvalidArgument naming the first problem.
Status check_khr_cooperative_matrix(std::span<const uint32_t> spirv);

}  // namespace kiln::vk

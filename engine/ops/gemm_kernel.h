// The fast float32 matrix multiply behind the reference Conv, ConvTranspose,
// MatMul and Gemm kernels, and the small thread helper they share.
//
// The reference executor runs whole models (resnet50, vit_b_16, ...) in
// tests, so these three ops cannot be naive loops. sgemm is a BLIS-style
// blocked GEMM: B is packed once into NR-wide column strips, A is packed per
// (MC x KC) block, and a register-tiled MR x NR micro-kernel (plain GNU vector
// types, no intrinsics) does the work. The micro-kernel is compiled for
// AVX-512, AVX2+FMA and the baseline ISA and picked once at run time.
//
// Determinism: every element of C is accumulated in the same order (K in
// KC-sized blocks, each block summed in float, then added to C) whatever the
// thread count or how the work is split, so a given machine always gives the
// same bits. Different ISAs (FMA or not) may differ in the last bits.
//
// Thread-safety: all functions are re-entrant; sgemm and parallel_for start
// their own short-lived threads and never share state between calls.
#pragma once

#include <cstdint>
#include <functional>

#include "engine/base/status.h"

namespace kiln::ops {

// The number of threads CPU kernels use by default: the CPUs this process
// may run on (its affinity mask on Linux, else the hardware concurrency),
// at least 1 and at most 16. Computed once.
int cpu_thread_count();

// Runs fn(task, worker) for every task in [0, num_tasks) on up to `threads`
// threads (the caller is worker 0; worker < threads). Tasks are claimed in
// order by whichever worker is free, so `fn` must make each task's result
// independent of which worker runs it. Runs inline when threads <= 1 or there
// is a single task.
void parallel_for(int64_t num_tasks, int threads, const std::function<void(int64_t task, int worker)>& fn);

// A read-only float matrix with arbitrary element strides:
// element (r, c) is data[r * row_stride + c * col_stride].
struct StridedMatrix {
  const float* data = nullptr;
  int64_t row_stride = 0;
  int64_t col_stride = 1;
};

// Produces B row-segment by row-segment while it is packed, so a convolution
// can feed its im2col matrix without materializing it. fill(ctx, k, j0, n,
// dst) writes B(k, j0) .. B(k, j0 + n - 1) to dst[0 .. n-1]. It is called
// concurrently from several threads and must not write shared state.
struct BSource {
  void (*fill)(const void* ctx, int64_t k, int64_t j0, int64_t n, float* dst) = nullptr;
  const void* ctx = nullptr;
};

// A BSource reading a StridedMatrix; `m` must outlive the returned source.
BSource strided_b_source(const StridedMatrix* m);

struct SgemmArgs {
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  StridedMatrix a;  // m x k
  BSource b;        // k x n
  float* c = nullptr;
  int64_t ldc = 0;  // row stride of C (columns are contiguous)
  // C += alpha*A*B when true, C = alpha*A*B when false.
  bool accumulate = false;
};

// Which micro-kernel sgemm uses. kAuto picks the best one the CPU supports;
// the others exist so that tests can cover every kernel the machine can run.
enum class SgemmIsa { kAuto, kGeneric, kAvx2, kAvx512 };
bool sgemm_isa_supported(SgemmIsa isa);

// C = alpha*A*B (+ C). Errors: OUT_OF_MEMORY when packing buffers cannot be
// allocated; UNIMPLEMENTED for an ISA the CPU lacks. k == 0 leaves C
// (accumulate) or zeroes it.
Status sgemm(const SgemmArgs& args, int threads, SgemmIsa isa = SgemmIsa::kAuto);

// The micro-kernel kAuto picks ("avx512", "avx2", "generic"), for benchmarks
// and logs.
const char* sgemm_isa_name();

}  // namespace kiln::ops

// Blocked float32 GEMM and the thread helper; see gemm_kernel.h.
//
// Loop nest (BLIS-like): C is split into (MC rows x NC cols) tasks run in
// parallel. A task walks K in KC blocks; for each it packs its A block into
// MR-row strips and its B panel into NR-column strips (a small B is instead
// packed once up front and shared), then runs the micro-kernel over every
// (MR x NR) tile. A packed B strip (KC x NR) stays in L1 while A's strips
// stream from L2; nothing is larger than L2 per thread.
#include "engine/ops/gemm_kernel.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sched.h>
#endif

namespace kiln::ops {

int cpu_thread_count() {
  static const int count = [] {
    unsigned n = std::thread::hardware_concurrency();
#ifdef __linux__
    // A process pinned to fewer CPUs (taskset, container cpusets) should
    // not start a thread per CPU of the host.
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
      const int allowed = CPU_COUNT(&set);
      if (allowed > 0 && (n == 0 || static_cast<unsigned>(allowed) < n)) n = static_cast<unsigned>(allowed);
    }
#endif
    return static_cast<int>(std::clamp(n, 1u, 16u));
  }();
  return count;
}

void parallel_for(int64_t num_tasks, int threads, const std::function<void(int64_t, int)>& fn) {
  if (num_tasks <= 0) return;
  const int workers = static_cast<int>(std::min<int64_t>(std::max(threads, 1), num_tasks));
  if (workers <= 1) {
    for (int64_t t = 0; t < num_tasks; ++t) fn(t, 0);
    return;
  }
  std::atomic<int64_t> next{0};
  auto work = [&](int worker) {
    for (int64_t t = next.fetch_add(1, std::memory_order_relaxed); t < num_tasks;
         t = next.fetch_add(1, std::memory_order_relaxed))
      fn(t, worker);
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(workers - 1));
  for (int w = 1; w < workers; ++w) pool.emplace_back(work, w);
  work(0);
  for (std::thread& t : pool) t.join();
}

namespace {

void fill_from_strided(const void* ctx, int64_t k, int64_t j0, int64_t n, float* dst) {
  const auto* m = static_cast<const StridedMatrix*>(ctx);
  const float* src = m->data + k * m->row_stride + j0 * m->col_stride;
  if (m->col_stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  } else {
    for (int64_t j = 0; j < n; ++j) dst[j] = src[j * m->col_stride];
  }
}

// 64-byte aligned float buffer; empty on allocation failure.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t count)
      : data_(static_cast<float*>(::operator new(count * sizeof(float), std::align_val_t(64), std::nothrow))) {}
  ~AlignedBuffer() { ::operator delete(data_, std::align_val_t(64)); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  float* get() const { return data_; }

 private:
  float* data_;
};

// ---------------------------------------------------------------------------
// Micro-kernel: C[0:mr, 0:nr] (+)= sum over kc of a[k][0:MR] x b[k][0:NR].
// `a` is one packed MR-row strip (k-major), `b` one packed NR-column strip.
// Partial tiles compute the full tile and write back only the valid part,
// with the same float operations as a full tile, so results do not depend on
// where a tile falls.

using MicroKernelFn = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate,
                               int mr, int nr);

template <int VL, int MR, int NV>
[[gnu::always_inline]] inline void micro_kernel_body(int64_t kc, const float* a, const float* b, float* c,
                                                     int64_t ldc, bool accumulate, int mr, int nr) {
  typedef float V __attribute__((vector_size(VL * sizeof(float))));
  constexpr int NR = VL * NV;
  V acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = V{};
  for (int64_t k = 0; k < kc; ++k) {
    V bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) std::memcpy(&bv[v], b + k * NR + v * VL, sizeof(V));
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const float s = a[k * MR + i];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] += bv[v] * s;
    }
  }
  if (mr == MR && nr == NR) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        float* dst = c + i * ldc + v * VL;
        V out = acc[i][v];
        if (accumulate) {
          V old;
          std::memcpy(&old, dst, sizeof(V));
          out = old + out;
        }
        std::memcpy(dst, &out, sizeof(V));
      }
    return;
  }
  alignas(64) float tile[MR * NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) std::memcpy(tile + i * NR + v * VL, &acc[i][v], sizeof(V));
  for (int i = 0; i < mr; ++i) {
    float* dst = c + i * ldc;
    const float* src = tile + i * NR;
    if (accumulate) {
      for (int j = 0; j < nr; ++j) dst[j] = dst[j] + src[j];
    } else {
      for (int j = 0; j < nr; ++j) dst[j] = src[j];
    }
  }
}

// B up to this many packed floats (1 MiB) is packed once and shared.
constexpr int64_t kSharedBFloats = int64_t{1} << 18;
// Widest B panel a task packs: KC x NC floats stay within L2.
constexpr int64_t kNcMax = 1024;

struct KernelInfo {
  SgemmIsa isa;
  const char* name;
  int mr, nr;  // register tile
  int mc, kc;  // cache blocks (mc a multiple of mr)
  MicroKernelFn fn;
};

// Baseline: 4-lane vectors (SSE2 on x86-64, NEON on AArch64), 6x8 tile.
void micro_kernel_generic(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool acc, int mr,
                          int nr) {
  micro_kernel_body<4, 6, 2>(kc, a, b, c, ldc, acc, mr, nr);
}
constexpr KernelInfo kGenericKernel{SgemmIsa::kGeneric, "generic", 6, 8, 144, 256, micro_kernel_generic};

#if defined(__x86_64__) || defined(__i386__)
#define KILN_SGEMM_X86 1
// AVX2+FMA: 16 ymm registers hold a 6x16 accumulator tile (12) plus B and A.
__attribute__((target("avx2,fma"))) void micro_kernel_avx2(int64_t kc, const float* a, const float* b, float* c,
                                                           int64_t ldc, bool acc, int mr, int nr) {
  micro_kernel_body<8, 6, 2>(kc, a, b, c, ldc, acc, mr, nr);
}
// AVX-512: 32 zmm registers hold a 12x32 accumulator tile (24) plus B and A.
__attribute__((target("avx512f"))) void micro_kernel_avx512(int64_t kc, const float* a, const float* b, float* c,
                                                            int64_t ldc, bool acc, int mr, int nr) {
  micro_kernel_body<16, 12, 2>(kc, a, b, c, ldc, acc, mr, nr);
}
constexpr KernelInfo kAvx2Kernel{SgemmIsa::kAvx2, "avx2", 6, 16, 144, 256, micro_kernel_avx2};
constexpr KernelInfo kAvx512Kernel{SgemmIsa::kAvx512, "avx512", 12, 32, 144, 256, micro_kernel_avx512};
#endif

const KernelInfo* kernel_for(SgemmIsa isa) {
  switch (isa) {
    case SgemmIsa::kGeneric: return &kGenericKernel;
#ifdef KILN_SGEMM_X86
    case SgemmIsa::kAvx2: return sgemm_isa_supported(isa) ? &kAvx2Kernel : nullptr;
    case SgemmIsa::kAvx512: return sgemm_isa_supported(isa) ? &kAvx512Kernel : nullptr;
#else
    case SgemmIsa::kAvx2:
    case SgemmIsa::kAvx512: return nullptr;
#endif
    case SgemmIsa::kAuto: break;
  }
  static const KernelInfo* best = [] {
    if (const KernelInfo* k = kernel_for(SgemmIsa::kAvx512)) return k;
    if (const KernelInfo* k = kernel_for(SgemmIsa::kAvx2)) return k;
    return &kGenericKernel;
  }();
  return best;
}

// Packs rows [i0, i0+mc) x cols [p0, p0+kc) of alpha*A into MR-row strips,
// k-major within a strip, zero-padding rows past the matrix.
void pack_a(const StridedMatrix& a, float alpha, int64_t m, int64_t i0, int64_t mc, int64_t p0, int64_t kc, int mr,
            float* dst) {
  for (int64_t s = 0; s < mc; s += mr) {
    const int64_t rows = std::min<int64_t>(mr, m - (i0 + s));
    for (int64_t k = 0; k < kc; ++k) {
      const float* src = a.data + (i0 + s) * a.row_stride + (p0 + k) * a.col_stride;
      float* out = dst + k * mr;
      int64_t i = 0;
      if (alpha == 1.0f) {
        for (; i < rows; ++i) out[i] = src[i * a.row_stride];
      } else {
        for (; i < rows; ++i) out[i] = alpha * src[i * a.row_stride];
      }
      for (; i < mr; ++i) out[i] = 0.0f;
    }
    dst += kc * mr;
  }
}

// Copies one NR-float strip row; NR is a multiple of 8 for every kernel.
inline void copy_strip_row(float* dst, const float* src, int nr) {
  typedef float V8 __attribute__((vector_size(8 * sizeof(float))));
  for (int j = 0; j < nr; j += 8) {
    V8 v;
    std::memcpy(&v, src + j, sizeof(V8));
    std::memcpy(dst + j, &v, sizeof(V8));
  }
}

// Packs rows [k0, k1) of B's columns [j0, j0 + cols) into NR-column strips:
// element (k, j0 + s*NR + c) goes to dst[s * strip_stride + (k - k0) * NR + c],
// zero-padded past `cols`. Each row is produced whole into `row` (cols
// rounded up to NR floats) and then split, so a BSource is called once per
// row segment rather than once per strip.
void pack_b_rows(const BSource& b, int64_t k0, int64_t k1, int64_t j0, int64_t cols, int nr, int64_t strip_stride,
                 float* row, float* dst) {
  const int64_t strips = (cols + nr - 1) / nr;
  std::fill(row + cols, row + strips * nr, 0.0f);
  for (int64_t k = k0; k < k1; ++k) {
    b.fill(b.ctx, k, j0, cols, row);
    float* out = dst + (k - k0) * nr;
    for (int64_t s = 0; s < strips; ++s) copy_strip_row(out + s * strip_stride, row + s * nr, nr);
  }
}

}  // namespace

bool sgemm_isa_supported(SgemmIsa isa) {
  switch (isa) {
    case SgemmIsa::kAuto:
    case SgemmIsa::kGeneric: return true;
    case SgemmIsa::kAvx2:
#ifdef KILN_SGEMM_X86
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
      return false;
#endif
    case SgemmIsa::kAvx512:
#ifdef KILN_SGEMM_X86
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx512f");
#else
      return false;
#endif
  }
  return false;
}

const char* sgemm_isa_name() { return kernel_for(SgemmIsa::kAuto)->name; }

BSource strided_b_source(const StridedMatrix* m) {
  BSource s;
  s.fill = fill_from_strided;
  s.ctx = m;
  return s;
}

Status sgemm(const SgemmArgs& args, int threads, SgemmIsa isa) {
  const KernelInfo* kern = kernel_for(isa);
  if (!kern) return unimplemented("sgemm: the requested micro-kernel ISA is not supported on this CPU");
  const int64_t m = args.m, n = args.n, k_total = args.k;
  if (m <= 0 || n <= 0) return ok_status();
  if (k_total <= 0) {
    if (!args.accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(args.c + i * args.ldc, args.c + i * args.ldc + n, 0.0f);
    return ok_status();
  }
  threads = std::max(threads, 1);
  // Tiny problems: thread start-up costs more than the work.
  if (m * n * k_total < (int64_t{1} << 15)) threads = 1;

  const int mr = kern->mr, nr = kern->nr;
  const int64_t kc_max = std::min<int64_t>(kern->kc, k_total);
  const int64_t mc_max = std::min<int64_t>(kern->mc, (m + mr - 1) / mr * mr);
  const int64_t m_blocks = (m + mc_max - 1) / mc_max;
  const int64_t n_round = (n + nr - 1) / nr * nr;

  // A small B is packed once and shared by all tasks. A large one is packed
  // by each task, one (KC x NC) panel at a time, so that the panel stays in
  // L2 while it is used; B is then packed once per row block of C, which
  // costs about 1/(2*MC) of the arithmetic.
  const bool shared_b = k_total * n_round <= kSharedBFloats;
  int64_t nc = shared_b ? n_round : std::min<int64_t>(n_round, kNcMax / nr * nr);
  // Enough tasks to balance the threads, down to blocks of a few strips.
  while (threads > 1 && m_blocks * ((n + nc - 1) / nc) < 4 * threads && nc >= 8 * nr) nc = (nc / 2 + nr - 1) / nr * nr;
  const int64_t n_blocks = (n + nc - 1) / nc;

  AlignedBuffer packed_a(static_cast<size_t>(threads * mc_max * kc_max));
  AlignedBuffer packed_b(static_cast<size_t>(shared_b ? k_total * n_round : threads * kc_max * nc));
  AlignedBuffer rows(static_cast<size_t>(threads * (shared_b ? n_round : nc)));
  if (!packed_a.get() || !packed_b.get() || !rows.get())
    return out_of_memory("sgemm: cannot allocate packing buffers");

  if (shared_b) {
    const int64_t k_step = std::max<int64_t>(16, (k_total + 4 * threads - 1) / (4 * threads));
    parallel_for((k_total + k_step - 1) / k_step, threads, [&](int64_t t, int worker) {
      const int64_t k0 = t * k_step;
      pack_b_rows(args.b, k0, std::min(k_total, k0 + k_step), 0, n, nr, k_total * nr, rows.get() + worker * n_round,
                  packed_b.get() + k0 * nr);
    });
  }

  parallel_for(m_blocks * n_blocks, threads, [&](int64_t task, int worker) {
    const int64_t ib = task % m_blocks, nb = task / m_blocks;
    const int64_t i0 = ib * mc_max, mc = std::min(mc_max, m - i0);
    const int64_t j0 = nb * nc, cols = std::min(nc, n - j0);
    const int64_t strips = (cols + nr - 1) / nr;
    float* a_buf = packed_a.get() + worker * mc_max * kc_max;
    float* b_buf = shared_b ? nullptr : packed_b.get() + worker * kc_max * nc;
    for (int64_t p0 = 0; p0 < k_total; p0 += kc_max) {
      const int64_t kc = std::min(kc_max, k_total - p0);
      const bool acc = args.accumulate || p0 > 0;
      pack_a(args.a, args.alpha, m, i0, mc, p0, kc, mr, a_buf);
      if (!shared_b) pack_b_rows(args.b, p0, p0 + kc, j0, cols, nr, kc * nr, rows.get() + worker * nc, b_buf);
      for (int64_t s = 0; s < strips; ++s) {
        const float* b_strip =
            shared_b ? packed_b.get() + (j0 / nr + s) * k_total * nr + p0 * nr : b_buf + s * kc * nr;
        const int nr_valid = static_cast<int>(std::min<int64_t>(nr, cols - s * nr));
        float* c_col = args.c + j0 + s * nr;
        for (int64_t ir = 0; ir < mc; ir += mr) {
          const int mr_valid = static_cast<int>(std::min<int64_t>(mr, mc - ir));
          kern->fn(kc, a_buf + ir * kc, b_strip, c_col + (i0 + ir) * args.ldc, args.ldc, acc, mr_valid, nr_valid);
        }
      }
    }
  });
  return ok_status();
}

}  // namespace kiln::ops

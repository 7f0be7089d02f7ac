/* cpu/qgemm_avx2.c — the AVX2+FMA micro-kernel of the fused quantized GEMM (cpu/qgemm.c): a 6 x 16
 * tile of C held in 12 registers while a k-major A panel is broadcast against a k-major B panel,
 * and the 8 x 8 transposes that turn dequantized weight rows into B panels. The AVX-512 twin
 * (cpu/qgemm_avx512.c) has the same shape at twice the width. Not the blocking, packing or
 * threading (cpu/qgemm.c). Every function carries target("avx2,fma"); cpu/qmm_fast.c uses them
 * only on a CPU that has both. */
#include "cpu/qmm_fast_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))
#define AVX2_INLINE static inline __attribute__((always_inline, target("avx2,fma")))

/* 6 rows x 2 vectors: 12 accumulators, 2 B vectors and a broadcast fill 15 of the 16 registers
   (the usual Haswell-class shape, OpenBLAS's too). */
enum { MR = 6, NR = 16, LANES = 8 };

static AVX2 void multiply(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                          bool accumulate) {
  __m256 acc[MR][2];
#pragma GCC unroll 6
  for (int i = 0; i < MR; i++)
    acc[i][0] = acc[i][1] = _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; k++) {
    __m256 b0 = _mm256_loadu_ps(b + k * NR), b1 = _mm256_loadu_ps(b + k * NR + LANES);
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
      __m256 ai = _mm256_broadcast_ss(a + k * MR + i);
      acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < MR; i++) {
    float *row = c + i * ldc;
    if (accumulate) {
      acc[i][0] = _mm256_add_ps(_mm256_loadu_ps(row), acc[i][0]);
      acc[i][1] = _mm256_add_ps(_mm256_loadu_ps(row + LANES), acc[i][1]);
    }
    _mm256_storeu_ps(row, acc[i][0]);
    _mm256_storeu_ps(row + LANES, acc[i][1]);
  }
}

/* Rows of 8 floats: pairs of floats, pairs of pairs, then 128-bit halves. */
AVX2_INLINE void transpose8(const float *src, int64_t ld, float *dst, int64_t ldd) {
  __m256 r[8], t[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++)
    r[i] = _mm256_loadu_ps(src + i * ld);
#pragma GCC unroll 4
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 2
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++) {
    t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
    t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
  }
#pragma GCC unroll 8
  for (int j = 0; j < 8; j++) /* t[j] now holds source column j */
    _mm256_storeu_ps(dst + j * ldd, t[j]);
}

static AVX2 void transpose_panel(const float *src, int64_t ld, int64_t kc, float *dst) {
  for (int64_t k = 0; k < kc; k += LANES)
    for (int j = 0; j < NR; j += LANES)
      transpose8(src + j * ld + k, ld, dst + k * NR + j, NR);
}

const tsri_qgemm_kernel *tsri_qgemm_kernel_avx2(void) {
  /* Measured on the dev VM forced to AVX2, 4096 x 4096, sgemm / ours against sgemm / the tiles:
     M = 64 0.88-1.09 against 0.73-0.95, M = 512 0.83-0.93 against 0.93-0.98 (OpenBLAS's Haswell
     kernel runs nearer the FMA peak than this one once M amortizes its packing). */
  static const tsri_qgemm_kernel kernel = {MR, NR, 128, multiply, transpose_panel};
  return &kernel;
}

#else

const tsri_qgemm_kernel *tsri_qgemm_kernel_avx2(void) {
  return NULL;
}

#endif

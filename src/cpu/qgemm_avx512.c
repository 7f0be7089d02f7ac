/* cpu/qgemm_avx512.c — the AVX-512F micro-kernel of the fused quantized GEMM (cpu/qgemm.c): an
 * 8 x 32 tile of C held in 16 registers while a k-major A panel is broadcast against a k-major B
 * panel, and the 16 x 16 transposes that turn dequantized weight rows into B panels. Not the
 * blocking, packing or threading (cpu/qgemm.c) nor the dequantization (cpu/qmm_fast_avx512.c).
 * Every function carries target("avx512f"); cpu/qmm_fast.c uses them only on a CPU that has it. */
#include "cpu/qmm_fast_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))
#define AVX512_INLINE static inline __attribute__((always_inline, target("avx512f")))

/* 8 rows x 2 vectors: 16 accumulators, enough independent FMAs to cover their latency on two
   FMA pipes, with 10 loads (2 of B, 8 broadcasts of A) per 16 FMAs. Measured against 12 x 32
   in bench/qmm_cpu (bench/RESULTS.md "qmm_cpu"). */
enum { MR = 8, NR = 32, LANES = 16 };

static AVX512 void multiply(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                            bool accumulate) {
  __m512 acc[MR][2];
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++)
    acc[i][0] = acc[i][1] = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; k++) {
    __m512 b0 = _mm512_loadu_ps(b + k * NR), b1 = _mm512_loadu_ps(b + k * NR + LANES);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      __m512 ai = _mm512_set1_ps(a[k * MR + i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++) {
    float *row = c + i * ldc;
    if (accumulate) {
      acc[i][0] = _mm512_add_ps(_mm512_loadu_ps(row), acc[i][0]);
      acc[i][1] = _mm512_add_ps(_mm512_loadu_ps(row + LANES), acc[i][1]);
    }
    _mm512_storeu_ps(row, acc[i][0]);
    _mm512_storeu_ps(row + LANES, acc[i][1]);
  }
}

/* Rows of 16 floats: in four stages (pairs of floats, pairs of pairs, 128-bit quarters twice). */
AVX512_INLINE void transpose16(const float *src, int64_t ld, float *dst, int64_t ldd) {
  __m512 r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++)
    r[i] = _mm512_loadu_ps(src + i * ld);
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 1] =
        _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(
        _mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(
        _mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
#pragma GCC unroll 16
  for (int j = 0; j < 16; j++) /* r[j] now holds source column j */
    _mm512_storeu_ps(dst + j * ldd, r[j]);
}

static AVX512 void transpose_panel(const float *src, int64_t ld, int64_t kc, float *dst) {
  for (int64_t k = 0; k < kc; k += LANES)
    for (int j = 0; j < NR; j += LANES)
      transpose16(src + j * ld + k, ld, dst + k * NR + j, NR);
}

const tsri_qgemm_kernel *tsri_qgemm_kernel_avx512(void) {
  /* Beats OpenBLAS's tiles at every M measured on the dev VM, whose OpenBLAS 0.3.21 runs its
     Haswell (AVX2) kernel on this AVX-512 CPU (bench/RESULTS.md "qmm_cpu"). */
  static const tsri_qgemm_kernel kernel = {MR, NR, 0, multiply, transpose_panel};
  return &kernel;
}

#else

const tsri_qgemm_kernel *tsri_qgemm_kernel_avx512(void) {
  return NULL;
}

#endif

/* bench/qmv_loops.c — the decode kernels' inner loops alone (a kernel lab for
 * cpu/qmm_fast_avx512*.c): each variant multiplies L1-resident codes by an L1-resident float32 x,
 * one core, no scales read, no graph, no memory traffic, and prints G codes per second and what
 * that is in weight GB/s per core at its format's bits per weight. It bounds what a qmv kernel of
 * that shape can reach on this CPU however it streams memory (bench/RESULTS.md "Step 4b, second
 * session": with x in float32 and each weight multiplied once, Zen 4's one 512-bit FMA per cycle
 * caps 4-bit decode far below the read roof), and it is stable under load where the op's timings
 * are not. Not the kernels themselves (their loops, unrolling and scale handling are in src/cpu),
 * and not a test: it checks only that sums are finite. AVX-512F only; elsewhere it says so. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { CODES = 4096, ROUNDS = 3 };

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define LOOP __attribute__((target("avx512f"), noinline)) static float
#define LOOP_HELPER __attribute__((always_inline, target("avx512f"))) static inline

/* Each loop returns the sum of its accumulators, so that nothing is optimized away. */
#define ZERO4 \
  { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() }
#define SUM4(a) \
  _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3])))

/* x load + FMA per 16 weights, no decode: the ceiling of any kernel that multiplies each weight
   once by a float32 x. */
LOOP fma_only(const float *x, const unsigned char *codes, long reps) {
  (void)codes;
  __m512 a[4] = ZERO4;
  __m512 w = _mm512_set1_ps(1.0f);
  for (long r = 0; r < reps; r++)
    for (int i = 0; i < CODES; i += 64)
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++)
        a[j] = _mm512_fmadd_ps(w, _mm512_loadu_ps(x + i + 16 * j), a[j]);
  return SUM4(a);
}

/* The 4-bit byte path (affine 4-bit, mxfp4): 16 bytes widened to lanes (vpmovzxbd), each nibble
   through a 16-entry table (vpermps), FMA. */
LOOP bytes4(const float *x, const unsigned char *codes, long reps) {
  __m512 a[4] = ZERO4;
  __m512 table = _mm512_set1_ps(0.5f);
  for (long r = 0; r < reps; r++)
    for (int i = 0; i < CODES; i += 64)
#pragma GCC unroll 2
      for (int b = 0; b < 2; b++) {
        __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const void *)(codes + i / 2 + 16 * b)));
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++)
          a[2 * b + j] = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v, 4 * j), table),
                                         _mm512_loadu_ps(x + i + 32 * b + 16 * j), a[2 * b + j]);
      }
  return SUM4(a);
}

/* nvfp4 before Step 4b's second session: the byte path with two groups per 16 bytes, values
   through the constant table times a vector of the two groups' scales. */
LOOP nvfp4_bytes(const float *x, const unsigned char *codes, long reps) {
  __m512 a[4] = ZERO4;
  __m512 table = _mm512_set1_ps(0.5f);
  for (long r = 0; r < reps; r++)
#pragma GCC unroll 2
    for (int i = 0; i < CODES; i += 32) {
      __m512 scale =
          _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(x[i / 16]), _mm512_set1_ps(x[i / 16 + 1]));
      __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const void *)(codes + i / 2)));
#pragma GCC unroll 2
      for (int j = 0; j < 2; j++) {
        __m512 w = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v, 4 * j), table), scale);
        int acc = 2 * j + ((i / 32) & 1);
        a[acc] = _mm512_fmadd_ps(w, _mm512_loadu_ps(x + i + 16 * j), a[acc]);
      }
    }
  return SUM4(a);
}

/* nvfp4's 128-code blocks: block i's scale in every lane (one permute spreads it), and nibble j
   of each lane's 32-bit word through the value table. */
LOOP_HELPER __m512 block_scale(__m512 scales, int i) {
  return _mm512_permutexvar_ps(_mm512_set1_epi32(i / 128 & 15), scales);
}
LOOP_HELPER __m512 nibble_values(__m512i words, int j, __m512 table) {
  return _mm512_permutexvar_ps(_mm512_srli_epi32(words, 4 * j), table);
}

/* nvfp4 for several x rows: 64 bytes as 32-bit words (no widening), each nibble through the table
   times the lanes' scales (one permute per 128 codes spreads them), FMA. */
LOOP nvfp4_words(const float *x, const unsigned char *codes, long reps) {
  __m512 a[4] = ZERO4;
  __m512 table = _mm512_set1_ps(0.5f), scales = _mm512_loadu_ps(x);
  for (long r = 0; r < reps; r++)
    for (int i = 0; i < CODES; i += 128) {
      __m512 scale = block_scale(scales, i);
      __m512i v = _mm512_loadu_si512((const void *)(codes + i / 2));
#pragma GCC unroll 8
      for (int j = 0; j < 8; j++) {
        __m512 w = _mm512_mul_ps(nibble_values(v, j, table), scale);
        a[j & 3] = _mm512_fmadd_ps(w, _mm512_loadu_ps(x + i + 16 * j), a[j & 3]);
      }
    }
  return SUM4(a);
}

/* Affine 8-bit: widen, convert, scale, FMA. */
LOOP bytes8(const float *x, const unsigned char *codes, long reps) {
  __m512 a[4] = ZERO4;
  __m512 scale = _mm512_set1_ps(0.5f);
  for (long r = 0; r < reps; r++)
    for (int i = 0; i < CODES; i += 64)
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++) {
        __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const void *)(codes + i + 16 * j)));
        a[j] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(v), scale),
                               _mm512_loadu_ps(x + i + 16 * j), a[j]);
      }
  return SUM4(a);
}

/* mxfp8 before: E4M3 by float32 bit arithmetic (normal, subnormal, NaN and sign handled apart). */
LOOP mxfp8_bits(const float *x, const unsigned char *codes, long reps) {
  __m512 a[4] = ZERO4;
  __m512 scale = _mm512_set1_ps(0.5f);
  for (long r = 0; r < reps; r++)
    for (int i = 0; i < CODES; i += 64)
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++) {
        __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const void *)(codes + i + 16 * j)));
        __m512i magnitude = _mm512_and_si512(v, _mm512_set1_epi32(0x7f));
        __m512 value = _mm512_castsi512_ps(
            _mm512_add_epi32(_mm512_slli_epi32(magnitude, 20), _mm512_set1_epi32(120 << 23)));
        __mmask16 subnormal = _mm512_cmplt_epi32_mask(magnitude, _mm512_set1_epi32(8));
        value = _mm512_mask_mul_ps(value, subnormal, _mm512_cvtepi32_ps(magnitude),
                                   _mm512_set1_ps(0x1p-9f));
        __mmask16 nan = _mm512_cmpeq_epi32_mask(magnitude, _mm512_set1_epi32(0x7f));
        __m512i bits =
            _mm512_mask_mov_epi32(_mm512_castps_si512(value), nan, _mm512_set1_epi32(0x7fc00000));
        value = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
            _mm512_slli_epi32(v, 24), _mm512_set1_epi32((int)0x80000000u), bits, 0xea));
        a[j] = _mm512_fmadd_ps(_mm512_mul_ps(value, scale), _mm512_loadu_ps(x + i + 16 * j), a[j]);
      }
  return SUM4(a);
}

/* mxfp8 before: E4M3 through float16 (sign-extend, shift, mask, vcvtph2ps). */
LOOP mxfp8_half(const float *x, const unsigned char *codes, long reps) {
  __m512 a[4] = ZERO4;
  __m512 scale = _mm512_set1_ps(0.5f);
  for (long r = 0; r < reps; r++)
    for (int i = 0; i < CODES; i += 64)
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++) {
        __m256i extended =
            _mm256_cvtepi8_epi16(_mm_loadu_si128((const void *)(codes + i + 16 * j)));
        __m256i half = _mm256_and_si256(_mm256_slli_epi16(extended, 7), _mm256_set1_epi16(-0x4001));
        a[j] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtph_ps(half), scale),
                               _mm512_loadu_ps(x + i + 16 * j), a[j]);
      }
  return SUM4(a);
}

/* mxfp8 now: 32 codes as 16-bit words, even and odd bytes moved into float16 fields by shifts
   (no widening shuffle), vcvtph2ps, scale, FMA. */
LOOP mxfp8_pairs(const float *x, const unsigned char *codes, long reps) {
  __m512 a[4] = ZERO4;
  __m512 scale = _mm512_set1_ps(0.5f);
  const __m256i fields = _mm256_set1_epi16((short)0xbf80);
  for (long r = 0; r < reps; r++)
    for (int i = 0; i < CODES; i += 64)
#pragma GCC unroll 2
      for (int j = 0; j < 2; j++) {
        __m256i words = _mm256_loadu_si256((const void *)(codes + i + 32 * j));
        __m256i even = _mm256_and_si256(_mm256_srai_epi16(_mm256_slli_epi16(words, 8), 1), fields);
        __m256i odd = _mm256_and_si256(_mm256_srai_epi16(words, 1), fields);
        a[2 * j] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtph_ps(even), scale),
                                   _mm512_loadu_ps(x + i + 32 * j), a[2 * j]);
        a[2 * j + 1] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtph_ps(odd), scale),
                                       _mm512_loadu_ps(x + i + 32 * j + 16), a[2 * j + 1]);
      }
  return SUM4(a);
}

/* nvfp4 with the scale factored out of each lane's 8 codes (one row of moderate x). */
LOOP nvfp4_factored(const float *x, const unsigned char *codes, long reps) {
  __m512 a[4] = ZERO4;
  __m512 table = _mm512_set1_ps(0.5f), scales = _mm512_loadu_ps(x);
  for (long r = 0; r < reps; r++)
    for (int i = 0; i < CODES; i += 128) {
      __m512 scale = block_scale(scales, i);
      __m512i v = _mm512_loadu_si512((const void *)(codes + i / 2));
      __m512 part[2];
#pragma GCC unroll 8
      for (int j = 0; j < 8; j++) {
        __m512 w = nibble_values(v, j, table);
        __m512 xj = _mm512_loadu_ps(x + i + 16 * j);
        part[j & 1] = j < 2 ? _mm512_mul_ps(w, xj) : _mm512_fmadd_ps(w, xj, part[j & 1]);
      }
      int at = i / 128 & 1;
      a[2 * at] = _mm512_fmadd_ps(part[0], scale, a[2 * at]);
      a[2 * at + 1] = _mm512_fmadd_ps(part[1], scale, a[2 * at + 1]);
    }
  return SUM4(a);
}

typedef float (*loop_fn)(const float *x, const unsigned char *codes, long reps);

typedef struct {
  const char *name, *what;
  loop_fn run;
  double bits; /* per weight, scales included, of the format it stands for */
} variant;

/* Codes per second of one variant: reps sized to ~0.1 s, best of ROUNDS. */
static double codes_per_second(const variant *v, const float *x, const unsigned char *codes) {
  double t0 = cpu_seconds();
  float check = v->run(x, codes, 1000);
  double once = (cpu_seconds() - t0) / 1000.0;
  long reps = (long)(0.1 / (once > 1e-9 ? once : 1e-9)) + 1;
  double best = 1e30;
  for (int r = 0; r < ROUNDS; r++) {
    t0 = cpu_seconds();
    check += v->run(x, codes, reps);
    double seconds = (cpu_seconds() - t0) / (double)reps;
    best = seconds < best ? seconds : best;
  }
  if (!isfinite(check)) fprintf(stderr, "qmv_loops: %s: sum not finite\n", v->name);
  return (double)CODES / best;
}

int main(void) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) {
    printf("qmv_loops: this CPU has no AVX-512F; the loops measured here are AVX-512 ones\n");
    return 0;
  }
  static float x[CODES];
  static unsigned char codes[CODES];
  for (int i = 0; i < CODES; i++) {
    x[i] = (float)(i % 97) * 0x1p-10f;
    codes[i] = (unsigned char)((i * 37) & 0x7e); /* no E4M3 NaN, no subnormal float32 */
  }
  static const variant variants[] = {
      {"fma only", "x load + FMA, no decode (the ceiling)", fma_only, 4.5},
      {"bytes4", "affine 4-bit, mxfp4: vpmovzxbd + vpermps table", bytes4, 4.5},
      {"nvfp4 bytes", "nvfp4 before: bytes, table x two-group scale vector", nvfp4_bytes, 4.5},
      {"nvfp4 words", "nvfp4: 32-bit words, table x lane scales", nvfp4_words, 4.5},
      {"nvfp4 factored", "nvfp4 now, one x row: words, scale x each lane's sum", nvfp4_factored,
       4.5},
      {"bytes8", "affine 8-bit: widen, convert, scale", bytes8, 8.5},
      {"mxfp8 bits", "mxfp8 before: E4M3 by float32 bit arithmetic", mxfp8_bits, 8.25},
      {"mxfp8 half", "mxfp8 before: E4M3 through float16 (vcvtph2ps)", mxfp8_half, 8.25},
      {"mxfp8 pairs", "mxfp8 now: even/odd bytes of words into float16 fields", mxfp8_pairs, 8.25}};
  printf(
      "## qmv_loops: decode inner loops, one core, codes and x in L1\n\n"
      "| loop | what | G codes/s | weight GB/s per core (bits/weight) |\n"
      "| --- | --- | --- | --- |\n");
  for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
    double rate = codes_per_second(&variants[i], x, codes);
    printf("| %s | %s | %.1f | %.1f (%.2f) |\n", variants[i].name, variants[i].what, rate * 1e-9,
           rate * variants[i].bits / 8.0 * 1e-9, variants[i].bits);
    fflush(stdout);
  }
  return 0;
}

#else

int main(void) {
  (void)cpu_seconds;
  printf("qmv_loops: x86-64 with GCC or Clang only\n");
  return 0;
}

#endif

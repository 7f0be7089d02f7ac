/* tests/base/test_quant_format.c — the element codecs and bit packing of src/base/quant_format.h
 * against independent references written here (float64 tables and nearest-value searches, the
 * byte layouts of quant-spec.md Part B §2.4 spelled out), plus the checked examples of the spec.
 * Not the kernels (tests/quant/ compares those with MLX). The header is internal and
 * self-contained (static inline, no library symbols), so it is included directly. */
#include <float.h>
#include <math.h>

#include "../../src/base/quant_format.h"
#include "check.h"

static uint32_t float_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

static float float_from(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

/* xorshift64*: reproducible random bits. */
static uint64_t next_random(uint64_t *state) {
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 0x2545f4914f6cdd1dull;
}

#define CHECK_SAME_FLOAT(got, want, what, code)                                                  \
  do {                                                                                           \
    float got_ = (got), want_ = (want);                                                          \
    bool same_ = isnan(want_) ? isnan(got_) : float_bits(got_) == float_bits(want_);             \
    if (!same_)                                                                                  \
      CHECK_FAIL_("%s(0x%x): %a, want %a", what, (unsigned)(code), (double)got_, (double)want_); \
  } while (0)

/* ---- decoders ----------------------------------------------------------------------------- */

static void test_fp4_decode(void) {
  static const double magnitudes[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (uint32_t code = 0; code < 16; code++) {
    double want = (code & 8) ? -magnitudes[code & 7] : magnitudes[code & 7];
    CHECK_SAME_FLOAT(tsri_qf_fp4_decode(code), (float)want, "fp4_decode", code);
  }
  CHECK(signbit(tsri_qf_fp4_decode(8))); /* -0 */
}

/* E4M3 from its definition: sign, 4 exponent bits (bias 7), 3 mantissa bits; 0x7F/0xFF NaN. */
static double e4m3_reference(uint32_t code) {
  int sign = (code >> 7) & 1, exponent = (code >> 3) & 15, mantissa = code & 7;
  if (exponent == 15 && mantissa == 7) return NAN;
  double magnitude =
      exponent == 0 ? ldexp(mantissa / 8.0, -6) : ldexp(1.0 + mantissa / 8.0, exponent - 7);
  return sign ? -magnitude : magnitude;
}

static void test_e4m3_decode(void) {
  for (uint32_t code = 0; code < 256; code++)
    CHECK_SAME_FLOAT(tsri_qf_e4m3_decode(code), (float)e4m3_reference(code), "e4m3_decode", code);
  CHECK(isnan(tsri_qf_e4m3_decode(0x7f)) && isnan(tsri_qf_e4m3_decode(0xff)));
  CHECK(tsri_qf_e4m3_decode(0x7e) == 448.0f && tsri_qf_e4m3_decode(0xfe) == -448.0f);
  CHECK(tsri_qf_e4m3_decode(0x01) == 0x1p-9f && tsri_qf_e4m3_decode(0x08) == 0x1p-6f);
  CHECK(signbit(tsri_qf_e4m3_decode(0x80)));
}

static void test_e8m0_decode(void) {
  for (uint32_t code = 0; code < 256; code++) {
    float want = code == 255 ? INFINITY : (float)ldexp(1.0, (int)code - 127);
    CHECK_SAME_FLOAT(tsri_qf_e8m0_decode(code), want, "e8m0_decode", code);
  }
  CHECK_EQ_U64(float_bits(tsri_qf_e8m0_decode(0)), 0x00400000u); /* 2^-127 */
}

/* ---- encoders ----------------------------------------------------------------------------- */

/* MLX's E4M3 encoder as a rule: |x| >= 448, Inf and NaN -> 0x7E with x's sign; otherwise the
   nearest of the codes 0..0x7E by float64 distance, ties to the even code. */
static uint32_t e4m3_encode_reference(float x) {
  uint32_t sign = signbit(x) ? 0x80u : 0u;
  double a = fabs((double)x);
  if (!(a < 448.0)) return 0x7eu | sign;
  uint32_t best = 0;
  double best_distance = INFINITY;
  for (uint32_t code = 0; code <= 0x7e; code++) {
    double distance = fabs(a - e4m3_reference(code));
    if (distance < best_distance || (distance == best_distance && !(code & 1))) {
      best = code;
      best_distance = distance;
    }
  }
  return best | sign;
}

static void test_e4m3_encode(void) {
  /* The spec's checked examples. */
  CHECK_EQ_U64(tsri_qf_e4m3_encode(0x1p-10f), 0x00);
  CHECK_EQ_U64(tsri_qf_e4m3_encode(3 * 0x1p-10f), 0x02);
  CHECK_EQ_U64(tsri_qf_e4m3_encode(1.0625f), 0x38); /* 1.0 */
  CHECK_EQ_U64(tsri_qf_e4m3_encode(464.0f), 0x7e);  /* 448 */
  CHECK_EQ_U64(tsri_qf_e4m3_encode(448.0f), 0x7e);
  CHECK_EQ_U64(tsri_qf_e4m3_encode(-448.0f), 0xfe);
  CHECK_EQ_U64(tsri_qf_e4m3_encode(1e6f), 0x7e);
  CHECK_EQ_U64(tsri_qf_e4m3_encode(INFINITY), 0x7e);
  CHECK_EQ_U64(tsri_qf_e4m3_encode(-INFINITY), 0xfe);
  CHECK_EQ_U64(tsri_qf_e4m3_encode(NAN), 0x7e);
  CHECK_EQ_U64(tsri_qf_e4m3_encode(-NAN), 0xfe);
  CHECK_EQ_U64(tsri_qf_e4m3_encode(-0.0f), 0x80);
  /* Every code's value and the midpoints around it, with their float32 neighbours. */
  for (uint32_t code = 0; code <= 0x7e; code++) {
    double v = e4m3_reference(code), next = code < 0x7e ? e4m3_reference(code + 1) : 464.0;
    float points[3] = {(float)v, (float)((v + next) / 2), 0};
    for (int p = 0; p < 2; p++) {
      points[2] = points[p];
      float candidates[3] = {points[p], nextafterf(points[p], 0.0f),
                             nextafterf(points[p], INFINITY)};
      for (int k = 0; k < 3; k++)
        for (int s = 0; s < 2; s++) {
          float x = s ? -candidates[k] : candidates[k];
          if (tsri_qf_e4m3_encode(x) != e4m3_encode_reference(x))
            CHECK_FAIL_("e4m3_encode(%a) = 0x%x, want 0x%x", (double)x, tsri_qf_e4m3_encode(x),
                        e4m3_encode_reference(x));
        }
    }
  }
  /* Random float32 bit patterns of moderate magnitude (2^-20 .. 2^10). */
  uint64_t state = 0x1234567ull;
  for (int i = 0; i < 200000; i++) {
    uint32_t bits = (uint32_t)next_random(&state);
    bits = (bits & 0x807fffffu) | ((107u + (bits >> 23) % 30u) << 23);
    float x = float_from(bits);
    if (tsri_qf_e4m3_encode(x) != e4m3_encode_reference(x))
      CHECK_FAIL_("e4m3_encode(%a) = 0x%x, want 0x%x", (double)x, tsri_qf_e4m3_encode(x),
                  e4m3_encode_reference(x));
  }
}

/* Nearest fp4 entry by float64 distance, ties to the lower code (codes 0..15 in order). */
static uint32_t fp4_reference(float x) {
  static const double table[16] = {0,    0.5,  1,  1.5,  2,  3,  4,  6,
                                   -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
  uint32_t best = 0;
  double best_distance = fabs((double)x - table[0]);
  for (uint32_t code = 1; code < 16; code++) {
    double distance = fabs((double)x - table[code]);
    if (distance < best_distance) {
      best = code;
      best_distance = distance;
    }
  }
  return best;
}

static void test_fp4_encode(void) {
  /* quant-spec §3.1's threshold table with ties going to the lower code: each threshold t maps
     to the code below it, anything above t to the next code. */
  static const struct {
    float threshold;
    uint32_t at, above;
  } thresholds[] = {{0.25f, 0, 1}, {0.75f, 1, 2}, {1.25f, 2, 3}, {1.75f, 3, 4},
                    {2.5f, 4, 5},  {3.5f, 5, 6},  {5.0f, 6, 7}};
  for (size_t i = 0; i < sizeof thresholds / sizeof thresholds[0]; i++) {
    float t = thresholds[i].threshold;
    uint32_t at = thresholds[i].at, above = thresholds[i].above;
    CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(t), at);
    CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(nextafterf(t, 0.0f)), at);
    CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(nextafterf(t, INFINITY)), above);
    /* Negative: the same magnitude code with the sign bit, except magnitude 0 which is +0. */
    CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(-t), at ? (at | 8u) : 0u);
    CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(-nextafterf(t, INFINITY)), above | 8u);
  }
  CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(0.0f), 0);
  CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(-0.0f), 0);
  CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(-0.1f), 0);
  CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(6.0f), 7);
  CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(100.0f), 7);
  CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(-100.0f), 15);
  /* Where every float32 distance is equal MLX's argmin keeps code 0. */
  CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(0x1p30f), 0);
  CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(-0x1p30f), 0);
  CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(INFINITY), 0);
  CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(-INFINITY), 0);
  CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(NAN), 0);
  for (uint32_t code = 0; code < 16; code++) /* every entry encodes to itself (-0 to +0) */
    CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(tsri_qf_fp4_decode(code)), code == 8 ? 0 : code);
  /* The threshold path against MLX's literal float32 argmin on random bit patterns of every
     magnitude (all 2^32 patterns were compared once, offline: no difference). */
  uint64_t patterns = 0x51ed270b1d8a3c4full;
  for (int i = 0; i < 1000000; i++) {
    float x = float_from((uint32_t)next_random(&patterns));
    if (tsri_qf_fp4_encode_nearest_lower(x) != tsri_qf_fp4_encode_argmin(x))
      CHECK_FAIL_("fp4 encode(%a): threshold %u, argmin %u", (double)x,
                  tsri_qf_fp4_encode_nearest_lower(x), tsri_qf_fp4_encode_argmin(x));
  }
  /* Random values in [-8, 8], where float32 distances are exact enough to agree with float64. */
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 200000; i++) {
    float x = (float)((double)(next_random(&state) >> 11) * 0x1p-53 * 16.0 - 8.0);
    CHECK_EQ_U64(tsri_qf_fp4_encode_nearest_lower(x), fp4_reference(x));
  }
}

static void test_e8m0_encode(void) {
  CHECK_EQ_U64(tsri_qf_e8m0_encode_up(0.0f), 127);
  CHECK_EQ_U64(tsri_qf_e8m0_encode_up(-0.0f), 127);
  for (int k = -149; k <= 127; k++) {
    float p = ldexpf(1.0f, k);
    CHECK_EQ_U64(tsri_qf_e8m0_encode_up(p), (uint32_t)(k + 127 + 256) % 256u);
    CHECK_EQ_U64(tsri_qf_e8m0_encode_up(nextafterf(p, INFINITY)), (uint32_t)(k + 128 + 256) % 256u);
    if (k > -148) /* just below a power of two (not itself one) rounds up to it */
      CHECK_EQ_U64(tsri_qf_e8m0_encode_up(nextafterf(p, 0.0f)), (uint32_t)(k + 127 + 256) % 256u);
    CHECK_EQ_INT(tsri_qf_mx_divisor_exponent(p), k);
    CHECK_EQ_INT(tsri_qf_mx_divisor_exponent(nextafterf(p, INFINITY)), k + 1);
  }
  CHECK_EQ_U64(tsri_qf_e8m0_encode_up(0x1p-130f), 253); /* wraps modulo 256 */
  CHECK_EQ_U64(tsri_qf_e8m0_encode_up(3 * 0x1p-149f), (uint32_t)(-147 + 127 + 256));
  CHECK_EQ_U64(tsri_qf_e8m0_encode_up(1.5f), 128);
  CHECK_EQ_U64(tsri_qf_e8m0_encode_up(0.75f), 127);
  CHECK_EQ_U64(tsri_qf_e8m0_encode_up(FLT_MAX), 255);
  CHECK_EQ_U64(tsri_qf_e8m0_encode_up(INFINITY), 255);
  CHECK_EQ_U64(tsri_qf_e8m0_encode_up(NAN), 255);
  CHECK_EQ_INT(tsri_qf_mx_divisor_exponent(0.0f), 0);
  CHECK_EQ_INT(tsri_qf_mx_divisor_exponent(0x1p-130f), -130);
}

/* ---- packing ------------------------------------------------------------------------------ */

static uint32_t byte_bits(const uint8_t *b, int index, int lo, int hi) { /* b[index][hi:lo] */
  return ((uint32_t)b[index] >> lo) & ((1u << (hi - lo + 1)) - 1u);
}

/* Element e of a row from its bytes, by quant-spec.md Part B §2.4's per-width layouts. */
static uint32_t layout_element(const uint8_t *row, int bits, int e) {
  if (bits == 2 || bits == 4 || bits == 8) {
    int per_byte = 8 / bits;
    return byte_bits(row, e / per_byte, (e % per_byte) * bits, (e % per_byte) * bits + bits - 1);
  }
  if (bits == 6) {
    const uint8_t *b = row + (e / 4) * 3;
    switch (e % 4) {
      case 0:
        return byte_bits(b, 0, 0, 5);
      case 1:
        return byte_bits(b, 0, 6, 7) | byte_bits(b, 1, 0, 3) << 2;
      case 2:
        return byte_bits(b, 1, 4, 7) | byte_bits(b, 2, 0, 1) << 4;
      default:
        return byte_bits(b, 2, 2, 7);
    }
  }
  const uint8_t *b = row + (e / 8) * bits; /* 3 and 5 bits: 8 elements per `bits` bytes */
  if (bits == 3) {
    switch (e % 8) {
      case 0:
        return byte_bits(b, 0, 0, 2);
      case 1:
        return byte_bits(b, 0, 3, 5);
      case 2:
        return byte_bits(b, 0, 6, 7) | byte_bits(b, 1, 0, 0) << 2;
      case 3:
        return byte_bits(b, 1, 1, 3);
      case 4:
        return byte_bits(b, 1, 4, 6);
      case 5:
        return byte_bits(b, 1, 7, 7) | byte_bits(b, 2, 0, 1) << 1;
      case 6:
        return byte_bits(b, 2, 2, 4);
      default:
        return byte_bits(b, 2, 5, 7);
    }
  }
  switch (e % 8) { /* 5 bits */
    case 0:
      return byte_bits(b, 0, 0, 4);
    case 1:
      return byte_bits(b, 0, 5, 7) | byte_bits(b, 1, 0, 1) << 3;
    case 2:
      return byte_bits(b, 1, 2, 6);
    case 3:
      return byte_bits(b, 1, 7, 7) | byte_bits(b, 2, 0, 3) << 1;
    case 4:
      return byte_bits(b, 2, 4, 7) | byte_bits(b, 3, 0, 0) << 4;
    case 5:
      return byte_bits(b, 3, 1, 5);
    case 6:
      return byte_bits(b, 3, 6, 7) | byte_bits(b, 4, 0, 2) << 2;
    default:
      return byte_bits(b, 4, 3, 7);
  }
}

static void test_packing(void) {
  static const int widths[] = {2, 3, 4, 5, 6, 8};
  enum { ELEMENTS = 128 }; /* a multiple of 32 elements: whole words for every width */
  uint64_t state = 42;
  for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
    int bits = widths[w];
    int64_t words = ELEMENTS * bits / 32;
    for (int trial = 0; trial < 50; trial++) {
      uint32_t codes[ELEMENTS], row[ELEMENTS / 4 + 1];
      memset(row, 0, sizeof row);
      row[words] = 0xdeadbeefu; /* a guard word: put_code never writes past the row */
      for (int i = 0; i < ELEMENTS; i++) {
        codes[i] =
            trial == 0 ? (1u << bits) - 1u : (uint32_t)next_random(&state) & ((1u << bits) - 1u);
        tsri_qf_put_code(row, i, bits, codes[i]);
      }
      CHECK_EQ_U64(row[words], 0xdeadbeefu);
      uint8_t bytes[sizeof row];
      memcpy(bytes, row, sizeof row); /* the little-endian byte stream */
      for (int i = 0; i < ELEMENTS; i++) {
        CHECK_EQ_U64(tsri_qf_get_code(row, i, bits), codes[i]);
        if (layout_element(bytes, bits, i) != codes[i])
          CHECK_FAIL_("bits %d element %d: layout gives %u, packed %u", bits, i,
                      layout_element(bytes, bits, i), codes[i]);
      }
    }
  }
  /* One explicit layout: 3 bits, codes (i + 1) & 7: the first 8 fill 3 bytes as
     0xD1 0x58 0x1F (e2 = b0[7:6] | b1[0] << 2 = 3). */
  uint32_t row[3] = {0, 0, 0};
  for (int i = 0; i < 32; i++)
    tsri_qf_put_code(row, i, 3, (uint32_t)(i + 1) & 7u);
  CHECK_EQ_U64(row[0] & 0xffffffu, 0x1f58d1u);
  CHECK_EQ_U64(tsri_qf_get_code(row, 10, 3), 3); /* bits 30..32: straddles words 0 and 1 */
  CHECK_EQ_U64(tsri_qf_get_code(row, 21, 3), 6); /* bits 63..65: straddles words 1 and 2 */
}

static void test_modes(void) {
  CHECK_EQ_INT(tsri_qf_default_group_size(TSRI_QF_AFFINE), 64);
  CHECK_EQ_INT(tsri_qf_default_bits(TSRI_QF_AFFINE), 4);
  CHECK_EQ_INT(tsri_qf_default_group_size(TSRI_QF_MXFP4), 32);
  CHECK_EQ_INT(tsri_qf_default_bits(TSRI_QF_MXFP4), 4);
  CHECK_EQ_INT(tsri_qf_default_group_size(TSRI_QF_MXFP8), 32);
  CHECK_EQ_INT(tsri_qf_default_bits(TSRI_QF_MXFP8), 8);
  CHECK_EQ_INT(tsri_qf_default_group_size(TSRI_QF_NVFP4), 16);
  CHECK_EQ_INT(tsri_qf_default_bits(TSRI_QF_NVFP4), 4);
  CHECK_EQ_INT(tsri_qf_default_group_size(7), 0);
  for (int mode = 0; mode < 5; mode++)
    for (int gs = 0; gs <= 256; gs++)
      for (int bits = 0; bits <= 9; bits++) {
        bool want = false;
        if (mode == TSRI_QF_AFFINE)
          want = (gs == 32 || gs == 64 || gs == 128) &&
                 (bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8);
        else if (mode == TSRI_QF_MXFP4)
          want = gs == 32 && bits == 4;
        else if (mode == TSRI_QF_MXFP8)
          want = gs == 32 && bits == 8;
        else if (mode == TSRI_QF_NVFP4)
          want = gs == 16 && bits == 4;
        if (tsri_qf_valid(mode, gs, bits) != want)
          CHECK_FAIL_("valid(mode %d, gs %d, bits %d) != %d", mode, gs, bits, want);
      }
}

int main(void) {
  test_fp4_decode();
  test_e4m3_decode();
  test_e8m0_decode();
  test_e4m3_encode();
  test_fp4_encode();
  test_e8m0_encode();
  test_packing();
  test_modes();
  return 0;
}

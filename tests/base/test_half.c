/* tests/base/test_half.c — the float16/bfloat16 conversions, exactly, against outside oracles:
 * every 16-bit pattern, every rounding boundary and 10^7 random float32 patterns per format.
 * The oracles are a float64 nearest-value search over each format's decoded values and, for
 * float16, gcc's own _Float16 conversion; not the array astype paths (the ops tests do those). */
#include <float.h>
#include <math.h>

#include "check.h"

static uint32_t bits_of(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

static float float_of(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

/* ---- a 16-bit float format, decoded independently of the library, in float64 -------------- */

enum { MAX_FINITE_PATTERNS = 0x7f80 };

typedef struct {
  const char *name;
  int mantissa_bits;   /* 10 for float16, 7 for bfloat16 */
  int exponent_bias;   /* 15, 127 */
  uint16_t max_finite; /* the largest finite positive pattern: 0x7bff, 0x7f7f */
  double overflow;     /* |x| at or above this rounds to infinity (max + half its ulp) */
  double values[MAX_FINITE_PATTERNS]; /* values[b] for every pattern b in [0, max_finite] */
  uint16_t (*narrow)(float);          /* the library's conversions under test */
  float (*widen)(uint16_t);
} format16;

static format16 f16_format = {"float16", 10, 15, 0x7bff, 0, {0}, tsr_f32_to_f16, tsr_f16_to_f32};
static format16 bf16_format = {"bfloat16",     7, 127, 0x7f7f, 0, {0}, tsr_f32_to_bf16,
                               tsr_bf16_to_f32};

static uint16_t inf_pattern(const format16 *f) {
  return (uint16_t)(f->max_finite + 1u);
}
static uint16_t quiet_bit(const format16 *f) {
  return (uint16_t)(1u << (f->mantissa_bits - 1));
}

static bool is_nan_pattern(const format16 *f, uint16_t b) {
  return (b & 0x7fffu) > inf_pattern(f);
}

/* The value of a positive finite pattern: subnormal m * 2^(1-bias-mb), normal (2^mb + m) *
 * 2^(e-bias-mb). */
static double decode(const format16 *f, uint16_t b) {
  int exponent = b >> f->mantissa_bits;
  int mantissa = b & ((1 << f->mantissa_bits) - 1);
  if (exponent == 0) return ldexp(mantissa, 1 - f->exponent_bias - f->mantissa_bits);
  return ldexp((1 << f->mantissa_bits) + mantissa, exponent - f->exponent_bias - f->mantissa_bits);
}

static void build_format(format16 *f) {
  for (uint32_t b = 0; b <= f->max_finite; b++)
    f->values[b] = decode(f, (uint16_t)b);
  double top = f->values[f->max_finite], below_top = f->values[f->max_finite - 1];
  f->overflow = top + (top - below_top) / 2;
}

/* The nearest pattern to a non-NaN x, ties to the even pattern (the one with mantissa bit 0). The
 * differences are exact in float64: both operands are float32 values of nearby magnitude. */
static uint16_t reference_round(const format16 *f, float x) {
  uint16_t sign = signbit(x) ? 0x8000u : 0u;
  double a = fabs((double)x);
  if (a >= f->overflow) return (uint16_t)(sign | inf_pattern(f));
  uint32_t lo = 0, hi = f->max_finite; /* the largest i with values[i] <= a */
  while (lo < hi) {
    uint32_t mid = (lo + hi + 1) / 2;
    if (f->values[mid] <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  uint32_t nearest = lo;
  if (f->values[lo] != a && lo < f->max_finite) {
    double below = a - f->values[lo], above = f->values[lo + 1] - a;
    if (above < below || (above == below && (lo & 1u))) nearest = lo + 1;
  }
  return (uint16_t)(sign | nearest);
}

#ifdef __FLT16_MANT_DIG__
/* gcc's conversion: round to nearest even in the default rounding mode. */
static uint16_t gcc_f32_to_f16(float x) {
  _Float16 h = (_Float16)x;
  uint16_t b;
  memcpy(&b, &h, sizeof b);
  return b;
}
#endif

/* ---- the checks ------------------------------------------------------------------------------ */

static uint64_t narrowings_checked;

static void check_nan_narrowing(const format16 *f, float x, uint16_t got) {
  if (!is_nan_pattern(f, got) || !(got & quiet_bit(f)) || (got >> 15) != (bits_of(x) >> 31))
    CHECK_FAIL_("%s narrowing of NaN 0x%08" PRIx32 " gave 0x%04x: want a quiet NaN, sign kept",
                f->name, bits_of(x), got);
}

static void check_narrowing(const format16 *f, float x) {
  uint16_t got = f->narrow(x);
  narrowings_checked++;
  if (isnan(x)) {
    check_nan_narrowing(f, x, got);
    return;
  }
  uint16_t want = reference_round(f, x);
#ifdef __FLT16_MANT_DIG__
  if (f == &f16_format && gcc_f32_to_f16(x) != want)
    CHECK_FAIL_("the oracles disagree on %a (0x%08" PRIx32 "): _Float16 0x%04x, float64 0x%04x",
                (double)x, bits_of(x), gcc_f32_to_f16(x), want);
#endif
  if (got != want)
    CHECK_FAIL_("%s narrowing of %a (0x%08" PRIx32 ") gave 0x%04x, want 0x%04x", f->name, (double)x,
                bits_of(x), got, want);
}

static void check_narrowing_around(const format16 *f, float x) {
  check_narrowing(f, x);
  check_narrowing(f, -x);
  check_narrowing(f, nextafterf(x, 0.0f));
  check_narrowing(f, -nextafterf(x, 0.0f));
  check_narrowing(f, nextafterf(x, INFINITY));
  check_narrowing(f, -nextafterf(x, INFINITY));
}

/* Every pattern widens to its decoded value and narrows back to itself (a NaN to a quiet NaN
 * with its sign: exactly itself when it was quiet already). */
static void check_every_pattern_round_trips(const format16 *f) {
  for (uint32_t b = 0; b <= 0xffffu; b++) {
    uint16_t pattern = (uint16_t)b, back;
    float wide = f->widen(pattern);
    bool negative = pattern & 0x8000u;
    if (is_nan_pattern(f, pattern)) {
      CHECK(isnan(wide));
      CHECK_EQ_INT(signbit(wide) != 0, negative);
      back = f->narrow(wide);
      check_nan_narrowing(f, wide, back);
      if (pattern & quiet_bit(f)) CHECK_EQ_INT(back, pattern);
      continue;
    }
    uint16_t magnitude = pattern & 0x7fffu;
    double want = magnitude == inf_pattern(f) ? (double)INFINITY : f->values[magnitude];
    if (negative) want = -want;
    if ((double)wide != want || !signbit(wide) != !signbit(want))
      CHECK_FAIL_("%s widening of 0x%04x gave %a, want %a", f->name, pattern, (double)wide, want);
    back = f->narrow(wide);
    if (back != pattern)
      CHECK_FAIL_("%s 0x%04x widened to %a and narrowed back to 0x%04x", f->name, pattern,
                  (double)wide, back);
  }
}

/* Every value, every midpoint between neighbours (where rounding decides) and the float32
 * values on either side of each. Midpoints are exact in float32: 11 or 8 significant bits. */
static void check_every_boundary(const format16 *f) {
  for (uint32_t b = 0; b < f->max_finite; b++) {
    check_narrowing_around(f, (float)f->values[b]);
    check_narrowing_around(f, (float)((f->values[b] + f->values[b + 1]) / 2));
  }
  check_narrowing_around(f, (float)f->values[f->max_finite]);
  check_narrowing_around(f, (float)f->overflow); /* the midpoint to infinity: ties away up */
  check_narrowing_around(f, FLT_MAX);
  check_narrowing_around(f, INFINITY);
  static const uint32_t specials[] = {
      0x00000000u, 0x00000001u, 0x00000002u, 0x00400000u, 0x007fffffu, /* zero, subnormals */
      0x00800000u, 0x7f800001u, 0x7f802000u, 0x7fc00000u, 0x7fffffffu, /* NaNs, some signaling */
      0x7fa00000u, 0x7f800100u,
  };
  for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
    check_narrowing(f, float_of(specials[i]));
    check_narrowing(f, float_of(specials[i] | 0x80000000u));
  }
}

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void check_random_patterns(const format16 *f, uint64_t seed, int count) {
  uint64_t state = seed;
  for (int i = 0; i < count; i++) {
    uint64_t r = splitmix64(&state);
    check_narrowing(f, float_of((uint32_t)r));
    check_narrowing(f, float_of((uint32_t)(r >> 32)));
  }
}

/* A few answers worked out by hand, so the oracles themselves are anchored. */
static void check_known_answers(void) {
  CHECK_EQ_INT(tsr_f32_to_f16(1.0f), 0x3c00);
  CHECK_EQ_INT(tsr_f32_to_f16(-2.0f), 0xc000);
  CHECK_EQ_INT(tsr_f32_to_f16(-0.0f), 0x8000);
  CHECK_EQ_INT(tsr_f32_to_f16(65504.0f), 0x7bff);
  CHECK_EQ_INT(tsr_f32_to_f16(65519.99f), 0x7bff);
  CHECK_EQ_INT(tsr_f32_to_f16(65520.0f), 0x7c00);
  CHECK_EQ_INT(tsr_f32_to_f16(ldexpf(1.0f, -24)), 0x0001);
  CHECK_EQ_INT(tsr_f32_to_f16(ldexpf(1.0f, -25)), 0x0000); /* a tie: to even, zero */
  CHECK_EQ_INT(tsr_f32_to_f16(nextafterf(ldexpf(1.0f, -25), 1.0f)), 0x0001);
  CHECK_EQ_INT(tsr_f32_to_f16(-ldexpf(1.0f, -25)), 0x8000);
  CHECK_EQ_INT(tsr_f32_to_f16(ldexpf(3.0f, -25)), 0x0002); /* a tie between 1 and 2: to 2 */
  CHECK_EQ_INT(tsr_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3c00);
  CHECK_EQ_INT(tsr_f32_to_f16(1.0f + ldexpf(3.0f, -11)), 0x3c02);
  CHECK_EQ_INT(tsr_f32_to_bf16(1.0f), 0x3f80);
  CHECK_EQ_INT(tsr_f32_to_bf16(float_of(0x3f808000u)), 0x3f80); /* tie, even below */
  CHECK_EQ_INT(tsr_f32_to_bf16(float_of(0x3f818000u)), 0x3f82); /* tie, even above */
  CHECK_EQ_INT(tsr_f32_to_bf16(float_of(0x7f7f7fffu)), 0x7f7f);
  CHECK_EQ_INT(tsr_f32_to_bf16(float_of(0x7f7f8000u)), 0x7f80); /* the midpoint to infinity */
  CHECK_EQ_INT(tsr_f32_to_bf16(-FLT_MAX), 0xff80);
  CHECK_EQ_INT(tsr_f32_to_bf16(float_of(0x00000001u)), 0x0000);
  CHECK_EQ_INT(tsr_f32_to_bf16(float_of(0x00008001u)), 0x0001);
}

int main(void) {
  build_format(&f16_format);
  build_format(&bf16_format);
  CHECK(f16_format.values[f16_format.max_finite] == 65504.0);
  CHECK(f16_format.overflow == 65520.0);
  check_known_answers();
  const format16 *formats[2] = {&f16_format, &bf16_format};
  const uint64_t seed = 0x7e55e7a5eedull;
  for (int i = 0; i < 2; i++) {
    check_every_pattern_round_trips(formats[i]);
    check_every_boundary(formats[i]);
    check_random_patterns(formats[i], seed + (uint64_t)i, 5000000);
  }
#ifdef __FLT16_MANT_DIG__
  const char *oracles = "float64 reference and gcc _Float16 (float16)";
#else
  const char *oracles = "float64 reference (no _Float16 in this compiler)";
#endif
  printf("test_half: ok (%" PRIu64 " narrowings checked against the %s; seed 0x%" PRIx64 ")\n",
         narrowings_checked, oracles, seed);
  return 0;
}

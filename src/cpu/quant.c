/* cpu/quant.c — CPU kernels of quantize (one blob: w_q, scales, biases; its parts are views that
 * core resolves, core/views.c) and dequantize: the scalar reference of docs/quant-rules.md, bit for
 * bit with mlx-cpu 0.32.4 on finite input, group by group over rows read through any strides. The
 * quantized matmuls are cpu/qmm.c's; the element codecs are base/quant_format.h's.
 *
 * Non-finite input, where MLX is undefined (tessera's rule, tested by tests/quant/):
 *   - NaN never spreads beyond its own element: a group's min/max (affine) and amax (fp modes)
 *     skip NaN (an all-NaN group has the statistics of an all-zero one), and a NaN element gets
 *     the code that 0.0 gets under its group's scale (and bias).
 *   - +-Inf saturates: in the group's min/max/amax it counts as the largest finite value of its
 *     sign in w's dtype; an affine Inf element is encoded as that value too (so it gets the
 *     group's extreme code), an fp Inf element gets the largest code of its sign (fp4 +-6,
 *     codes 7/15; fp8 +-448, codes 0x7E/0xFE).
 *   - An affine group wider than float32 (max - min overflows: +Inf and -Inf together, or finite
 *     values of both signs near +-FLT_MAX) takes MLX's steps in double, so its scale and bias
 *     are finite and no element becomes NaN (quantize_affine_wide).
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "base/quant_format.h"
#include "base/status.h"
#include "cpu/context.h"
#include "cpu/kernels.h"
#include "cpu/parallel.h"
#include "cpu/qmm_fast.h"
#include "cpu/rows.h"
#include "ops/quant.h"

/* Elements per parallel chunk of rows (quantize and dequantize are about 10-50 ns an element). */
#define ROW_GRAIN_ELEMENTS 16384

/* ---- float32 arithmetic rounded to a 16-bit dtype --------------------------------------------
   A single float32 +, * or / of two float16 or bfloat16 values rounded once more to that dtype
   is the correctly rounded result (24 >= 2p + 2 bits), so this is MLX's arithmetic in T. */

static float round_to(tsr_dtype dtype, float x) {
  switch (dtype) {
    case TSR_FLOAT16:
      return tsri_f16_to_f32(tsri_f32_to_f16(x));
    case TSR_BFLOAT16:
      return tsri_bf16_to_f32(tsri_f32_to_bf16(x));
    default:
      return x;
  }
}

static float max_finite(tsr_dtype dtype) {
  switch (dtype) {
    case TSR_FLOAT16:
      return 65504.0f;
    case TSR_BFLOAT16:
      return tsri_bf16_to_f32(0x7f7fu);
    default:
      return tsri_f32_from_bits(0x7f7fffffu);
  }
}

/* tessera's Inf rule for statistics and affine elements: +-Inf -> +-max_finite. */
static float saturate_inf(float x, float limit) {
  return x > limit ? limit : x < -limit ? -limit : x;
}

/* ---- one group ---------------------------------------------------------------------------- */

typedef struct {
  int mode, bits;
  tsr_dtype dtype;   /* w's */
  float limit;       /* max_finite(dtype) */
  float scale_enc;   /* nvfp4: 2688 / global_scale, else 1 */
  bool scale_by_enc; /* nvfp4 with a global scale */
} group_format;

/* The codes of the group's values for a scale and bias, as Part B §2.1 step 5 (a NaN element as
   0.0, Inf saturated), in float32 or, for a group wider than float32's range, in double. */
static void affine_codes(const group_format *f, const float *w, int n, double scale, double bias,
                         bool wide, uint32_t *codes) {
  const float n_bins = (float)((1 << f->bits) - 1);
  for (int i = 0; i < n; i++) {
    float v = isnan(w[i]) ? 0.0f : saturate_inf(w[i], f->limit);
    float q =
        wide ? (float)rint(((double)v - bias) / scale) : rintf((v - (float)bias) / (float)scale);
    q = q > 0.0f ? q : 0.0f; /* a NaN quotient, if one could arise, to 0 too */
    q = q < n_bins ? q : n_bins;
    codes[i] = (uint32_t)q;
  }
}

/* A group whose float32 range w_max - w_min overflows (finite values of both signs near the
   largest float32, or +Inf and -Inf saturated to them): MLX's float32 steps give an infinite
   scale, a zero bias and codes 0, so the whole group dequantizes to NaN (Inf * 0). tessera's
   rule: the same steps in double, then the scale and bias rounded as usual. The span is at most
   2 * FLT_MAX and the edge holds at least half of it, so |q0| >= 2 and |scale| = |edge| / |q0|
   is finite in float32 and bfloat16 (the only dtypes whose range can overflow float32). */
static void quantize_affine_wide(const group_format *f, const float *w, int n, float w_min,
                                 float w_max, uint32_t *codes, float *scale_out, float *bias_out) {
  const double n_bins = (double)((1 << f->bits) - 1);
  bool mask = fabs((double)w_min) > fabs((double)w_max);
  double scale = ((double)w_max - (double)w_min) / n_bins;
  scale = mask ? scale : -scale;
  double edge = mask ? w_min : w_max;
  double q0 = rint(edge / scale), bias = 0.0;
  if (q0 != 0.0) {
    scale = edge / q0;
    bias = edge;
  }
  affine_codes(f, w, n, scale, bias, true, codes);
  *scale_out = (float)scale;
  *bias_out = (float)bias;
}

/* Affine, quant-spec.md Part B §2.1 in float32: the codes, and the float32 scale and bias (the
   caller rounds those to w's dtype). A group wider than float32 goes to quantize_affine_wide. */
static void quantize_affine_group(const group_format *f, const float *w, int n, uint32_t *codes,
                                  float *scale_out, float *bias_out) {
  const float n_bins = (float)((1 << f->bits) - 1), eps = 1e-7f;
  float w_min = INFINITY, w_max = -INFINITY;
  for (int i = 0; i < n; i++) {
    if (isnan(w[i])) continue;
    float v = saturate_inf(w[i], f->limit);
    w_max = v > w_max ? v : w_max;
    w_min = v < w_min ? v : w_min;
  }
  if (w_min > w_max) w_min = w_max = 0.0f; /* all NaN: as an all-zero group */
  if (isinf(w_max - w_min)) {
    quantize_affine_wide(f, w, n, w_min, w_max, codes, scale_out, bias_out);
    return;
  }
  bool mask = fabsf(w_min) > fabsf(w_max);
  float scale = (w_max - w_min) / n_bins;
  scale = scale > eps ? scale : eps;
  scale = mask ? scale : -scale;
  float edge = mask ? w_min : w_max;
  float q0 = rintf(edge / scale);
  float bias = 0.0f;
  if (q0 != 0.0f) {
    scale = edge / q0;
    bias = edge;
  }
  affine_codes(f, w, n, scale, bias, false, codes);
  *scale_out = scale;
  *bias_out = bias;
}

/* max |w| over the group under the NaN/Inf rule, in w's dtype (exact). */
static float group_amax(const group_format *f, const float *w, int n) {
  float amax = 0.0f;
  for (int i = 0; i < n; i++) {
    float a = fabsf(saturate_inf(w[i], f->limit));
    amax = a > amax ? a : amax; /* a NaN compares false and is skipped */
  }
  return amax;
}

/* The largest code of x's sign: the Inf rule for fp elements. */
static uint32_t saturated_code(int bits, float x) {
  bool negative = signbit(x);
  return bits == 4 ? (negative ? 15u : 7u) : (negative ? 0xfeu : 0x7eu);
}

/* mxfp4/mxfp8: the E8M0 code rounded up from d = T(amax / M); elements from T(w / 2^e). */
static uint32_t quantize_mx_group(const group_format *f, const float *w, int n, uint32_t *codes) {
  float element_max = f->mode == TSRI_QF_MXFP4 ? TSRI_QF_FP4_MAX : TSRI_QF_FP8_MAX;
  float d = round_to(f->dtype, group_amax(f, w, n) / element_max);
  uint32_t scale_code = tsri_qf_e8m0_encode_up(d);
  /* The divisor is 2^(ceil log2 d) before the code wraps modulo 256 (as MLX: d = 2^-130 stores
     code 253 but divides by 2^-130). */
  int exponent = tsri_qf_mx_divisor_exponent(d);
  float divisor = ldexpf(1.0f, exponent);
  for (int i = 0; i < n; i++) {
    if (isnan(w[i])) {
      codes[i] = 0u; /* the code of 0.0 */
    } else if (isinf(w[i])) {
      codes[i] = saturated_code(f->bits, w[i]);
    } else {
      float v = round_to(f->dtype, w[i] / divisor);
      codes[i] = f->bits == 4 ? tsri_qf_fp4_encode_nearest_lower(v) : tsri_qf_e4m3_encode(v);
    }
  }
  return scale_code;
}

/* nvfp4: scale E4M3(float32(T(amax / 6)) * scale_enc); element code the nearest-lower fp4 of
   float32(T(w / T(dec(scale)))) * scale_enc, all distances in float32. */
static uint32_t quantize_nvfp4_group(const group_format *f, const float *w, int n,
                                     uint32_t *codes) {
  float scaled_amax = round_to(f->dtype, group_amax(f, w, n) / TSRI_QF_FP4_MAX);
  if (f->scale_by_enc) scaled_amax = scaled_amax * f->scale_enc;
  uint32_t scale_code = tsri_qf_e4m3_encode(scaled_amax);
  float divisor = round_to(f->dtype, tsri_qf_e4m3_decode(scale_code));
  for (int i = 0; i < n; i++) {
    if (isnan(w[i])) {
      codes[i] = 0u;
    } else if (isinf(w[i])) {
      codes[i] = saturated_code(4, w[i]);
    } else {
      float v = round_to(f->dtype, w[i] / divisor);
      if (f->scale_by_enc) v = v * f->scale_enc;
      codes[i] = tsri_qf_fp4_encode_nearest_lower(v);
    }
  }
  return scale_code;
}

/* ---- quantize: one node, one blob ---------------------------------------------------------- */

/* Element offset of row `row` (over every axis but the last) in a strided view. */
static int64_t row_offset(const tsri_view *a, int64_t row) {
  int64_t offset = a->offset;
  for (int d = a->ndim - 2; d >= 0; d--) {
    offset += (row % a->shape[d]) * a->strides[d];
    row /= a->shape[d];
  }
  return offset;
}

/* One quantize: what every chunk of rows reads, and its one failure flag. */
typedef struct {
  const tsri_quantize_params *q;
  const tsri_view *w;
  unsigned char *blob;
  group_format format;
  atomic_bool out_of_memory;
} quantize_job;

/* A chunk's working rows, one allocation. */
typedef struct {
  float *values;      /* K: the row in float32 (exact for every float dtype) */
  float *scales;      /* groups: float32, before rounding to w's dtype */
  float *biases;      /* groups */
  uint32_t *codes;    /* group_size */
  uint8_t *fp_scales; /* groups */
} quantize_scratch;

static void *quantize_scratch_alloc(const tsri_quantize_params *q, quantize_scratch *s) {
  int64_t groups = q->k / q->group_size;
  size_t floats = (size_t)(q->k + 2 * groups), words = (size_t)q->group_size;
  unsigned char *block =
      malloc(floats * sizeof(float) + words * sizeof(uint32_t) + (size_t)groups + 1);
  if (!block) return NULL;
  s->values = (float *)(void *)block;
  s->scales = s->values + q->k;
  s->biases = s->scales + groups;
  s->codes = (uint32_t *)(void *)(s->biases + groups);
  s->fp_scales = (uint8_t *)(s->codes + q->group_size);
  return block;
}

static void quantize_row(const quantize_job *job, quantize_scratch *s, uint32_t *wq_row) {
  const tsri_quantize_params *q = job->q;
  int64_t groups = q->k / q->group_size, words = q->k * q->bits / 32;
  memset(wq_row, 0, (size_t)words * sizeof *wq_row);
  for (int64_t g = 0; g < groups; g++) {
    const float *w = s->values + g * q->group_size;
    if (q->mode == TSRI_QF_AFFINE)
      quantize_affine_group(&job->format, w, q->group_size, s->codes, &s->scales[g], &s->biases[g]);
    else if (q->mode == TSRI_QF_NVFP4)
      s->fp_scales[g] = (uint8_t)quantize_nvfp4_group(&job->format, w, q->group_size, s->codes);
    else
      s->fp_scales[g] = (uint8_t)quantize_mx_group(&job->format, w, q->group_size, s->codes);
    for (int i = 0; i < q->group_size; i++)
      tsri_qf_put_code(wq_row, g * q->group_size + i, q->bits, s->codes[i]);
  }
}

/* Rows [begin, end): each read through w's strides, quantized into its place in the blob. */
static void quantize_rows(int64_t begin, int64_t end, void *ctx) {
  quantize_job *job = ctx;
  const tsri_quantize_params *q = job->q;
  const tsri_view *w = job->w;
  quantize_scratch s;
  void *block = quantize_scratch_alloc(q, &s);
  if (!block) {
    atomic_store(&job->out_of_memory, true);
    return;
  }
  int64_t groups = q->k / q->group_size, words = q->k * q->bits / 32;
  size_t element = tsr_dtype_size(w->dtype);
  int64_t scale_bytes = q->mode == TSRI_QF_AFFINE ? (int64_t)element : 1;
  for (int64_t r = begin; r < end; r++) {
    const unsigned char *src = (const unsigned char *)w->data + row_offset(w, r) * (int64_t)element;
    tsri_cpu_load_f32(src, w->dtype, w->strides[w->ndim - 1], q->k, s.values);
    quantize_row(job, &s, (uint32_t *)(void *)(job->blob + r * words * 4));
    unsigned char *scales_row = job->blob + q->scales_offset + r * groups * scale_bytes;
    if (q->mode == TSRI_QF_AFFINE) {
      tsri_cpu_store_f32(scales_row, w->dtype, groups, s.scales);
      tsri_cpu_store_f32(job->blob + q->biases_offset + r * groups * scale_bytes, w->dtype, groups,
                         s.biases);
    } else {
      memcpy(scales_row, s.fp_scales, (size_t)groups);
    }
  }
  free(block);
}

/* Rows per parallel chunk: enough elements that a chunk outweighs its scheduling. */
static int64_t rows_grain(int64_t k) {
  return k >= ROW_GRAIN_ELEMENTS ? 1 : ROW_GRAIN_ELEMENTS / (k > 0 ? k : 1);
}

static tsr_status cpu_quantize(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_cpu_context *cpu = NULL;
  tsr_status status = tsri_cpu_context_get(op->device, &cpu);
  if (status != TSR_OK) return status;
  const tsri_quantize_params *q = TSRI_PARAMS(op, tsri_quantize_params);
  const tsri_view *w = &op->in[0];
  quantize_job job = {.q = q,
                      .w = w,
                      .blob = op->out.data,
                      .format = {.mode = q->mode,
                                 .bits = q->bits,
                                 .dtype = w->dtype,
                                 .limit = max_finite(w->dtype),
                                 .scale_enc = 1.0f,
                                 .scale_by_enc = q->has_global_scale}};
  atomic_init(&job.out_of_memory, false);
  if (q->has_global_scale) job.format.scale_enc = TSRI_QF_NVFP4_SCALE_NUMERATOR / q->global_scale;
  tsri_parallel_for(cpu->pool, q->rows, rows_grain(q->k), quantize_rows, &job);
  if (atomic_load(&job.out_of_memory))
    return tsri_error(TSR_ERR_NOMEM, "out of host memory for quantize rows of %lld",
                      (long long)q->k);
  return TSR_OK;
}

/* ---- dequantize --------------------------------------------------------------------------- */

/* One dequantize: what every chunk of rows reads, and its one failure flag. */
typedef struct {
  const tsri_dequantize_params *p;
  const tsri_view *w_q, *scales, *biases, *out;
  tsr_device device;           /* the op's */
  const tsri_cpu_context *cpu; /* the device's: its pool and instruction set */
  tsr_dtype arithmetic_dtype;  /* affine: the scales' dtype; fp modes: the output's */
  int64_t k, groups, words;
  bool simd; /* rows go through tsri_qmm_fast_dequantize_row (see simd_applies) */
  atomic_bool out_of_memory;
} dequantize_job;

typedef struct {
  uint32_t *packed;       /* words: a copy of a w_q row that is not contiguous */
  float *scales, *biases; /* groups */
  float *values;          /* k: exact in the output dtype (nvfp4 with g: rounded on store) */
} dequantize_scratch;

/* The group's scale (and bias) as the arithmetic of docs/quant-rules.md uses it. */
static float group_scale(const dequantize_job *job, const dequantize_scratch *s, int64_t g) {
  const tsri_dequantize_params *p = job->p;
  uint32_t scale_code = (uint32_t)s->scales[g];
  switch (p->mode) {
    case TSRI_QF_AFFINE:
      return s->scales[g];
    case TSRI_QF_MXFP4:
    case TSRI_QF_MXFP8:
      return round_to(job->arithmetic_dtype, tsri_qf_e8m0_decode(scale_code));
    default:
      if (p->has_global_scale) /* float32(dec(scale) * float32(g / 2688)) */
        return tsri_qf_e4m3_decode(scale_code) * (p->global_scale / TSRI_QF_NVFP4_SCALE_NUMERATOR);
      return round_to(job->arithmetic_dtype, tsri_qf_e4m3_decode(scale_code));
  }
}

static void dequantize_row(const dequantize_job *job, dequantize_scratch *s, const uint32_t *row) {
  const tsri_dequantize_params *p = job->p;
  const int gs = p->group_size, bits = p->bits;
  const tsr_dtype t = job->arithmetic_dtype;
  for (int64_t g = 0; g < job->groups; g++) {
    float scale = group_scale(job, s, g), bias = s->biases[g];
    for (int64_t i = g * gs; i < (g + 1) * gs; i++) {
      uint32_t code = tsri_qf_get_code(row, i, bits);
      float v;
      if (p->mode == TSRI_QF_AFFINE) {
        float product = round_to(t, scale * (float)code); /* T(s * q), then T(. + b) */
        v = round_to(t, product + bias);
      } else {
        float element = bits == 8 ? tsri_qf_e4m3_decode(code) : tsri_qf_fp4_decode(code);
        v = element * scale; /* in the output dtype; nvfp4 with g: in float32 */
        if (!p->has_global_scale) v = round_to(t, v);
      }
      s->values[i] = v;
    }
  }
}

static const void *element_at(const tsri_view *a, int64_t offset) {
  return (const unsigned char *)a->data + offset * (int64_t)tsr_dtype_size(a->dtype);
}

/* Whether the SIMD row decoder of the fast matmul gives exactly this dequantize's values: it
   forms cpu/qmm.h's float32 weights, which are this op's for affine (T-exact values, rounded to
   the output dtype on store as here) and for the fp modes with a float32 output and no global
   scale (value * scale in float32); and it reads rows with unit stride. */
static bool simd_applies(const dequantize_job *job) {
  const tsri_dequantize_params *p = job->p;
  bool unit = job->w_q->strides[job->w_q->ndim - 1] == 1 &&
              job->scales->strides[job->scales->ndim - 1] == 1 &&
              (!job->biases || job->biases->strides[job->biases->ndim - 1] == 1);
  bool same_values =
      p->mode == TSRI_QF_AFFINE || (job->out->dtype == TSR_FLOAT32 && !p->has_global_scale);
  return unit && same_values && job->k % p->group_size == 0;
}

/* Row r of the job as the fast matmul's row decoder sees it (one row, its own pointers). */
static void simd_dequantize_row(const dequantize_job *job, int64_t r, float *values) {
  const tsri_dequantize_params *p = job->p;
  tsri_qmm_problem row = {
      .mode = p->mode,
      .group_size = p->group_size,
      .bits = p->bits,
      .transpose = true,
      .m = 1,
      .n = 1,
      .k = job->k,
      .w = element_at(job->w_q, row_offset(job->w_q, r)),
      .w_row_words = job->words,
      .scales = element_at(job->scales, row_offset(job->scales, r)),
      .biases = job->biases ? element_at(job->biases, row_offset(job->biases, r)) : NULL,
      .groups = job->groups,
      .scale_row_stride = job->groups,
      .scale_dtype = job->scales->dtype,
      .round_weights = true,
      .device = job->device,
      .cpu = job->cpu};
  tsri_qmm_fast_dequantize_row(&row, 0, values);
}

/* Rows [begin, end): w_q, scales and biases read through their strides, out written packed. */
static void dequantize_rows(int64_t begin, int64_t end, void *ctx) {
  dequantize_job *job = ctx;
  dequantize_scratch s;
  size_t bytes = (size_t)(job->words + 1) * sizeof(uint32_t) +
                 (size_t)(2 * job->groups + job->k + 1) * sizeof(float);
  unsigned char *block = malloc(bytes);
  if (!block) {
    atomic_store(&job->out_of_memory, true);
    return;
  }
  memset(block, 0, bytes); /* biases stay 0 for the fp modes */
  s.packed = (uint32_t *)(void *)block;
  s.scales = (float *)(void *)(s.packed + job->words + 1);
  s.biases = s.scales + job->groups;
  s.values = s.biases + job->groups;
  const tsri_view *w_q = job->w_q, *scales = job->scales, *biases = job->biases;
  int64_t word_stride = w_q->strides[w_q->ndim - 1];
  size_t out_element = tsr_dtype_size(job->out->dtype);
  for (int64_t r = begin; r < end; r++) {
    if (job->simd) {
      simd_dequantize_row(job, r, s.values);
      tsri_cpu_store_f32((unsigned char *)job->out->data + r * job->k * (int64_t)out_element,
                         job->out->dtype, job->k, s.values);
      continue;
    }
    const uint32_t *row = element_at(w_q, row_offset(w_q, r));
    if (word_stride != 1) {
      for (int64_t j = 0; j < job->words; j++)
        s.packed[j] = row[j * word_stride];
      row = s.packed;
    }
    tsri_cpu_load_f32(element_at(scales, row_offset(scales, r)), scales->dtype,
                      scales->strides[scales->ndim - 1], job->groups, s.scales);
    if (biases)
      tsri_cpu_load_f32(element_at(biases, row_offset(biases, r)), biases->dtype,
                        biases->strides[biases->ndim - 1], job->groups, s.biases);
    dequantize_row(job, &s, row);
    tsri_cpu_store_f32((unsigned char *)job->out->data + r * job->k * (int64_t)out_element,
                       job->out->dtype, job->k, s.values);
  }
  free(block);
}

static tsr_status cpu_dequantize(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_cpu_context *cpu = NULL;
  tsr_status status = tsri_cpu_context_get(op->device, &cpu);
  if (status != TSR_OK) return status;
  const tsri_dequantize_params *p = TSRI_PARAMS(op, tsri_dequantize_params);
  dequantize_job job = {.p = p,
                        .w_q = &op->in[0],
                        .scales = &op->in[1],
                        .biases = op->ninputs > 2 ? &op->in[2] : NULL,
                        .out = &op->out,
                        .device = op->device,
                        .cpu = cpu,
                        .k = op->out.shape[op->out.ndim - 1]};
  job.arithmetic_dtype = p->mode == TSRI_QF_AFFINE ? job.scales->dtype : op->out.dtype;
  job.groups = job.k / p->group_size;
  job.words = job.w_q->shape[job.w_q->ndim - 1];
  job.simd = simd_applies(&job);
  atomic_init(&job.out_of_memory, false);
  tsri_parallel_for(cpu->pool, op->out.size / job.k, rows_grain(job.k), dequantize_rows, &job);
  if (atomic_load(&job.out_of_memory))
    return tsri_error(TSR_ERR_NOMEM, "out of host memory for dequantize rows of %lld",
                      (long long)job.k);
  return TSR_OK;
}

void tsri_cpu_register_quant(tsri_kernel_fn *table) {
  table[TSRI_PRIM_QUANTIZE] = cpu_quantize;
  table[TSRI_PRIM_DEQUANTIZE] = cpu_dequantize;
}

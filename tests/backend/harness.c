/* tests/backend/harness.c — the conformance harness's machinery: the seeded generator and the
 * host values of a case's inputs, their placement on a stream's device in each layout variant,
 * running a case and reading its outputs back, and the comparison that names what differs. Not
 * the cases (cases_*.c) nor the order in which devices are tried (test_backend_conformance.c). */
#include "harness.h"

#include <math.h>

/* ---- the generator: splitmix64, one stream per (case seed, input, purpose) ------------------- */

static uint64_t next_u64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double next_unit(uint64_t *state) {
  return (double)(next_u64(state) >> 11) * 0x1p-53;
}

static bool is_float(tsr_dtype t) {
  return t == TSR_FLOAT32 || t == TSR_FLOAT16 || t == TSR_BFLOAT16;
}

/* v rounded to the float dtype t (round to nearest even, as tsr_astype rounds). */
static double round_to(double v, tsr_dtype t) {
  float f = (float)v;
  if (t == TSR_FLOAT16) return (double)tsr_f16_to_f32(tsr_f32_to_f16(f));
  if (t == TSR_BFLOAT16) return (double)tsr_bf16_to_f32(tsr_f32_to_bf16(f));
  return (double)f;
}

/* An integer in [lo, hi). */
static double draw_integer(uint64_t *state, double lo, double hi) {
  double v = floor(lo + (hi - lo) * next_unit(state));
  return v < hi ? v : hi - 1;
}

static double draw(uint64_t *state, const conf_input *in) {
  tsr_dtype t = in->dtype;
  if (t == TSR_BOOL) return next_unit(state) < 0.5 ? 1 : 0;
  if (in->gen == CONF_BITS) {
    CHECK(t == TSR_UINT8 || t == TSR_UINT32);
    uint64_t bits = next_u64(state);
    return (double)(t == TSR_UINT8 ? bits & 0xffu : bits & 0xffffffffu);
  }
  if (in->gen == CONF_SPECIAL && is_float(t)) {
    static const double special[4] = {(double)NAN, (double)INFINITY, -(double)INFINITY, -0.0};
    uint64_t pick = next_u64(state) % 16;
    if (pick < 4) return special[pick];
    return round_to(draw_integer(state, in->lo, in->hi), t);
  }
  if (!is_float(t) || in->gen == CONF_SPECIAL) return draw_integer(state, in->lo, in->hi);
  return round_to(in->lo + (in->hi - in->lo) * next_unit(state), t);
}

/* ---- host values ----------------------------------------------------------------------------- */

static int64_t shape_size(const int64_t *shape, int ndim) {
  int64_t size = 1;
  for (int d = 0; d < ndim; d++)
    size *= shape[d];
  return size;
}

/* The multi-index of flat position `flat` in a row-major shape. */
static void unflatten(int64_t flat, const int64_t *shape, int ndim, int64_t *index) {
  for (int d = ndim - 1; d >= 0; d--) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
}

static int64_t flatten(const int64_t *index, const int64_t *shape, int ndim) {
  int64_t flat = 0;
  for (int d = 0; d < ndim; d++)
    flat = flat * shape[d] + index[d];
  return flat;
}

struct conf_values {
  int n;
  double *base[CONF_MAX_INPUTS];     /* the input's values, row-major */
  double *strided[CONF_MAX_INPUTS];  /* [2 n_d + 1 ...]: base at the odd positions, junk around */
  int bcast_axis[CONF_MAX_INPUTS];   /* -1: this input is never broadcast */
  double *small[CONF_MAX_INPUTS];    /* shape with bcast_axis of size 1 */
  double *expanded[CONF_MAX_INPUTS]; /* small repeated along bcast_axis: the BROADCAST values */
};

static double *draw_all(const conf_input *in, int64_t size, uint64_t *state) {
  double *v = malloc((size_t)(size > 0 ? size : 1) * sizeof *v);
  CHECK(v);
  if (in->gen != CONF_PERM) {
    for (int64_t i = 0; i < size; i++)
      v[i] = draw(state, in);
    return v;
  }
  for (int64_t i = 0; i < size; i++) { /* lo, lo + 1, ..., each held exactly by the dtype */
    v[i] = in->lo + (double)i;
    CHECK(!is_float(in->dtype) || round_to(v[i], in->dtype) == v[i]);
  }
  for (int64_t i = size - 1; i > 0; i--) { /* shuffled (Fisher-Yates) */
    int64_t j = (int64_t)(next_u64(state) % (uint64_t)(i + 1));
    double t = v[i];
    v[i] = v[j];
    v[j] = t;
  }
  return v;
}

/* The strided variant's bigger array: junk everywhere, x at the odd positions of every axis. */
static double *strided_values(const conf_input *in, const double *x, uint64_t *state) {
  int64_t big[TSR_MAX_NDIM], index[TSR_MAX_NDIM];
  for (int d = 0; d < in->ndim; d++)
    big[d] = 2 * in->shape[d] + 1;
  int64_t big_size = shape_size(big, in->ndim);
  double *v = draw_all(&(conf_input){.dtype = in->dtype,
                                     .gen = in->gen == CONF_PERM ? CONF_UNIFORM : in->gen,
                                     .lo = in->lo,
                                     .hi = in->hi},
                       big_size, state);
  int64_t size = shape_size(in->shape, in->ndim);
  for (int64_t i = 0; i < size; i++) {
    unflatten(i, in->shape, in->ndim, index);
    for (int d = 0; d < in->ndim; d++)
      index[d] = 2 * index[d] + 1;
    v[flatten(index, big, in->ndim)] = x[i];
  }
  return v;
}

/* The broadcast axis: the first axis but the last with more than one element (a repeat along the
   last axis would make ties where sorts and selections look). */
static int broadcast_axis(const conf_input *in) {
  if (in->no_views & CONF_NO_BROADCAST) return -1;
  for (int d = 0; d + 1 < in->ndim; d++)
    if (in->shape[d] > 1) return d;
  return -1;
}

static void broadcast_values(conf_values *v, int i, const conf_input *in, uint64_t *state) {
  int axis = v->bcast_axis[i];
  int64_t small_shape[TSR_MAX_NDIM], index[TSR_MAX_NDIM];
  memcpy(small_shape, in->shape, sizeof small_shape);
  small_shape[axis] = 1;
  int64_t size = shape_size(in->shape, in->ndim);
  v->small[i] = draw_all(in, shape_size(small_shape, in->ndim), state);
  v->expanded[i] = malloc((size_t)size * sizeof(double));
  CHECK(v->expanded[i]);
  for (int64_t e = 0; e < size; e++) {
    unflatten(e, in->shape, in->ndim, index);
    index[axis] = 0;
    v->expanded[i][e] = v->small[i][flatten(index, small_shape, in->ndim)];
  }
}

conf_values *conf_values_new(const conf_case *c, uint64_t seed) {
  conf_values *v = calloc(1, sizeof *v);
  CHECK(v);
  v->n = c->ninputs;
  for (int i = 0; i < c->ninputs; i++) {
    const conf_input *in = &c->in[i];
    uint64_t state = seed * 1000003u + (uint64_t)i;
    v->base[i] = draw_all(in, shape_size(in->shape, in->ndim), &state);
    if (in->ndim > 0 && !(in->no_views & CONF_NO_STRIDED))
      v->strided[i] = strided_values(in, v->base[i], &state);
    v->bcast_axis[i] = broadcast_axis(in);
    if (v->bcast_axis[i] >= 0) broadcast_values(v, i, in, &state);
  }
  return v;
}

void conf_values_free(conf_values *v) {
  if (!v) return;
  for (int i = 0; i < v->n; i++) {
    free(v->base[i]);
    free(v->strided[i]);
    free(v->small[i]);
    free(v->expanded[i]);
  }
  free(v);
}

static bool input_takes(const conf_input *in, const conf_values *vals, int i, conf_variant v) {
  switch (v) {
    case CONF_TRANSPOSED:
      return in->ndim >= 2 && !(in->no_views & CONF_NO_TRANSPOSED);
    case CONF_STRIDED:
      return vals->strided[i] != NULL;
    case CONF_REVERSED:
      return in->ndim >= 1 && !(in->no_views & CONF_NO_REVERSED);
    case CONF_BROADCAST:
    case CONF_BROADCAST_COPY:
      return vals->bcast_axis[i] >= 0;
    default:
      return false;
  }
}

bool conf_variant_applies(const conf_case *c, const conf_values *values, conf_variant v) {
  bool any = v == CONF_BASE;
  for (int i = 0; i < c->ninputs; i++)
    any = any || input_takes(&c->in[i], values, i, v);
  return any;
}

const char *conf_variant_name(conf_variant v) {
  static const char *const names[CONF_VARIANTS] = {
      "contiguous",        "transposed view",
      "step-2 slice view", "reversed (step -1) view",
      "broadcast view",    "contiguous copy of the broadcast values"};
  return (unsigned)v < CONF_VARIANTS ? names[v] : "?";
}

/* ---- placing inputs -------------------------------------------------------------------------- */

/* Host values in the dtype's bytes. */
static void *pack(const double *v, int64_t n, tsr_dtype t) {
  size_t width = tsr_dtype_size(t);
  unsigned char *bytes = malloc((size_t)(n > 0 ? n : 1) * width);
  CHECK(bytes);
  for (int64_t i = 0; i < n; i++) {
    unsigned char *dst = bytes + (size_t)i * width;
    double x = v[i];
    union {
      float f32;
      uint16_t u16;
      uint8_t u8;
      int8_t i8;
      uint32_t u32;
      int32_t i32;
      int64_t i64;
    } e;
    switch (t) {
      case TSR_FLOAT32:
        e.f32 = (float)x;
        break;
      case TSR_FLOAT16:
        e.u16 = tsr_f32_to_f16((float)x);
        break;
      case TSR_BFLOAT16:
        e.u16 = tsr_f32_to_bf16((float)x);
        break;
      case TSR_BOOL:
        e.u8 = x != 0;
        break;
      case TSR_UINT8:
        e.u8 = (uint8_t)x;
        break;
      case TSR_INT8:
        e.i8 = (int8_t)x;
        break;
      case TSR_UINT32:
        e.u32 = (uint32_t)x;
        break;
      case TSR_INT32:
        e.i32 = (int32_t)x;
        break;
      default:
        e.i64 = (int64_t)x;
        break;
    }
    memcpy(dst, &e, width);
  }
  return bytes;
}

static tsr_status place(tsr_array **out, const double *v, tsr_dtype t, const int64_t *shape,
                        int ndim, tsr_stream *s) {
  void *bytes = pack(v, shape_size(shape, ndim), t);
  tsr_status st = tsr_array_from_data_on(out, bytes, t, shape, ndim, tsr_stream_device(s));
  free(bytes);
  return st;
}

/* x^T stored contiguously, then transposed back: x's values with reversed strides. */
static tsr_status place_transposed(tsr_array **out, const conf_input *in, const double *x,
                                   tsr_stream *s) {
  int64_t rshape[TSR_MAX_NDIM], index[TSR_MAX_NDIM], rindex[TSR_MAX_NDIM];
  int n = in->ndim;
  int64_t size = shape_size(in->shape, n);
  for (int d = 0; d < n; d++)
    rshape[d] = in->shape[n - 1 - d];
  double *t = malloc((size_t)size * sizeof *t);
  CHECK(t);
  for (int64_t i = 0; i < size; i++) {
    unflatten(i, in->shape, n, index);
    for (int d = 0; d < n; d++)
      rindex[d] = index[n - 1 - d];
    t[flatten(rindex, rshape, n)] = x[i];
  }
  tsr_array *stored = NULL;
  tsr_status st = place(&stored, t, in->dtype, rshape, n, s);
  free(t);
  if (st == TSR_OK) st = tsr_transpose(out, stored, NULL, 0, s);
  tsr_array_release(stored);
  return st;
}

static tsr_status place_strided(tsr_array **out, const conf_input *in, const double *big_values,
                                tsr_stream *s) {
  int64_t big[TSR_MAX_NDIM], start[TSR_MAX_NDIM], step[TSR_MAX_NDIM];
  for (int d = 0; d < in->ndim; d++) {
    big[d] = 2 * in->shape[d] + 1;
    start[d] = 1;
    step[d] = 2;
  }
  tsr_array *stored = NULL;
  tsr_status st = place(&stored, big_values, in->dtype, big, in->ndim, s);
  if (st == TSR_OK) st = tsr_slice(out, stored, start, big, step, in->ndim, s);
  tsr_array_release(stored);
  return st;
}

/* x reversed on every axis, stored, then sliced with step -1 on every axis: x's values with
   negative strides. */
static tsr_status place_reversed(tsr_array **out, const conf_input *in, const double *x,
                                 tsr_stream *s) {
  int64_t index[TSR_MAX_NDIM], start[TSR_MAX_NDIM], stop[TSR_MAX_NDIM], step[TSR_MAX_NDIM];
  int n = in->ndim;
  int64_t size = shape_size(in->shape, n);
  double *r = malloc((size_t)size * sizeof *r);
  CHECK(r);
  for (int64_t i = 0; i < size; i++) {
    unflatten(i, in->shape, n, index);
    for (int d = 0; d < n; d++)
      index[d] = in->shape[d] - 1 - index[d];
    r[flatten(index, in->shape, n)] = x[i];
  }
  for (int d = 0; d < n; d++) {
    start[d] = -1;
    stop[d] = -in->shape[d] - 1; /* before the first element */
    step[d] = -1;
  }
  tsr_array *stored = NULL;
  tsr_status st = place(&stored, r, in->dtype, in->shape, n, s);
  free(r);
  if (st == TSR_OK) st = tsr_slice(out, stored, start, stop, step, n, s);
  tsr_array_release(stored);
  return st;
}

static tsr_status place_broadcast(tsr_array **out, const conf_input *in, const conf_values *vals,
                                  int i, tsr_stream *s) {
  int64_t small_shape[TSR_MAX_NDIM];
  memcpy(small_shape, in->shape, sizeof small_shape);
  small_shape[vals->bcast_axis[i]] = 1;
  tsr_array *stored = NULL;
  tsr_status st = place(&stored, vals->small[i], in->dtype, small_shape, in->ndim, s);
  if (st == TSR_OK) st = tsr_broadcast_to(out, stored, in->shape, in->ndim, s);
  tsr_array_release(stored);
  return st;
}

static tsr_status make_input(tsr_array **out, const conf_input *in, const conf_values *vals, int i,
                             conf_variant v, tsr_stream *s) {
  if (!input_takes(in, vals, i, v))
    return place(out, vals->base[i], in->dtype, in->shape, in->ndim, s);
  switch (v) {
    case CONF_TRANSPOSED:
      return place_transposed(out, in, vals->base[i], s);
    case CONF_STRIDED:
      return place_strided(out, in, vals->strided[i], s);
    case CONF_REVERSED:
      return place_reversed(out, in, vals->base[i], s);
    case CONF_BROADCAST:
      return place_broadcast(out, in, vals, i, s);
    default:
      return place(out, vals->expanded[i], in->dtype, in->shape, in->ndim, s);
  }
}

/* The variants must really be views, or the layout checks would compare a copy with a copy:
   tsr_array_data refuses an array that is not contiguous. */
void conf_check_views_are_views(void) {
  conf_case c = {CONF_CASE("views", NULL, 1, 0),
                 .in = {CONF_IN(TSR_FLOAT32, CONF_UNIFORM, -1, 1, 3, 5)}};
  conf_values *vals = conf_values_new(&c, 1);
  tsr_stream *s = tsr_default_stream((tsr_device){TSR_CPU, 0});
  static const conf_variant views[4] = {CONF_TRANSPOSED, CONF_STRIDED, CONF_REVERSED,
                                        CONF_BROADCAST};
  for (int i = 0; i < 4; i++) {
    tsr_array *a = NULL;
    void *data = NULL;
    CHECK_OK(make_input(&a, &c.in[0], vals, 0, views[i], s));
    tsr_status st = tsr_array_data(a, &data);
    if (st != TSR_ERR_INVALID)
      CHECK_FAIL_("the %s of a [3, 5] array is contiguous (array_data: %s)",
                  conf_variant_name(views[i]), tsr_status_name(st));
    tsr_array_release(a);
  }
  conf_values_free(vals);
}

/* ---- running --------------------------------------------------------------------------------- */

tsr_status conf_position_scalar(tsr_array **out, const conf_params *p, tsr_stream *s) {
  if (p->z == 0) return tsr_full(out, p->shape, p->ndim, p->y, p->dtype, s);
  int64_t wide = (int64_t)p->y;
  int32_t narrow = (int32_t)p->y;
  const tsr_device host = {TSR_CPU, 0};
  return tsr_array_from_data_on(out, p->dtype == TSR_INT32 ? (const void *)&narrow : &wide,
                                p->dtype, p->shape, p->ndim, host);
}

void conf_result_free(conf_result *r) {
  for (int k = 0; k < CONF_MAX_OUTPUTS; k++)
    free(r->out[k].bytes);
  memset(r, 0, sizeof *r);
}

static tsr_status read_output(tsr_array *a, conf_output *o) {
  o->dtype = tsr_array_dtype(a);
  o->ndim = tsr_array_ndim(a);
  for (int d = 0; d < o->ndim; d++)
    o->shape[d] = tsr_array_dim(a, d);
  o->size = tsr_array_size(a);
  size_t bytes = (size_t)o->size * tsr_dtype_size(o->dtype);
  o->bytes = malloc(bytes > 0 ? bytes : 1);
  CHECK(o->bytes);
  return tsr_array_read(a, o->bytes, bytes);
}

/* No op may write into its inputs (an in-place path reusing a buffer that another array still
   holds): after the run, each input reads back as it was placed. */
static tsr_status inputs_intact(const conf_case *c, const conf_values *vals, conf_variant v,
                                tsr_array *const *in) {
  tsr_status st = TSR_OK;
  for (int i = 0; i < c->ninputs && st == TSR_OK; i++) {
    const conf_input *spec = &c->in[i];
    bool repeated = (v == CONF_BROADCAST || v == CONF_BROADCAST_COPY) && vals->bcast_axis[i] >= 0;
    int64_t size = shape_size(spec->shape, spec->ndim);
    size_t bytes = (size_t)size * tsr_dtype_size(spec->dtype);
    void *want = pack(repeated ? vals->expanded[i] : vals->base[i], size, spec->dtype);
    void *got = malloc(bytes ? bytes : 1);
    CHECK(got);
    st = tsr_array_read(in[i], got, bytes);
    if (st == TSR_OK && memcmp(got, want, bytes) != 0)
      st = tsr_error_set(TSR_ERR_STATE, "input %d (%s) holds other values after the case ran", i,
                         conf_variant_name(v));
    free(got);
    free(want);
  }
  return st;
}

tsr_status conf_run(const conf_case *c, const conf_values *values, conf_variant v, tsr_stream *s,
                    conf_result *r) {
  tsr_array *in[CONF_MAX_INPUTS] = {0}, *outs[CONF_MAX_OUTPUTS] = {0};
  memset(r, 0, sizeof *r);
  tsr_status st = TSR_OK;
  for (int i = 0; i < c->ninputs && st == TSR_OK; i++)
    st = make_input(&in[i], &c->in[i], values, i, v, s);
  if (st == TSR_OK) st = c->build(outs, in, &c->p, s);
  for (int k = 0; k < c->noutputs && st == TSR_OK; k++)
    if (!outs[k]) st = tsr_error_set(TSR_ERR_INVALID, "builder left output %d unset", k);
  if (st == TSR_OK) st = tsr_eval(outs, (size_t)c->noutputs);
  for (int k = 0; k < c->noutputs && st == TSR_OK; k++)
    st = read_output(outs[k], &r->out[k]);
  if (st == TSR_OK) st = inputs_intact(c, values, v, in);
  r->n = c->noutputs;
  for (int i = 0; i < CONF_MAX_INPUTS; i++)
    tsr_array_release(in[i]);
  for (int k = 0; k < CONF_MAX_OUTPUTS; k++)
    tsr_array_release(outs[k]);
  if (st != TSR_OK) conf_result_free(r);
  return st;
}

/* ---- comparing ------------------------------------------------------------------------------- */

static double element(const conf_output *o, int64_t i) {
  const unsigned char *p = o->bytes + (size_t)i * tsr_dtype_size(o->dtype);
  union {
    float f32;
    uint16_t u16;
    uint8_t u8;
    int8_t i8;
    uint32_t u32;
    int32_t i32;
    int64_t i64;
  } e;
  memcpy(&e, p, tsr_dtype_size(o->dtype));
  switch (o->dtype) {
    case TSR_FLOAT32:
      return (double)e.f32;
    case TSR_FLOAT16:
      return (double)tsr_f16_to_f32(e.u16);
    case TSR_BFLOAT16:
      return (double)tsr_bf16_to_f32(e.u16);
    case TSR_BOOL:
    case TSR_UINT8:
      return (double)e.u8;
    case TSR_INT8:
      return (double)e.i8;
    case TSR_UINT32:
      return (double)e.u32;
    case TSR_INT32:
      return (double)e.i32;
    default:
      return (double)e.i64;
  }
}

static bool element_matches(const conf_output *got, const conf_output *want, int64_t i,
                            conf_tol tol) {
  size_t width = tsr_dtype_size(got->dtype);
  double g = element(got, i), w = element(want, i);
  if (is_float(got->dtype) && (isnan(g) || isnan(w))) return isnan(g) && isnan(w);
  if (!is_float(got->dtype) || (tol.abs == 0 && tol.rel == 0) || isinf(g) || isinf(w))
    return memcmp(got->bytes + (size_t)i * width, want->bytes + (size_t)i * width, width) == 0;
  return fabs(g - w) <= tol.abs + tol.rel * fabs(w);
}

static void format_shape(char *buf, size_t cap, const int64_t *shape, int ndim) {
  int used = snprintf(buf, cap, "[");
  for (int d = 0; d < ndim && used > 0 && (size_t)used < cap; d++)
    used += snprintf(buf + used, cap - (size_t)used, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (used > 0 && (size_t)used < cap) snprintf(buf + used, cap - (size_t)used, "]");
}

static void format_element(char *buf, size_t cap, const conf_output *o, int64_t i) {
  if (is_float(o->dtype)) {
    snprintf(buf, cap, "%.9g", element(o, i));
  } else if (o->dtype == TSR_INT64) {
    int64_t v;
    memcpy(&v, o->bytes + (size_t)i * 8, 8);
    snprintf(buf, cap, "%lld", (long long)v);
  } else {
    snprintf(buf, cap, "%.0f", element(o, i));
  }
}

static bool output_matches(const char *what, int k, const conf_output *got, const conf_output *want,
                           conf_tol tol) {
  char gs[160], ws[160];
  format_shape(gs, sizeof gs, got->shape, got->ndim);
  format_shape(ws, sizeof ws, want->shape, want->ndim);
  if (got->dtype != want->dtype || strcmp(gs, ws) != 0) {
    printf("FAIL %s: output %d is %s %s, want %s %s\n", what, k, tsr_dtype_name(got->dtype), gs,
           tsr_dtype_name(want->dtype), ws);
    return false;
  }
  for (int64_t i = 0; i < got->size; i++) {
    if (element_matches(got, want, i, tol)) continue;
    int64_t index[TSR_MAX_NDIM] = {0};
    char is[160], gv[64], wv[64];
    unflatten(i, got->shape, got->ndim, index);
    format_shape(is, sizeof is, index, got->ndim);
    format_element(gv, sizeof gv, got, i);
    format_element(wv, sizeof wv, want, i);
    printf("FAIL %s: output %d (%s %s) element %lld %s: got %s, want %s; tolerance ", what, k,
           tsr_dtype_name(got->dtype), gs, (long long)i, is, gv, wv);
    if (tol.abs == 0 && tol.rel == 0)
      printf("bit for bit\n");
    else
      printf("abs %.3g + rel %.3g\n", tol.abs, tol.rel);
    return false;
  }
  return true;
}

bool conf_compare(const char *what, const conf_result *got, const conf_result *want, conf_tol tol) {
  if (got->n != want->n) {
    printf("FAIL %s: %d outputs, want %d\n", what, got->n, want->n);
    return false;
  }
  for (int k = 0; k < got->n; k++)
    if (!output_matches(what, k, &got->out[k], &want->out[k], tol)) return false;
  return true;
}

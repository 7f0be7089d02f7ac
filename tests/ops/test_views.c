/* tests/ops/test_views.c — transpose, reshape, slice, expand_dims, squeeze, broadcast_to and
 * contiguous against a float64 reference that indexes by hand: values (exact: a view moves no
 * arithmetic), views of views and of lazy inputs, buffer sharing and lifetime, zero-size axes,
 * and every bad argument. Not concatenate or indexing (test_concat_take.c). */
#include "check.h"
#include "slice_ref.h"

static const tsr_device cpu = {TSR_CPU, 0};

/* A row-major float64 reference array. */
typedef struct {
  int ndim;
  int64_t shape[TSR_MAX_NDIM];
  int64_t size;
  double v[4096];
} ref_array;

static void ref_init(ref_array *r, const int64_t *shape, int ndim) {
  r->ndim = ndim;
  r->size = 1;
  for (int i = 0; i < ndim; i++) {
    r->shape[i] = shape[i];
    r->size *= shape[i];
  }
  CHECK(r->size <= 4096);
}

/* Flat row-major position of a multi-index. */
static int64_t ref_flat(const ref_array *r, const int64_t *index) {
  int64_t flat = 0;
  for (int d = 0; d < r->ndim; d++)
    flat = flat * r->shape[d] + index[d];
  return flat;
}

/* The multi-index of flat position `flat`. */
static void ref_unflat(const ref_array *r, int64_t flat, int64_t *index) {
  for (int d = r->ndim - 1; d >= 0; d--) {
    index[d] = r->shape[d] ? flat % r->shape[d] : 0;
    flat = r->shape[d] ? flat / r->shape[d] : 0;
  }
}

static void ref_iota(ref_array *r, const int64_t *shape, int ndim) {
  ref_init(r, shape, ndim);
  for (int64_t i = 0; i < r->size; i++)
    r->v[i] = (double)i;
}

static void ref_transpose(const ref_array *a, const int *axes, ref_array *out) {
  int64_t shape[TSR_MAX_NDIM], index[TSR_MAX_NDIM], src[TSR_MAX_NDIM];
  for (int i = 0; i < a->ndim; i++)
    shape[i] = a->shape[axes[i]];
  ref_init(out, shape, a->ndim);
  for (int64_t i = 0; i < out->size; i++) {
    ref_unflat(out, i, index);
    for (int d = 0; d < a->ndim; d++)
      src[axes[d]] = index[d];
    out->v[i] = a->v[ref_flat(a, src)];
  }
}

static void ref_slice(const ref_array *a, const int64_t *start, const int64_t *stop,
                      const int64_t *step, int naxes, ref_array *out) {
  int64_t taken[TSR_MAX_NDIM][64], shape[TSR_MAX_NDIM];
  for (int d = 0; d < a->ndim; d++) {
    CHECK(a->shape[d] <= 64);
    if (d < naxes) {
      shape[d] = python_slice(a->shape[d], start[d], stop[d], step ? step[d] : 1, taken[d]);
    } else {
      shape[d] = a->shape[d];
      for (int64_t i = 0; i < shape[d]; i++)
        taken[d][i] = i;
    }
  }
  ref_init(out, shape, a->ndim);
  int64_t index[TSR_MAX_NDIM], src[TSR_MAX_NDIM];
  for (int64_t i = 0; i < out->size; i++) {
    ref_unflat(out, i, index);
    for (int d = 0; d < a->ndim; d++)
      src[d] = taken[d][index[d]];
    out->v[i] = a->v[ref_flat(a, src)];
  }
}

static tsr_array *make_f32(const ref_array *r) {
  float data[4096];
  for (int64_t i = 0; i < r->size; i++)
    data[i] = (float)r->v[i];
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, data, TSR_FLOAT32, r->shape, r->ndim));
  return a;
}

/* The array's shape and values equal the reference's exactly. */
static void check_equals(tsr_array *a, const ref_array *r) {
  CHECK_EQ_INT(tsr_array_ndim(a), r->ndim);
  for (int d = 0; d < r->ndim; d++)
    CHECK_EQ_INT(tsr_array_dim(a, d), r->shape[d]);
  static float got[4096];
  CHECK_OK(tsr_array_read(a, got, (size_t)r->size * sizeof(float)));
  for (int64_t i = 0; i < r->size; i++)
    if ((double)got[i] != r->v[i])
      CHECK_FAIL_("element %lld: %g != %g", (long long)i, (double)got[i], r->v[i]);
}

static bool is_contiguous(tsr_array *a) {
  void *ptr = NULL;
  tsr_status status = tsr_array_data(a, &ptr);
  CHECK(status == TSR_OK || status == TSR_ERR_INVALID);
  return status == TSR_OK;
}

static void *data_of(tsr_array *a) {
  void *ptr = NULL;
  CHECK_OK(tsr_array_data(a, &ptr));
  return ptr;
}

static void test_transpose(void) {
  int64_t shape[3] = {2, 3, 4};
  ref_array base, want;
  ref_iota(&base, shape, 3);
  tsr_array *a = make_f32(&base), *t = NULL, *r = NULL, *n = NULL;
  int axes[3] = {2, 0, 1}, negative[3] = {-1, 0, -2}, reversed[3] = {2, 1, 0};
  CHECK_OK(tsr_transpose(&t, a, axes, 3, NULL));
  ref_transpose(&base, axes, &want);
  check_equals(t, &want);
  CHECK(!is_contiguous(t));
  CHECK_MESSAGE("non-contiguous");
  CHECK_OK(tsr_transpose(&n, a, negative, 3, NULL)); /* -1 -> 2, -2 -> 1: [2, 0, 1] */
  check_equals(n, &want);
  CHECK_OK(tsr_transpose(&r, a, NULL, 0, NULL));
  ref_transpose(&base, reversed, &want);
  check_equals(r, &want);
  tsr_array_release(t), tsr_array_release(r), tsr_array_release(n), tsr_array_release(a);
}

static void test_reshape(void) {
  int64_t shape[3] = {2, 3, 4}, to[2] = {4, -1}, flat[1] = {24};
  ref_array base, want;
  ref_iota(&base, shape, 3);
  tsr_array *a = make_f32(&base), *r = NULL, *t = NULL, *rt = NULL;
  uint64_t active = tsr_memory_active(cpu);
  CHECK_OK(tsr_reshape(&r, a, to, 2, NULL));
  CHECK_EQ_INT(tsr_array_dim(r, 1), 6);
  want = base;
  want.ndim = 2, want.shape[0] = 4, want.shape[1] = 6;
  check_equals(r, &want);
  CHECK(data_of(r) == data_of(a)); /* a contiguous input keeps its buffer */
  CHECK_EQ_U64(tsr_memory_active(cpu), active);
  /* A transposed input is copied into packed order first. */
  int axes[3] = {1, 2, 0};
  CHECK_OK(tsr_transpose(&t, a, axes, 3, NULL));
  CHECK_OK(tsr_reshape(&rt, t, flat, 1, NULL));
  ref_transpose(&base, axes, &want);
  want.ndim = 1, want.shape[0] = 24;
  check_equals(rt, &want);
  CHECK(is_contiguous(rt));
  CHECK(data_of(rt) != data_of(a));
  tsr_array_release(r), tsr_array_release(t), tsr_array_release(rt), tsr_array_release(a);
}

static void check_slice(const ref_array *base, tsr_array *a, const int64_t *start,
                        const int64_t *stop, const int64_t *step, int naxes) {
  ref_array want;
  tsr_array *s = NULL;
  CHECK_OK(tsr_slice(&s, a, start, stop, step, naxes, NULL));
  ref_slice(base, start, stop, step, naxes, &want);
  check_equals(s, &want);
  tsr_array_release(s);
}

static void test_slice(void) {
  int64_t shape[2] = {5, 7};
  ref_array base;
  ref_iota(&base, shape, 2);
  tsr_array *a = make_f32(&base);
  int64_t cases[][6] = {
      /* start0, stop0, step0, start1, stop1, step1 */
      {0, 5, 1, 0, 7, 1},
      {1, 4, 1, 2, 6, 2},
      {4, 0, -1, 6, -8, -2},
      {-1, -6, -2, -3, 100, 1},
      {-100, 100, 3, 5, 1, -3},
      {3, 3, 1, 0, 7, 1},
      {0, 5, 100, 6, -100, -100},
      {2, 1, 1, 0, 7, 1},
      {-2, 100, -1, INT64_MIN, INT64_MAX, 4},
      {INT64_MAX, INT64_MIN, -1, 1, 2, INT64_MIN},
      {1, 5, INT64_MAX, 6, 0, INT64_MIN},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int64_t start[2] = {cases[c][0], cases[c][3]}, stop[2] = {cases[c][1], cases[c][4]};
    int64_t step[2] = {cases[c][2], cases[c][5]};
    check_slice(&base, a, start, stop, step, 2);
  }
  int64_t start[1] = {1}, stop[1] = {4};
  check_slice(&base, a, start, stop, NULL, 1); /* step NULL = 1, axis 1 whole */
  check_slice(&base, a, NULL, NULL, NULL, 0);  /* nothing sliced */
  /* Hand-checked values (a[5:1:-2] of 0..6 is 5, 3). */
  int64_t vshape[1] = {7}, vstart[1] = {5}, vstop[1] = {1}, vstep[1] = {-2};
  float values[7] = {0, 1, 2, 3, 4, 5, 6}, got[2];
  tsr_array *v = NULL, *s = NULL;
  CHECK_OK(tsr_array_from_data(&v, values, TSR_FLOAT32, vshape, 1));
  CHECK_OK(tsr_slice(&s, v, vstart, vstop, vstep, 1, NULL));
  CHECK_OK(tsr_array_read(s, got, sizeof got));
  CHECK(got[0] == 5.0f && got[1] == 3.0f);
  tsr_array_release(s), tsr_array_release(v);
  /* A slice of whole rows stays contiguous: its data pointer is into the base. */
  int64_t rows_start[1] = {2}, rows_stop[1] = {4};
  CHECK_OK(tsr_slice(&s, a, rows_start, rows_stop, NULL, 1, NULL));
  CHECK((float *)data_of(s) == (float *)data_of(a) + 2 * 7);
  tsr_array_release(s);
  tsr_array_release(a);
}

/* Views of views: each level's layout is computed from the evaluated layout below it. */
static void test_chains(void) {
  int64_t shape[3] = {4, 6, 5};
  ref_array base, r1, r2, r3, want;
  ref_iota(&base, shape, 3);
  tsr_array *a = make_f32(&base), *s1 = NULL, *t = NULL, *r = NULL, *s2 = NULL, *s3 = NULL;
  int64_t start1[3] = {3, 1, -1}, stop1[3] = {-5, 6, -6}, step1[3] = {-1, 2, -2};
  CHECK_OK(tsr_slice(&s1, a, start1, stop1, step1, 3, NULL)); /* [4, 3, 3] */
  ref_slice(&base, start1, stop1, step1, 3, &r1);
  int axes[3] = {2, 0, 1};
  CHECK_OK(tsr_transpose(&t, s1, axes, 3, NULL)); /* [3, 4, 3] */
  ref_transpose(&r1, axes, &r2);
  int64_t start2[2] = {2, 3}, stop2[2] = {-4, -5}, step2[2] = {-1, -1};
  CHECK_OK(tsr_slice(&s2, t, start2, stop2, step2, 2, NULL)); /* [3, 4, 3] reversed twice */
  ref_slice(&r2, start2, stop2, step2, 2, &r3);
  check_equals(s2, &r3);
  int64_t flat[2] = {-1, 3};
  CHECK_OK(tsr_reshape(&r, s2, flat, 2, NULL)); /* a copy: the layout is scattered */
  want = r3;
  want.ndim = 2, want.shape[0] = r3.size / 3, want.shape[1] = 3;
  check_equals(r, &want);
  int64_t start3[2] = {1, 0}, stop3[2] = {12, 3}, step3[2] = {5, 2};
  CHECK_OK(tsr_slice(&s3, r, start3, stop3, step3, 2, NULL)); /* a view of the copy */
  ref_slice(&want, start3, stop3, step3, 2, &r1);
  check_equals(s3, &r1);
  tsr_array *all[5] = {s1, t, r, s2, s3};
  for (int i = 0; i < 5; i++)
    tsr_array_release(all[i]);
  tsr_array_release(a);
}

/* Views of arrays that are not evaluated yet, and views evaluated before their input is read. */
static void test_lazy_inputs(void) {
  int64_t shape[2] = {3, 4};
  ref_array base, doubled, want;
  ref_iota(&base, shape, 2);
  doubled = base;
  for (int64_t i = 0; i < base.size; i++)
    doubled.v[i] = 2 * base.v[i];
  tsr_array *a = make_f32(&base), *sum = NULL, *t = NULL, *s = NULL, *e = NULL;
  CHECK_OK(tsr_add(&sum, a, a, NULL));
  int axes[2] = {1, 0};
  CHECK_OK(tsr_transpose(&t, sum, axes, 2, NULL));
  int64_t start[2] = {3, 0}, stop[2] = {0, 3}, step[2] = {-2, 2};
  CHECK_OK(tsr_slice(&s, t, start, stop, step, 2, NULL));
  CHECK_OK(tsr_expand_dims(&e, s, 1, NULL));
  tsr_array_release(sum); /* the views keep what they need */
  tsr_array_release(t);
  ref_array transposed;
  ref_transpose(&doubled, axes, &transposed);
  ref_slice(&transposed, start, stop, step, 2, &want);
  ref_array expanded = want;
  expanded.ndim = 3, expanded.shape[1] = 1, expanded.shape[2] = want.shape[1];
  check_equals(e, &expanded); /* evaluates the whole chain */
  check_equals(s, &want);
  /* A view of an input on another stream fences on it. */
  tsr_stream *other = NULL;
  tsr_array *sum2 = NULL, *t2 = NULL;
  CHECK_OK(tsr_stream_new(&other, cpu));
  CHECK_OK(tsr_add(&sum2, a, a, other));
  CHECK_OK(tsr_transpose(&t2, sum2, NULL, 0, NULL));
  ref_transpose(&doubled, axes, &want);
  check_equals(t2, &want);
  tsr_array_release(sum2), tsr_array_release(t2);
  CHECK_OK(tsr_stream_free(other));
  tsr_array_release(s), tsr_array_release(e), tsr_array_release(a);
}

static void test_expand_squeeze(void) {
  int64_t shape[3] = {2, 1, 3};
  ref_array base, want;
  ref_iota(&base, shape, 3);
  tsr_array *a = make_f32(&base), *e = NULL, *e2 = NULL, *q = NULL, *q_all = NULL;
  CHECK_OK(tsr_expand_dims(&e, a, -1, NULL)); /* [2, 1, 3, 1] */
  want = base;
  want.ndim = 4, want.shape[3] = 1;
  check_equals(e, &want);
  CHECK_OK(tsr_expand_dims(&e2, a, 0, NULL)); /* [1, 2, 1, 3] */
  want.shape[0] = 1, want.shape[1] = 2, want.shape[2] = 1, want.shape[3] = 3;
  check_equals(e2, &want);
  int axes[1] = {-2};
  CHECK_OK(tsr_squeeze(&q, a, axes, 1, NULL)); /* [2, 3] */
  want.ndim = 2, want.shape[0] = 2, want.shape[1] = 3;
  check_equals(q, &want);
  CHECK_OK(tsr_squeeze(&q_all, e2, NULL, 0, NULL)); /* every size-1 axis: [2, 3] */
  check_equals(q_all, &want);
  CHECK(data_of(q_all) == data_of(a));
  tsr_array_release(e), tsr_array_release(e2), tsr_array_release(q), tsr_array_release(q_all);
  /* On a transposed input they stay views (no copy), where reshape packs. */
  tsr_array *t = NULL, *te = NULL, *tq = NULL, *tr = NULL;
  int perm[3] = {2, 1, 0};
  CHECK_OK(tsr_transpose(&t, a, perm, 3, NULL)); /* [3, 1, 2] */
  CHECK_OK(tsr_expand_dims(&te, t, 1, NULL));    /* [3, 1, 1, 2] */
  CHECK_OK(tsr_squeeze(&tq, te, NULL, 0, NULL)); /* [3, 2] */
  ref_transpose(&base, perm, &want);
  want.ndim = 2, want.shape[1] = 2;
  uint64_t active = tsr_memory_active(cpu);
  check_equals(tq, &want);
  CHECK_EQ_U64(tsr_memory_active(cpu), active);
  CHECK(!is_contiguous(tq));
  int64_t same[2] = {3, 2};
  CHECK_OK(tsr_reshape(&tr, tq, same, 2, NULL));
  check_equals(tr, &want);
  CHECK(is_contiguous(tr));
  tsr_array_release(t), tsr_array_release(te), tsr_array_release(tq), tsr_array_release(tr);
  tsr_array_release(a);
}

static void test_broadcast_contiguous(void) {
  int64_t shape[2] = {3, 1}, to[3] = {2, 3, 4};
  ref_array base, want;
  ref_iota(&base, shape, 2);
  tsr_array *a = make_f32(&base), *b = NULL, *c = NULL, *c2 = NULL, *same = NULL;
  CHECK_OK(tsr_broadcast_to(&b, a, to, 3, NULL));
  ref_init(&want, to, 3);
  for (int64_t i = 0; i < want.size; i++)
    want.v[i] = base.v[(i / 4) % 3];
  uint64_t active = tsr_memory_active(cpu);
  check_equals(b, &want);
  CHECK_EQ_U64(tsr_memory_active(cpu), active); /* stride 0: nothing allocated */
  CHECK(!is_contiguous(b));
  CHECK_OK(tsr_contiguous(&c, b, NULL));
  check_equals(c, &want);
  CHECK(is_contiguous(c));
  /* A ready contiguous array is its own contiguous version; a lazy one is aliased when it runs. */
  CHECK_OK(tsr_contiguous(&same, a, NULL));
  CHECK(same == a);
  tsr_array *sum = NULL;
  CHECK_OK(tsr_add(&sum, a, a, NULL));
  CHECK_OK(tsr_contiguous(&c2, sum, NULL));
  CHECK(c2 != sum);
  CHECK(data_of(c2) == data_of(sum));
  tsr_array_release(b), tsr_array_release(c), tsr_array_release(c2), tsr_array_release(same);
  tsr_array_release(sum), tsr_array_release(a);
}

/* A view holds the base's buffer: releasing the base keeps the bytes alive and readable. */
static void test_lifetime(void) {
  int64_t shape[2] = {64, 32};
  ref_array base, want;
  ref_iota(&base, shape, 2);
  uint64_t before = tsr_memory_active(cpu);
  tsr_array *a = make_f32(&base), *t = NULL, *s = NULL;
  uint64_t with_base = tsr_memory_active(cpu);
  CHECK(with_base >= before + 64 * 32 * sizeof(float));
  CHECK_OK(tsr_transpose(&t, a, NULL, 0, NULL));
  int64_t start[2] = {1, 60}, stop[2] = {30, -70}, step[2] = {3, -7};
  CHECK_OK(tsr_slice(&s, t, start, stop, step, 2, NULL));
  CHECK_OK(tsr_eval(&s, 1));
  tsr_array_release(a);
  tsr_array_release(t);
  CHECK_EQ_U64(tsr_memory_active(cpu), with_base); /* the view keeps the whole buffer */
  int perm[2] = {1, 0};
  ref_array transposed;
  ref_transpose(&base, perm, &transposed);
  ref_slice(&transposed, start, stop, step, 2, &want);
  check_equals(s, &want);
  tsr_array_release(s);
  CHECK_EQ_U64(tsr_memory_active(cpu), before); /* the last view frees it */
}

static void test_zero_size(void) {
  int64_t shape[3] = {2, 0, 3}, flat[2] = {0, 5}, infer[2] = {-1, 0};
  ref_array base, want;
  ref_iota(&base, shape, 3);
  tsr_array *a = make_f32(&base), *t = NULL, *r = NULL, *s = NULL, *b = NULL, *e = NULL;
  CHECK_OK(tsr_transpose(&t, a, NULL, 0, NULL));
  CHECK_EQ_INT(tsr_array_dim(t, 0), 3);
  CHECK_EQ_INT(tsr_array_size(t), 0);
  CHECK_OK(tsr_eval(&t, 1));
  CHECK_OK(tsr_reshape(&r, t, flat, 2, NULL));
  CHECK_OK(tsr_array_read(r, NULL, 0));
  CHECK_STATUS(tsr_reshape(&e, t, infer, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("ambiguous");
  /* An empty slice of a non-empty array. */
  int64_t full[2] = {4, 5};
  ref_iota(&base, full, 2);
  tsr_array *f = make_f32(&base);
  int64_t start[2] = {1, 3}, stop[2] = {3, 3};
  CHECK_OK(tsr_slice(&s, f, start, stop, NULL, 2, NULL));
  ref_slice(&base, start, stop, NULL, 2, &want);
  CHECK_EQ_INT(want.size, 0);
  check_equals(s, &want);
  int64_t to[3] = {0, 2, 0};
  CHECK_OK(tsr_broadcast_to(&b, s, to, 3, NULL));
  CHECK_OK(tsr_array_read(b, NULL, 0));
  tsr_array *all[5] = {t, r, s, b, f};
  for (int i = 0; i < 5; i++)
    tsr_array_release(all[i]);
  tsr_array_release(a);
}

/* Views move bytes, whatever the dtype: float16 bit patterns (NaN included) and int8 survive. */
static void test_dtypes(void) {
  uint16_t halves[6] = {0x3c00, 0x7e01, 0xfc00, 0x0001, 0x8000, 0x5140};
  int8_t bytes[6] = {-128, -1, 0, 1, 2, 127};
  int64_t shape[2] = {2, 3};
  tsr_array *h = NULL, *ht = NULL, *i8 = NULL, *i8s = NULL, *hr = NULL;
  CHECK_OK(tsr_array_from_data(&h, halves, TSR_FLOAT16, shape, 2));
  CHECK_OK(tsr_array_from_data(&i8, bytes, TSR_INT8, shape, 2));
  CHECK_OK(tsr_transpose(&ht, h, NULL, 0, NULL));
  CHECK_OK(tsr_reshape(&hr, ht, (int64_t[]){6}, 1, NULL));
  uint16_t got_h[6];
  CHECK_OK(tsr_array_read(hr, got_h, sizeof got_h));
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < 2; i++)
      CHECK_EQ_INT(got_h[j * 2 + i], halves[i * 3 + j]);
  CHECK(tsr_array_dtype(hr) == TSR_FLOAT16);
  int64_t start[2] = {1, 2}, stop[2] = {-3, -4}, step[2] = {-1, -1};
  CHECK_OK(tsr_slice(&i8s, i8, start, stop, step, 2, NULL)); /* rows 1, 0; columns 2, 1, 0 */
  int8_t got_b[6];
  CHECK_OK(tsr_array_read(i8s, got_b, sizeof got_b));
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      CHECK_EQ_INT(got_b[i * 3 + j], bytes[(1 - i) * 3 + (2 - j)]);
  tsr_array_release(h), tsr_array_release(ht), tsr_array_release(hr);
  tsr_array_release(i8), tsr_array_release(i8s);
}

static void test_bad_inputs(void) {
  int64_t shape[3] = {2, 3, 4};
  ref_array base;
  ref_iota(&base, shape, 3);
  tsr_array *a = make_f32(&base), *sentinel = (tsr_array *)0x1, *out = sentinel;
  /* transpose */
  int dup[3] = {0, 1, 0}, far[3] = {0, 1, 3}, two[2] = {1, 0};
  CHECK_STATUS(tsr_transpose(&out, a, dup, 3, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis 0 appears twice");
  CHECK_STATUS(tsr_transpose(&out, a, far, 3, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis 3 out of range for a 3-d array [2, 3, 4]");
  CHECK_STATUS(tsr_transpose(&out, a, two, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("2 axes given for a 3-d array");
  CHECK_STATUS(tsr_transpose(&out, a, NULL, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("naxes 2");
  CHECK_STATUS(tsr_transpose(NULL, a, NULL, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  CHECK_STATUS(tsr_transpose(&out, NULL, NULL, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("a is NULL");
  /* reshape */
  int64_t wrong[2] = {5, 5}, two_free[3] = {-1, 4, -1}, uneven[2] = {5, -1}, neg[2] = {-2, -12};
  CHECK_STATUS(tsr_reshape(&out, a, wrong, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("cannot reshape [2, 3, 4] (24 elements) into [5, 5] (25 elements)");
  CHECK_STATUS(tsr_reshape(&out, a, two_free, 3, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("more than one -1 in [-1, 4, -1]");
  CHECK_STATUS(tsr_reshape(&out, a, uneven, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("24 is not a multiple of 5");
  CHECK_STATUS(tsr_reshape(&out, a, neg, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("-2");
  CHECK_STATUS(tsr_reshape(&out, a, NULL, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("shape is NULL");
  CHECK_STATUS(tsr_reshape(&out, a, wrong, 9, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("ndim 9");
  /* slice */
  int64_t start[3] = {0, 0, 0}, stop[3] = {2, 3, 4}, zero_step[3] = {1, 0, 1};
  CHECK_STATUS(tsr_slice(&out, a, start, stop, zero_step, 3, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("step 0 on axis 1");
  CHECK_STATUS(tsr_slice(&out, a, start, stop, NULL, 4, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("naxes 4 outside [0, 3]");
  CHECK_STATUS(tsr_slice(&out, a, start, stop, NULL, -1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("naxes -1");
  CHECK_STATUS(tsr_slice(&out, a, NULL, stop, NULL, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("start is NULL");
  CHECK(out == sentinel);
  tsr_array_release(a);
}

static void test_bad_inputs_reshaping(void) {
  int64_t shape[3] = {2, 3, 4};
  ref_array base;
  ref_iota(&base, shape, 3);
  tsr_array *a = make_f32(&base), *sentinel = (tsr_array *)0x1, *out = sentinel;
  CHECK_STATUS(tsr_expand_dims(&out, a, 4, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis 4 out of range [-4, 3]");
  CHECK_STATUS(tsr_expand_dims(&out, a, -5, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis -5");
  int not_one[1] = {1}, twice[2] = {0, -3}, out_of_range[1] = {3};
  CHECK_STATUS(tsr_squeeze(&out, a, not_one, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis 1 has size 3, not 1");
  CHECK_STATUS(tsr_squeeze(&out, a, out_of_range, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis 3 out of range");
  tsr_array *one = NULL;
  CHECK_OK(tsr_reshape(&one, a, (int64_t[]){1, 1, 24}, 3, NULL));
  CHECK_STATUS(tsr_squeeze(&out, one, twice, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis -3 is named twice");
  tsr_array *eight = NULL;
  CHECK_OK(tsr_reshape(&eight, a, (int64_t[]){1, 1, 1, 1, 1, 2, 3, 4}, 8, NULL));
  CHECK_STATUS(tsr_expand_dims(&out, eight, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("[1, 1, 1, 1, 1, 2, 3, 4] already has the most axes (8)");
  tsr_array_release(eight);
  int64_t bad_to[3] = {2, 5, 4}, fewer[2] = {3, 4}, negative_to[3] = {2, -3, 4};
  CHECK_STATUS(tsr_broadcast_to(&out, a, bad_to, 3, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("[2, 3, 4] does not broadcast to [2, 5, 4] (axis 1: 3 vs 5)");
  CHECK_STATUS(tsr_broadcast_to(&out, a, fewer, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("more axes than the target [3, 4]");
  CHECK_STATUS(tsr_broadcast_to(&out, a, negative_to, 3, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("-3");
  CHECK_STATUS(tsr_contiguous(&out, NULL, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("a is NULL");
  CHECK(out == sentinel);
  tsr_array_release(one);
  tsr_array_release(a);
}

int main(void) {
  test_transpose();
  test_reshape();
  test_slice();
  test_chains();
  test_lazy_inputs();
  test_expand_squeeze();
  test_broadcast_contiguous();
  test_lifetime();
  test_zero_size();
  test_dtypes();
  test_bad_inputs();
  test_bad_inputs_reshaping();
  tsr_memory_clear_cache(cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}

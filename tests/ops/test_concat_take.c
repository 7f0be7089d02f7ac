/* tests/ops/test_concat_take.c — concatenate (more pieces than a node's inputs, zero-size
 * pieces, non-contiguous pieces), take (every integer index dtype, embedding lookups, scalar and
 * strided indices) and take_along_axis (broadcasting) against float64 references indexed by
 * hand; results are exact (elements are moved, never computed). Also indices out of range at
 * evaluation and every bad argument. Not slice_update (test_slice_update.c). */
#include "check.h"

static const tsr_device cpu = {TSR_CPU, 0};

static tsr_array *iota_f32(const int64_t *shape, int ndim, float first) {
  static float data[8192];
  int64_t size = 1;
  for (int i = 0; i < ndim; i++)
    size *= shape[i];
  CHECK(size <= 8192);
  for (int64_t i = 0; i < size; i++)
    data[i] = first + (float)i;
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, data, TSR_FLOAT32, shape, ndim));
  return a;
}

static void read_f32(tsr_array *a, float *dst) {
  CHECK_OK(tsr_array_read(a, dst, (size_t)tsr_array_size(a) * sizeof(float)));
}

/* ---- concatenate --------------------------------------------------------------------------- */

/* Joins `n` arrays [rows, cols_i] along axis 1 (given as -1), piece i holding 1000*i + its own
   row-major position; the reference places each element by hand. */
static void check_concat_columns(const int64_t *cols, int n, int64_t rows) {
  tsr_array *pieces[80], *out = NULL;
  int64_t total = 0;
  CHECK(n <= 80);
  for (int i = 0; i < n; i++) {
    int64_t shape[2] = {rows, cols[i]};
    pieces[i] = iota_f32(shape, 2, 1000.0f * (float)i);
    total += cols[i];
  }
  CHECK_OK(tsr_concatenate(&out, pieces, n, -1, NULL));
  CHECK_EQ_INT(tsr_array_dim(out, 0), rows);
  CHECK_EQ_INT(tsr_array_dim(out, 1), total);
  static float got[8192];
  read_f32(out, got);
  for (int64_t r = 0; r < rows; r++) {
    int64_t column = 0;
    for (int i = 0; i < n; i++)
      for (int64_t c = 0; c < cols[i]; c++, column++) {
        double want = 1000.0 * i + (double)(r * cols[i] + c);
        if ((double)got[r * total + column] != want)
          CHECK_FAIL_("n %d: [%lld, %lld] is %g, want %g", n, (long long)r, (long long)column,
                      (double)got[r * total + column], want);
      }
  }
  for (int i = 0; i < n; i++)
    tsr_array_release(pieces[i]);
  tsr_array_release(out);
}

static void test_concatenate_many(void) {
  int64_t cols[80];
  for (int i = 0; i < 80; i++)
    cols[i] = (i * 7) % 4; /* 0, 3, 2, 1, ...: every fourth piece has zero columns */
  check_concat_columns(cols, 2, 3);
  check_concat_columns(cols, 8, 3);  /* one node */
  check_concat_columns(cols, 9, 2);  /* a group of 8 and a piece passed through */
  check_concat_columns(cols, 17, 2); /* three groups */
  check_concat_columns(cols, 65, 2); /* two levels of groups */
  check_concat_columns(cols, 80, 1);
  int64_t empty[3] = {0, 0, 0};
  check_concat_columns(empty, 3, 4); /* nothing at all */
  check_concat_columns(cols, 3, 0);  /* zero rows */
}

/* Axis 0 of 3-d pieces, one of them a transposed view and one a reversed slice. */
static void test_concatenate_views(void) {
  int64_t s0[3] = {1, 2, 3}, s1[3] = {3, 2, 2}, s2[3] = {2, 2, 3};
  tsr_array *a = iota_f32(s0, 3, 0.0f), *base1 = iota_f32(s1, 3, 100.0f), *t = NULL;
  tsr_array *base2 = iota_f32(s2, 3, 200.0f), *r = NULL, *out = NULL;
  int perm[3] = {2, 1, 0}; /* base1 [3, 2, 2] -> [2, 2, 3] */
  CHECK_OK(tsr_transpose(&t, base1, perm, 3, NULL));
  int64_t start[1] = {1}, stop[1] = {INT64_MIN}, step[1] = {-1};
  CHECK_OK(tsr_slice(&r, base2, start, stop, step, 1, NULL)); /* rows 1, 0 */
  tsr_array *pieces[3] = {a, t, r};
  CHECK_OK(tsr_concatenate(&out, pieces, 3, 0, NULL));
  float got[30];
  CHECK_EQ_INT(tsr_array_dim(out, 0), 5);
  read_f32(out, got);
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 2; j++)
      for (int k = 0; k < 3; k++) {
        double want;
        if (i == 0)
          want = j * 3 + k;
        else if (i < 3)
          want = 100.0 + (double)(k * 4 + j * 2 + (i - 1)); /* base1[k][j][i-1] */
        else
          want = 200.0 + (double)((4 - i) * 6 + j * 3 + k); /* base2[1 - (i - 3)][j][k] */
        CHECK((double)got[(i * 2 + j) * 3 + k] == want);
      }
  /* One piece is a copy into a fresh buffer. */
  tsr_array *single = NULL;
  CHECK_OK(tsr_concatenate(&single, &t, 1, 1, NULL));
  float got_t[12];
  read_f32(single, got_t);
  for (int i = 0; i < 12; i++)
    CHECK((double)got_t[i] == 100.0 + (double)((i % 3) * 4 + ((i / 3) % 2) * 2 + i / 6));
  void *ptr = NULL;
  CHECK_OK(tsr_array_data(single, &ptr));
  tsr_array *all[6] = {a, base1, t, base2, r, out};
  for (int i = 0; i < 6; i++)
    tsr_array_release(all[i]);
  tsr_array_release(single);
}

static void test_concatenate_dtypes(void) {
  int8_t x[4] = {-128, -1, 1, 127}, y[2] = {5, -5};
  uint16_t h[2] = {0x7e01, 0x8000}, k[3] = {0x3c00, 0xfc00, 0x0001};
  tsr_array *a = NULL, *b = NULL, *c = NULL, *d = NULL, *ab = NULL, *cd = NULL;
  CHECK_OK(tsr_array_from_data(&a, x, TSR_INT8, (int64_t[]){2, 2}, 2));
  CHECK_OK(tsr_array_from_data(&b, y, TSR_INT8, (int64_t[]){2, 1}, 2));
  CHECK_OK(tsr_array_from_data(&c, h, TSR_FLOAT16, (int64_t[]){2}, 1));
  CHECK_OK(tsr_array_from_data(&d, k, TSR_FLOAT16, (int64_t[]){3}, 1));
  tsr_array *p1[2] = {a, b}, *p2[2] = {c, d};
  CHECK_OK(tsr_concatenate(&ab, p1, 2, 1, NULL));
  CHECK_OK(tsr_concatenate(&cd, p2, 2, 0, NULL));
  int8_t got_b[6], want_b[6] = {-128, -1, 5, 1, 127, -5};
  uint16_t got_h[5], want_h[5] = {0x7e01, 0x8000, 0x3c00, 0xfc00, 0x0001};
  CHECK_OK(tsr_array_read(ab, got_b, sizeof got_b));
  CHECK_OK(tsr_array_read(cd, got_h, sizeof got_h));
  for (int i = 0; i < 6; i++)
    CHECK_EQ_INT(got_b[i], want_b[i]);
  for (int i = 0; i < 5; i++)
    CHECK_EQ_INT(got_h[i], want_h[i]); /* bit patterns, NaN included */
  tsr_array *all[6] = {a, b, c, d, ab, cd};
  for (int i = 0; i < 6; i++)
    tsr_array_release(all[i]);
}

/* ---- take ---------------------------------------------------------------------------------- */

static tsr_array *indices_of(const int64_t *values, const int64_t *shape, int ndim,
                             tsr_dtype dtype) {
  unsigned char data[1024];
  int64_t size = 1;
  for (int i = 0; i < ndim; i++)
    size *= shape[i];
  for (int64_t i = 0; i < size; i++) {
    int64_t v = values[i];
    switch (dtype) {
      case TSR_UINT8:
        data[i] = (uint8_t)v;
        break;
      case TSR_INT8:
        ((int8_t *)(void *)data)[i] = (int8_t)v;
        break;
      case TSR_UINT32:
        ((uint32_t *)(void *)data)[i] = (uint32_t)v;
        break;
      case TSR_INT32:
        ((int32_t *)(void *)data)[i] = (int32_t)v;
        break;
      default:
        ((int64_t *)(void *)data)[i] = v;
        break;
    }
  }
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, data, dtype, shape, ndim));
  return a;
}

/* An embedding table [vocab, dim] looked up with token ids [B, T] in every integer dtype. */
static void test_take_embedding(void) {
  int64_t table_shape[2] = {10, 4}, ids_shape[2] = {2, 3};
  int64_t ids[6] = {3, 0, 9, 9, 5, 1};
  tsr_array *table = iota_f32(table_shape, 2, 0.0f);
  tsr_dtype dtypes[5] = {TSR_UINT8, TSR_INT8, TSR_UINT32, TSR_INT32, TSR_INT64};
  for (int k = 0; k < 5; k++) {
    tsr_array *idx = indices_of(ids, ids_shape, 2, dtypes[k]), *out = NULL;
    CHECK_OK(tsr_take(&out, table, idx, 0, NULL));
    CHECK_EQ_INT(tsr_array_ndim(out), 3);
    CHECK_EQ_INT(tsr_array_dim(out, 2), 4);
    float got[24];
    read_f32(out, got);
    for (int t = 0; t < 6; t++)
      for (int j = 0; j < 4; j++)
        CHECK((double)got[t * 4 + j] == (double)(ids[t] * 4 + j));
    tsr_array_release(idx), tsr_array_release(out);
  }
  tsr_array_release(table);
}

/* take on a middle axis of a transposed array, with strided indices and with a scalar index. */
static void test_take_axes(void) {
  int64_t shape[3] = {4, 3, 5}; /* a[i][j][k] = 15 i + 5 j + k */
  tsr_array *a = iota_f32(shape, 3, 0.0f), *t = NULL, *idx = NULL, *strided = NULL, *out = NULL;
  int perm[3] = {2, 0, 1}; /* t [5, 4, 3]: t[k][i][j] = a[i][j][k] */
  CHECK_OK(tsr_transpose(&t, a, perm, 3, NULL));
  int64_t values[8] = {2, 0, 3, 1, 1, 3, 0, 2}, ishape[2] = {2, 4};
  idx = indices_of(values, ishape, 2, TSR_INT32);
  int64_t start[2] = {1, 3}, stop[2] = {-3, INT64_MIN}, step[2] = {-1, -2};
  CHECK_OK(tsr_slice(&strided, idx, start, stop, step, 2, NULL)); /* [2, 2]: rows 1,0; cols 3,1 */
  CHECK_OK(tsr_take(&out, t, strided, 1, NULL));                  /* [5, 2, 2, 3] */
  float got[60];
  read_f32(out, got);
  for (int k = 0; k < 5; k++)
    for (int p = 0; p < 2; p++)
      for (int q = 0; q < 2; q++)
        for (int j = 0; j < 3; j++) {
          int64_t i = values[(1 - p) * 4 + (3 - 2 * q)];
          CHECK((double)got[((k * 2 + p) * 2 + q) * 3 + j] == (double)(15 * i + 5 * j + k));
        }
  tsr_array_release(out);
  /* A 0-d index removes the axis: a[:, :, 4] with axis -1. */
  tsr_array *scalar = indices_of((int64_t[]){4}, NULL, 0, TSR_INT64);
  CHECK_OK(tsr_take(&out, a, scalar, -1, NULL));
  CHECK_EQ_INT(tsr_array_ndim(out), 2);
  float got2[12];
  read_f32(out, got2);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++)
      CHECK((double)got2[i * 3 + j] == (double)(15 * i + 5 * j + 4));
  tsr_array_release(out);
  /* Empty indices give an empty result; a zero-size axis with no indices is fine. */
  tsr_array *none = indices_of(values, (int64_t[]){0, 2}, 2, TSR_INT32);
  CHECK_OK(tsr_take(&out, a, none, 1, NULL));
  CHECK_EQ_INT(tsr_array_size(out), 0);
  CHECK_OK(tsr_array_read(out, NULL, 0));
  tsr_array_release(out);
  tsr_array *all[5] = {a, t, idx, strided, scalar};
  for (int i = 0; i < 5; i++)
    tsr_array_release(all[i]);
  tsr_array_release(none);
}

static void test_take_along_axis(void) {
  int64_t shape[2] = {3, 4}; /* a[i][j] = 4 i + j */
  tsr_array *a = iota_f32(shape, 2, 0.0f), *out = NULL;
  /* Same shape on the other axis: per-row picks along axis 1. */
  int64_t v1[6] = {3, 0, 1, 1, 2, 3};
  tsr_array *i1 = indices_of(v1, (int64_t[]){3, 2}, 2, TSR_INT32);
  CHECK_OK(tsr_take_along_axis(&out, a, i1, 1, NULL));
  float got[24];
  read_f32(out, got);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++)
      CHECK((double)got[i * 2 + j] == (double)(4 * i + v1[i * 2 + j]));
  tsr_array_release(out);
  /* Indices [1, 2] broadcast over a's rows; along axis 0 with indices [2, 1] over columns. */
  int64_t v2[2] = {2, 0};
  tsr_array *i2 = indices_of(v2, (int64_t[]){1, 2}, 2, TSR_UINT8);
  CHECK_OK(tsr_take_along_axis(&out, a, i2, -1, NULL));
  CHECK_EQ_INT(tsr_array_dim(out, 0), 3);
  read_f32(out, got);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++)
      CHECK((double)got[i * 2 + j] == (double)(4 * i + v2[j]));
  tsr_array_release(out);
  int64_t v3[2] = {2, 1};
  tsr_array *i3 = indices_of(v3, (int64_t[]){2, 1}, 2, TSR_INT64);
  CHECK_OK(tsr_take_along_axis(&out, a, i3, 0, NULL)); /* [2, 4] */
  read_f32(out, got);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++)
      CHECK((double)got[i * 4 + j] == (double)(4 * v3[i] + j));
  tsr_array_release(out);
  /* a broadcast too: a row [1, 4] against indices [3, 2]; a transposed a. */
  tsr_array *row = NULL, *t = NULL;
  CHECK_OK(tsr_slice(&row, a, (int64_t[]){2}, (int64_t[]){3}, NULL, 1, NULL));
  CHECK_OK(tsr_take_along_axis(&out, row, i1, 1, NULL));
  read_f32(out, got);
  for (int i = 0; i < 6; i++)
    CHECK((double)got[i] == (double)(8 + v1[i]));
  tsr_array_release(out);
  CHECK_OK(tsr_transpose(&t, a, NULL, 0, NULL)); /* [4, 3]: t[j][i] = 4 i + j */
  int64_t v4[6] = {3, 0, 1, 1, 2, 0};
  tsr_array *i4 = indices_of(v4, (int64_t[]){2, 3}, 2, TSR_INT8);
  CHECK_OK(tsr_take_along_axis(&out, t, i4, 0, NULL));
  read_f32(out, got); /* [2, 3]: out[p][i] = t[v4[p][i]][i] */
  for (int p = 0; p < 2; p++)
    for (int i = 0; i < 3; i++)
      CHECK((double)got[p * 3 + i] == (double)(4 * i + v4[p * 3 + i]));
  tsr_array_release(out);
  tsr_array *all[7] = {a, i1, i2, i3, row, t, i4};
  for (int i = 0; i < 7; i++)
    tsr_array_release(all[i]);
}

/* An index outside [0, dim) fails at evaluation with its value and place; inputs stay usable. */
static void test_out_of_range(void) {
  int64_t shape[2] = {5, 2};
  tsr_array *a = iota_f32(shape, 2, 0.0f), *out = NULL, *again = NULL;
  int64_t bad[4] = {0, 4, 5, 1}, negative[3] = {2, -1, 0};
  tsr_array *idx = indices_of(bad, (int64_t[]){2, 2}, 2, TSR_INT64);
  CHECK_OK(tsr_take(&out, a, idx, 0, NULL)); /* the values are data: accepted here */
  CHECK_STATUS(tsr_eval(&out, 1), TSR_ERR_INVALID);
  CHECK_MESSAGE("index 5 at indices[1, 0]");
  CHECK_MESSAGE("[0, 5)");
  CHECK_MESSAGE("take");
  float got[10];
  CHECK_STATUS(tsr_array_read(out, got, 2 * 2 * 2 * sizeof(float)), TSR_ERR_INVALID);
  CHECK_MESSAGE("index 5"); /* stays failed */
  tsr_array_release(out);
  read_f32(a, got); /* the inputs are intact */
  for (int i = 0; i < 10; i++)
    CHECK((double)got[i] == (double)i);
  tsr_array *neg = indices_of(negative, (int64_t[]){3}, 1, TSR_INT8);
  CHECK_OK(tsr_take(&out, a, neg, 0, NULL));
  CHECK_STATUS(tsr_eval(&out, 1), TSR_ERR_INVALID);
  CHECK_MESSAGE("index -1 at indices[1]"); /* negative indices are not wrapped */
  tsr_array_release(out);
  tsr_array *along = indices_of(bad, (int64_t[]){1, 4}, 2, TSR_INT32);
  CHECK_OK(tsr_take_along_axis(&out, a, along, 1, NULL));
  CHECK_STATUS(tsr_eval(&out, 1), TSR_ERR_INVALID);
  CHECK_MESSAGE("index 4 at indices[0, 1]");
  CHECK_MESSAGE("[0, 2)");
  tsr_array_release(out);
  /* The same indices rebuilt against a large enough axis evaluate fine. */
  int64_t big[2] = {8, 3};
  tsr_array *b = iota_f32(big, 2, 0.0f);
  CHECK_OK(tsr_take(&again, b, idx, 0, NULL));
  CHECK_OK(tsr_eval(&again, 1));
  tsr_array *all[6] = {a, idx, neg, along, b, again};
  for (int i = 0; i < 6; i++)
    tsr_array_release(all[i]);
}

static void test_bad_inputs(void) {
  tsr_array *a = iota_f32((int64_t[]){2, 3}, 2, 0.0f), *b = iota_f32((int64_t[]){3, 3}, 2, 0.0f);
  tsr_array *c = NULL, *sentinel = (tsr_array *)0x1, *out = sentinel;
  CHECK_OK(tsr_array_from_data(&c, (int32_t[]){1, 2, 3, 4, 5, 6}, TSR_INT32, (int64_t[]){2, 3}, 2));
  /* concatenate */
  tsr_array *mismatch[2] = {a, b}, *mixed[2] = {a, c}, *holes[2] = {a, NULL};
  CHECK_STATUS(tsr_concatenate(&out, mismatch, 2, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("arrays[1] [3, 3] does not match arrays[0] [2, 3] outside axis 1");
  CHECK_OK(tsr_concatenate(&out, mismatch, 2, 0, NULL)); /* fine along axis 0 */
  tsr_array_release(out);
  out = sentinel;
  CHECK_STATUS(tsr_concatenate(&out, mixed, 2, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("arrays[1] is int32, arrays[0] is float32");
  CHECK_STATUS(tsr_concatenate(&out, mismatch, 0, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("n is 0");
  CHECK_STATUS(tsr_concatenate(&out, holes, 2, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("arrays[1] is NULL");
  CHECK_STATUS(tsr_concatenate(&out, mismatch, 2, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis 2 out of range for a 2-d array [2, 3]");
  CHECK_STATUS(tsr_concatenate(&out, NULL, 2, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("arrays is NULL");
  tsr_array *flat = iota_f32((int64_t[]){6}, 1, 0.0f), *ranks[2] = {a, flat};
  CHECK_STATUS(tsr_concatenate(&out, ranks, 2, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("arrays[1] [6]");
  /* take / take_along_axis */
  tsr_array *float_idx = iota_f32((int64_t[]){2}, 1, 0.0f), *bool_idx = NULL;
  CHECK_OK(tsr_array_from_data(&bool_idx, (uint8_t[]){1, 0}, TSR_BOOL, (int64_t[]){2}, 1));
  CHECK_STATUS(tsr_take(&out, a, float_idx, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("integer dtype, not float32");
  CHECK_STATUS(tsr_take(&out, a, bool_idx, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("not bool");
  CHECK_STATUS(tsr_take(&out, a, c, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis 2 out of range");
  CHECK_STATUS(tsr_take(&out, a, c, -3, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis -3");
  CHECK_STATUS(tsr_take(&out, a, NULL, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("indices is NULL");
  CHECK_STATUS(tsr_take(NULL, a, c, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  tsr_array *deep = NULL, *deep_idx = NULL;
  CHECK_OK(tsr_array_from_data(&deep, (float[]){0}, TSR_FLOAT32, (int64_t[]){1, 1, 1, 1, 1}, 5));
  CHECK_OK(
      tsr_array_from_data(&deep_idx, (int32_t[]){0}, TSR_INT32, (int64_t[]){1, 1, 1, 1, 1}, 5));
  CHECK_STATUS(tsr_take(&out, deep, deep_idx, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("gives 9 axes");
  CHECK_STATUS(tsr_take_along_axis(&out, a, float_idx, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("float32");
  tsr_array *flat_idx = indices_of((int64_t[]){0, 1}, (int64_t[]){2}, 1, TSR_INT32);
  CHECK_STATUS(tsr_take_along_axis(&out, a, flat_idx, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("indices [2] must have as many axes as a [2, 3]");
  tsr_array *wide = indices_of((int64_t[]){0, 1, 0, 1}, (int64_t[]){1, 4}, 2, TSR_INT32);
  CHECK_STATUS(tsr_take_along_axis(&out, a, wide, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis 1: 4 vs 3");
  CHECK(out == sentinel);
  tsr_array *all[10] = {a, b, c, flat, float_idx, bool_idx, deep, deep_idx, flat_idx, wide};
  for (int i = 0; i < 10; i++)
    tsr_array_release(all[i]);
}

int main(void) {
  test_concatenate_many();
  test_concatenate_views();
  test_concatenate_dtypes();
  test_take_embedding();
  test_take_axes();
  test_take_along_axis();
  test_out_of_range();
  test_bad_inputs();
  tsr_memory_clear_cache(cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}

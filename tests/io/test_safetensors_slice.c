/* tests/io/test_safetensors_slice.c — tsr_safetensors_load_slice, what a tensor-parallel rank
 * reads of each weight: rows of axis 0 (a contiguous byte range: wrapped in the mapping, only its
 * bytes on the ledger), columns of the last axis and the middle axis of a 3-d tensor (gathered
 * into a copy of only the slice's bytes), empty and whole slices, and the refusals (axis or range
 * outside the tensor, an unknown name). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/test_safetensors.h"

static const tsr_device cpu = {TSR_CPU, 0};

enum { A = 3, B = 4, C = 5 };

/* value of element (i, j, k) of the [A, B, C] float32 tensor "t3"; "t2" is [A * B, C]. */
static float value_at(int64_t i, int64_t j, int64_t k) {
  return (float)(i * 100 + j * 10 + k);
}

static const char *save_tensors(void) {
  float data[A * B * C];
  for (int64_t i = 0; i < A; i++)
    for (int64_t j = 0; j < B; j++)
      for (int64_t k = 0; k < C; k++)
        data[(i * B + j) * C + k] = value_at(i, j, k);
  tsr_array *arrays[2] = {NULL, NULL};
  CHECK_OK(tsr_array_from_data_on(&arrays[0], data, TSR_FLOAT32, (int64_t[]){A, B, C}, 3, cpu));
  CHECK_OK(tsr_array_from_data_on(&arrays[1], data, TSR_FLOAT32, (int64_t[]){A * B, C}, 2, cpu));
  const char *names[] = {"t3", "t2"};
  const char *path = st_path("slice.safetensors");
  CHECK_OK(tsr_safetensors_save(path, names, arrays, 2, NULL, NULL, 0));
  tsr_array_release(arrays[0]);
  tsr_array_release(arrays[1]);
  return path;
}

/* Loads t3[.., start:stop on axis, ..] and checks its shape and every value. */
static void check_t3_slice(tsr_safetensors *st, int axis, int64_t start, int64_t stop) {
  tsr_array *a = NULL;
  CHECK_OK(tsr_safetensors_load_slice(&a, st, "t3", axis, start, stop, cpu));
  int64_t dims[3] = {A, B, C};
  dims[axis] = stop - start;
  for (int d = 0; d < 3; d++)
    CHECK_EQ_INT(tsr_array_dim(a, d), dims[d]);
  size_t n = (size_t)(dims[0] * dims[1] * dims[2]);
  float *got = malloc(n * sizeof *got + 1);
  CHECK_OK(tsr_array_read(a, got, n * sizeof *got));
  for (int64_t i = 0; i < dims[0]; i++)
    for (int64_t j = 0; j < dims[1]; j++)
      for (int64_t k = 0; k < dims[2]; k++) {
        int64_t at[3] = {i, j, k};
        at[axis] += start;
        float want = value_at(at[0], at[1], at[2]);
        float have = got[(i * dims[1] + j) * dims[2] + k];
        if (have != want)
          CHECK_FAIL_("axis %d [%lld, %lld): (%lld, %lld, %lld) is %g, want %g", axis,
                      (long long)start, (long long)stop, (long long)i, (long long)j, (long long)k,
                      (double)have, (double)want);
      }
  free(got);
  tsr_array_release(a);
}

static void test_values(tsr_safetensors *st) {
  check_t3_slice(st, 0, 1, 3); /* whole [B, C] blocks: contiguous */
  check_t3_slice(st, 1, 1, 3); /* middle axis: A pieces gathered */
  check_t3_slice(st, 2, 2, 5); /* last axis: A * B pieces gathered */
  check_t3_slice(st, 2, 0, 5); /* the whole tensor */
  check_t3_slice(st, 1, 2, 2); /* empty */
}

/* Rows of a 2-d tensor are the file's bytes in place, and only they are on the ledger; a column
 * slice is a copy of exactly its bytes. */
static void test_ledger(tsr_safetensors *st) {
  tsr_array *rows = NULL, *cols = NULL, *whole = NULL;
  CHECK_EQ_U64(st_active_bytes(), 0);
  CHECK_OK(tsr_safetensors_load_slice(&rows, st, "t2", 0, 4, 8, cpu));
  CHECK_EQ_U64(st_active_bytes(), 4 * C * sizeof(float));
  CHECK_OK(tsr_safetensors_load(&whole, st, "t2", cpu));
  void *p = NULL, *q = NULL;
  CHECK_OK(tsr_array_data(rows, &p));
  CHECK_OK(tsr_array_data(whole, &q));
  CHECK((char *)p == (char *)q + 4 * C * sizeof(float));
  tsr_array_release(whole);
  tsr_array_release(rows);
  CHECK_EQ_U64(st_active_bytes(), 0);
  CHECK_OK(tsr_safetensors_load_slice(&cols, st, "t2", 1, 0, 2, cpu));
  float got[A * B * 2];
  CHECK_OK(tsr_array_read(cols, got, sizeof got));
  for (int64_t r = 0; r < A * B; r++)
    CHECK(got[r * 2 + 1] == value_at(r / B, r % B, 1));
  tsr_array_release(cols);
}

static void test_refusals(tsr_safetensors *st) {
  tsr_array *a = NULL;
  CHECK_STATUS(tsr_safetensors_load_slice(&a, st, "t3", 3, 0, 1, cpu), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis 3");
  CHECK_STATUS(tsr_safetensors_load_slice(&a, st, "t3", 1, 2, 5, cpu), TSR_ERR_INVALID);
  CHECK_MESSAGE("[2, 5)");
  CHECK_STATUS(tsr_safetensors_load_slice(&a, st, "t3", 1, 3, 2, cpu), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_safetensors_load_slice(&a, st, "nope", 0, 0, 1, cpu), TSR_ERR_INVALID);
  CHECK_MESSAGE("nope");
  CHECK_STATUS(tsr_safetensors_load_slice(NULL, st, "t3", 0, 0, 1, cpu), TSR_ERR_INVALID);
  CHECK(a == NULL);
}

int main(void) {
  st_make_tmp_dir("test_safetensors_slice");
  const char *path = save_tensors();
  tsr_safetensors *st = NULL;
  CHECK_OK(tsr_safetensors_open(&st, path));
  test_values(st);
  test_ledger(st);
  test_refusals(st);
  tsr_safetensors_close(st);
  st_remove_tmp_dir();
  tsr_memory_clear_cache(cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  printf("test_safetensors_slice: ok\n");
  return 0;
}

/* tests/core/test_bad_inputs.c — every bad input of the array, evaluation and device functions
 * returns a status with a message naming the values, leaves out-params untouched, and aborts
 * nothing. */
#include "check.h"

static const tsr_device cpu = {TSR_CPU, 0};

static void test_from_data(void) {
  float xs[4] = {1, 2, 3, 4};
  int64_t shape[2] = {2, 2}, negative[2] = {2, -3}, huge[2] = {INT64_MAX / 2, 3};
  int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  tsr_array *sentinel = (tsr_array *)0x1, *a = sentinel;
  CHECK_STATUS(tsr_array_from_data(NULL, xs, TSR_FLOAT32, shape, 2), TSR_ERR_INVALID);
  CHECK_MESSAGE("out");
  CHECK_STATUS(tsr_array_from_data(&a, xs, TSR_FLOAT32, negative, 2), TSR_ERR_INVALID);
  CHECK_MESSAGE("-3");
  CHECK_STATUS(tsr_array_from_data(&a, xs, TSR_FLOAT32, huge, 2), TSR_ERR_INVALID);
  CHECK_MESSAGE("overflows");
  CHECK_STATUS(tsr_array_from_data(&a, xs, TSR_FLOAT32, nine, 9), TSR_ERR_INVALID);
  CHECK_MESSAGE("ndim 9");
  CHECK_STATUS(tsr_array_from_data(&a, xs, TSR_FLOAT32, shape, -1), TSR_ERR_INVALID);
  CHECK_MESSAGE("ndim -1");
  CHECK_STATUS(tsr_array_from_data(&a, xs, TSR_FLOAT32, NULL, 2), TSR_ERR_INVALID);
  CHECK_MESSAGE("shape is NULL");
  CHECK_STATUS(tsr_array_from_data(&a, xs, (tsr_dtype)42, shape, 2), TSR_ERR_INVALID);
  CHECK_MESSAGE("42");
  CHECK_STATUS(tsr_array_from_data(&a, NULL, TSR_FLOAT32, shape, 2), TSR_ERR_INVALID);
  CHECK_MESSAGE("4 elements");
  tsr_device gpu7 = {TSR_GPU, 7}, weird = {(tsr_device_type)5, 0};
  CHECK_STATUS(tsr_array_from_data_on(&a, xs, TSR_FLOAT32, shape, 2, gpu7), TSR_ERR_DEVICE);
  CHECK_MESSAGE("gpu:7");
  CHECK_STATUS(tsr_array_from_data_on(&a, xs, TSR_FLOAT32, shape, 2, weird), TSR_ERR_DEVICE);
  CHECK_STATUS(tsr_array_from_external(&a, NULL, TSR_FLOAT32, shape, 2, cpu, NULL, NULL),
               TSR_ERR_INVALID);
  CHECK_STATUS(tsr_array_from_external(&a, xs, TSR_FLOAT32, negative, 2, cpu, NULL, NULL),
               TSR_ERR_INVALID);
  CHECK(a == sentinel); /* untouched by every failure */
}

static void test_read_and_data(void) {
  float xs[6] = {1, 2, 3, 4, 5, 6}, got[6];
  int64_t shape[2] = {2, 3};
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, xs, TSR_FLOAT32, shape, 2));
  CHECK_STATUS(tsr_array_read(a, got, sizeof got - 1), TSR_ERR_INVALID);
  CHECK_MESSAGE("23");
  CHECK_MESSAGE("24");
  CHECK_STATUS(tsr_array_read(a, got, 12), TSR_ERR_INVALID); /* float16-sized reader */
  CHECK_STATUS(tsr_array_read(a, NULL, sizeof got), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_array_read(NULL, got, sizeof got), TSR_ERR_INVALID);
  void *ptr = NULL;
  CHECK_STATUS(tsr_array_data(NULL, &ptr), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_array_data(a, NULL), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_array_record_stream(NULL, NULL), TSR_ERR_INVALID);
  CHECK_OK(tsr_array_record_stream(a, NULL));
  CHECK_EQ_INT(tsr_array_dim(a, 2), -1);
  CHECK_EQ_INT(tsr_array_dim(a, -3), -1);
  CHECK_EQ_INT(tsr_array_dim(a, -2), 2);
  CHECK_EQ_INT(tsr_array_dim(NULL, 0), -1);
  CHECK_EQ_INT(tsr_array_ndim(NULL), -1);
  CHECK_EQ_INT(tsr_array_size(NULL), -1);
  /* Not float32: a NULL must not pass for a valid array. */
  tsr_dtype no_dtype = tsr_array_dtype(NULL);
  CHECK(no_dtype == (tsr_dtype)-1);
  CHECK_MESSAGE("array_dtype: array is NULL");
  CHECK_EQ_INT((int)tsr_dtype_size(no_dtype), 0);
  CHECK(strcmp(tsr_dtype_name(no_dtype), "unknown") == 0);
  CHECK(tsr_array_retain(NULL) == NULL);
  tsr_array_release(NULL);
  tsr_array *copy = NULL, *sentinel = (tsr_array *)0x1, *out = sentinel;
  tsr_device gpu3 = {TSR_GPU, 3};
  CHECK_STATUS(tsr_to_device(&out, a, gpu3, NULL), TSR_ERR_DEVICE);
  CHECK_MESSAGE("gpu:3");
  CHECK_STATUS(tsr_to_device(NULL, a, cpu, NULL), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_to_device(&out, NULL, cpu, NULL), TSR_ERR_INVALID);
  CHECK(out == sentinel);
  CHECK_OK(tsr_to_device(&copy, a, cpu, NULL));
  CHECK_OK(tsr_array_read(copy, got, sizeof got));
  for (int i = 0; i < 6; i++)
    CHECK(got[i] == xs[i]);
  CHECK_STATUS(tsr_add(NULL, a, a, NULL), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_add(&out, NULL, a, NULL), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_add(&out, a, NULL, NULL), TSR_ERR_INVALID);
  CHECK(out == sentinel);
  tsr_array_release(a), tsr_array_release(copy);
}

static void test_devices(void) {
  tsr_device gpu0 = {TSR_GPU, 0}, cpu2 = {TSR_CPU, 2};
  CHECK(tsr_default_device().type == TSR_CPU || tsr_device_count(TSR_GPU) > 0);
  CHECK_STATUS(tsr_set_default_device(cpu2), TSR_ERR_DEVICE);
  CHECK_MESSAGE("cpu");
  if (tsr_device_count(TSR_GPU) == 0) {
    CHECK_STATUS(tsr_set_default_device(gpu0), TSR_ERR_DEVICE);
    CHECK_MESSAGE("gpu:0");
  }
  CHECK_OK(tsr_set_default_device(cpu));
  CHECK(tsr_default_device().type == TSR_CPU);
  CHECK(tsr_dtype_size((tsr_dtype)99) == 0);
}

int main(void) {
  test_from_data();
  test_read_and_data();
  test_devices();
  CHECK_OK(tsr_stream_synchronize(NULL)); /* record_stream's hold is dropped in stream order */
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_bad_inputs: ok");
  return 0;
}

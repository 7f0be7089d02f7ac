/* tests/base/test_dtype.c — every dtype's size and name, and what a value outside the enum gets;
 * not type promotion (the ops tests check that through tsr_add). */
#include "check.h"

int main(void) {
  static const struct {
    tsr_dtype dtype;
    size_t bytes;
    const char *name;
  } expected[] = {
      {TSR_BOOL, 1, "bool"},       {TSR_UINT8, 1, "uint8"},       {TSR_UINT32, 4, "uint32"},
      {TSR_INT8, 1, "int8"},       {TSR_INT32, 4, "int32"},       {TSR_INT64, 8, "int64"},
      {TSR_FLOAT16, 2, "float16"}, {TSR_BFLOAT16, 2, "bfloat16"}, {TSR_FLOAT32, 4, "float32"},
  };
  enum { DTYPE_COUNT = sizeof expected / sizeof expected[0] };
  for (int i = 0; i < DTYPE_COUNT; i++) {
    /* The enum values are the ABI: listed in order from 0. */
    CHECK_EQ_INT(expected[i].dtype, i);
    CHECK_EQ_U64(tsr_dtype_size(expected[i].dtype), expected[i].bytes);
    const char *name = tsr_dtype_name(expected[i].dtype);
    CHECK(name != NULL);
    if (strcmp(name, expected[i].name) != 0)
      CHECK_FAIL_("dtype %d is named \"%s\", want \"%s\"", i, name, expected[i].name);
  }
  static const int outside[] = {DTYPE_COUNT, DTYPE_COUNT + 1, 255, -1, 1 << 30};
  for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
    CHECK_EQ_U64(tsr_dtype_size((tsr_dtype)outside[i]), 0);
    CHECK(strcmp(tsr_dtype_name((tsr_dtype)outside[i]), "unknown") == 0);
  }
  printf("test_dtype: ok\n");
  return 0;
}

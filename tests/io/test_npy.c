/* tests/io/test_npy.c — tessera/io.h against numpy: files numpy wrote (tests/data/npy/, made by
 * tools/gen_npy_fixtures.py) load with their dtype, shape and values; tsr_npy_save writes
 * numpy's exact bytes; every dtype and shape (0-d and zero-size included) round-trips; every
 * corrupt or unsupported file is TSR_ERR_IO with a message naming the file; and every array of
 * the quantization golden data (tests/data/quant/manifest.json) loads with the dtype and shape
 * its manifest gives. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "tessera/io.h"

/* The data folder: CMake should pass TSR_TEST_DATA_DIR; until it does, tests/data beside this
 * file (CMake compiles sources by absolute path). */
#ifndef TSR_TEST_DATA_DIR
#define TSR_TEST_DATA_DIR ""
#endif

static char data_dir[4096];
static char tmp_dir[64];

static void find_data_dir(void) {
  if (TSR_TEST_DATA_DIR[0]) {
    snprintf(data_dir, sizeof data_dir, "%s", TSR_TEST_DATA_DIR);
    return;
  }
  snprintf(data_dir, sizeof data_dir, "%s", __FILE__);
  char *slash = strstr(data_dir, "/io/test_npy.c");
  if (slash)
    snprintf(slash, sizeof data_dir - (size_t)(slash - data_dir), "/data");
  else
    snprintf(data_dir, sizeof data_dir, "tests/data");
}

static const char *fixture(const char *name) {
  static char path[4200];
  snprintf(path, sizeof path, "%s/npy/%s", data_dir, name);
  return path;
}

static const char *tmp_path(const char *name) {
  static char path[128];
  snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
  return path;
}

static size_t read_file(const char *path, unsigned char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) CHECK_FAIL_("cannot open %s", path);
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

static void write_file(const char *path, const void *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) CHECK_FAIL_("cannot create %s", path);
  if (n && fwrite(bytes, 1, n, f) != n) CHECK_FAIL_("cannot write %s", path);
  fclose(f);
}

static void check_shape(tsr_array *a, int ndim, const int64_t *shape) {
  CHECK_EQ_INT(tsr_array_ndim(a), ndim);
  for (int d = 0; d < ndim; d++)
    CHECK_EQ_INT(tsr_array_dim(a, d), shape[d]);
}

/* Loads `name`, checks dtype and shape, and compares its bytes with `expect`. */
static void check_fixture(const char *name, tsr_dtype dtype, int ndim, const int64_t *shape,
                          const void *expect, size_t bytes, bool reinterpret) {
  tsr_array *a = NULL;
  if (reinterpret)
    CHECK_OK(tsr_npy_load_as(&a, fixture(name), dtype));
  else
    CHECK_OK(tsr_npy_load(&a, fixture(name)));
  CHECK_EQ_INT(tsr_array_dtype(a), dtype);
  check_shape(a, ndim, shape);
  unsigned char got[64];
  CHECK(bytes <= sizeof got);
  CHECK_OK(tsr_array_read(a, got, bytes));
  if (bytes && memcmp(got, expect, bytes) != 0) CHECK_FAIL_("%s: values differ", name);
  tsr_array_release(a);
}

static void test_numpy_fixtures(void) {
  const float f4[6] = {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f};
  check_fixture("f4_2x3.npy", TSR_FLOAT32, 2, (int64_t[]){2, 3}, f4, sizeof f4, false);
  const uint16_t f2[4] = {0x3C00, 0xB800, 0x7BFF, 0x0001}; /* 1, -0.5, 65504, 2^-24 */
  check_fixture("f2_4.npy", TSR_FLOAT16, 1, (int64_t[]){4}, f2, sizeof f2, false);
  const int64_t i8 = -1234567890123;
  check_fixture("i8_scalar.npy", TSR_INT64, 0, NULL, &i8, sizeof i8, false);
  check_fixture("u1_0x5.npy", TSR_UINT8, 2, (int64_t[]){0, 5}, NULL, 0, false);
  const unsigned char b1[7] = {1, 0, 0, 1, 1, 0, 1};
  check_fixture("b1_7.npy", TSR_BOOL, 1, (int64_t[]){7}, b1, sizeof b1, false);
  const uint16_t bf16[4] = {0x3F80, 0xC020, 0x7F80, 0x0001};
  check_fixture("u2_bf16_4.npy", TSR_BFLOAT16, 1, (int64_t[]){4}, bf16, sizeof bf16, true);
  check_fixture("u2_bf16_4.npy", TSR_FLOAT16, 1, (int64_t[]){4}, bf16, sizeof bf16, true);
  const int32_t i4[8] = {-4, -3, -2, -1, 0, 1, 2, 3};
  check_fixture("i4_2x2x2_v2.npy", TSR_INT32, 3, (int64_t[]){2, 2, 2}, i4, sizeof i4, false);
  const uint32_t u4[3] = {0, 1, 0xFFFFFFFFu};
  check_fixture("u4_3_v3.npy", TSR_UINT32, 1, (int64_t[]){3}, u4, sizeof u4, false);
  /* Reinterpretation keeps the bits: '<f4' read as uint32. */
  const uint32_t f4_bits[6] = {0xBF800000u, 0xBF000000u, 0, 0x3F000000u, 0x3F800000u, 0x3FC00000u};
  check_fixture("f4_2x3.npy", TSR_UINT32, 2, (int64_t[]){2, 3}, f4_bits, sizeof f4_bits, true);

  /* '<u2' has no tessera dtype of its own, and Fortran order is refused. */
  tsr_array *a = NULL;
  CHECK_STATUS(tsr_npy_load(&a, fixture("u2_bf16_4.npy")), TSR_ERR_IO);
  CHECK_MESSAGE("u2_bf16_4.npy");
  CHECK_MESSAGE("'<u2'");
  CHECK_MESSAGE("tsr_npy_load_as");
  CHECK(a == NULL);
  CHECK_STATUS(tsr_npy_load(&a, fixture("i1_fortran_2x3.npy")), TSR_ERR_IO);
  CHECK_MESSAGE("i1_fortran_2x3.npy");
  CHECK_MESSAGE("Fortran");
  CHECK(a == NULL);
}

/* tsr_npy_save writes exactly numpy's bytes for the same array. */
static void check_same_bytes_as_numpy(const char *name, tsr_array *a) {
  unsigned char want[512], got[512];
  size_t nwant = read_file(fixture(name), want, sizeof want);
  CHECK_OK(tsr_npy_save(tmp_path(name), a));
  size_t ngot = read_file(tmp_path(name), got, sizeof got);
  CHECK_EQ_U64(ngot, nwant);
  if (memcmp(got, want, nwant) != 0) CHECK_FAIL_("%s: tessera's bytes differ from numpy's", name);
  remove(tmp_path(name));
  tsr_array_release(a);
}

static void test_save_matches_numpy(void) {
  const char *names[] = {"f4_2x3.npy", "f2_4.npy", "i8_scalar.npy", "u1_0x5.npy", "b1_7.npy"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    tsr_array *a = NULL;
    CHECK_OK(tsr_npy_load(&a, fixture(names[i])));
    check_same_bytes_as_numpy(names[i], a);
  }
  tsr_array *bf = NULL; /* a bfloat16 array is saved as numpy's '<u2' */
  CHECK_OK(tsr_npy_load_as(&bf, fixture("u2_bf16_4.npy"), TSR_BFLOAT16));
  check_same_bytes_as_numpy("u2_bf16_4.npy", bf);
}

/* Every dtype through save and load, over shapes 0-d, zero-size and up to 4-d. */
static void test_round_trips(void) {
  const tsr_dtype dtypes[] = {TSR_BOOL,  TSR_UINT8,   TSR_UINT32,   TSR_INT8,   TSR_INT32,
                              TSR_INT64, TSR_FLOAT16, TSR_BFLOAT16, TSR_FLOAT32};
  const int64_t shapes[][4] = {{0}, {0}, {5}, {2, 3}, {3, 0, 2}, {2, 1, 4, 3}, {1, 1, 1, 1}};
  const int ndims[] = {0, 1, 1, 2, 3, 4, 4};
  unsigned char src[24 * 8], back[24 * 8];
  for (size_t i = 0; i < sizeof src; i++)
    src[i] = (unsigned char)(i * 37 + 11);
  for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
    for (size_t s = 0; s < sizeof ndims / sizeof ndims[0]; s++) {
      int64_t count = 1;
      for (int d = 0; d < ndims[s]; d++)
        count *= shapes[s][d];
      size_t bytes = (size_t)count * tsr_dtype_size(dtypes[t]);
      unsigned char data[24 * 8];
      memcpy(data, src, bytes);
      if (dtypes[t] == TSR_BOOL)
        for (size_t i = 0; i < bytes; i++)
          data[i] &= 1;
      tsr_array *a = NULL, *b = NULL;
      CHECK_OK(tsr_array_from_data(&a, data, dtypes[t], shapes[s], ndims[s]));
      CHECK_OK(tsr_npy_save(tmp_path("round.npy"), a));
      if (dtypes[t] == TSR_BFLOAT16)
        CHECK_OK(tsr_npy_load_as(&b, tmp_path("round.npy"), TSR_BFLOAT16));
      else
        CHECK_OK(tsr_npy_load(&b, tmp_path("round.npy")));
      CHECK_EQ_INT(tsr_array_dtype(b), dtypes[t]);
      check_shape(b, ndims[s], shapes[s]);
      CHECK_OK(tsr_array_read(b, back, bytes));
      if (bytes && memcmp(back, data, bytes) != 0)
        CHECK_FAIL_("%s shape #%zu: values changed", tsr_dtype_name(dtypes[t]), s);
      tsr_array_release(a);
      tsr_array_release(b);
    }
  }
  remove(tmp_path("round.npy"));
}

/* A transposed view is written row-major, in its logical order. */
static void test_save_view(void) {
  const int32_t data[6] = {0, 1, 2, 3, 4, 5}; /* [2, 3] */
  const int32_t want[6] = {0, 3, 1, 4, 2, 5}; /* its transpose [3, 2] */
  tsr_array *a = NULL, *t = NULL, *b = NULL;
  CHECK_OK(tsr_array_from_data(&a, data, TSR_INT32, (int64_t[]){2, 3}, 2));
  CHECK_OK(tsr_transpose(&t, a, (int[]){1, 0}, 2, NULL));
  CHECK_OK(tsr_npy_save(tmp_path("view.npy"), t));
  CHECK_OK(tsr_npy_load(&b, tmp_path("view.npy")));
  check_shape(b, 2, (int64_t[]){3, 2});
  int32_t got[6];
  CHECK_OK(tsr_array_read(b, got, sizeof got));
  if (memcmp(got, want, sizeof want) != 0) CHECK_FAIL_("transposed view saved out of order");
  remove(tmp_path("view.npy"));
  tsr_array_release(a);
  tsr_array_release(t);
  tsr_array_release(b);
}

/* Writes a .npy by hand: the preamble of `major`, `header` verbatim, then `data_bytes` bytes. */
static void write_npy(const char *path, int major, const char *header, size_t data_bytes) {
  unsigned char buf[1024];
  size_t hlen = strlen(header), pre = major == 1 ? 10 : 12;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major;
  buf[7] = 0;
  for (size_t i = 0; i < pre - 8; i++)
    buf[8 + i] = (unsigned char)(hlen >> (8 * i));
  memcpy(buf + pre, header, hlen);
  CHECK(pre + hlen + data_bytes <= sizeof buf);
  memset(buf + pre + hlen, 0, data_bytes);
  write_file(path, buf, pre + hlen + data_bytes);
}

/* Loading `name` fails with TSR_ERR_IO naming the file and mentioning `what`. */
static void expect_io_error(const char *name, const char *what) {
  tsr_array *a = NULL;
  CHECK_STATUS(tsr_npy_load(&a, tmp_path(name)), TSR_ERR_IO);
  CHECK(a == NULL);
  CHECK_MESSAGE(tmp_path(name));
  if (!strstr(tsr_last_error(), what))
    CHECK_FAIL_("%s: message \"%s\" should mention \"%s\"", name, tsr_last_error(), what);
  remove(tmp_path(name));
}

#define HEADER(descr, fortran, shape) \
  "{'descr': '" descr "', 'fortran_order': " fortran ", 'shape': " shape ", }\n"

static void test_corrupt_headers(void) {
  write_file(tmp_path("magic.npy"), "\x93NUMPZ\x01\x00\x10\x00{}              ", 26);
  expect_io_error("magic.npy", "bad magic");
  write_file(tmp_path("short.npy"), "\x93NUM", 4);
  expect_io_error("short.npy", "truncated");
  write_file(tmp_path("empty.npy"), "", 0);
  expect_io_error("empty.npy", "truncated");
  write_npy(tmp_path("version.npy"), 4, HEADER("<f4", "False", "(2,)"), 8);
  expect_io_error("version.npy", "version 4.0");
  /* The header length promises more than the file holds. */
  static const char cut[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortra";
  write_file(tmp_path("cut_header.npy"), cut, sizeof cut - 1);
  expect_io_error("cut_header.npy", "truncated header");
  write_npy(tmp_path("cut_dict.npy"), 1, "{'descr': '<f4', 'fortran_order': False, ", 0);
  expect_io_error("cut_dict.npy", "malformed");
  write_npy(tmp_path("cut_data.npy"), 1, HEADER("<f4", "False", "(2, 3)"), 23);
  expect_io_error("cut_data.npy", "truncated data (23 of 24 bytes)");
  write_npy(tmp_path("extra.npy"), 1, HEADER("<f4", "False", "(2, 3)"), 25);
  expect_io_error("extra.npy", "1 bytes after the data");
}

/* Headers that parse but describe what tessera does not read, or sizes that cannot be. */
static void test_unsupported_headers(void) {
  write_npy(tmp_path("fortran.npy"), 1, HEADER("<f4", "True", "(2, 3)"), 24);
  expect_io_error("fortran.npy", "Fortran");
  write_npy(tmp_path("f8.npy"), 1, HEADER("<f8", "False", "(2,)"), 16);
  expect_io_error("f8.npy", "dtype '<f8' is not supported");
  write_npy(tmp_path("c8.npy"), 2, HEADER("<c8", "False", "(2,)"), 16);
  expect_io_error("c8.npy", "'<c8'");
  write_npy(tmp_path("big.npy"), 1, HEADER(">f4", "False", "(2,)"), 8);
  expect_io_error("big.npy", "big-endian");
  write_npy(tmp_path("struct.npy"), 1,
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }\n", 8);
  expect_io_error("struct.npy", "structured");
  write_npy(tmp_path("obj.npy"), 1, HEADER("|O", "False", "(2,)"), 16);
  expect_io_error("obj.npy", "'|O'");
  write_npy(tmp_path("overflow.npy"), 1, HEADER("<f4", "False", "(4611686018427387904, 4)"), 0);
  expect_io_error("overflow.npy", "overflows");
  write_npy(tmp_path("bytes.npy"), 1, HEADER("<i8", "False", "(2305843009213693952,)"), 0);
  expect_io_error("bytes.npy", "byte size overflows");
  write_npy(tmp_path("digits.npy"), 1, HEADER("<f4", "False", "(99999999999999999999,)"), 0);
  expect_io_error("digits.npy", "overflows int64");
  write_npy(tmp_path("negative.npy"), 1, HEADER("<f4", "False", "(-1,)"), 0);
  expect_io_error("negative.npy", "not a dimension");
  write_npy(tmp_path("ndim.npy"), 1, HEADER("<f4", "False", "(1, 1, 1, 1, 1, 1, 1, 1, 1)"), 4);
  expect_io_error("ndim.npy", "more than 8 dimensions");
}

/* Dictionaries that are not the one numpy writes, bad bool bytes, and no file at all. */
static void test_malformed_headers(void) {
  write_npy(tmp_path("nokey.npy"), 1, "{'descr': '<f4', 'shape': (2,), }\n", 8);
  expect_io_error("nokey.npy", "lacks 'fortran_order'");
  write_npy(tmp_path("unknown.npy"), 1,
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}\n", 8);
  expect_io_error("unknown.npy", "unknown key 'x'");
  write_npy(tmp_path("tail.npy"), 1, HEADER("<f4", "False", "(2,)") "junk", 8);
  expect_io_error("tail.npy", "after the dictionary");
  write_npy(tmp_path("notdict.npy"), 1, "['descr', '<f4']\n", 8);
  expect_io_error("notdict.npy", "does not start with '{'");
  write_npy(tmp_path("order.npy"), 1, HEADER("<f4", "Maybe", "(2,)"), 8);
  expect_io_error("order.npy", "neither True nor False");
  /* A bool byte other than 0 or 1 is corruption. */
  write_npy(tmp_path("bool.npy"), 1, HEADER("|b1", "False", "(1,)"), 0);
  FILE *f = fopen(tmp_path("bool.npy"), "ab");
  CHECK(f != NULL);
  fputc(2, f);
  fclose(f);
  expect_io_error("bool.npy", "bool element 0 holds 2");
  /* Nothing there, or not a file. */
  expect_io_error("missing.npy", "cannot open");
  CHECK_EQ_INT(mkdir(tmp_path("folder.npy"), 0700), 0);
  tsr_array *a = NULL;
  CHECK_STATUS(tsr_npy_load(&a, tmp_path("folder.npy")), TSR_ERR_IO);
  CHECK_MESSAGE("folder.npy");
  rmdir(tmp_path("folder.npy"));
}

/* Equivalent spellings numpy or other writers use are accepted. */
static void test_lenient_headers(void) {
  write_npy(tmp_path("spell.npy"), 1,
            "{\"shape\": (2L,), \"fortran_order\": False, \"descr\": \"<u1\"}  \n", 2);
  tsr_array *a = NULL;
  CHECK_OK(tsr_npy_load(&a, tmp_path("spell.npy")));
  CHECK_EQ_INT(tsr_array_dtype(a), TSR_UINT8);
  check_shape(a, 1, (int64_t[]){2});
  tsr_array_release(a);
  remove(tmp_path("spell.npy"));
}

static void test_bad_arguments(void) {
  tsr_array *a = NULL;
  CHECK_STATUS(tsr_npy_load(NULL, fixture("f4_2x3.npy")), TSR_ERR_INVALID);
  CHECK_MESSAGE("out");
  CHECK_STATUS(tsr_npy_load(&a, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("path");
  CHECK_STATUS(tsr_npy_load_as(&a, fixture("f4_2x3.npy"), (tsr_dtype)99), TSR_ERR_INVALID);
  CHECK_MESSAGE("99");
  CHECK_STATUS(tsr_npy_load_as(&a, fixture("u2_bf16_4.npy"), TSR_FLOAT32), TSR_ERR_INVALID);
  CHECK_MESSAGE("'<u2' (2-byte elements) cannot be read as float32 (4 bytes)");
  CHECK_STATUS(tsr_npy_load_as(&a, fixture("f4_2x3.npy"), TSR_BOOL), TSR_ERR_INVALID);
  CHECK_MESSAGE("bool");
  CHECK(a == NULL);
  CHECK_OK(tsr_array_from_data(&a, (float[]){1.0f}, TSR_FLOAT32, (int64_t[]){1}, 1));
  CHECK_STATUS(tsr_npy_save(NULL, a), TSR_ERR_INVALID);
  CHECK_MESSAGE("path");
  CHECK_STATUS(tsr_npy_save(tmp_path("x.npy"), NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("array");
  CHECK_STATUS(tsr_npy_save(tmp_path("no/such/folder/x.npy"), a), TSR_ERR_IO);
  CHECK_MESSAGE("no/such/folder/x.npy");
  tsr_array_release(a);
}

static tsr_dtype dtype_named(const char *name) {
  const tsr_dtype all[] = {TSR_BOOL,  TSR_UINT8,   TSR_UINT32,   TSR_INT8,   TSR_INT32,
                           TSR_INT64, TSR_FLOAT16, TSR_BFLOAT16, TSR_FLOAT32};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (strcmp(tsr_dtype_name(all[i]), name) == 0) return all[i];
  CHECK_FAIL_("unknown dtype \"%s\" in the manifest", name);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) CHECK_FAIL_("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  CHECK(text != NULL);
  CHECK_EQ_U64(fread(text, 1, (size_t)n, f), (size_t)n);
  text[n] = '\0';
  fclose(f);
  return text;
}

/* One manifest entry {"file", "dtype", "shape"}: the file loads with exactly that. */
static void check_golden_array(const cJSON *entry, const char *quant_dir) {
  const char *file = cJSON_GetStringValue(cJSON_GetObjectItem(entry, "file"));
  const char *dtype_name = cJSON_GetStringValue(cJSON_GetObjectItem(entry, "dtype"));
  const cJSON *shape = cJSON_GetObjectItem(entry, "shape");
  CHECK(file && dtype_name && cJSON_IsArray(shape));
  char path[4300];
  snprintf(path, sizeof path, "%s/%s", quant_dir, file);
  tsr_dtype dtype = dtype_named(dtype_name);
  tsr_array *a = NULL;
  if (dtype == TSR_BFLOAT16)
    CHECK_OK(tsr_npy_load_as(&a, path, TSR_BFLOAT16));
  else
    CHECK_OK(tsr_npy_load(&a, path));
  CHECK_EQ_INT(tsr_array_dtype(a), dtype);
  CHECK_EQ_INT(tsr_array_ndim(a), cJSON_GetArraySize(shape));
  for (int d = 0; d < tsr_array_ndim(a); d++)
    CHECK_EQ_INT(tsr_array_dim(a, d), cJSON_GetArrayItem(shape, d)->valuedouble);
  tsr_array_release(a);
}

static void test_quant_golden_files(void) {
  char quant_dir[4200], manifest[4300];
  snprintf(quant_dir, sizeof quant_dir, "%s/quant", data_dir);
  snprintf(manifest, sizeof manifest, "%s/manifest.json", quant_dir);
  char *text = slurp(manifest);
  cJSON *root = cJSON_Parse(text);
  CHECK(root != NULL);
  const cJSON *cases = cJSON_GetObjectItem(root, "cases"), *c;
  CHECK(cJSON_GetArraySize(cases) > 0);
  int arrays = 0;
  cJSON_ArrayForEach(c, cases) {
    const cJSON *entry;
    cJSON_ArrayForEach(entry, cJSON_GetObjectItem(c, "arrays")) {
      check_golden_array(entry, quant_dir);
      arrays++;
    }
  }
  printf("test_npy: %d golden arrays of %d cases load as their manifest says\n", arrays,
         cJSON_GetArraySize(cases));
  cJSON_Delete(root);
  free(text);
}

int main(void) {
  find_data_dir();
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/tsr_test_npy_XXXXXX");
  if (!mkdtemp(tmp_dir)) CHECK_FAIL_("mkdtemp failed");
  test_numpy_fixtures();
  test_save_matches_numpy();
  test_round_trips();
  test_save_view();
  test_corrupt_headers();
  test_unsupported_headers();
  test_malformed_headers();
  test_lenient_headers();
  test_bad_arguments();
  test_quant_golden_files();
  CHECK_EQ_INT(rmdir(tmp_dir), 0); /* every test removed its files */
  tsr_memory_clear_cache((tsr_device){TSR_CPU, 0});
  CHECK_NO_LEAKS();
  tsr_shutdown();
  printf("test_npy: ok\n");
  return 0;
}

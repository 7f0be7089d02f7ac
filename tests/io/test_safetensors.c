/* tests/io/test_safetensors.c — tessera/safetensors.h: every dtype and shape (0-d and zero-size
 * included) through save, open and load with its values and metadata; the writer's exact bytes
 * for a small file (the Hugging Face layout: contiguous data, header padded to 8); aligned CPU
 * tensors wrapped in the file's own mapping (checked in /proc/self/maps) and unaligned ones (an
 * MLX-style unpadded header) copied; arrays outliving their reader; sharded folders with and
 * without an index; lookups of unknown names and of dtypes tessera cannot hold. Saves that fail
 * and loads refused by a cap are in test_safetensors_save.c, the malformed corpus in
 * test_safetensors_corrupt.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/test_safetensors.h"

static const tsr_device cpu = {TSR_CPU, 0};

static const tsr_dtype all_dtypes[] = {TSR_BOOL,  TSR_UINT8,   TSR_UINT32,   TSR_INT8,   TSR_INT32,
                                       TSR_INT64, TSR_FLOAT16, TSR_BFLOAT16, TSR_FLOAT32};
#define DTYPE_COUNT (sizeof all_dtypes / sizeof all_dtypes[0])

/* ---- helpers ------------------------------------------------------------------------------- */

/* The file this process maps at address p, with p's offset in it; false when p lies in no
 * file mapping (the heap, an anonymous mapping). */
static bool mapped_file_at(const void *p, char *file, size_t cap, uint64_t *offset) {
  FILE *maps = fopen("/proc/self/maps", "r");
  CHECK(maps != NULL);
  char line[4400];
  bool found = false;
  while (!found && fgets(line, sizeof line, maps)) {
    unsigned long start = 0, end = 0, file_offset = 0;
    int n = 0;
    if (sscanf(line, "%lx-%lx %*s %lx %*s %*s%n", &start, &end, &file_offset, &n) < 3) continue;
    if ((uintptr_t)p < start || (uintptr_t)p >= end) continue;
    const char *name = line + n;
    while (*name == ' ')
      name++;
    snprintf(file, cap, "%s", name);
    file[strcspn(file, "\n")] = '\0';
    *offset = file_offset + ((uintptr_t)p - start);
    found = file[0] == '/';
  }
  fclose(maps);
  return found;
}

/* How many mappings of `path` this process holds. */
static int mappings_of(const char *path) {
  char real[4096];
  CHECK(realpath(path, real) != NULL);
  FILE *maps = fopen("/proc/self/maps", "r");
  CHECK(maps != NULL);
  char line[4400];
  int count = 0;
  size_t len = strlen(real);
  while (fgets(line, sizeof line, maps)) {
    line[strcspn(line, "\n")] = '\0';
    size_t n = strlen(line);
    if (n >= len && strcmp(line + n - len, real) == 0) count++;
  }
  fclose(maps);
  return count;
}

static uint64_t header_length_of(const char *path) {
  unsigned char bytes[8];
  FILE *f = fopen(path, "rb");
  CHECK(f && fread(bytes, 1, 8, f) == 8);
  fclose(f);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--)
    n = (n << 8) | bytes[i];
  return n;
}

static long file_size(const char *path) {
  struct stat info;
  CHECK_EQ_INT(stat(path, &info), 0);
  return (long)info.st_size;
}

/* Temporary files the writer left in `dir` (there must be none). */
/* ---- round trips --------------------------------------------------------------------------- */

static const int64_t shapes[][4] = {{0}, {0}, {5}, {2, 3}, {3, 0, 2}, {2, 1, 4, 3}};
static const int ndims[] = {0, 1, 1, 2, 3, 4};
#define SHAPE_COUNT (sizeof ndims / sizeof ndims[0])
#define ROUND_TRIP_COUNT (DTYPE_COUNT * SHAPE_COUNT)

static size_t pattern(unsigned char *data, tsr_dtype dtype, size_t s, size_t seed) {
  int64_t count = 1;
  for (int d = 0; d < ndims[s]; d++)
    count *= shapes[s][d];
  size_t bytes = (size_t)count * tsr_dtype_size(dtype);
  for (size_t i = 0; i < bytes; i++)
    data[i] = (unsigned char)(i * 37 + seed * 11 + 5);
  if (dtype == TSR_BOOL)
    for (size_t i = 0; i < bytes; i++)
      data[i] &= 1;
  return bytes;
}

/* Every dtype in every shape, in one file, with metadata: all come back as they went in. */
static void test_round_trip(void) {
  const char *path = st_path("round.safetensors");
  tsr_array *arrays[ROUND_TRIP_COUNT];
  char names[ROUND_TRIP_COUNT][32];
  const char *name_ptrs[ROUND_TRIP_COUNT];
  unsigned char data[24 * 8];
  uint64_t total = 0;
  for (size_t t = 0, k = 0; t < DTYPE_COUNT; t++)
    for (size_t s = 0; s < SHAPE_COUNT; s++, k++) {
      total += pattern(data, all_dtypes[t], s, k);
      snprintf(names[k], sizeof names[k], "%s.s%zu", tsr_dtype_name(all_dtypes[t]), s);
      name_ptrs[k] = names[k];
      CHECK_OK(tsr_array_from_data_on(&arrays[k], data, all_dtypes[t], shapes[s], ndims[s], cpu));
    }
  const char *keys[] = {"format", "source"}, *values[] = {"pt", "tessera test"};
  CHECK_OK(tsr_safetensors_save(path, name_ptrs, arrays, ROUND_TRIP_COUNT, keys, values, 2));
  uint64_t n = header_length_of(path);
  CHECK_EQ_U64((8 + n) % 8, 0);
  CHECK_EQ_U64((uint64_t)file_size(path), 8 + n + total);

  tsr_safetensors *st = NULL;
  CHECK_OK(tsr_safetensors_open(&st, path));
  CHECK_EQ_U64(tsr_safetensors_count(st), ROUND_TRIP_COUNT);
  CHECK(strcmp(tsr_safetensors_metadata(st, "source"), "tessera test") == 0);
  CHECK(tsr_safetensors_metadata(st, "missing") == NULL);
  for (size_t t = 0, k = 0; t < DTYPE_COUNT; t++)
    for (size_t s = 0; s < SHAPE_COUNT; s++, k++) {
      size_t bytes = pattern(data, all_dtypes[t], s, k);
      tsr_tensor_info info;
      CHECK_OK(tsr_safetensors_find(st, names[k], &info));
      CHECK(strcmp(info.name, names[k]) == 0 && strcmp(info.file, path) == 0);
      CHECK_EQ_INT(info.dtype, all_dtypes[t]);
      CHECK_EQ_U64(info.nbytes, bytes);
      CHECK_EQ_INT(info.ndim, ndims[s]);
      st_check_load(st, names[k], all_dtypes[t], ndims[s], shapes[s], data, bytes);
      tsr_array_release(arrays[k]);
    }
  /* tsr_safetensors_info lists them in name order. */
  tsr_tensor_info prev, info;
  CHECK_OK(tsr_safetensors_info(st, 0, &prev));
  for (size_t i = 1; i < ROUND_TRIP_COUNT; i++, prev = info) {
    CHECK_OK(tsr_safetensors_info(st, i, &info));
    CHECK(strcmp(prev.name, info.name) < 0);
  }
  tsr_safetensors_close(st);
}

/* A small file, byte for byte: header in the order given, padded with spaces, then the data. */
static void test_exact_bytes(void) {
  const char *path = st_path("exact.safetensors");
  tsr_array *arrays[2] = {st_f32_array((float[]){1.0f, 2.0f}, 2), NULL};
  CHECK_OK(tsr_array_from_data_on(&arrays[1], (unsigned char[]){1, 0, 1}, TSR_BOOL, (int64_t[]){3},
                                  1, cpu));
  const char *names[] = {"w", "b"}, *key = "format", *value = "pt";
  CHECK_OK(tsr_safetensors_save(path, names, arrays, 2, &key, &value, 1));
  const char json[] =
      "{\"__metadata__\":{\"format\":\"pt\"},"
      "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"b\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[8,11]}}";
  size_t len = sizeof json - 1, padded = (len + 7) / 8 * 8; /* 8 + padded is a multiple of 8 */
  unsigned char want[256], got[256];
  memset(want, ' ', sizeof want);
  for (int i = 0; i < 8; i++)
    want[i] = (unsigned char)(padded >> (8 * i));
  memcpy(want + 8, json, len);
  memcpy(want + 8 + padded, "\x00\x00\x80\x3f\x00\x00\x00\x40\x01\x00\x01", 11);
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  size_t n = fread(got, 1, sizeof got, f);
  fclose(f);
  CHECK_EQ_U64(n, 8 + padded + 11);
  if (memcmp(got, want, n) != 0) CHECK_FAIL_("%s: bytes differ from the layout", path);
  tsr_array_release(arrays[0]);
  tsr_array_release(arrays[1]);
}

/* Lazy arrays and views are evaluated and written in logical (row-major) order. */
static void test_save_lazy(void) {
  const char *path = st_path("lazy.safetensors");
  tsr_array *a = NULL, *t = NULL, *sum = NULL;
  CHECK_OK(tsr_array_from_data_on(&a, (int32_t[]){0, 1, 2, 3, 4, 5}, TSR_INT32, (int64_t[]){2, 3},
                                  2, cpu));
  CHECK_OK(tsr_transpose(&t, a, (int[]){1, 0}, 2, NULL));
  CHECK_OK(tsr_add(&sum, a, a, NULL));
  tsr_array *arrays[] = {t, sum};
  const char *names[] = {"t", "sum"};
  CHECK_OK(tsr_safetensors_save(path, names, arrays, 2, NULL, NULL, 0));
  tsr_safetensors *st = NULL;
  CHECK_OK(tsr_safetensors_open(&st, path));
  CHECK(tsr_safetensors_metadata(st, "format") == NULL);
  st_check_load(st, "t", TSR_INT32, 2, (int64_t[]){3, 2}, (int32_t[]){0, 3, 1, 4, 2, 5}, 24);
  st_check_load(st, "sum", TSR_INT32, 2, (int64_t[]){2, 3}, (int32_t[]){0, 2, 4, 6, 8, 10}, 24);
  tsr_safetensors_close(st);
  tsr_array_release(a);
  tsr_array_release(t);
  tsr_array_release(sum);
}

/* ---- where loaded bytes live --------------------------------------------------------------- */

#define WIDE 1000 /* floats: 4000 bytes, which the heap would count as 4032 */

static const char *save_aligned(const char *name) {
  float w[WIDE];
  for (int i = 0; i < WIDE; i++)
    w[i] = (float)i * 0.5f - 7.0f;
  tsr_array *arrays[3] = {st_f32_array(w, WIDE), NULL, NULL};
  CHECK_OK(
      tsr_array_from_data_on(&arrays[1], (uint8_t[]){9, 8, 7}, TSR_UINT8, (int64_t[]){3}, 1, cpu));
  CHECK_OK(tsr_array_from_data_on(&arrays[2], (int64_t[]){-3, 1LL << 40}, TSR_INT64, (int64_t[]){2},
                                  1, cpu));
  const char *names[] = {"w", "small", "odd_i64"}; /* odd_i64 starts at byte 4003 of the data */
  const char *path = st_path(name);
  CHECK_OK(tsr_safetensors_save(path, names, arrays, 3, NULL, NULL, 0));
  for (int i = 0; i < 3; i++)
    tsr_array_release(arrays[i]);
  return path;
}

/* An aligned CPU tensor is the file's own mapped bytes, counted on the ledger as they are. */
static void test_zero_copy(void) {
  const char *path = save_aligned("aligned.safetensors");
  char real[4096], file[4400];
  CHECK(realpath(path, real) != NULL);
  uint64_t data_start = 8 + header_length_of(path), offset = 0;
  tsr_safetensors *st = NULL;
  tsr_array *w = NULL, *again = NULL, *odd = NULL;
  void *p = NULL, *q = NULL;
  CHECK_OK(tsr_safetensors_open(&st, path));
  CHECK_EQ_U64(st_active_bytes(), 0); /* opening maps, but backs no array */
  CHECK_OK(tsr_safetensors_load(&w, st, "w", cpu));
  CHECK_EQ_U64(st_active_bytes(), WIDE * 4); /* wrapped: not rounded as a heap block would be */
  CHECK_OK(tsr_array_data(w, &p));
  CHECK(mapped_file_at(p, file, sizeof file, &offset));
  CHECK(strcmp(file, real) == 0);
  CHECK_EQ_U64(offset, data_start);
  CHECK_OK(tsr_safetensors_load(&again, st, "w", cpu));
  CHECK_OK(tsr_array_data(again, &q));
  CHECK(p == q);
  /* An int64 at an odd offset is copied to the heap; its values are the file's. */
  CHECK_OK(tsr_safetensors_load(&odd, st, "odd_i64", cpu));
  CHECK_OK(tsr_array_data(odd, &q));
  CHECK(!mapped_file_at(q, file, sizeof file, &offset));
  int64_t got[2];
  CHECK_OK(tsr_array_read(odd, got, sizeof got));
  CHECK(got[0] == -3 && got[1] == 1LL << 40);
  tsr_array_release(odd);
  tsr_array_release(again);
  tsr_array_release(w);
  CHECK_EQ_U64(st_active_bytes(), 0);
  tsr_safetensors_close(st);
}

/* The mapping stays while an array uses it, and goes with the last of reader and arrays. */
static void test_outlives_close(void) {
  const char *path = save_aligned("lifetime.safetensors");
  tsr_safetensors *st = NULL;
  tsr_array *w = NULL;
  CHECK_OK(tsr_safetensors_open(&st, path));
  CHECK_EQ_INT(mappings_of(path), 1);
  CHECK_OK(tsr_safetensors_load(&w, st, "w", cpu));
  tsr_safetensors_close(st);
  CHECK_EQ_INT(mappings_of(path), 1);
  float got[WIDE];
  CHECK_OK(tsr_array_read(w, got, sizeof got));
  for (int i = 0; i < WIDE; i++)
    if (got[i] != (float)i * 0.5f - 7.0f) CHECK_FAIL_("w[%d] = %g after close", i, (double)got[i]);
  tsr_array_release(w);
  CHECK_EQ_INT(mappings_of(path), 0);
  /* Closing with nothing loaded unmaps at once. */
  CHECK_OK(tsr_safetensors_open(&st, path));
  tsr_safetensors_close(st);
  CHECK_EQ_INT(mappings_of(path), 0);
}

/* MLX does not pad its header: data at any offset, read by copy. */
static void test_unaligned(void) {
  const char *path = st_path("mlx.safetensors");
  char header[512];
  snprintf(header, sizeof header, "%s",
           "{\"__metadata__\":{\"format\":\"mlx\"},"
           "\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},"
           "\"h\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[12,16]},"
           "\"i\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[16,32]},"
           "\"u\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[32,33]}}");
  if (strlen(header) % 2 == 0)
    strcat(header, " "); /* 8 + N odd: nothing wider than a byte aligns */
  unsigned char data[33];
  const float a[3] = {1.5f, -2.0f, 3.25f};
  const uint16_t h[2] = {0x3F80, 0xC000};
  const int64_t i64[2] = {-5, 1LL << 40};
  memcpy(data, a, 12);
  memcpy(data + 12, h, 4);
  memcpy(data + 16, i64, 16);
  data[32] = 7;
  st_write(path, header, data, sizeof data);
  tsr_safetensors *st = NULL;
  CHECK_OK(tsr_safetensors_open(&st, path));
  CHECK(strcmp(tsr_safetensors_metadata(st, "format"), "mlx") == 0);
  st_check_load(st, "a", TSR_FLOAT32, 1, (int64_t[]){3}, a, 12);
  st_check_load(st, "h", TSR_BFLOAT16, 1, (int64_t[]){2}, h, 4);
  st_check_load(st, "i", TSR_INT64, 1, (int64_t[]){2}, i64, 16);
  st_check_load(st, "u", TSR_UINT8, 1, (int64_t[]){1}, (uint8_t[]){7}, 1);
  /* The float32 is a heap copy; the byte is aligned whatever its offset, so it is wrapped. */
  char file[4400];
  uint64_t offset = 0;
  tsr_array *x = NULL;
  void *p = NULL;
  CHECK_OK(tsr_safetensors_load(&x, st, "a", cpu));
  CHECK_OK(tsr_array_data(x, &p));
  CHECK(!mapped_file_at(p, file, sizeof file, &offset));
  tsr_array_release(x);
  CHECK_OK(tsr_safetensors_load(&x, st, "u", cpu));
  CHECK_OK(tsr_array_data(x, &p));
  CHECK(mapped_file_at(p, file, sizeof file, &offset));
  CHECK_EQ_U64(offset, 8 + strlen(header) + 32);
  tsr_array_release(x);
  tsr_safetensors_close(st);
}

/* ---- folders ------------------------------------------------------------------------------- */

typedef struct {
  const char *name;
  tsr_dtype dtype;
  int ndim;
  int64_t shape[2];
  unsigned char bytes[32];
  size_t nbytes;
  int shard; /* 0-based */
} shard_tensor;

static const shard_tensor sharded[] = {
    {"model.embed_tokens.weight", TSR_FLOAT32, 1, {4}, {0, 0, 128, 63, 0, 0, 0, 64}, 16, 0},
    {"model.layers.0.mlp.weight", TSR_BFLOAT16, 2, {2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}, 8, 0},
    {"model.layers.0.mlp.scales", TSR_INT32, 1, {3}, {9, 0, 0, 0, 1, 1, 1, 1, 255}, 12, 1},
    {"model.norm.weight", TSR_UINT8, 1, {5}, {5, 4, 3, 2, 1}, 5, 2},
    {"lm_head.empty", TSR_FLOAT16, 1, {0}, {0}, 0, 2},
};
#define SHARDED_COUNT (sizeof sharded / sizeof sharded[0])

/* Writes `shards` files named by `file_names` into `dir`, with sharded[] split among them. */
static void write_shards(const char *dir, const char *const *file_names, int shards) {
  for (int s = 0; s < shards; s++) {
    tsr_array *arrays[SHARDED_COUNT];
    const char *names[SHARDED_COUNT];
    size_t n = 0;
    for (size_t i = 0; i < SHARDED_COUNT; i++) {
      const shard_tensor *t = &sharded[i];
      if (t->shard % shards != s) continue;
      names[n] = t->name;
      CHECK_OK(tsr_array_from_data_on(&arrays[n++], t->bytes, t->dtype, t->shape, t->ndim, cpu));
    }
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file_names[s]);
    const char *key = "format", *value = "mlx";
    CHECK_OK(tsr_safetensors_save(path, names, arrays, n, &key, &value, 1));
    for (size_t i = 0; i < n; i++)
      tsr_array_release(arrays[i]);
  }
}

static void write_index(const char *dir, const char *const *file_names, int shards) {
  char text[2048], path[512];
  size_t used =
      (size_t)snprintf(text, sizeof text, "{\"metadata\": {\"total_size\": 41}, \"weight_map\": {");
  for (size_t i = 0; i < SHARDED_COUNT; i++)
    used += (size_t)snprintf(text + used, sizeof text - used, "%s\"%s\": \"%s\"", i ? ", " : "",
                             sharded[i].name, file_names[sharded[i].shard % shards]);
  snprintf(text + used, sizeof text - used, "}}\n");
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
  st_write_bytes(path, text, strlen(text));
}

/* The folder opens with every tensor, each from the shard it was written to. */
static void check_folder(const char *dir, const char *const *file_names, int shards) {
  tsr_safetensors *st = NULL;
  CHECK_OK(tsr_safetensors_open(&st, dir));
  CHECK_EQ_U64(tsr_safetensors_count(st), SHARDED_COUNT);
  CHECK(strcmp(tsr_safetensors_metadata(st, "format"), "mlx") == 0);
  for (size_t i = 0; i < SHARDED_COUNT; i++) {
    const shard_tensor *t = &sharded[i];
    tsr_tensor_info info;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file_names[t->shard % shards]);
    CHECK(tsr_safetensors_has(st, t->name));
    CHECK_OK(tsr_safetensors_find(st, t->name, &info));
    if (strcmp(info.file, path) != 0) CHECK_FAIL_("'%s' in %s, not %s", t->name, info.file, path);
    st_check_load(st, t->name, t->dtype, t->ndim, t->shape, t->bytes, t->nbytes);
  }
  CHECK(!tsr_safetensors_has(st, "model.layers.1.mlp.weight"));
  tsr_safetensors_close(st);
}

static void test_folders(void) {
  const char *three[] = {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                         "model-00003-of-00003.safetensors"};
  const char *single[] = {"model.safetensors"};
  const char *dir = st_path("indexed");
  CHECK_EQ_INT(mkdir(dir, 0700), 0);
  write_shards(dir, three, 3);
  write_index(dir, three, 3);
  check_folder(dir, three, 3);
  /* Without the index the same shards are found by name; other files are not shards. */
  dir = st_path("globbed");
  CHECK_EQ_INT(mkdir(dir, 0700), 0);
  write_shards(dir, three, 3);
  char other[512];
  snprintf(other, sizeof other, "%s/adapter.safetensors", dir);
  st_write_bytes(other, "not a safetensors file", 22);
  check_folder(dir, three, 3);
  /* One model.safetensors, with its index (mlx-lm writes one) and without. */
  dir = st_path("single");
  CHECK_EQ_INT(mkdir(dir, 0700), 0);
  write_shards(dir, single, 1);
  check_folder(dir, single, 1);
  write_index(dir, single, 1);
  check_folder(dir, single, 1);
}

/* ---- lookups ------------------------------------------------------------------------------- */

static void test_lookups(void) {
  const char *path = st_path("lookup.safetensors");
  st_write(path,
           "{\"d\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]},"
           "\"q\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[16,20]},"
           "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[20,24]}}",
           NULL, 24);
  tsr_safetensors *st = NULL;
  tsr_array *a = NULL;
  tsr_tensor_info info;
  CHECK_OK(tsr_safetensors_open(&st, path));
  CHECK_EQ_U64(tsr_safetensors_count(st), 3);
  CHECK_STATUS(tsr_safetensors_load(&a, st, "model.missing", cpu), TSR_ERR_INVALID);
  CHECK_MESSAGE("no tensor 'model.missing'");
  CHECK_MESSAGE(path);
  CHECK_STATUS(tsr_safetensors_find(st, "model.missing", &info), TSR_ERR_INVALID);
  CHECK_MESSAGE("no tensor 'model.missing'");
  CHECK(!tsr_safetensors_has(st, "model.missing"));
  /* Listed with their sizes, but not loadable. */
  CHECK_OK(tsr_safetensors_find(st, "d", &info));
  CHECK_EQ_U64(info.nbytes, 16);
  CHECK_EQ_U64(tsr_dtype_size(info.dtype), 0);
  CHECK_STATUS(tsr_safetensors_load(&a, st, "d", cpu), TSR_ERR_UNSUPPORTED);
  CHECK_MESSAGE("tensor 'd' is F64, which has no tessera dtype");
  CHECK_STATUS(tsr_safetensors_load(&a, st, "q", cpu), TSR_ERR_UNSUPPORTED);
  CHECK_MESSAGE("F8_E4M3");
  CHECK(a == NULL);
  CHECK_STATUS(tsr_safetensors_info(st, 3, &info), TSR_ERR_INVALID);
  CHECK_MESSAGE("index 3 out of range (3 tensors)");
  CHECK_STATUS(tsr_safetensors_info(st, 0, NULL), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_safetensors_load(&a, st, NULL, cpu), TSR_ERR_INVALID);
  CHECK_MESSAGE("name is NULL");
  CHECK_STATUS(tsr_safetensors_load(NULL, st, "w", cpu), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_safetensors_find(NULL, "w", &info), TSR_ERR_INVALID);
  /* A GPU either holds the tensor or says which tensor it could not take. */
  tsr_status status = tsr_safetensors_load(&a, st, "w", (tsr_device){TSR_GPU, 0});
  if (status == TSR_OK) {
    float got;
    CHECK_OK(tsr_array_read(a, &got, sizeof got));
    tsr_array_release(a);
  } else {
    CHECK(a == NULL);
    CHECK_MESSAGE("tensor 'w' (4 bytes)");
  }
  tsr_safetensors_close(st);
  CHECK_STATUS(tsr_safetensors_open(NULL, path), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_safetensors_open(&st, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("path is NULL");
  CHECK_EQ_U64(tsr_safetensors_count(NULL), 0);
  CHECK(!tsr_safetensors_has(NULL, "w"));
  CHECK(tsr_safetensors_metadata(NULL, "format") == NULL);
  tsr_safetensors_close(NULL);
}

int main(void) {
  umask(022);
  st_make_tmp_dir("test_safetensors");
  test_round_trip();
  test_exact_bytes();
  test_save_lazy();
  test_zero_copy();
  test_outlives_close();
  test_unaligned();
  test_folders();
  test_lookups();
  st_remove_tmp_dir();
  tsr_memory_clear_cache(cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  printf("test_safetensors: ok\n");
  return 0;
}

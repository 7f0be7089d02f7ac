/* tests/io/test_safetensors_corrupt.c — the malformed corpus: every file and folder here is
 * wrong in one way, written byte by byte, and opening it is TSR_ERR_IO with a message naming the
 * file (or folder, or index) and the tensor and values at fault. A few near misses that are
 * valid (zero-length tensors sharing offsets, padding, an empty header) open. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/test_safetensors.h"

#define W_F32_2 "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"

/* One file with `header` and `data_bytes` bytes of data fails with IO naming it and `what`. */
static void expect_bad_header(const char *name, const char *header, size_t data_bytes,
                              const char *what) {
  const char *path = st_path(name);
  st_write(path, header, NULL, data_bytes);
  st_expect_open_error(path, TSR_ERR_IO, path, what);
}

static void test_header_length(void) {
  const char *path = st_path("beyond.safetensors");
  st_write_raw(path, 1000, "{}", NULL, 8);
  st_expect_open_error(path, TSR_ERR_IO, path,
                       "header length 1000 is past the end of the file (10");
  st_write_raw(path, 0, "{}", NULL, 0);
  st_expect_open_error(path, TSR_ERR_IO, path, "header length is 0");
  st_write_raw(path, (uint64_t)1 << 62, "{}", NULL, 0);
  st_expect_open_error(path, TSR_ERR_IO, path,
                       "header length 4611686018427387904 is over the 104857600-byte limit");
  st_write_raw(path, ((uint64_t)100 << 20) + 1, "{}", NULL, 0);
  st_expect_open_error(path, TSR_ERR_IO, path, "104857601 is over the 104857600-byte limit");
  st_write_bytes(path, "\x02\x00\x00", 3);
  st_expect_open_error(path, TSR_ERR_IO, path, "3 bytes, too short for the 8-byte header length");
  st_write_bytes(path, "", 0);
  st_expect_open_error(path, TSR_ERR_IO, path, "0 bytes, too short");
}

static void test_json(void) {
  expect_bad_header("nojson.safetensors", "{\"w\": nope}", 0, "header is not valid JSON");
  expect_bad_header("cut.safetensors", "{\"w\":{\"dtype\":\"F32\"", 0, "not valid JSON");
  expect_bad_header("array.safetensors", "[1, 2]", 0, "header is not a JSON object");
  expect_bad_header("string.safetensors", "\"weights\"", 0, "not a JSON object");
  expect_bad_header("tail.safetensors", "{} {}", 0, "header has 2 bytes after its JSON value");
  expect_bad_header("entry.safetensors", "{\"w\": 5}", 0, "tensor 'w': entry is not a JSON object");
  expect_bad_header("emptyname.safetensors", "{\"\":" W_F32_2 "}", 8, "a tensor has an empty name");
}

static void test_entries(void) {
  expect_bad_header("nodtype.safetensors", "{\"w\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                    "tensor 'w' has no dtype");
  expect_bad_header("noshape.safetensors", "{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8,
                    "tensor 'w' has no shape");
  expect_bad_header("nooffsets.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8,
                    "tensor 'w' has no data_offsets");
  expect_bad_header("dtype.safetensors",
                    "{\"w\":{\"dtype\":\"F9\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                    "tensor 'w': unknown dtype 'F9'");
  expect_bad_header("dtypenum.safetensors",
                    "{\"w\":{\"dtype\":4,\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                    "tensor 'w': dtype is not a string");
  expect_bad_header("shapeobj.safetensors",
                    "{\"w\":{\"dtype\":\"F32\",\"shape\":{},\"data_offsets\":[0,8]}}", 8,
                    "tensor 'w': shape is not an array");
}

static void test_shapes(void) {
  expect_bad_header("negative.safetensors",
                    "{\"w\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8,
                    "tensor 'w': shape dimension 0 is -2, not a non-negative integer");
  expect_bad_header("fraction.safetensors",
                    "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,2.5],\"data_offsets\":[0,8]}}", 8,
                    "tensor 'w': shape dimension 1 is 2.5");
  expect_bad_header("dimstring.safetensors",
                    "{\"w\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}", 8,
                    "shape dimension 0 is a string");
  expect_bad_header("huge_dim.safetensors",
                    "{\"w\":{\"dtype\":\"F32\",\"shape\":[1e300],\"data_offsets\":[0,8]}}", 8,
                    "shape dimension 0 is 1.0000000000000001e+300");
  expect_bad_header("ndim.safetensors",
                    "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],"
                    "\"data_offsets\":[0,8]}}",
                    8, "tensor 'w': shape has 9 dimensions (at most 8)");
  expect_bad_header("overflow.safetensors",
                    "{\"w\":{\"dtype\":\"I64\",\"shape\":[1099511627776,1099511627776,16],"
                    "\"data_offsets\":[0,8]}}",
                    8,
                    "tensor 'w': shape [1099511627776, 1099511627776, 16] of I64 is too large (its "
                    "bytes overflow int64)");
  /* The library's one shape rule: a zero dimension does not make such a shape valid. */
  expect_bad_header("zero_overflow.safetensors",
                    "{\"w\":{\"dtype\":\"F32\",\"shape\":[0,1099511627776,1099511627776],"
                    "\"data_offsets\":[0,0]}}",
                    0, "shape [0, 1099511627776, 1099511627776] of F32 is too large");
}

static void test_offsets(void) {
  expect_bad_header("reversed.safetensors",
                    "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8,
                    "tensor 'w': data_offsets [8, 0] begin after they end");
  expect_bad_header("past.safetensors",
                    "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8,
                    "tensor 'w': data_offsets [0, 16] end past the 8-byte data section");
  expect_bad_header("mismatch.safetensors",
                    "{\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[3],"
                    "\"data_offsets\":[0,8]}}",
                    8,
                    "tensor 'model.norm.weight': data_offsets [0, 8] hold 8 bytes but shape [3] "
                    "of F32 needs 12");
  expect_bad_header("single.safetensors",
                    "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8,
                    "tensor 'w': data_offsets is not a pair of non-negative integers");
  expect_bad_header("negoff.safetensors",
                    "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}", 8,
                    "data_offsets is not a pair");
  expect_bad_header("overlap.safetensors",
                    "{\"a\":" W_F32_2
                    ",\"b\":{\"dtype\":\"F32\",\"shape\":[2],"
                    "\"data_offsets\":[4,12]}}",
                    12, "tensors 'a' [0, 8] and 'b' [4, 12] overlap");
  expect_bad_header("inside.safetensors",
                    "{\"big\":{\"dtype\":\"U8\",\"shape\":[16],\"data_offsets\":[0,16]},"
                    "\"small\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[3,5]}}",
                    16, "tensors 'big' [0, 16] and 'small' [3, 5] overlap");
  expect_bad_header("twice.safetensors",
                    "{\"w\":" W_F32_2
                    ",\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
                    16, "tensor 'w' is listed twice");
  /* A good file cut short: its last tensor ends past what is left. */
  const char *path = st_path("truncated.safetensors");
  st_write(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", NULL, 11);
  st_expect_open_error(path, TSR_ERR_IO, path, "[0, 16] end past the 11-byte data section");
}

static void test_metadata(void) {
  expect_bad_header("metanum.safetensors", "{\"__metadata__\":{\"format\":\"pt\",\"n\":1}}", 0,
                    "__metadata__ value of 'n' is not a string");
  expect_bad_header("metaarray.safetensors", "{\"__metadata__\":[\"pt\"]}", 0,
                    "__metadata__ is not a JSON object");
  expect_bad_header("metatwice.safetensors", "{\"__metadata__\":{},\"__metadata__\":{}}", 0,
                    "two __metadata__ entries");
}

/* Valid although unusual: opens with what it says. */
static void test_near_misses(void) {
  const char *path = st_path("empty_header.safetensors");
  st_write(path, "{}", NULL, 0);
  tsr_safetensors *st = NULL;
  CHECK_OK(tsr_safetensors_open(&st, path));
  CHECK_EQ_U64(tsr_safetensors_count(st), 0);
  tsr_safetensors_close(st);
  /* Zero-length tensors may share offsets with each other and sit inside another tensor; the
   * header may be padded with spaces and data may follow the last tensor. */
  path = st_path("zeros.safetensors");
  st_write(path,
           "{\"a\":" W_F32_2
           ",\"e1\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
           "\"e2\":{\"dtype\":\"I64\",\"shape\":[3,0],\"data_offsets\":[4,4]}}     ",
           NULL, 12);
  CHECK_OK(tsr_safetensors_open(&st, path));
  CHECK_EQ_U64(tsr_safetensors_count(st), 3);
  tsr_tensor_info info;
  CHECK_OK(tsr_safetensors_find(st, "e2", &info));
  CHECK_EQ_INT(info.ndim, 2);
  CHECK_EQ_U64(info.nbytes, 0);
  tsr_array *a = NULL;
  CHECK_OK(tsr_safetensors_load(&a, st, "e2", (tsr_device){TSR_CPU, 0}));
  CHECK_EQ_INT(tsr_array_size(a), 0);
  CHECK_EQ_INT(tsr_array_dim(a, 0), 3);
  tsr_array_release(a);
  tsr_safetensors_close(st);
}

/* A folder holding `header`-described shards and, when index is not NULL, an index. */
static const char *make_folder(const char *name, const char *index) {
  char sub[64];
  snprintf(sub, sizeof sub, "%s", name);
  const char *dir = st_path(sub);
  CHECK_EQ_INT(mkdir(dir, 0700), 0);
  if (index) {
    snprintf(sub, sizeof sub, "%s/model.safetensors.index.json", name);
    st_write_bytes(st_path(sub), index, strlen(index));
  }
  return dir;
}

static void add_shard(const char *folder, const char *file, const char *header, size_t bytes) {
  char sub[128];
  snprintf(sub, sizeof sub, "%s/%s", folder, file);
  st_write(st_path(sub), header, NULL, bytes);
}

#define SHARD1 "model-00001-of-00002.safetensors"
#define SHARD2 "model-00002-of-00002.safetensors"
#define HDR_A "{\"a\":" W_F32_2 "}"
#define HDR_B "{\"b\":" W_F32_2 "}"
#define HDR_AB "{\"a\":" W_F32_2 ",\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}"

static void test_index(void) {
  const char *dir = make_folder("notjson", "{\"weight_map\": ");
  st_expect_open_error(dir, TSR_ERR_IO, "notjson/model.safetensors.index.json", "not valid JSON");
  dir = make_folder("nomap", "{\"metadata\": {\"total_size\": 16}}");
  st_expect_open_error(dir, TSR_ERR_IO, "nomap/model.safetensors.index.json",
                       "no weight_map object");
  dir = make_folder("mapnum", "{\"weight_map\": {\"a\": 1}}");
  st_expect_open_error(dir, TSR_ERR_IO, "mapnum/model.safetensors.index.json",
                       "weight_map entry 'a' is not a file name");
  dir = make_folder("maptwice", "{\"weight_map\": {\"a\": \"" SHARD1 "\", \"a\": \"" SHARD1 "\"}}");
  add_shard("maptwice", SHARD1, HDR_A, 8);
  st_expect_open_error(dir, TSR_ERR_IO, "maptwice/model.safetensors.index.json",
                       "weight_map lists tensor 'a' twice");
  dir = make_folder("noshard", "{\"weight_map\": {\"a\": \"" SHARD1 "\", \"b\": \"" SHARD2 "\"}}");
  add_shard("noshard", SHARD1, HDR_A, 8);
  st_expect_open_error(dir, TSR_ERR_IO, "noshard/model.safetensors.index.json",
                       "shard '" SHARD2 "' (of tensor 'b') does not exist");
}

static void test_index_against_shards(void) {
  /* 'c' is mapped to shard 1, which lacks it (and no shard has it). */
  const char *dir = make_folder("absent", "{\"weight_map\": {\"a\": \"" SHARD1
                                          "\", \"b\": \"" SHARD2 "\", \"c\": \"" SHARD1 "\"}}");
  add_shard("absent", SHARD1, HDR_A, 8);
  add_shard("absent", SHARD2, HDR_B, 8);
  st_expect_open_error(dir, TSR_ERR_IO, "absent/model.safetensors.index.json",
                       "weight_map maps tensor 'c' to ");
  CHECK_MESSAGE("absent/" SHARD1 ", which does not hold it");
  /* 'b' is mapped to shard 1 but lives in shard 2. */
  dir = make_folder("moved", "{\"weight_map\": {\"a\": \"" SHARD1 "\", \"b\": \"" SHARD1
                             "\", \"c\": \"" SHARD2 "\"}}");
  add_shard("moved", SHARD1, HDR_A, 8);
  add_shard("moved", SHARD2,
            "{\"b\":" W_F32_2 ",\"c\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
            16);
  st_expect_open_error(dir, TSR_ERR_IO, "moved/model.safetensors.index.json",
                       "weight_map maps tensor 'b' to ");
  CHECK_MESSAGE("moved/" SHARD1 ", but it is in ");
  CHECK_MESSAGE("moved/" SHARD2);
  /* A shard holds a tensor the index does not list. */
  dir = make_folder("extra", "{\"weight_map\": {\"a\": \"" SHARD1 "\"}}");
  add_shard("extra", SHARD1, HDR_AB, 16);
  st_expect_open_error(dir, TSR_ERR_IO, "extra/model.safetensors.index.json", "tensor 'b' in ");
  CHECK_MESSAGE("extra/" SHARD1 " is not in the weight_map");
  /* One tensor in two shards: named with both. */
  dir = make_folder("both", "{\"weight_map\": {\"a\": \"" SHARD1 "\", \"b\": \"" SHARD2 "\"}}");
  add_shard("both", SHARD1, HDR_A, 8);
  add_shard("both", SHARD2, HDR_AB, 16);
  st_expect_open_error(dir, TSR_ERR_IO, "both/" SHARD1, "tensor 'a' is in both ");
  CHECK_MESSAGE("both/" SHARD2);
}

static void test_folders(void) {
  /* Without an index, shards found by name must not repeat a tensor either. */
  const char *dir = make_folder("globtwice", NULL);
  add_shard("globtwice", SHARD1, HDR_AB, 16);
  add_shard("globtwice", SHARD2, HDR_B, 8);
  st_expect_open_error(dir, TSR_ERR_IO, "globtwice/" SHARD1, "tensor 'b' is in both ");
  CHECK_MESSAGE("globtwice/" SHARD2);
  /* A bad shard fails the folder, naming the shard. */
  dir = make_folder("globbad", NULL);
  add_shard("globbad", SHARD1, HDR_A, 8);
  add_shard("globbad", SHARD2, "{\"b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}",
            8);
  st_expect_open_error(dir, TSR_ERR_IO, "globbad/" SHARD2, "tensor 'b': data_offsets [0, 8]");
  dir = make_folder("empty", NULL);
  st_expect_open_error(dir, TSR_ERR_IO, dir,
                       "the folder holds no model.safetensors.index.json, model.safetensors or "
                       "model*.safetensors");
  /* Other .safetensors files do not make a checkpoint. */
  dir = make_folder("others", NULL);
  add_shard("others", "adapter.safetensors", HDR_A, 8);
  st_expect_open_error(dir, TSR_ERR_IO, dir, "the folder holds no");
  /* A FIFO is refused, not waited on. */
  const char *fifo = st_path("fifo.safetensors");
  CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
  st_expect_open_error(fifo, TSR_ERR_IO, fifo, "not a regular file (a FIFO)");
  const char *missing = st_path("missing.safetensors");
  st_expect_open_error(missing, TSR_ERR_IO, missing, "cannot open: No such file or directory");
  missing = st_path("no/such/folder");
  st_expect_open_error(missing, TSR_ERR_IO, missing, "cannot open");
}

int main(void) {
  st_make_tmp_dir("test_safetensors_corrupt");
  test_header_length();
  test_json();
  test_entries();
  test_shapes();
  test_offsets();
  test_metadata();
  test_near_misses();
  test_index();
  test_index_against_shards();
  test_folders();
  st_remove_tmp_dir();
  tsr_memory_clear_cache((tsr_device){TSR_CPU, 0});
  CHECK_NO_LEAKS();
  tsr_shutdown();
  printf("test_safetensors_corrupt: ok\n");
  return 0;
}

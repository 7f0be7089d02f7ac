/* tests/base/test_disk_cache.c — base/disk_cache, the checked blob folder behind the JIT cache,
 * in every build (it needs no CUDA, so the sanitizer builds cover it): a stored entry loads back
 * whole; a missing one is a miss; every kind of damage (a flipped payload or header byte,
 * truncation anywhere, an appended byte, another key's entry under this name, a bad magic) is
 * reported as corrupt and never returned, and storing again repairs it; folders are created;
 * no temporary file survives, a failed store included. Compiles the two files in. */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/base/disk_cache.c"
#include "../../src/base/sha256.c"
#include "check.h"

static char root[256], dir[300];

static void make_key(const char *text, uint8_t key[TSRI_SHA256_BYTES]) {
  tsri_sha256_bytes(text, strlen(text), key);
}

static tsri_disk_cache_result load(const uint8_t *key, unsigned char **data, size_t *len) {
  char why[512] = "";
  return tsri_disk_cache_load(dir, key, data, len, why, sizeof why);
}

static void store(const uint8_t *key, const void *data, size_t len) {
  char why[512] = "";
  if (!tsri_disk_cache_store(dir, key, data, len, why, sizeof why)) CHECK_FAIL_("store: %s", why);
}

static void entry_path(const uint8_t *key, char *path, size_t size) {
  char hex[TSRI_SHA256_HEX];
  tsri_sha256_to_hex(key, hex);
  CHECK(tsri_disk_cache_path(dir, hex, path, size));
}

static void expect_hit(const uint8_t *key, const void *want, size_t want_len) {
  unsigned char *data = NULL;
  size_t len = 0;
  CHECK_EQ_INT(load(key, &data, &len), TSRI_DISK_CACHE_HIT);
  CHECK_EQ_U64(len, want_len);
  CHECK(len == 0 || memcmp(data, want, len) == 0);
  free(data);
}

static void expect_corrupt(const uint8_t *key) {
  unsigned char *data = (unsigned char *)"untouched";
  size_t len = 12345;
  CHECK_EQ_INT(load(key, &data, &len), TSRI_DISK_CACHE_CORRUPT);
  CHECK(strcmp((const char *)data, "untouched") == 0 && len == 12345); /* nothing returned */
}

static void write_bytes(const char *path, long at, const void *bytes, size_t n) {
  FILE *f = fopen(path, "r+b");
  CHECK(f != NULL);
  CHECK(fseek(f, at, SEEK_SET) == 0);
  CHECK_EQ_U64(fwrite(bytes, 1, n, f), n);
  fclose(f);
}

static void test_round_trip_and_miss(const uint8_t *key, const char *payload) {
  unsigned char *data = NULL;
  size_t len = 0;
  CHECK_EQ_INT(load(key, &data, &len), TSRI_DISK_CACHE_MISS);
  store(key, payload, strlen(payload));
  expect_hit(key, payload, strlen(payload));
  uint8_t empty_key[32];
  make_key("empty", empty_key);
  store(empty_key, "", 0);
  expect_hit(empty_key, "", 0);
}

/* Each damage is detected, then a store repairs the entry. */
static void test_damage(const uint8_t *key, const char *payload) {
  char path[512];
  entry_path(key, path, sizeof path);
  size_t full = TSRI_DISK_CACHE_HEADER_BYTES + strlen(payload);
  long flips[] = {0, 8, 12, 16, 47, 48, 56, 87, 88, (long)full - 1};
  for (size_t i = 0; i < sizeof flips / sizeof *flips; i++) {
    unsigned char c;
    FILE *f = fopen(path, "rb");
    CHECK(f && fseek(f, flips[i], SEEK_SET) == 0 && fread(&c, 1, 1, f) == 1);
    fclose(f);
    c ^= 0x01;
    write_bytes(path, flips[i], &c, 1);
    expect_corrupt(key);
    store(key, payload, strlen(payload));
    expect_hit(key, payload, strlen(payload));
  }
  for (size_t cut = 0; cut < full; cut += (cut < 100 ? 1 : 37)) {
    CHECK(truncate(path, (off_t)cut) == 0);
    expect_corrupt(key);
    store(key, payload, strlen(payload));
  }
  FILE *f = fopen(path, "ab");
  CHECK(f != NULL);
  fputc('x', f);
  fclose(f);
  expect_corrupt(key);
  store(key, payload, strlen(payload));
  expect_hit(key, payload, strlen(payload));
}

/* A sound entry of another key, renamed to this key's file, is refused. */
static void test_misplaced(const uint8_t *key, const char *payload) {
  uint8_t other[32];
  char path[512], other_path[512];
  make_key("other", other);
  store(other, "other payload", 13);
  entry_path(key, path, sizeof path);
  entry_path(other, other_path, sizeof other_path);
  CHECK(rename(other_path, path) == 0);
  expect_corrupt(key);
  store(key, payload, strlen(payload));
  expect_hit(key, payload, strlen(payload));
}

static void test_no_temporary_files(void) {
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (strstr(e->d_name, ".tmp.")) CHECK_FAIL_("temporary file left: %s", e->d_name);
  closedir(d);
}

/* A folder that cannot be created (a file is in the way): the store fails and says why. */
static void test_store_failure(const uint8_t *key) {
  char blocked[400], why[512] = "";
  snprintf(blocked, sizeof blocked, "%s/file", root);
  FILE *f = fopen(blocked, "w");
  CHECK(f != NULL);
  fclose(f);
  snprintf(blocked, sizeof blocked, "%s/file/kernels", root);
  CHECK(!tsri_disk_cache_store(blocked, key, "x", 1, why, sizeof why));
  CHECK(strstr(why, "mkdir") != NULL);
  unsigned char *data = NULL;
  size_t len = 0;
  CHECK_EQ_INT(tsri_disk_cache_load(blocked, key, &data, &len, why, sizeof why),
               TSRI_DISK_CACHE_ERROR);
}

int main(void) {
  snprintf(root, sizeof root, "%s/tsr-disk-cache.XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  CHECK(mkdtemp(root) != NULL);
  snprintf(dir, sizeof dir, "%s/nested/kernels", root); /* created by the first store */
  uint8_t key[32];
  make_key("the key", key);
  const char *payload = "a compiled kernel, or any blob: 0123456789abcdef0123456789abcdef";
  test_round_trip_and_miss(key, payload);
  test_damage(key, payload);
  test_misplaced(key, payload);
  test_no_temporary_files();
  test_store_failure(key);
  char command[400];
  snprintf(command, sizeof command, "rm -rf '%s'", root);
  CHECK(system(command) == 0);
  printf("test_disk_cache: ok\n");
  return 0;
}

/* tests/cuda/test_kernel_sources.c — the public tsr_kernel_source* contract (every build, CPU-only
 * included): the count and names follow src/cuda/kernels/SHA256SUMS, each source's bytes equal
 * the file in the tree (and are NUL-terminated), each hash is the SHA-256 of those bytes, and
 * unknown or NULL names give NULL. Also the SHA-256 itself against FIPS 180-4's examples. The
 * library's SHA-256 is internal, so this file compiles base/sha256.c in. */
#include <sys/stat.h>

#include "../../src/base/sha256.c"
#include "check.h"

#define SOURCE_DIR TSR_TEST_DATA_DIR "/../../src"

static void check_digest(const void *data, size_t len, const char *want) {
  uint8_t digest[TSRI_SHA256_BYTES];
  char hex[TSRI_SHA256_HEX];
  tsri_sha256_bytes(data, len, digest);
  tsri_sha256_to_hex(digest, hex);
  if (strcmp(hex, want) != 0) CHECK_FAIL_("sha256 of %zu bytes: %s, want %s", len, hex, want);
}

/* FIPS 180-4's one-block, two-block and long examples, and the empty message; the long one is
   fed in uneven pieces so block boundaries fall inside update calls. */
static void test_sha256_vectors(void) {
  check_digest("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  check_digest("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  check_digest(two, strlen(two),
               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  static char million[1000000];
  memset(million, 'a', sizeof million);
  tsri_sha256 h;
  tsri_sha256_init(&h);
  for (size_t at = 0, piece = 1; at < sizeof million; at += piece, piece = piece * 3 % 1000 + 1)
    tsri_sha256_update(&h, million + at, piece < sizeof million - at ? piece : sizeof million - at);
  uint8_t digest[TSRI_SHA256_BYTES];
  char hex[TSRI_SHA256_HEX];
  tsri_sha256_final(&h, digest);
  tsri_sha256_to_hex(digest, hex);
  CHECK(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0);
}

static char *read_whole(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) CHECK_FAIL_("cannot open %s", path);
  struct stat st;
  CHECK(fstat(fileno(f), &st) == 0);
  char *data = malloc((size_t)st.st_size + 1);
  CHECK(data != NULL);
  *len = fread(data, 1, (size_t)st.st_size, f);
  CHECK_EQ_U64(*len, st.st_size);
  fclose(f);
  return data;
}

/* The manifest's names, in order, must be the library's. */
static void test_names_follow_manifest(void) {
  size_t len;
  char *manifest = read_whole(SOURCE_DIR "/cuda/kernels/SHA256SUMS", &len);
  manifest[len] = '\0';
  size_t i = 0;
  for (char *line = strtok(manifest, "\n"); line; line = strtok(NULL, "\n"), i++) {
    CHECK(strlen(line) > 66);
    const char *name = tsr_kernel_source_name(i);
    if (!name || strcmp(name, line + 66) != 0)
      CHECK_FAIL_("source %zu: library says %s, manifest %s", i, name ? name : "(null)", line + 66);
    if (strncmp(tsr_kernel_source_sha256(name), line, 64) != 0)
      CHECK_FAIL_("%s: library hash %s, manifest %.64s", name, tsr_kernel_source_sha256(name),
                  line);
  }
  CHECK_EQ_U64(i, tsr_kernel_source_count());
  free(manifest);
}

static void test_bytes_and_hashes(void) {
  size_t count = tsr_kernel_source_count();
  CHECK(count >= 4);
  bool have_format = false, have_dequantize = false;
  for (size_t i = 0; i < count; i++) {
    const char *name = tsr_kernel_source_name(i);
    CHECK(name != NULL);
    for (size_t j = 0; j < i; j++)
      CHECK(strcmp(name, tsr_kernel_source_name(j)) != 0);
    have_format |= strcmp(name, "base/quant_format.h") == 0;
    have_dequantize |= strcmp(name, "cuda/kernels/dequantize.cuh") == 0;
    size_t len = 12345, file_len;
    const char *bytes = tsr_kernel_source(name, &len);
    CHECK(bytes != NULL && bytes[len] == '\0');
    CHECK(tsr_kernel_source(name, NULL) == bytes);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", SOURCE_DIR, name);
    char *file = read_whole(path, &file_len);
    CHECK_EQ_U64(len, file_len);
    if (memcmp(bytes, file, len) != 0) CHECK_FAIL_("%s: embedded bytes differ from %s", name, path);
    free(file);
    const char *hash = tsr_kernel_source_sha256(name);
    CHECK(hash != NULL && strlen(hash) == 64 && strspn(hash, "0123456789abcdef") == 64);
    check_digest(bytes, len, hash);
  }
  CHECK(have_format && have_dequantize);
}

static void test_unknown_names(void) {
  size_t len = 7;
  CHECK(tsr_kernel_source_name(tsr_kernel_source_count()) == NULL);
  CHECK(tsr_kernel_source_name((size_t)-1) == NULL);
  CHECK(tsr_kernel_source("cuda/kernels/nope.cuh", &len) == NULL);
  CHECK_EQ_U64(len, 0);
  len = 7;
  CHECK(tsr_kernel_source(NULL, &len) == NULL);
  CHECK_EQ_U64(len, 0);
  CHECK(tsr_kernel_source_sha256(NULL) == NULL);
  CHECK(tsr_kernel_source_sha256("dequantize.cuh") == NULL); /* names are full paths */
}

int main(void) {
  test_sha256_vectors();
  test_names_follow_manifest();
  test_bytes_and_hashes();
  test_unknown_names();
  printf("test_kernel_sources: ok (%zu sources)\n", tsr_kernel_source_count());
  return 0;
}

/* tests/cuda/test_kernel_cache.c — the JIT and its disk cache, without a GPU (NVRTC compiles on
 * any machine; only loading needs a device): the key changes with the options and the compute
 * capability, a second compile is a disk hit with the same bytes, a corrupt, truncated, extended
 * or misplaced entry is rebuilt (never loaded) and then sound again, no temporary file is left,
 * racing processes never read half an entry, malformed options are refused, NVRTC's errors are
 * reported; and every AOT module's record matches the embedded sources (a stale one refused). */
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cuda/modules.h"

static const char *const affine4 = "-DTSR_QF_MODE=0 -DTSR_QF_BITS=4 -DTSR_QF_GROUP_SIZE=64";
static char cache_dir[256];

static void compile(const char *options, int major, int minor, tsri_jit_module *out,
                    tsri_jit_origin want) {
  CHECK_OK(tsri_cuda_jit_compile("dequantize", options, major, minor, cache_dir, out));
  if (out->origin != want) CHECK_FAIL_("%s: origin %d, want %d", options, out->origin, want);
  CHECK(out->image_bytes > 0);
}

static void entry_path(const uint8_t *key, char *path, size_t size) {
  char hex[TSRI_SHA256_HEX];
  tsri_sha256_to_hex(key, hex);
  CHECK(tsri_disk_cache_path(cache_dir, hex, path, size));
}

static void test_keys(void) {
  uint8_t a[32], b[32], c[32], d[32];
  CHECK_OK(tsri_cuda_jit_key("dequantize", affine4, 9, 0, a));
  CHECK_OK(tsri_cuda_jit_key("dequantize", affine4, 9, 0, b));
  CHECK(memcmp(a, b, 32) == 0);
  CHECK_OK(tsri_cuda_jit_key("dequantize", "-DTSR_QF_MODE=0 -DTSR_QF_BITS=8 -DTSR_QF_GROUP_SIZE=64",
                             9, 0, c));
  CHECK(memcmp(a, c, 32) != 0);
  CHECK_OK(tsri_cuda_jit_key("dequantize", affine4, 8, 9, d));
  CHECK(memcmp(a, d, 32) != 0);
}

/* Compiled, then a disk hit with the same bytes; returns the entry's path. */
static void test_compile_then_hit(char *path, size_t size) {
  tsri_jit_module first, second;
  compile(affine4, 9, 0, &first, TSRI_JIT_COMPILED);
  CHECK(strncmp(first.symbol, "tsr_dequantize_jit_", 19) == 0);
  compile(affine4, 9, 0, &second, TSRI_JIT_DISK_HIT);
  CHECK_EQ_U64(first.image_bytes, second.image_bytes);
  CHECK(memcmp(first.image, second.image, first.image_bytes) == 0);
  CHECK(strcmp(first.symbol, second.symbol) == 0);
  entry_path(first.key, path, size);
  struct stat st;
  CHECK(stat(path, &st) == 0);
  CHECK_EQ_U64(st.st_size, TSRI_DISK_CACHE_HEADER_BYTES + first.image_bytes);
  tsri_cuda_jit_module_free(&first);
  tsri_cuda_jit_module_free(&second);
}

static void damage(const char *path, const char *how) {
  struct stat st;
  CHECK(stat(path, &st) == 0);
  if (strcmp(how, "flip") == 0 || strcmp(how, "flip-header") == 0) {
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    long at = strcmp(how, "flip") == 0 ? (long)st.st_size - 5 : 20;
    CHECK(fseek(f, at, SEEK_SET) == 0);
    int c = fgetc(f);
    CHECK(fseek(f, at, SEEK_SET) == 0);
    fputc(c ^ 0x10, f);
    fclose(f);
  } else if (strcmp(how, "truncate") == 0) {
    CHECK(truncate(path, st.st_size / 2) == 0);
  } else if (strcmp(how, "header-only") == 0) {
    CHECK(truncate(path, TSRI_DISK_CACHE_HEADER_BYTES) == 0);
  } else if (strcmp(how, "empty") == 0) {
    CHECK(truncate(path, 0) == 0);
  } else if (strcmp(how, "append") == 0) {
    FILE *f = fopen(path, "ab");
    CHECK(f != NULL);
    fputc(0, f);
    fclose(f);
  }
}

static void test_damaged_entries_rebuilt(const char *path) {
  static const char *const hows[] = {"flip",        "flip-header", "truncate",
                                     "header-only", "empty",       "append"};
  for (size_t i = 0; i < sizeof hows / sizeof *hows; i++) {
    damage(path, hows[i]);
    tsri_jit_module rebuilt, after;
    compile(affine4, 9, 0, &rebuilt, TSRI_JIT_REBUILT);
    compile(affine4, 9, 0, &after, TSRI_JIT_DISK_HIT);
    CHECK(memcmp(rebuilt.image, after.image, after.image_bytes) == 0);
    tsri_cuda_jit_module_free(&rebuilt);
    tsri_cuda_jit_module_free(&after);
  }
}

/* Another key's sound entry renamed to this key's name is refused: the header names its key. */
static void test_misplaced_entry_rebuilt(const char *path) {
  const char *other = "-DTSR_QF_MODE=1 -DTSR_QF_BITS=4 -DTSR_QF_GROUP_SIZE=32";
  tsri_jit_module m, again;
  compile(other, 9, 0, &m, TSRI_JIT_COMPILED);
  char other_path[512];
  entry_path(m.key, other_path, sizeof other_path);
  CHECK(rename(other_path, path) == 0);
  compile(affine4, 9, 0, &again, TSRI_JIT_REBUILT);
  tsri_cuda_jit_module_free(&m);
  tsri_cuda_jit_module_free(&again);
}

static void test_no_temporary_files(void) {
  DIR *dir = opendir(cache_dir);
  CHECK(dir != NULL);
  for (struct dirent *e; (e = readdir(dir)) != NULL;)
    if (strstr(e->d_name, ".tmp.")) CHECK_FAIL_("temporary file left: %s", e->d_name);
  closedir(dir);
}

/* Four processes compile, store, read and delete one key at once, three times each: every read
   finds a whole entry (a hit) or none (a miss, another deleted it), never a corrupt one. */
static void test_racing_processes(void) {
  const char *options = "-DTSR_QF_MODE=0 -DTSR_QF_BITS=6 -DTSR_QF_GROUP_SIZE=32";
  pid_t children[4];
  for (int c = 0; c < 4; c++) {
    children[c] = fork();
    CHECK(children[c] >= 0);
    if (children[c] > 0) continue;
    for (int round = 0; round < 3; round++) {
      tsri_jit_module m;
      if (tsri_cuda_jit_compile("dequantize", options, 9, 0, cache_dir, &m) != TSR_OK ||
          m.origin == TSRI_JIT_REBUILT)
        _exit(1);
      char why[512];
      unsigned char *data = NULL;
      size_t len = 0;
      tsri_disk_cache_result got =
          tsri_disk_cache_load(cache_dir, m.key, &data, &len, why, sizeof why);
      if (got != TSRI_DISK_CACHE_HIT && got != TSRI_DISK_CACHE_MISS) _exit(2);
      free(data);
      tsri_cuda_jit_module_free(&m);
      /* Remove it so the next round writes it again while others read. */
      char path[512];
      entry_path(m.key, path, sizeof path);
      unlink(path);
    }
    _exit(0);
  }
  for (int c = 0; c < 4; c++) {
    int status = 0;
    CHECK(waitpid(children[c], &status, 0) == children[c]);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      CHECK_FAIL_("racing child %d: status %d", c, status);
  }
}

static void test_bad_requests(void) {
  tsri_jit_module m;
  CHECK_STATUS(tsri_cuda_jit_compile("nope", affine4, 9, 0, cache_dir, &m), TSR_ERR_INVALID);
  CHECK_MESSAGE("cuda/kernels/nope.cuh");
  const char *bad[] = {"-I/etc",    "-DTSR_QF_MODE=0  -DTSR_QF_BITS=4",
                       "-DX=\"a\"", "--use_fast_math",
                       "-D1=2",     " -DX=1"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECK_STATUS(tsri_cuda_jit_compile("dequantize", bad[i], 9, 0, cache_dir, &m), TSR_ERR_INVALID);
  /* The kernel's own #error: NVRTC's log reaches the message. */
  CHECK_STATUS(tsri_cuda_jit_compile("dequantize", "-DTSR_QF_MODE=0", 9, 0, cache_dir, &m),
               TSR_ERR_DEVICE);
  CHECK_MESSAGE("specialized by TSR_QF_MODE");
}

/* Every specialization the kernel supports compiles (the AOT ones and JIT-only ones). */
static void test_every_mode_compiles(void) {
  const char *specs[] = {"-DTSR_QF_MODE=0 -DTSR_QF_BITS=2 -DTSR_QF_GROUP_SIZE=128",
                         "-DTSR_QF_MODE=0 -DTSR_QF_BITS=3 -DTSR_QF_GROUP_SIZE=32",
                         "-DTSR_QF_MODE=0 -DTSR_QF_BITS=5 -DTSR_QF_GROUP_SIZE=64",
                         "-DTSR_QF_MODE=2 -DTSR_QF_BITS=8 -DTSR_QF_GROUP_SIZE=32",
                         "-DTSR_QF_MODE=3 -DTSR_QF_BITS=4 -DTSR_QF_GROUP_SIZE=16"};
  for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
    tsri_jit_module m;
    CHECK_OK(tsri_cuda_jit_compile("dequantize", specs[i], 9, 0, NULL, &m));
    CHECK(m.origin == TSRI_JIT_COMPILED && m.image_bytes > 0);
    tsri_cuda_jit_module_free(&m);
  }
}

/* The records CMake wrote agree with the closure hash the JIT computes; a stale one is refused;
   AOT and JIT symbols never coincide, and AOT ones are distinct from each other. */
static void test_aot_records(void) {
  CHECK(tsri_kernel_aot_table_count >= 2);
  for (size_t i = 0; i < tsri_kernel_aot_table_count; i++) {
    const tsri_kernel_aot_module *m = &tsri_kernel_aot_table[i];
    CHECK_OK(tsri_cuda_aot_check(m));
    CHECK(m->image_bytes > 0 && tsri_cuda_aot_find(m->kernel, m->options) == m);
    /* A whole fatbin where the record says (embedded with .incbin): its header's magic, and its
       header and payload sizes adding up to the recorded size, read in place (64-byte aligned). */
    uint32_t magic;
    uint16_t header_bytes;
    uint64_t payload_bytes;
    CHECK(m->image_bytes >= 16 && (uintptr_t)m->image % 64 == 0);
    memcpy(&magic, m->image, 4);
    memcpy(&header_bytes, m->image + 6, 2);
    memcpy(&payload_bytes, m->image + 8, 8);
    if (magic != 0xBA55ED50u || header_bytes + payload_bytes != m->image_bytes)
      CHECK_FAIL_("AOT module %s: magic %08x, %u + %llu header and payload bytes, recorded %zu",
                  m->symbol, magic, header_bytes, (unsigned long long)payload_bytes,
                  m->image_bytes);
    /* The JIT's symbol for the same options: compiled for the first 32 modules only (a
       suite-wide AOT set, TSR_AOT_EXTRA, holds hundreds, and the naming rule is one) */
    if (i < 32) {
      tsri_jit_module jit;
      CHECK_OK(tsri_cuda_jit_compile(m->kernel, m->options, 9, 0, NULL, &jit));
      CHECK(strcmp(jit.symbol, m->symbol) != 0);
      CHECK(strcmp(strrchr(jit.symbol, '_'), strrchr(m->symbol, '_')) == 0); /* same hash */
      tsri_cuda_jit_module_free(&jit);
    }
    for (size_t j = 0; j < i; j++)
      CHECK(strcmp(m->symbol, tsri_kernel_aot_table[j].symbol) != 0);
    tsri_kernel_aot_module stale = *m;
    stale.closure_sha256 = "0000000000000000000000000000000000000000000000000000000000000000";
    CHECK_STATUS(tsri_cuda_aot_check(&stale), TSR_ERR_STATE);
    CHECK_MESSAGE("0000000000");
    CHECK_MESSAGE(m->closure_sha256);
  }
  CHECK(tsri_cuda_aot_find("dequantize", "-DTSR_QF_MODE=3 -DTSR_QF_BITS=4") == NULL);
}

int main(void) {
  snprintf(cache_dir, sizeof cache_dir, "%s/tsr-kernel-cache.XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  CHECK(mkdtemp(cache_dir) != NULL);
  char path[512];
  test_keys();
  test_compile_then_hit(path, sizeof path);
  test_damaged_entries_rebuilt(path);
  test_misplaced_entry_rebuilt(path);
  test_no_temporary_files();
  test_racing_processes();
  test_no_temporary_files();
  test_bad_requests();
  test_every_mode_compiles();
  test_aot_records();
  char command[600];
  snprintf(command, sizeof command, "rm -rf '%s'", cache_dir);
  CHECK(system(command) == 0);
  printf("test_kernel_cache: ok\n");
  return 0;
}

/* tests/io/test_safetensors.h — what the safetensors tests share: a scratch folder under /tmp
 * removed at the end, files written byte by byte (for layouts tessera's writer would never
 * produce), the check that opening one fails as it should, loads compared with their bytes and the
 * CPU ledger's active bytes. */
#ifndef TSR_TESTS_IO_TEST_SAFETENSORS_H
#define TSR_TESTS_IO_TEST_SAFETENSORS_H

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static char st_tmp_dir[64];
static const tsr_device st_cpu = {TSR_CPU, 0};

static inline void st_make_tmp_dir(const char *test) {
  snprintf(st_tmp_dir, sizeof st_tmp_dir, "/tmp/tsr_%s_XXXXXX", test);
  if (!mkdtemp(st_tmp_dir)) CHECK_FAIL_("mkdtemp failed");
}

/* A path under the scratch folder; eight buffers in rotation, so a call can take several. */
static inline const char *st_path(const char *name) {
  static char paths[8][256];
  static int next;
  char *path = paths[next++ % 8];
  snprintf(path, sizeof paths[0], "%s/%s", st_tmp_dir, name);
  return path;
}

static inline void st_write_bytes(const char *path, const void *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) CHECK_FAIL_("cannot create %s", path);
  if (n && fwrite(bytes, 1, n, f) != n) CHECK_FAIL_("cannot write %s", path);
  fclose(f);
}

/* A safetensors file by hand: the header length `header_bytes` (as given, true or not), the
 * header text, then `data_bytes` bytes of data (a byte pattern when data is NULL). */
static inline void st_write_raw(const char *path, uint64_t header_bytes, const char *header,
                                const void *data, size_t data_bytes) {
  FILE *f = fopen(path, "wb");
  if (!f) CHECK_FAIL_("cannot create %s", path);
  unsigned char length[8];
  for (int i = 0; i < 8; i++)
    length[i] = (unsigned char)(header_bytes >> (8 * i));
  CHECK(fwrite(length, 1, 8, f) == 8);
  CHECK(fwrite(header, 1, strlen(header), f) == strlen(header));
  for (size_t i = 0; i < data_bytes; i++)
    CHECK(fputc(data ? ((const unsigned char *)data)[i] : (int)(i * 7 + 1) & 0xFF, f) != EOF);
  fclose(f);
}

/* The same with the header's true length. */
static inline void st_write(const char *path, const char *header, const void *data,
                            size_t data_bytes) {
  st_write_raw(path, strlen(header), header, data, data_bytes);
}

/* Opening `path` fails with `status` (out left NULL), and the message names the path or folder
 * `names` and says `what`. */
static inline void st_expect_open_error(const char *path, tsr_status status, const char *names,
                                        const char *what) {
  tsr_safetensors *st = NULL;
  CHECK_STATUS(tsr_safetensors_open(&st, path), status);
  CHECK(st == NULL);
  if (!strstr(tsr_last_error(), names) || !strstr(tsr_last_error(), what))
    CHECK_FAIL_("%s: message \"%s\" should name \"%s\" and say \"%s\"", path, tsr_last_error(),
                names, what);
}

static inline int st_remove_entry(const char *path, const struct stat *info, int flag,
                                  struct FTW *ftw) {
  (void)info, (void)flag, (void)ftw;
  return remove(path);
}

static inline void st_remove_tmp_dir(void) {
  CHECK_EQ_INT(nftw(st_tmp_dir, st_remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* ---- shared checks --------------------------------------------------------------------- */

static inline uint64_t st_active_bytes(void) {
  /* On a GPU default device a CPU array an earlier op copied over (test_save_lazy's add) comes
     back to the CPU's ledger when the GPU stream has passed the copy: synchronizing runs those
     releases (without it the check raced the release thread: 64 != 0 once in three GPU runs). */
  CHECK_OK(tsr_stream_synchronize(NULL));
  tsr_backing_snapshot snap;
  CHECK_OK(tsr_calibration_snapshot(st_cpu, &snap));
  CHECK_EQ_U64(snap.pending, 0);
  return snap.active;
}

/* Temporary files the writer left in `dir` (there must be none). */
static inline int st_leftovers(const char *dir) {
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  int count = 0;
  struct dirent *entry;
  while ((entry = readdir(d)) != NULL)
    count += strstr(entry->d_name, ".tmp") != NULL;
  closedir(d);
  return count;
}

static inline tsr_array *st_f32_array(const float *values, int64_t n) {
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data_on(&a, values, TSR_FLOAT32, (int64_t[]){n}, 1, st_cpu));
  return a;
}

/* The tensor loads on the CPU with this dtype, shape and bytes. */
static inline void st_check_load(tsr_safetensors *st, const char *name, tsr_dtype dtype, int ndim,
                                 const int64_t *shape, const void *bytes, size_t nbytes) {
  tsr_array *a = NULL;
  CHECK_OK(tsr_safetensors_load(&a, st, name, st_cpu));
  CHECK_EQ_INT(tsr_array_dtype(a), dtype);
  CHECK_EQ_INT(tsr_array_ndim(a), ndim);
  for (int d = 0; d < ndim; d++)
    CHECK_EQ_INT(tsr_array_dim(a, d), shape[d]);
  unsigned char got[1024];
  CHECK(nbytes <= sizeof got);
  CHECK_OK(tsr_array_read(a, got, nbytes));
  if (nbytes && memcmp(got, bytes, nbytes) != 0) CHECK_FAIL_("tensor '%s': values differ", name);
  tsr_array_release(a);
}

#endif

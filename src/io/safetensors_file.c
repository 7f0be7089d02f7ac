/* io/safetensors_file.c — one safetensors file mapped whole (read-only, private) and its
 * reference count: the header length is bounded here, the header itself is validated by
 * safetensors_header.c. A file shrunk by someone else after it was mapped makes reads past its
 * new end fault (SIGBUS); that is outside the contract, as for any mapped file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/status.h"
#include "io/file.h"
#include "io/safetensors.h"

static uint64_t read_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

/* The whole file mapped into file->map. Opened through io/file.h: a FIFO or a device at the
 * path is refused rather than waited on or mapped. */
static tsr_status map_file(tsri_st_file *file) {
  FILE *f = NULL;
  int64_t bytes = 0;
  tsr_status status = tsri_file_open_read("safetensors:", file->path, &f, &bytes);
  if (status != TSR_OK) return status;
  if (bytes < 8) {
    status = tsri_error(TSR_ERR_IO,
                        "safetensors: %s: %lld bytes, too short for the 8-byte header length",
                        file->path, (long long)bytes);
  } else {
    void *map = mmap(NULL, (size_t)bytes, PROT_READ, MAP_PRIVATE, fileno(f), 0);
    if (map == MAP_FAILED)
      status = tsri_error(TSR_ERR_IO, "safetensors: %s: cannot map %lld bytes: %s", file->path,
                          (long long)bytes, strerror(errno));
    else
      file->map = map, file->map_bytes = (size_t)bytes;
  }
  fclose(f);
  return status;
}

/* The header length: not 0, not absurd, not past the end of the file. */
static tsr_status check_header_length(tsri_st_file *file, uint64_t *header_bytes) {
  uint64_t n = read_le64(file->map), after = file->map_bytes - 8;
  if (n == 0) return tsri_error(TSR_ERR_IO, "safetensors: %s: header length is 0", file->path);
  if (n > TSRI_ST_HEADER_MAX)
    return tsri_error(TSR_ERR_IO,
                      "safetensors: %s: header length %llu is over the %llu-byte limit "
                      "(not a safetensors file?)",
                      file->path, (unsigned long long)n, (unsigned long long)TSRI_ST_HEADER_MAX);
  if (n > after)
    return tsri_error(TSR_ERR_IO,
                      "safetensors: %s: header length %llu is past the end of the file (%llu "
                      "bytes after the length; truncated?)",
                      file->path, (unsigned long long)n, (unsigned long long)after);
  *header_bytes = n;
  return TSR_OK;
}

tsr_status tsri_st_file_open(const char *path, tsri_st_file **out, tsri_st_tensor **tensors,
                             size_t *count) {
  tsri_st_file *file = calloc(1, sizeof *file);
  char *copy = strdup(path);
  tsr_status status = TSR_OK;
  if (!file || !copy) {
    free(copy);
    free(file);
    return tsri_error(TSR_ERR_NOMEM, "safetensors: %s: out of host memory", path);
  }
  file->path = copy;
  atomic_init(&file->refs, 1);
  uint64_t header_bytes = 0;
  status = map_file(file);
  if (status == TSR_OK) status = check_header_length(file, &header_bytes);
  if (status != TSR_OK) goto fail;
  file->data_start = 8 + (size_t)header_bytes;
  status = tsri_st_header_parse(file, (const char *)file->map + 8, (size_t)header_bytes,
                                file->map_bytes - file->data_start, tensors, count);
  if (status != TSR_OK) goto fail;
  *out = file;
  return TSR_OK;
fail:
  tsri_st_file_release(file);
  return status;
}

tsri_st_file *tsri_st_file_retain(tsri_st_file *file) {
  if (file) atomic_fetch_add_explicit(&file->refs, 1, memory_order_relaxed);
  return file;
}

void tsri_st_file_release(tsri_st_file *file) {
  if (!file || atomic_fetch_sub_explicit(&file->refs, 1, memory_order_acq_rel) != 1) return;
  if (file->map) munmap((void *)file->map, file->map_bytes);
  for (size_t i = 0; i < file->nmeta; i++) {
    free(file->meta_keys[i]);
    free(file->meta_values[i]);
  }
  free(file->meta_keys);
  free(file->meta_values);
  free(file->path);
  free(file);
}

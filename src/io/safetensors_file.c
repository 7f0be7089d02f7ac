/* io/safetensors_file.c — one safetensors file mapped whole (read-only, private) and its
 * reference count: the header length is bounded here, the header itself is validated by
 * safetensors_header.c. A file shrunk by someone else after it was mapped makes reads past its
 * new end fault (SIGBUS); that is outside the contract, as for any mapped file. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/status.h"
#include "io/safetensors.h"

static uint64_t read_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

/* The whole file mapped into file->map. */
static tsr_status map_file(tsri_st_file *file) {
  int fd = open(file->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return tsri_error(TSR_ERR_IO, "safetensors: %s: cannot open: %s", file->path, strerror(errno));
  tsr_status status = TSR_OK;
  struct stat info;
  if (fstat(fd, &info) != 0) {
    status =
        tsri_error(TSR_ERR_IO, "safetensors: %s: cannot stat: %s", file->path, strerror(errno));
  } else if (!S_ISREG(info.st_mode)) {
    status = tsri_error(TSR_ERR_IO, "safetensors: %s: not a regular file", file->path);
  } else if (info.st_size < 8) {
    status = tsri_error(TSR_ERR_IO,
                        "safetensors: %s: %lld bytes, too short for the 8-byte header length",
                        file->path, (long long)info.st_size);
  } else {
    void *map = mmap(NULL, (size_t)info.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED)
      status = tsri_error(TSR_ERR_IO, "safetensors: %s: cannot map %lld bytes: %s", file->path,
                          (long long)info.st_size, strerror(errno));
    else
      file->map = map, file->map_bytes = (size_t)info.st_size;
  }
  close(fd);
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

/* io/safetensors_reader.c — tessera/safetensors.h's reader: the files of a checkpoint opened
 * and validated, their tensors in one table sorted by name (binary search; ~100k names in a
 * large checkpoint), and tensors loaded as arrays: wrapped in place when the mapping allows it,
 * copied otherwise. Which files a path means is safetensors_folder.c's; what one file holds is
 * safetensors_file.c's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/safetensors.h"
#include "tessera/safetensors.h"

struct tsr_safetensors {
  char *path;
  tsri_st_file **files; /* one reference each, in the order they were opened */
  size_t nfiles;
  tsri_st_tensor *tensors; /* sorted by name, names unique */
  size_t count;
};

static int by_name(const void *a, const void *b) {
  return strcmp(((const tsri_st_tensor *)a)->name, ((const tsri_st_tensor *)b)->name);
}

/* Opens one file and moves its tensors to the end of the reader's table. */
static tsr_status add_file(tsr_safetensors *st, const char *path) {
  tsri_st_tensor *tensors = NULL;
  size_t n = 0;
  tsr_status status = tsri_st_file_open(path, &st->files[st->nfiles], &tensors, &n);
  if (status != TSR_OK) return status;
  st->nfiles++;
  tsri_st_tensor *grown = realloc(st->tensors, (st->count + n + 1) * sizeof *grown);
  if (!grown) {
    tsri_st_tensors_free(tensors, n);
    return tsri_error(TSR_ERR_NOMEM, "safetensors: %s: out of host memory", path);
  }
  st->tensors = grown;
  if (n) memcpy(st->tensors + st->count, tensors, n * sizeof *tensors);
  st->count += n;
  free(tensors); /* the names now belong to the reader's table */
  return TSR_OK;
}

/* After sorting: no name twice, within a file or across files. */
static tsr_status check_unique(const tsr_safetensors *st) {
  for (size_t i = 1; i < st->count; i++) {
    const tsri_st_tensor *a = &st->tensors[i - 1], *b = &st->tensors[i];
    if (strcmp(a->name, b->name) != 0) continue;
    if (a->file == b->file)
      return tsri_error(TSR_ERR_IO, "safetensors: %s: tensor '%s' is listed twice", a->file->path,
                        a->name);
    return tsri_error(TSR_ERR_IO, "safetensors: %s: tensor '%s' is in both %s and %s", st->path,
                      a->name, a->file->path, b->file->path);
  }
  return TSR_OK;
}

static tsr_status open_files(tsr_safetensors *st, const tsri_st_layout *layout) {
  st->files = calloc(layout->nfiles + 1, sizeof *st->files);
  if (!st->files) return tsri_error(TSR_ERR_NOMEM, "safetensors: %s: out of host memory", st->path);
  tsr_status status = TSR_OK;
  for (size_t i = 0; i < layout->nfiles && status == TSR_OK; i++)
    status = add_file(st, layout->files[i]);
  if (status != TSR_OK) return status;
  qsort(st->tensors, st->count, sizeof *st->tensors, by_name);
  status = check_unique(st);
  if (status == TSR_OK) status = tsri_st_layout_check(layout, st->tensors, st->count);
  return status;
}

tsr_status tsr_safetensors_open(tsr_safetensors **out, const char *path) {
  if (!out || !path)
    return tsri_error(TSR_ERR_INVALID, "safetensors_open: %s is NULL", !out ? "out" : "path");
  tsri_st_layout layout;
  tsr_status status = tsri_st_layout_find(&layout, path);
  if (status != TSR_OK) return status;
  tsr_safetensors *st = calloc(1, sizeof *st);
  if (!st || !(st->path = strdup(path))) {
    status = tsri_error(TSR_ERR_NOMEM, "safetensors: %s: out of host memory", path);
    goto done;
  }
  status = open_files(st, &layout);
done:
  tsri_st_layout_free(&layout);
  if (status != TSR_OK) {
    tsr_safetensors_close(st);
    return status;
  }
  *out = st;
  return TSR_OK;
}

void tsr_safetensors_close(tsr_safetensors *st) {
  if (!st) return;
  tsri_st_tensors_free(st->tensors, st->count);
  for (size_t i = 0; i < st->nfiles; i++)
    tsri_st_file_release(st->files[i]);
  free(st->files);
  free(st->path);
  free(st);
}

size_t tsr_safetensors_count(const tsr_safetensors *st) {
  return st ? st->count : 0;
}

static const tsri_st_tensor *lookup(const tsr_safetensors *st, const char *name) {
  if (!st || !name) return NULL;
  tsri_st_tensor key = {.name = (char *)name};
  return bsearch(&key, st->tensors, st->count, sizeof *st->tensors, by_name);
}

static void fill_info(const tsri_st_tensor *t, tsr_tensor_info *out) {
  memset(out, 0, sizeof *out);
  out->name = t->name;
  out->file = t->file->path;
  /* A file dtype without an array type reads as a value outside the enum. */
  out->dtype = t->dtype->loadable ? t->dtype->dtype : (tsr_dtype)-1;
  out->ndim = t->ndim;
  memcpy(out->shape, t->shape, sizeof t->shape);
  out->nbytes = t->nbytes;
}

tsr_status tsr_safetensors_info(const tsr_safetensors *st, size_t i, tsr_tensor_info *out) {
  if (!st || !out)
    return tsri_error(TSR_ERR_INVALID, "safetensors_info: %s is NULL", !st ? "reader" : "out");
  if (i >= st->count)
    return tsri_error(TSR_ERR_INVALID, "safetensors_info: index %zu out of range (%zu tensors)", i,
                      st->count);
  fill_info(&st->tensors[i], out);
  return TSR_OK;
}

tsr_status tsr_safetensors_find(const tsr_safetensors *st, const char *name, tsr_tensor_info *out) {
  if (!st || !name || !out)
    return tsri_error(TSR_ERR_INVALID, "safetensors_find: %s is NULL",
                      !st     ? "reader"
                      : !name ? "name"
                              : "out");
  const tsri_st_tensor *t = lookup(st, name);
  if (!t) return tsri_error(TSR_ERR_INVALID, "safetensors: %s: no tensor '%s'", st->path, name);
  fill_info(t, out);
  return TSR_OK;
}

bool tsr_safetensors_has(const tsr_safetensors *st, const char *name) {
  return lookup(st, name) != NULL;
}

const char *tsr_safetensors_metadata(const tsr_safetensors *st, const char *key) {
  if (!st || !key) return NULL;
  for (size_t f = 0; f < st->nfiles; f++)
    for (size_t i = 0; i < st->files[f]->nmeta; i++)
      if (strcmp(st->files[f]->meta_keys[i], key) == 0) return st->files[f]->meta_values[i];
  return NULL;
}

/* The deleter of a wrapped tensor: the array's reference on its mapped file. */
static void drop_file(void *file) {
  tsri_st_file_release(file);
}

/* An array of `shape` over the `nbytes` mapped bytes at `bytes` of tensor t's file: wrapped on
 * the CPU when aligned to the element size, copied otherwise (and for other devices). */
static tsr_status make_array(tsr_array **out, const tsri_st_tensor *t, const unsigned char *bytes,
                             const int64_t *shape, uint64_t nbytes, tsr_device d) {
  tsr_dtype dtype = t->dtype->dtype;
  bool aligned = (uintptr_t)bytes % t->dtype->bytes == 0;
  if (d.type != TSR_CPU || nbytes == 0 || !aligned)
    return tsr_array_from_data_on(out, bytes, dtype, shape, t->ndim, d);
  tsri_st_file *file = tsri_st_file_retain(t->file);
  tsr_status status =
      tsr_array_from_external(out, (void *)bytes, dtype, shape, t->ndim, d, drop_file, file);
  if (status != TSR_OK) tsri_st_file_release(file); /* a failed wrap never runs the deleter */
  return status;
}

/* The tensor called `name` in *t when it exists and has a tessera dtype; else the error. */
static tsr_status find_loadable(tsr_safetensors *st, const char *name, const tsri_st_tensor **t) {
  *t = lookup(st, name);
  if (!*t) return tsri_error(TSR_ERR_INVALID, "safetensors: %s: no tensor '%s'", st->path, name);
  if (!(*t)->dtype->loadable)
    return tsri_error(TSR_ERR_UNSUPPORTED,
                      "safetensors: %s: tensor '%s' is %s, which has no tessera dtype",
                      (*t)->file->path, name, (*t)->dtype->name);
  return TSR_OK;
}

/* Prefixes a failure to make the array with the file, the tensor and its byte count. */
static tsr_status name_failure(tsr_status status, const tsri_st_tensor *t, uint64_t nbytes) {
  if (status == TSR_OK) return TSR_OK;
  char message[TSR_ERROR_MAX];
  snprintf(message, sizeof message, "safetensors: %s: tensor '%s' (%llu bytes): %s", t->file->path,
           t->name, (unsigned long long)nbytes, tsr_last_error());
  return tsri_error_copy(status, message);
}

tsr_status tsr_safetensors_load(tsr_array **out, tsr_safetensors *st, const char *name,
                                tsr_device d) {
  if (!out || !st || !name)
    return tsri_error(TSR_ERR_INVALID, "safetensors_load: %s is NULL",
                      !out  ? "out"
                      : !st ? "reader"
                            : "name");
  const tsri_st_tensor *t = NULL;
  tsr_status status = find_loadable(st, name, &t);
  if (status != TSR_OK) return status;
  return name_failure(make_array(out, t, t->file->map + t->begin, t->shape, t->nbytes, d), t,
                      t->nbytes);
}

/* A slice [start, stop) of axis `axis`, seen as `outer` blocks (the product of the axes before
 * it) of `row_bytes` each, of which the slice takes `slice_bytes` at `skip_bytes`. */
typedef struct {
  uint64_t outer, row_bytes, skip_bytes, slice_bytes;
  int64_t shape[TSR_MAX_NDIM];
} slice_geometry;

static tsr_status slice_geometry_of(const tsri_st_tensor *t, int axis, int64_t start, int64_t stop,
                                    slice_geometry *g) {
  if (axis < 0 || axis >= t->ndim)
    return tsri_error(TSR_ERR_INVALID,
                      "safetensors_load_slice: tensor '%s' has %d axes, not axis %d", t->name,
                      t->ndim, axis);
  if (start < 0 || start > stop || stop > t->shape[axis])
    return tsri_error(TSR_ERR_INVALID,
                      "safetensors_load_slice: [%lld, %lld) is not a range of axis %d of tensor "
                      "'%s' (length %lld)",
                      (long long)start, (long long)stop, axis, t->name, (long long)t->shape[axis]);
  uint64_t inner = t->dtype->bytes;
  for (int i = axis + 1; i < t->ndim; i++)
    inner *= (uint64_t)t->shape[i];
  g->outer = 1;
  for (int i = 0; i < axis; i++)
    g->outer *= (uint64_t)t->shape[i];
  g->row_bytes = (uint64_t)t->shape[axis] * inner;
  g->skip_bytes = (uint64_t)start * inner;
  g->slice_bytes = (uint64_t)(stop - start) * inner;
  memcpy(g->shape, t->shape, sizeof g->shape);
  g->shape[axis] = stop - start;
  return TSR_OK;
}

/* The deleter of a gathered slice handed to a CPU array. */
static void free_gathered(void *buf) {
  free(buf);
}

/* The slice's pieces gathered into one host buffer: the CPU array's own (no second copy), or
   copied into an array on another device. */
static tsr_status gather_slice(tsr_array **out, const tsri_st_tensor *t, const slice_geometry *g,
                               tsr_device d) {
  uint64_t total = g->outer * g->slice_bytes;
  unsigned char *buf = malloc(total ? total : 1);
  if (!buf)
    return tsri_error(TSR_ERR_NOMEM, "out of memory gathering %llu bytes",
                      (unsigned long long)total);
  const unsigned char *base = t->file->map + t->begin + g->skip_bytes;
  for (uint64_t o = 0; o < g->outer; o++)
    memcpy(buf + o * g->slice_bytes, base + o * g->row_bytes, g->slice_bytes);
  if (d.type == TSR_CPU) {
    tsr_status status = tsr_array_from_external(out, buf, t->dtype->dtype, g->shape, t->ndim, d,
                                                free_gathered, buf);
    if (status != TSR_OK) free(buf); /* a failed wrap never runs the deleter */
    return status;
  }
  tsr_status status = tsr_array_from_data_on(out, buf, t->dtype->dtype, g->shape, t->ndim, d);
  free(buf);
  return status;
}

tsr_status tsr_safetensors_load_slice(tsr_array **out, tsr_safetensors *st, const char *name,
                                      int axis, int64_t start, int64_t stop, tsr_device d) {
  if (!out || !st || !name)
    return tsri_error(TSR_ERR_INVALID, "safetensors_load_slice: %s is NULL",
                      !out  ? "out"
                      : !st ? "reader"
                            : "name");
  const tsri_st_tensor *t = NULL;
  slice_geometry g;
  tsr_status status = find_loadable(st, name, &t);
  if (status == TSR_OK) status = slice_geometry_of(t, axis, start, stop, &g);
  if (status != TSR_OK) return status;
  uint64_t nbytes = g.outer * g.slice_bytes;
  if (g.outer == 1) /* one contiguous range of the file: wrapped where the mapping allows */
    status = make_array(out, t, t->file->map + t->begin + g.skip_bytes, g.shape, nbytes, d);
  else
    status = gather_slice(out, t, &g, d);
  return name_failure(status, t, nbytes);
}

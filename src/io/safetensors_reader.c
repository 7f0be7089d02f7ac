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

static tsr_status make_array(tsr_array **out, const tsri_st_tensor *t, tsr_device d) {
  const unsigned char *bytes = t->file->map + t->begin;
  tsr_dtype dtype = t->dtype->dtype;
  bool aligned = (uintptr_t)bytes % t->dtype->bytes == 0;
  if (d.type != TSR_CPU || t->nbytes == 0 || !aligned)
    return tsr_array_from_data_on(out, bytes, dtype, t->shape, t->ndim, d);
  tsri_st_file *file = tsri_st_file_retain(t->file);
  tsr_status status =
      tsr_array_from_external(out, (void *)bytes, dtype, t->shape, t->ndim, d, drop_file, file);
  if (status != TSR_OK) tsri_st_file_release(file); /* a failed wrap never runs the deleter */
  return status;
}

tsr_status tsr_safetensors_load(tsr_array **out, tsr_safetensors *st, const char *name,
                                tsr_device d) {
  if (!out || !st || !name)
    return tsri_error(TSR_ERR_INVALID, "safetensors_load: %s is NULL",
                      !out  ? "out"
                      : !st ? "reader"
                            : "name");
  const tsri_st_tensor *t = lookup(st, name);
  if (!t) return tsri_error(TSR_ERR_INVALID, "safetensors: %s: no tensor '%s'", st->path, name);
  if (!t->dtype->loadable)
    return tsri_error(TSR_ERR_UNSUPPORTED,
                      "safetensors: %s: tensor '%s' is %s, which has no tessera dtype",
                      t->file->path, name, t->dtype->name);
  tsr_status status = make_array(out, t, d);
  if (status != TSR_OK) {
    char message[TSR_ERROR_MAX];
    snprintf(message, sizeof message, "safetensors: %s: tensor '%s' (%llu bytes): %s",
             t->file->path, name, (unsigned long long)t->nbytes, tsr_last_error());
    return tsri_error_copy(status, message);
  }
  return TSR_OK;
}

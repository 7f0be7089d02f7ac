/* io/safetensors_writer.c — tsr_safetensors_save: arrays written as one safetensors file, the
 * way the Hugging Face library lays it out (tensors contiguous in the order given, the JSON
 * header padded with spaces to a multiple of 8 bytes). The file goes through io/file.h's writer:
 * a temporary file beside the target, synced and renamed over it, so a reader never sees half a
 * file and a failed save leaves what was there. Not a sharder: one call, one file. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/file.h"
#include "io/safetensors.h"
#include "tessera/safetensors.h"

/* data_offsets are JSON numbers: past 2^53 a reader's double would no longer hold them. */
#define SAVE_OFFSET_MAX ((uint64_t)1 << 53)

static int by_string(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first string given twice in `strings`, or NULL. */
static tsr_status find_repeat(const char *const *strings, size_t n, const char **repeat) {
  *repeat = NULL;
  const char **sorted = malloc((n + 1) * sizeof *sorted);
  if (!sorted) return tsri_error(TSR_ERR_NOMEM, "safetensors_save: out of host memory");
  if (n) memcpy(sorted, strings, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, by_string);
  for (size_t i = 1; i < n && !*repeat; i++)
    if (strcmp(sorted[i - 1], sorted[i]) == 0) *repeat = sorted[i];
  free(sorted);
  return TSR_OK;
}

static tsr_status check_arguments(const char *path, const char *const *names,
                                  tsr_array *const *arrays, size_t n, const char *const *keys,
                                  const char *const *values, size_t n_meta) {
  if (!path) return tsri_error(TSR_ERR_INVALID, "safetensors_save: path is NULL");
  if (n && (!names || !arrays))
    return tsri_error(TSR_ERR_INVALID, "safetensors_save: %s: %s is NULL for %zu tensors", path,
                      !names ? "names" : "arrays", n);
  if (n_meta && (!keys || !values))
    return tsri_error(TSR_ERR_INVALID, "safetensors_save: %s: meta_%s is NULL for %zu pairs", path,
                      !keys ? "keys" : "values", n_meta);
  for (size_t i = 0; i < n; i++) {
    if (!names[i] || !arrays[i])
      return tsri_error(TSR_ERR_INVALID, "safetensors_save: %s: %s[%zu] is NULL", path,
                        !names[i] ? "names" : "arrays", i);
    if (!names[i][0] || strcmp(names[i], "__metadata__") == 0)
      return tsri_error(TSR_ERR_INVALID,
                        "safetensors_save: %s: names[%zu] '%s' cannot name a tensor", path, i,
                        names[i]);
  }
  for (size_t i = 0; i < n_meta; i++)
    if (!keys[i] || !values[i])
      return tsri_error(TSR_ERR_INVALID, "safetensors_save: %s: meta_%s[%zu] is NULL", path,
                        !keys[i] ? "keys" : "values", i);
  const char *repeat = NULL;
  tsr_status status = find_repeat(names, n, &repeat);
  if (status == TSR_OK && repeat)
    return tsri_error(TSR_ERR_INVALID, "safetensors_save: %s: tensor name '%s' given twice", path,
                      repeat);
  if (status == TSR_OK) status = find_repeat(keys, n_meta, &repeat);
  if (status == TSR_OK && repeat)
    return tsri_error(TSR_ERR_INVALID, "safetensors_save: %s: metadata key '%s' given twice", path,
                      repeat);
  return status;
}

/* {"dtype": ..., "shape": [...], "data_offsets": [begin, end]} for one array; *offset advances. */
static cJSON *tensor_entry(tsr_array *a, uint64_t *offset) {
  cJSON *entry = cJSON_CreateObject(), *shape = cJSON_CreateArray(), *offsets = cJSON_CreateArray();
  uint64_t bytes = (uint64_t)tsr_array_size(a) * tsr_dtype_size(tsr_array_dtype(a));
  bool ok = entry && shape && offsets &&
            cJSON_AddStringToObject(entry, "dtype", tsri_st_dtype_name_of(tsr_array_dtype(a)));
  for (int d = 0; ok && d < tsr_array_ndim(a); d++)
    ok = cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)tsr_array_dim(a, d)));
  ok = ok && cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)*offset)) &&
       cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)(*offset + bytes)));
  ok = ok && cJSON_AddItemToObject(entry, "shape", shape);
  if (!ok) cJSON_Delete(shape);
  ok = ok && cJSON_AddItemToObject(entry, "data_offsets", offsets);
  if (!ok) {
    cJSON_Delete(offsets);
    cJSON_Delete(entry);
    return NULL;
  }
  *offset += bytes;
  return entry;
}

static bool add_metadata(cJSON *root, const char *const *keys, const char *const *values,
                         size_t n_meta) {
  if (!n_meta) return true;
  cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
  for (size_t i = 0; meta && i < n_meta; i++)
    if (!cJSON_AddStringToObject(meta, keys[i], values[i])) return false;
  return meta != NULL;
}

/* The header text, padded with spaces so that 8 + *header_bytes is a multiple of 8. */
static tsr_status build_header(const char *path, const char *const *names, tsr_array *const *arrays,
                               size_t n, const char *const *keys, const char *const *values,
                               size_t n_meta, char **header, size_t *header_bytes) {
  cJSON *root = cJSON_CreateObject();
  bool ok = root && add_metadata(root, keys, values, n_meta);
  uint64_t offset = 0;
  for (size_t i = 0; ok && i < n; i++) {
    cJSON *entry = tensor_entry(arrays[i], &offset);
    ok = entry && cJSON_AddItemToObject(root, names[i], entry);
    if (!ok) cJSON_Delete(entry);
  }
  char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
  cJSON_Delete(root);
  if (!text) return tsri_error(TSR_ERR_NOMEM, "safetensors_save: %s: out of host memory", path);
  if (offset > SAVE_OFFSET_MAX) {
    free(text);
    return tsri_error(TSR_ERR_INVALID, "safetensors_save: %s: %llu bytes of data is past 2^53",
                      path, (unsigned long long)offset);
  }
  size_t len = strlen(text), padded = len + (8 - (8 + len) % 8) % 8;
  char *grown = realloc(text, padded + 1);
  if (!grown) {
    free(text);
    return tsri_error(TSR_ERR_NOMEM, "safetensors_save: %s: out of host memory", path);
  }
  memset(grown + len, ' ', padded - len);
  *header = grown;
  *header_bytes = padded;
  return TSR_OK;
}

static tsr_status write_bytes(tsri_file_writer *w, const void *bytes, size_t n) {
  if (n && fwrite(bytes, 1, n, w->file) != n)
    return tsri_error(TSR_ERR_IO, "safetensors_save: %s: write failed: %s", w->target,
                      strerror(errno));
  return TSR_OK;
}

/* The length field, the header, then each array's bytes in order. */
static tsr_status write_contents(tsri_file_writer *w, const char *header, size_t header_bytes,
                                 tsr_array *const *arrays, size_t n) {
  unsigned char length[8];
  for (int i = 0; i < 8; i++)
    length[i] = (unsigned char)((uint64_t)header_bytes >> (8 * i));
  tsr_status status = write_bytes(w, length, sizeof length);
  if (status == TSR_OK) status = write_bytes(w, header, header_bytes);
  for (size_t i = 0; i < n && status == TSR_OK; i++) {
    size_t bytes = (size_t)tsr_array_size(arrays[i]) * tsr_dtype_size(tsr_array_dtype(arrays[i]));
    void *data = malloc(bytes ? bytes : 1);
    if (!data)
      return tsri_error(TSR_ERR_NOMEM, "safetensors_save: %s: no memory for %zu bytes", w->target,
                        bytes);
    status = tsr_array_read(arrays[i], data, bytes);
    if (status == TSR_OK) status = write_bytes(w, data, bytes);
    free(data);
  }
  return status;
}

tsr_status tsr_safetensors_save(const char *path, const char *const *names,
                                tsr_array *const *arrays, size_t n, const char *const *meta_keys,
                                const char *const *meta_values, size_t n_meta) {
  tsr_status status = check_arguments(path, names, arrays, n, meta_keys, meta_values, n_meta);
  if (status != TSR_OK) return status;
  if (n) status = tsr_eval(arrays, n); /* a failed array fails the save before any file exists */
  if (status != TSR_OK) {
    char message[TSR_ERROR_MAX];
    snprintf(message, sizeof message, "safetensors_save: %s: %s", path, tsr_last_error());
    return tsri_error_copy(status, message);
  }
  char *header = NULL;
  size_t header_bytes = 0;
  status =
      build_header(path, names, arrays, n, meta_keys, meta_values, n_meta, &header, &header_bytes);
  if (status != TSR_OK) return status;
  tsri_file_writer w;
  status = tsri_file_write_begin(&w, "safetensors_save:", path);
  if (status == TSR_OK) {
    status = write_contents(&w, header, header_bytes, arrays, n);
    if (status == TSR_OK)
      status = tsri_file_write_commit(&w);
    else
      tsri_file_write_abort(&w);
  }
  free(header);
  return status;
}

/* io/safetensors_header.c — the safetensors dtype names and the header's JSON: parsed with cJSON
 * and validated entry by entry against the file's data section (dtype known, shape integral and
 * in range, byte length equal to the offsets, offsets inside the data, no two tensors sharing a
 * byte, `__metadata__` string to string). It reads a header already in memory; mapping the file
 * is safetensors_file.c's, and uniqueness of names across files the reader's. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/shape.h"
#include "base/status.h"
#include "io/safetensors.h"

/* Every byte-sized dtype of the format. Those without a tessera array type are still sized, so
 * their files validate and list; only loading them is refused. */
static const tsri_st_dtype st_dtypes[] = {
    {"F32", 4, true, TSR_FLOAT32},      {"F16", 2, true, TSR_FLOAT16},
    {"BF16", 2, true, TSR_BFLOAT16},    {"U32", 4, true, TSR_UINT32},
    {"U8", 1, true, TSR_UINT8},         {"I8", 1, true, TSR_INT8},
    {"I32", 4, true, TSR_INT32},        {"I64", 8, true, TSR_INT64},
    {"BOOL", 1, true, TSR_BOOL},        {"F64", 8, false, TSR_FLOAT32},
    {"I16", 2, false, TSR_FLOAT32},     {"U16", 2, false, TSR_FLOAT32},
    {"U64", 8, false, TSR_FLOAT32},     {"F8_E4M3", 1, false, TSR_FLOAT32},
    {"F8_E5M2", 1, false, TSR_FLOAT32}, {"F8_E8M0", 1, false, TSR_FLOAT32},
    {"C64", 8, false, TSR_FLOAT32},
};
#define ST_DTYPE_COUNT (sizeof st_dtypes / sizeof st_dtypes[0])

/* The largest integer a JSON number (a double to cJSON) holds exactly. */
#define ST_EXACT_MAX 9007199254740992.0

const tsri_st_dtype *tsri_st_dtype_named(const char *name) {
  for (size_t i = 0; i < ST_DTYPE_COUNT; i++)
    if (strcmp(st_dtypes[i].name, name) == 0) return &st_dtypes[i];
  return NULL;
}

const char *tsri_st_dtype_name_of(tsr_dtype dtype) {
  for (size_t i = 0; i < ST_DTYPE_COUNT; i++)
    if (st_dtypes[i].loadable && st_dtypes[i].dtype == dtype) return st_dtypes[i].name;
  return NULL;
}

void tsri_st_format_shape(char *buf, size_t cap, const int64_t *shape, int ndim) {
  size_t used = (size_t)snprintf(buf, cap, "[");
  for (int d = 0; d < ndim && used < cap; d++)
    used += (size_t)snprintf(buf + used, cap - used, "%s%lld", d ? ", " : "", (long long)shape[d]);
  if (used < cap) snprintf(buf + used, cap - used, "]");
}

/* A JSON number that is a non-negative integer a double holds exactly. */
static bool json_count(const cJSON *item, uint64_t *out) {
  if (!cJSON_IsNumber(item)) return false;
  double v = item->valuedouble;
  if (!(v >= 0.0 && v <= ST_EXACT_MAX && floor(v) == v)) return false;
  *out = (uint64_t)v;
  return true;
}

/* What a JSON value is, for messages: its number, or its kind. */
static void describe(char *buf, size_t cap, const cJSON *item) {
  if (cJSON_IsNumber(item))
    snprintf(buf, cap, "%.17g", item->valuedouble);
  else
    snprintf(buf, cap, "%s",
             cJSON_IsString(item)   ? "a string"
             : cJSON_IsArray(item)  ? "an array"
             : cJSON_IsObject(item) ? "an object"
                                    : "not a number");
}

static tsr_status parse_dtype(const cJSON *entry, const char *path, tsri_st_tensor *t) {
  const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
  if (!dtype)
    return tsri_error(TSR_ERR_IO, "safetensors: %s: tensor '%s' has no dtype", path, t->name);
  if (!cJSON_IsString(dtype))
    return tsri_error(TSR_ERR_IO, "safetensors: %s: tensor '%s': dtype is not a string", path,
                      t->name);
  t->dtype = tsri_st_dtype_named(dtype->valuestring);
  if (!t->dtype)
    return tsri_error(TSR_ERR_IO, "safetensors: %s: tensor '%s': unknown dtype '%s'", path, t->name,
                      dtype->valuestring);
  return TSR_OK;
}

static tsr_status parse_shape(const cJSON *entry, const char *path, tsri_st_tensor *t) {
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
  if (!shape)
    return tsri_error(TSR_ERR_IO, "safetensors: %s: tensor '%s' has no shape", path, t->name);
  if (!cJSON_IsArray(shape))
    return tsri_error(TSR_ERR_IO, "safetensors: %s: tensor '%s': shape is not an array", path,
                      t->name);
  int ndim = cJSON_GetArraySize(shape);
  if (ndim > TSR_MAX_NDIM)
    return tsri_error(TSR_ERR_IO,
                      "safetensors: %s: tensor '%s': shape has %d dimensions (at most %d)", path,
                      t->name, ndim, TSR_MAX_NDIM);
  const cJSON *dim;
  t->ndim = 0;
  cJSON_ArrayForEach(dim, shape) {
    uint64_t value = 0;
    if (!json_count(dim, &value)) {
      char what[64];
      describe(what, sizeof what, dim);
      return tsri_error(TSR_ERR_IO,
                        "safetensors: %s: tensor '%s': shape dimension %d is %s, not a "
                        "non-negative integer",
                        path, t->name, t->ndim, what);
    }
    t->shape[t->ndim++] = (int64_t)value;
  }
  return TSR_OK;
}

/* The byte length the shape needs, by the library's one shape rule (base/shape.h): false when
 * its non-zero dimensions times the item size pass int64, in whatever order they come. */
static bool shape_bytes(const tsri_st_tensor *t, uint64_t *bytes) {
  int64_t count = 0;
  if (!tsri_dims_count(t->shape, t->ndim, (int64_t)t->dtype->bytes, &count)) return false;
  *bytes = (uint64_t)count * t->dtype->bytes;
  return true;
}

static tsr_status read_offsets(const cJSON *entry, const char *path, const tsri_st_tensor *t,
                               uint64_t *begin, uint64_t *end) {
  const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
  if (!offsets)
    return tsri_error(TSR_ERR_IO, "safetensors: %s: tensor '%s' has no data_offsets", path,
                      t->name);
  if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2 ||
      !json_count(cJSON_GetArrayItem(offsets, 0), begin) ||
      !json_count(cJSON_GetArrayItem(offsets, 1), end))
    return tsri_error(TSR_ERR_IO,
                      "safetensors: %s: tensor '%s': data_offsets is not a pair of "
                      "non-negative integers",
                      path, t->name);
  return TSR_OK;
}

/* data_offsets [begin, end]: ordered, inside the data section, as long as the shape needs. */
static tsr_status parse_offsets(const cJSON *entry, const char *path, uint64_t data_bytes,
                                size_t data_start, tsri_st_tensor *t) {
  uint64_t begin = 0, end = 0, need = 0;
  tsr_status status = read_offsets(entry, path, t, &begin, &end);
  if (status != TSR_OK) return status;
  if (begin > end)
    return tsri_error(
        TSR_ERR_IO, "safetensors: %s: tensor '%s': data_offsets [%llu, %llu] begin after they end",
        path, t->name, (unsigned long long)begin, (unsigned long long)end);
  if (end > data_bytes)
    return tsri_error(TSR_ERR_IO,
                      "safetensors: %s: tensor '%s': data_offsets [%llu, %llu] end past the "
                      "%llu-byte data section (truncated file?)",
                      path, t->name, (unsigned long long)begin, (unsigned long long)end,
                      (unsigned long long)data_bytes);
  char shape[160];
  tsri_st_format_shape(shape, sizeof shape, t->shape, t->ndim);
  if (!shape_bytes(t, &need))
    return tsri_error(
        TSR_ERR_IO,
        "safetensors: %s: tensor '%s': shape %s of %s is too large (its bytes overflow int64)",
        path, t->name, shape, t->dtype->name);
  if (end - begin != need)
    return tsri_error(TSR_ERR_IO,
                      "safetensors: %s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes "
                      "but shape %s of %s needs %llu",
                      path, t->name, (unsigned long long)begin, (unsigned long long)end,
                      (unsigned long long)(end - begin), shape, t->dtype->name,
                      (unsigned long long)need);
  t->begin = data_start + begin;
  t->nbytes = need;
  return TSR_OK;
}

static tsr_status parse_tensor(const cJSON *entry, tsri_st_file *file, uint64_t data_bytes,
                               tsri_st_tensor *t) {
  const char *path = file->path;
  t->file = file;
  t->name = strdup(entry->string);
  if (!t->name) return tsri_error(TSR_ERR_NOMEM, "safetensors: %s: out of host memory", path);
  if (!t->name[0])
    return tsri_error(TSR_ERR_IO, "safetensors: %s: a tensor has an empty name", path);
  if (!cJSON_IsObject(entry))
    return tsri_error(TSR_ERR_IO, "safetensors: %s: tensor '%s': entry is not a JSON object", path,
                      t->name);
  tsr_status status = parse_dtype(entry, path, t);
  if (status == TSR_OK) status = parse_shape(entry, path, t);
  if (status == TSR_OK) status = parse_offsets(entry, path, data_bytes, file->data_start, t);
  return status;
}

static tsr_status parse_metadata(tsri_st_file *file, const cJSON *meta) {
  if (file->meta_keys)
    return tsri_error(TSR_ERR_IO, "safetensors: %s: two __metadata__ entries", file->path);
  if (!cJSON_IsObject(meta))
    return tsri_error(TSR_ERR_IO, "safetensors: %s: __metadata__ is not a JSON object", file->path);
  size_t n = (size_t)cJSON_GetArraySize(meta);
  file->meta_keys = calloc(n + 1, sizeof *file->meta_keys);
  file->meta_values = calloc(n + 1, sizeof *file->meta_values);
  if (!file->meta_keys || !file->meta_values)
    return tsri_error(TSR_ERR_NOMEM, "safetensors: %s: out of host memory", file->path);
  const cJSON *item;
  cJSON_ArrayForEach(item, meta) {
    if (!cJSON_IsString(item))
      return tsri_error(TSR_ERR_IO, "safetensors: %s: __metadata__ value of '%s' is not a string",
                        file->path, item->string);
    file->meta_keys[file->nmeta] = strdup(item->string);
    file->meta_values[file->nmeta] = strdup(item->valuestring);
    if (!file->meta_keys[file->nmeta++] || !file->meta_values[file->nmeta - 1])
      return tsri_error(TSR_ERR_NOMEM, "safetensors: %s: out of host memory", file->path);
  }
  return TSR_OK;
}

static int by_begin(const void *a, const void *b) {
  const tsri_st_tensor *x = *(const tsri_st_tensor *const *)a,
                       *y = *(const tsri_st_tensor *const *)b;
  return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* No byte belongs to two tensors. Zero-length tensors hold no byte and may sit anywhere. */
static tsr_status check_overlaps(const tsri_st_file *file, tsri_st_tensor *tensors, size_t n) {
  const tsri_st_tensor **order = malloc((n ? n : 1) * sizeof *order);
  if (!order) return tsri_error(TSR_ERR_NOMEM, "safetensors: %s: out of host memory", file->path);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (tensors[i].nbytes > 0) order[m++] = &tensors[i];
  qsort(order, m, sizeof *order, by_begin);
  tsr_status status = TSR_OK;
  for (size_t i = 1; i < m && status == TSR_OK; i++) {
    const tsri_st_tensor *a = order[i - 1], *b = order[i];
    if (b->begin < a->begin + a->nbytes) {
      unsigned long long base = file->data_start;
      status = tsri_error(
          TSR_ERR_IO, "safetensors: %s: tensors '%s' [%llu, %llu] and '%s' [%llu, %llu] overlap",
          file->path, a->name, a->begin - base, a->begin + a->nbytes - base, b->name,
          b->begin - base, b->begin + b->nbytes - base);
    }
  }
  free(order);
  return status;
}

/* A valid parse ends with the object: anything after it but JSON whitespace is corruption. */
static tsr_status parse_json(const tsri_st_file *file, const char *header, size_t header_bytes,
                             cJSON **root) {
  const char *end = NULL;
  *root = cJSON_ParseWithLengthOpts(header, header_bytes, &end, false);
  if (!*root)
    return tsri_error(TSR_ERR_IO,
                      "safetensors: %s: header is not valid JSON (error at byte %zu of %zu)",
                      file->path, end ? (size_t)(end - header) : (size_t)0, header_bytes);
  while (end < header + header_bytes && strchr(" \t\r\n", *end) && *end)
    end++; /* padding: the HF writer adds spaces */
  if (end != header + header_bytes)
    return tsri_error(TSR_ERR_IO, "safetensors: %s: header has %zu bytes after its JSON value",
                      file->path, (size_t)(header + header_bytes - end));
  if (!cJSON_IsObject(*root))
    return tsri_error(TSR_ERR_IO, "safetensors: %s: header is not a JSON object", file->path);
  return TSR_OK;
}

tsr_status tsri_st_header_parse(tsri_st_file *file, const char *header, size_t header_bytes,
                                uint64_t data_bytes, tsri_st_tensor **tensors, size_t *count) {
  cJSON *root = NULL;
  tsri_st_tensor *table = NULL;
  size_t n = 0;
  tsr_status status = parse_json(file, header, header_bytes, &root);
  if (status != TSR_OK) goto done;
  table = calloc((size_t)cJSON_GetArraySize(root) + 1, sizeof *table);
  if (!table) {
    status = tsri_error(TSR_ERR_NOMEM, "safetensors: %s: out of host memory", file->path);
    goto done;
  }
  const cJSON *entry;
  cJSON_ArrayForEach(entry, root) {
    if (strcmp(entry->string, "__metadata__") == 0)
      status = parse_metadata(file, entry);
    else
      status = parse_tensor(entry, file, data_bytes, &table[n++]);
    if (status != TSR_OK) goto done;
  }
  status = check_overlaps(file, table, n);
done:
  cJSON_Delete(root);
  if (status != TSR_OK) {
    tsri_st_tensors_free(table, n);
    table = NULL;
    n = 0;
  }
  *tensors = table;
  *count = n;
  return status;
}

void tsri_st_tensors_free(tsri_st_tensor *tensors, size_t count) {
  if (!tensors) return;
  for (size_t i = 0; i < count; i++)
    free(tensors[i].name);
  free(tensors);
}

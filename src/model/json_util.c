/* model/json_util.c — typed reads from cJSON objects, each failure naming the file and the key. */
#include "model/json_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define JSON_FILE_MAX ((long)64 << 20)

static tsr_status read_text(const char *path, bool optional, char **text, bool *absent) {
  *absent = false;
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT && optional) {
      *absent = true;
      return TSR_OK;
    }
    return tsr_error_set(TSR_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  }
  tsr_status st = TSR_OK;
  struct stat info;
  if (fstat(fileno(f), &info) != 0 || !S_ISREG(info.st_mode)) {
    st = tsr_error_set(TSR_ERR_IO, "%s: not a regular file", path);
    goto done;
  }
  if (info.st_size > JSON_FILE_MAX) {
    st = tsr_error_set(TSR_ERR_IO, "%s: %lld bytes is more than a JSON file may hold (%ld)", path,
                       (long long)info.st_size, JSON_FILE_MAX);
    goto done;
  }
  size_t size = (size_t)info.st_size;
  *text = malloc(size + 1);
  if (!*text) {
    st = tsr_error_set(TSR_ERR_NOMEM, "%s: cannot allocate %zu bytes", path, size + 1);
    goto done;
  }
  if (fread(*text, 1, size, f) != size) {
    free(*text);
    *text = NULL;
    st = tsr_error_set(TSR_ERR_IO, "%s: read failed", path);
    goto done;
  }
  (*text)[size] = '\0';
done:
  fclose(f);
  return st;
}

tsr_status json_read_file(cJSON **out, const char *path, bool optional) {
  char *text = NULL;
  bool absent = false;
  tsr_status st = read_text(path, optional, &text, &absent);
  if (st != TSR_OK) return st;
  if (absent) {
    *out = NULL;
    return TSR_OK;
  }
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts(text, &end, true);
  if (!root) {
    long offset = end ? (long)(end - text) : -1;
    free(text);
    return tsr_error_set(TSR_ERR_IO, "%s: malformed JSON near byte %ld", path, offset);
  }
  free(text);
  *out = root;
  return TSR_OK;
}

static bool absent_or_null(const cJSON *item) {
  return item == NULL || cJSON_IsNull(item);
}

tsr_status json_int_or(const cJSON *obj, const char *key, int64_t def, int64_t min, int64_t max,
                       const char *file, int64_t *out) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (absent_or_null(item)) {
    *out = def;
    return TSR_OK;
  }
  double v = cJSON_IsNumber(item) ? item->valuedouble : (double)NAN;
  if (!(v == floor(v)) || v < (double)min || v > (double)max) {
    char found[48] = "a value that is not a number";
    if (cJSON_IsNumber(item)) snprintf(found, sizeof found, "%.17g", v);
    return tsr_error_set(TSR_ERR_IO, "%s: \"%s\" must be an integer in [%lld, %lld] (found %s)",
                         file, key, (long long)min, (long long)max, found);
  }
  *out = (int64_t)v;
  return TSR_OK;
}

tsr_status json_int(const cJSON *obj, const char *key, int64_t min, int64_t max, const char *file,
                    int64_t *out) {
  if (absent_or_null(cJSON_GetObjectItemCaseSensitive(obj, key)))
    return tsr_error_set(TSR_ERR_IO, "%s: missing key \"%s\"", file, key);
  return json_int_or(obj, key, 0, min, max, file, out);
}

tsr_status json_float_or(const cJSON *obj, const char *key, double def, const char *file,
                         double *out) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (absent_or_null(item)) {
    *out = def;
    return TSR_OK;
  }
  if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble))
    return tsr_error_set(TSR_ERR_IO, "%s: \"%s\" must be a finite number", file, key);
  *out = item->valuedouble;
  return TSR_OK;
}

tsr_status json_bool_or(const cJSON *obj, const char *key, bool def, const char *file, bool *out) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (absent_or_null(item)) {
    *out = def;
    return TSR_OK;
  }
  if (!cJSON_IsBool(item))
    return tsr_error_set(TSR_ERR_IO, "%s: \"%s\" must be true or false", file, key);
  *out = cJSON_IsTrue(item);
  return TSR_OK;
}

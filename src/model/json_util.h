/* model/json_util.h — reading typed values out of cJSON objects with messages that name the file
 * and the key. A thin layer over cJSON for config.json and friends; it parses nothing itself. */
#ifndef TSR_MODEL_JSON_UTIL_H
#define TSR_MODEL_JSON_UTIL_H

#include <cjson/cJSON.h>
#include <tessera/tessera.h>

/* Reads and parses a whole JSON file (at most 64 MiB). TSR_ERR_IO naming the file and, for a
 * parse error, the byte offset. A missing file is TSR_ERR_IO too unless `optional`, when *out is
 * set to NULL and TSR_OK returned. */
tsr_status json_read_file(cJSON **out, const char *path, bool optional);

/* The integer at `key`: TSR_ERR_IO when absent (unless `def` is used through json_int_or), not an
 * integral number, or outside [min, max]. */
tsr_status json_int(const cJSON *obj, const char *key, int64_t min, int64_t max, const char *file,
                    int64_t *out);
/* The same, with `def` when the key is absent or null. */
tsr_status json_int_or(const cJSON *obj, const char *key, int64_t def, int64_t min, int64_t max,
                       const char *file, int64_t *out);
/* A finite number at `key`, or `def` when absent or null. */
tsr_status json_float_or(const cJSON *obj, const char *key, double def, const char *file,
                         double *out);
/* A boolean at `key`, or `def` when absent or null. */
tsr_status json_bool_or(const cJSON *obj, const char *key, bool def, const char *file, bool *out);

#endif

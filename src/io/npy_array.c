/* io/npy_array.c — tessera/io.h: .npy files to and from arrays, over the reader and writer of
 * npy.c. Arrays are made and read through the public array API only; no layout logic here. */
#include <stdlib.h>

#include "base/dtype.h"
#include "base/status.h"
#include "io/npy.h"
#include "tessera/io.h"

/* The file's dtype, or the reinterpretation the caller asked for (use_file_dtype false). */
static tsr_status choose_dtype(const tsri_npy *npy, const char *path, bool use_file_dtype,
                               tsr_dtype reinterpret, tsr_dtype *dtype) {
  tsr_dtype file_dtype;
  bool mapped = tsri_npy_dtype_of(npy->descr, &file_dtype);
  if (use_file_dtype) {
    if (!mapped)
      return tsri_error(TSR_ERR_IO,
                        "npy %s: dtype '%s' has no tessera dtype (a bfloat16 or float16 "
                        "stored as bits: load it with tsr_npy_load_as)",
                        path, npy->descr);
    *dtype = file_dtype;
    return TSR_OK;
  }
  if (tsr_dtype_size(reinterpret) != npy->item_bytes)
    return tsri_error(TSR_ERR_INVALID,
                      "npy_load_as %s: '%s' (%zu-byte elements) cannot be read as %s (%zu bytes)",
                      path, npy->descr, npy->item_bytes, tsr_dtype_name(reinterpret),
                      tsr_dtype_size(reinterpret));
  if (reinterpret == TSR_BOOL && !(mapped && file_dtype == TSR_BOOL))
    return tsri_error(TSR_ERR_INVALID, "npy_load_as %s: '%s' cannot be read as bool (only '|b1')",
                      path, npy->descr);
  *dtype = reinterpret;
  return TSR_OK;
}

static tsr_status load(tsr_array **out, const char *path, bool use_file_dtype,
                       tsr_dtype reinterpret) {
  if (!out || !path)
    return tsri_error(TSR_ERR_INVALID, "npy_load: %s is NULL", !out ? "out" : "path");
  if (!use_file_dtype && !tsri_dtype_valid(reinterpret))
    return tsri_error(TSR_ERR_INVALID, "npy_load_as %s: dtype %d is not a tessera dtype", path,
                      (int)reinterpret);
  tsri_npy npy;
  tsr_status status = tsri_npy_read(&npy, path);
  if (status != TSR_OK) return status;
  tsr_dtype dtype = TSR_FLOAT32;
  status = choose_dtype(&npy, path, use_file_dtype, reinterpret, &dtype);
  if (status == TSR_OK) status = tsr_array_from_data(out, npy.data, dtype, npy.shape, npy.ndim);
  tsri_npy_free(&npy);
  return status;
}

tsr_status tsr_npy_load(tsr_array **out, const char *path) {
  return load(out, path, true, TSR_FLOAT32);
}

tsr_status tsr_npy_load_as(tsr_array **out, const char *path, tsr_dtype reinterpret) {
  return load(out, path, false, reinterpret);
}

tsr_status tsr_npy_save(const char *path, tsr_array *a) {
  if (!path || !a)
    return tsri_error(TSR_ERR_INVALID, "npy_save: %s is NULL", !path ? "path" : "array");
  tsr_dtype dtype = tsr_array_dtype(a);
  const char *descr = tsri_npy_descr_of(dtype);
  if (!descr)
    return tsri_error(TSR_ERR_INVALID, "npy_save %s: dtype %s has no .npy form", path,
                      tsr_dtype_name(dtype));
  int ndim = tsr_array_ndim(a);
  int64_t shape[TSR_MAX_NDIM];
  for (int d = 0; d < ndim; d++)
    shape[d] = tsr_array_dim(a, d);
  size_t bytes = (size_t)tsr_array_size(a) * tsr_dtype_size(dtype);
  void *data = bytes ? malloc(bytes) : NULL;
  if (bytes && !data)
    return tsri_error(TSR_ERR_NOMEM, "npy_save %s: no memory for %zu bytes", path, bytes);
  tsr_status status = tsr_array_read(a, data, bytes);
  if (status == TSR_OK) status = tsri_npy_write(path, descr, shape, ndim, data, bytes);
  free(data);
  return status;
}

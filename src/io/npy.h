/* io/npy.h — NumPy .npy files (format versions 1.0, 2.0 and 3.0): the header parser, the whole-file
 * reader and the writer. C order and little-endian plain dtypes only; not .npz, not pickled
 * objects, not structured or big-endian dtypes. The public face is tessera/io.h. */
#ifndef TSR_IO_NPY_H
#define TSR_IO_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera/array.h"

/* The dtype strings this reader accepts: '<' (or '|' for one-byte types) then kind and size. */
#define TSRI_NPY_DESCR_MAX 8

typedef struct {
  char descr[TSRI_NPY_DESCR_MAX]; /* normalized: "<f4", "<f2", "<u2", "<i4", "<i8", "<u4",
                                     "|u1", "|i1", "|b1" */
  size_t item_bytes;
  int ndim;
  int64_t shape[TSR_MAX_NDIM];
  int64_t count;     /* elements: the product of shape (1 for 0-d) */
  size_t data_bytes; /* count * item_bytes */
  void *data;        /* malloc'd data_bytes bytes, C order; NULL when data_bytes is 0 */
} tsri_npy;

/* Reads the whole file. TSR_ERR_IO for a missing, truncated or corrupt file, anything but a
 * regular file (refused without blocking, io/file.h), Fortran order, an unsupported dtype or a
 * shape whose byte size overflows (the message names `path` and what is wrong); TSR_ERR_NOMEM.
 * On failure *out holds nothing to free. */
tsr_status tsri_npy_read(tsri_npy *out, const char *path);
void tsri_npy_free(tsri_npy *npy);

/* Parses the header dictionary ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }")
 * into descr, item_bytes, ndim, shape, count and data_bytes. `path` only names the file in
 * messages. TSR_ERR_IO on anything malformed. */
tsr_status tsri_npy_parse_header(tsri_npy *out, const char *header, size_t len, const char *path);

/* Writes `data` (data_bytes = product(shape) * item size of descr, C order) as a version 1.0
 * file with the header numpy itself writes, byte for byte, atomically (io/file.h): a temporary
 * file beside the target renamed over it. TSR_ERR_IO when path names an existing non-regular
 * file or the file cannot be written; then the target is unchanged and nothing is left behind. */
tsr_status tsri_npy_write(const char *path, const char *descr, const int64_t *shape, int ndim,
                          const void *data, size_t data_bytes);

/* The tessera dtype a descr loads as; false for "<u2" (no 16-bit integer dtype in tessera: it
 * loads only through a reinterpretation) and for anything unknown. */
bool tsri_npy_dtype_of(const char *descr, tsr_dtype *out);
/* The descr a dtype is saved as: bfloat16 as "<u2" (numpy has no bfloat16); NULL if none. */
const char *tsri_npy_descr_of(tsr_dtype dtype);

#endif

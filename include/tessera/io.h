/* tessera/io.h — arrays to and from files: NumPy .npy (format 1.0, 2.0 and 3.0).
 *
 * Meant for tests, tools and golden data: a whole file is read into a new array (on the default
 * device, as tsr_array_from_data places it), and an array is evaluated and written row-major.
 * Little-endian plain dtypes in C order only. numpy has no bfloat16, so bfloat16 travels as its
 * uint16 bit patterns ('<u2'); tessera has no uint16, so a '<u2' file loads only through
 * tsr_npy_load_as, which reinterprets the bits as a dtype of the same size.
 *
 *   tsr_array *w = NULL;
 *   tsr_status st = tsr_npy_load_as(&w, "scales.npy", TSR_BFLOAT16);  // a '<u2' file
 *   if (st != TSR_OK) {
 *     fprintf(stderr, "%s: %s\n", tsr_status_name(st), tsr_last_error());
 *     return 1;
 *   }
 *   st = tsr_npy_save("copy.npy", w);                                  // writes '<u2' again
 *   tsr_array_release(w);
 *
 * dtypes: '<f4' float32, '<f2' float16, '<i4' int32, '<i8' int64, '<u4' uint32, '|u1' uint8,
 * '|i1' int8, '|b1' bool ('<' is accepted for the one-byte types), '<u2' through load_as only.
 * All functions may be called from any thread; they block until the file is read or written.
 */
#ifndef TESSERA_IO_H
#define TESSERA_IO_H

#include "tessera/array.h"
#include "tessera/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads an .npy file into a new ready array with the file's shape (0-d and zero-size shapes
 * included) and dtype. TSR_ERR_INVALID for NULL out or path; TSR_ERR_IO for a missing,
 * truncated or corrupt file, anything but a regular file (a FIFO or device is refused without
 * blocking on it), Fortran order, more than TSR_MAX_NDIM dimensions, a shape whose
 * byte size overflows, a bool byte other than 0/1, or a dtype tessera cannot hold ('<u2'
 * included: use tsr_npy_load_as); the message names the file and what is wrong.
 * TSR_ERR_NOMEM/TSR_ERR_CAP when memory cannot be had. *out is untouched on failure. */
TSR_API tsr_status tsr_npy_load(tsr_array **out, const char *path);

/* The same, with the file's elements reinterpreted bit for bit as `reinterpret`, which must have
 * the file's element size ('<u2' as TSR_BFLOAT16 or TSR_FLOAT16, '<f4' as TSR_UINT32, ...);
 * TSR_BOOL only from a '|b1' file. A size mismatch or an invalid dtype is TSR_ERR_INVALID. */
TSR_API tsr_status tsr_npy_load_as(tsr_array **out, const char *path, tsr_dtype reinterpret);

/* Evaluates a (if it is not yet) and writes it row-major, whatever its layout, as a version 1.0
 * file whose header is the one numpy writes; bfloat16 is written as '<u2' bits. Atomic: the
 * data goes to a temporary file in the target's folder, renamed over the target once complete,
 * so an existing file is replaced whole or not at all (a symlink to a regular file is kept and
 * its target replaced). TSR_ERR_INVALID for NULL path or array; the array's own evaluation error
 * if it fails; TSR_ERR_IO when path names a directory, device, FIFO or socket (nothing is
 * written) or the file cannot be written (the target is unchanged, the temporary file removed). */
TSR_API tsr_status tsr_npy_save(const char *path, tsr_array *a);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_IO_H */

/* tessera/safetensors.h — checkpoint tensors in and out: safetensors files and sharded folders.
 *
 * A reader opens one `.safetensors` file, or a folder holding `model.safetensors` or shards
 * listed by `model.safetensors.index.json` (as mlx-lm and Hugging Face write them). Files are
 * mmapped and every header is validated before anything is returned: a bounded header length,
 * well-formed JSON, known dtypes, shapes whose byte length equals the data offsets, offsets inside
 * the file, no two tensors overlapping. A tensor becomes an array on a device; on the CPU an
 * aligned tensor is wrapped without copying (its bytes stay mapped, and count as `active` on the
 * ledger, while any array uses them), an unaligned one (MLX does not pad its headers) is copied.
 * A mapping lasts while the reader or any array wrapping its bytes holds it, so arrays may
 * outlive the reader. Wrapped bytes are mapped read-only: writing through tsr_array_data's pointer
 * faults. A file truncated or rewritten in place by someone else while mapped is outside the
 * contract (reading past its new end raises SIGBUS, as with any mapped file); writers that
 * replace files by rename, as tsr_safetensors_save does, are safe.
 *
 *   tsr_safetensors *ckpt = NULL;
 *   tsr_array *w = NULL;
 *   tsr_status st = tsr_safetensors_open(&ckpt, "GLM-4-9B-0414-4bit");
 *   if (st == TSR_OK)
 *     st = tsr_safetensors_load(&w, ckpt, "model.norm.weight", tsr_default_device());
 *   if (st != TSR_OK) fprintf(stderr, "%s: %s\n", tsr_status_name(st), tsr_last_error());
 *   tsr_array_release(w);            // the array may outlive the reader
 *   tsr_safetensors_close(ckpt);
 *
 * Threads: a reader may be used from several threads at once once open (it is read-only);
 * close it from one thread when no call on it is in flight. Every function blocks until its
 * files are read or written.
 */
#ifndef TESSERA_SAFETENSORS_H
#define TESSERA_SAFETENSORS_H

#include "tessera/array.h"
#include "tessera/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_safetensors tsr_safetensors;

/* What the header says about one tensor. `name` and `file` point into the reader and stay valid
 * until it is closed. For a file dtype tessera has no array type for (F64, I16, U16, U64, F8_*,
 * C64), `dtype` is a value outside the enum (tsr_dtype_size gives 0, tsr_dtype_name "unknown")
 * and tsr_safetensors_load names the file's dtype. */
typedef struct {
  const char *name;
  const char *file; /* the path of the file that holds it */
  tsr_dtype dtype;
  int ndim;
  int64_t shape[TSR_MAX_NDIM];
  uint64_t nbytes; /* the tensor's byte length in the file */
  uint64_t reserved[4];
} tsr_tensor_info;

/* Opens `path`: a .safetensors file, or a folder (its index when present, else its single
 * `model.safetensors`, else every `model*.safetensors` in name order). With an index, every shard
 * its weight_map names must exist and hold exactly the tensors mapped to it. Every header is
 * checked: a length of 1 byte to 100 MiB inside the file; a JSON object (padding after it may be
 * JSON whitespace only) whose entries each have a known dtype, a shape of at most TSR_MAX_NDIM
 * non-negative integers whose bytes fit int64 (base/shape.h's rule, a zero dimension included),
 * and data_offsets [begin, end] with begin <= end <= the data section's size and end - begin the
 * shape's byte length; no byte in two tensors (zero-length tensors may share offsets); an optional
 * `__metadata__` of strings. No tensor name twice, within a file or across files.
 * TSR_ERR_INVALID for NULL arguments; TSR_ERR_IO for anything missing, not a regular file,
 * truncated or malformed, with a message naming the file (or index), the tensor and the values.
 * Dtypes tessera has no array type for (F64, I16, U16, U64, F8_*, C64) are listed with their info
 * but cannot be loaded. *out untouched on failure. Time and memory grow with the number of
 * tensors (the headers are parsed whole); no tensor data is read. */
TSR_API tsr_status tsr_safetensors_open(tsr_safetensors **out, const char *path);
/* Unmaps what no array still uses. NULL is fine. */
TSR_API void tsr_safetensors_close(tsr_safetensors *st);

/* Number of tensors, and the i-th in name order (TSR_ERR_INVALID when i is out of range). */
TSR_API size_t tsr_safetensors_count(const tsr_safetensors *st);
TSR_API tsr_status tsr_safetensors_info(const tsr_safetensors *st, size_t i, tsr_tensor_info *out);
/* The tensor called `name`: TSR_OK, or TSR_ERR_INVALID naming the tensor when there is none
 * (tsr_safetensors_has asks without setting an error). */
TSR_API tsr_status tsr_safetensors_find(const tsr_safetensors *st, const char *name,
                                        tsr_tensor_info *out);
TSR_API bool tsr_safetensors_has(const tsr_safetensors *st, const char *name);
/* The `__metadata__` value for `key`, or NULL. Across shards, the first file that has the key, in
 * the order the files were opened (shard names in name order). Valid until the reader is
 * closed. */
TSR_API const char *tsr_safetensors_metadata(const tsr_safetensors *st, const char *key);

/* The tensor `name` as a ready array on device d with the file's dtype and shape. On the CPU a
 * tensor whose bytes are aligned to its element size is wrapped without copying (its bytes count
 * as active on the ledger, as given); an unaligned one, a zero-size one and any tensor for
 * another device are copied into a new array. TSR_ERR_INVALID for NULL arguments or an unknown
 * name (naming it); TSR_ERR_UNSUPPORTED for a dtype tessera cannot hold (naming it);
 * TSR_ERR_NOMEM/TSR_ERR_CAP when memory cannot be had, TSR_ERR_DEVICE/UNSUPPORTED for a device
 * that cannot take it, with the tensor named in the message; on failure nothing is left on the
 * ledger and *out is untouched. Any thread, concurrently with other loads. */
TSR_API tsr_status tsr_safetensors_load(tsr_array **out, tsr_safetensors *st, const char *name,
                                        tsr_device d);
/* Only indices [start, stop) of axis `axis` of the tensor `name` (its shape with that axis
 * stop - start long), reading no byte outside the slice: what a tensor-parallel rank loads of a
 * weight it holds a shard of. When the slice is one contiguous range of the file (every axis
 * before `axis` has length 1, as for rows of a matrix), it is wrapped on the CPU like
 * tsr_safetensors_load wraps a tensor (only the slice's bytes on the ledger); otherwise its
 * pieces are gathered into a new array of the slice's bytes. TSR_ERR_INVALID for NULL arguments,
 * an unknown name, an axis outside the tensor or a range outside [0, length) with start <= stop
 * (naming the tensor and values); otherwise as tsr_safetensors_load. Any thread. */
TSR_API tsr_status tsr_safetensors_load_slice(tsr_array **out, tsr_safetensors *st,
                                              const char *name, int axis, int64_t start,
                                              int64_t stop, tsr_device d);

/* Writes `n` arrays (evaluated first) as one safetensors file with `names[i]` for arrays[i],
 * tensors contiguous in the order given (the first at data offset 0), the header padded with
 * spaces so that 8 + its length is a multiple of 8 (as the Hugging Face library writes it),
 * `__metadata__` from the `meta_keys`/`meta_values` pairs (n_meta of them, may be 0). Every
 * tessera dtype has a safetensors name (bool BOOL, uint8 U8, uint32 U32, int8 I8, int32 I32,
 * int64 I64, float16 F16, bfloat16 BF16, float32 F32). The file is written under a temporary name
 * in the same folder, synced and renamed over `path` on success (a symlink is kept and its target
 * replaced; the new file's mode is 0666 less the umask); on failure only the temporary file is
 * removed and what `path` held is unchanged. TSR_ERR_INVALID for NULL arguments, an empty name,
 * `__metadata__` as a name, a name or metadata key given twice, or more than 2^53 data bytes;
 * an array's own evaluation error (the file untouched); TSR_ERR_IO when the file cannot be
 * written (a missing folder, a path naming a directory or device, a failed write), naming the
 * path. Blocks until the file is synced. */
TSR_API tsr_status tsr_safetensors_save(const char *path, const char *const *names,
                                        tsr_array *const *arrays, size_t n,
                                        const char *const *meta_keys,
                                        const char *const *meta_values, size_t n_meta);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_SAFETENSORS_H */

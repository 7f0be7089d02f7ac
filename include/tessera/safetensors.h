/* tessera/safetensors.h — checkpoint tensors in and out: safetensors files and sharded folders.
 *
 * A reader opens one `.safetensors` file, or a folder holding `model.safetensors` or shards
 * listed by `model.safetensors.index.json` (as mlx-lm and Hugging Face write them). Files are
 * mmapped and every header is validated before anything is returned: a bounded header length,
 * well-formed JSON, known dtypes, shapes whose byte length equals the data offsets, offsets inside
 * the file, no two tensors overlapping. A tensor becomes an array on a device; on the CPU an
 * aligned tensor is wrapped without copying (its bytes stay mapped, and count as `active` on the
 * ledger, while any array uses them), an unaligned one (MLX does not pad its headers) is copied.
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
 * until it is closed. */
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
 * `model.safetensors`, else every `model*.safetensors` in name order). TSR_ERR_INVALID for NULL
 * arguments; TSR_ERR_IO for anything missing, truncated or malformed (a shard named by the index
 * that does not exist, a tensor listed in two shards, a header that fails validation), with a
 * message naming the file and the tensor. Dtypes tessera has no array type for (F64, I16, U16,
 * U64, F8_*) are listed with their info but cannot be loaded. *out untouched on failure. */
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
/* The `__metadata__` value for `key`, or NULL. */
TSR_API const char *tsr_safetensors_metadata(const tsr_safetensors *st, const char *key);

/* The tensor `name` as a ready array on device d with the file's dtype and shape. On the CPU
 * an aligned tensor is wrapped without copying. TSR_ERR_INVALID for an unknown name;
 * TSR_ERR_UNSUPPORTED for a dtype tessera cannot hold; TSR_ERR_NOMEM/TSR_ERR_CAP when memory
 * cannot be had (nothing is left on the ledger). */
TSR_API tsr_status tsr_safetensors_load(tsr_array **out, tsr_safetensors *st, const char *name,
                                        tsr_device d);

/* Writes `n` arrays (evaluated first) as one safetensors file with `names[i]` for arrays[i],
 * tensors in the order given, the header padded to 8 bytes, `__metadata__` from the
 * `meta_keys`/`meta_values` pairs (n_meta of them, may be 0). The file is written under a
 * temporary name in the same folder and renamed over `path` on success; on failure only the
 * temporary file is removed. TSR_ERR_INVALID for NULL or duplicate names; TSR_ERR_IO when the
 * file cannot be written. */
TSR_API tsr_status tsr_safetensors_save(const char *path, const char *const *names,
                                        tsr_array *const *arrays, size_t n,
                                        const char *const *meta_keys,
                                        const char *const *meta_values, size_t n_meta);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_SAFETENSORS_H */

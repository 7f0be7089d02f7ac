/* io/safetensors.h — internals behind tessera/safetensors.h: the dtype names, one mapped and
 * validated file (safetensors_file.c, its header checks in safetensors_header.c), which files a
 * checkpoint folder holds and what its index says (safetensors_folder.c). The reader object,
 * loading (safetensors_reader.c) and the writer (safetensors_writer.c) sit on top; nothing here
 * makes arrays. */
#ifndef TSR_IO_SAFETENSORS_H
#define TSR_IO_SAFETENSORS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera/array.h"

/* A header longer than this is corrupt rather than large (a 100k-tensor header is ~10 MB). */
#define TSRI_ST_HEADER_MAX ((uint64_t)100 << 20)

/* One dtype name of the format. `loadable` is false for those tessera has no array type for. */
typedef struct {
  const char *name; /* "F32", "BF16", "F8_E4M3", ... */
  size_t bytes;     /* per element */
  bool loadable;
  tsr_dtype dtype; /* meaningful when loadable */
} tsri_st_dtype;

/* The entry for a dtype name; NULL when the format has no such name (or none this reader can
 * size: the sub-byte F4/F6 kinds). */
const tsri_st_dtype *tsri_st_dtype_named(const char *name);
/* The name a tessera dtype is written as ("F32" for TSR_FLOAT32); NULL outside the enum. */
const char *tsri_st_dtype_name_of(tsr_dtype dtype);

/* One file, mapped whole, read-only and private. Reference-counted: the reader holds one, and
 * every array that wraps its bytes holds one, so the mapping outlives the reader while arrays
 * use it. Immutable once opened. */
typedef struct {
  char *path;
  const unsigned char *map; /* the whole file */
  size_t map_bytes;
  size_t data_start; /* 8 + the header length: where data_offsets count from */
  size_t nmeta;      /* the `__metadata__` pairs, in header order */
  char **meta_keys, **meta_values;
  atomic_int refs;
} tsri_st_file;

/* One tensor as its header describes it, validated against its file. */
typedef struct {
  char *name;
  tsri_st_file *file; /* borrowed: whoever owns the table holds a reference on the file */
  const tsri_st_dtype *dtype;
  int ndim;
  int64_t shape[TSR_MAX_NDIM];
  uint64_t begin;  /* the tensor's first byte, from the start of the file */
  uint64_t nbytes; /* its byte length */
} tsri_st_tensor;

/* Maps `path` and validates its header (safetensors.h lists what is checked). On success *file
 * holds one reference and *tensors (*count of them, malloc'd, names malloc'd) lists its tensors
 * in header order. TSR_ERR_IO naming the file (and the tensor and values) for anything missing,
 * truncated or malformed; TSR_ERR_NOMEM. On failure there is nothing to free. */
tsr_status tsri_st_file_open(const char *path, tsri_st_file **file, tsri_st_tensor **tensors,
                             size_t *count);
tsri_st_file *tsri_st_file_retain(tsri_st_file *file);
/* Drops a reference; the last unmaps the file and frees it. NULL is fine. Any thread. */
void tsri_st_file_release(tsri_st_file *file);
/* Frees a tensor table's names and the table. */
void tsri_st_tensors_free(tsri_st_tensor *tensors, size_t count);

/* Parses and validates the header of a mapped file: fills file->meta_* and the tensor table
 * (file set on each entry). `header` is the `header_bytes` bytes after the length field; the
 * data section is the `data_bytes` bytes after it. Used by tsri_st_file_open. */
tsr_status tsri_st_header_parse(tsri_st_file *file, const char *header, size_t header_bytes,
                                uint64_t data_bytes, tsri_st_tensor **tensors, size_t *count);

/* "[2, 3]" (or "[]") into buf. */
void tsri_st_format_shape(char *buf, size_t cap, const int64_t *shape, int ndim);

/* What a checkpoint path names: the files to open, in order, and, for a folder with an index,
 * the index's name -> file pairs (sorted by name, file names resolved to paths). */
typedef struct {
  const char *name;
  const char *file; /* the full path of the shard the index maps it to */
} tsri_st_index_entry;

typedef struct {
  char **files;
  size_t nfiles;
  char *index_path; /* NULL without an index */
  tsri_st_index_entry *index;
  size_t nindex;
  void *index_json; /* the parsed index (cJSON), which index[].name points into */
} tsri_st_layout;

/* Finds the files of `path` (a file, or a folder: its index, else model.safetensors, else every
 * model*.safetensors in name order). TSR_ERR_IO naming the path for a missing path, an empty
 * folder, a malformed index or a shard it names that does not exist; TSR_ERR_NOMEM. On failure
 * there is nothing to free. */
tsr_status tsri_st_layout_find(tsri_st_layout *out, const char *path);
void tsri_st_layout_free(tsri_st_layout *layout);
/* Checks the tensors (sorted by name, names unique) against the index: every tensor mapped, to
 * the file that holds it, and every mapped name present. TSR_ERR_IO naming the tensor and both
 * files. */
tsr_status tsri_st_layout_check(const tsri_st_layout *layout, const tsri_st_tensor *tensors,
                                size_t count);

#endif

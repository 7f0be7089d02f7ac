/* base/disk_cache.h — a folder of checked blobs keyed by a SHA-256, for compiled kernels (the JIT
 * cache; cuda/jit.c): each entry is written to a temporary file in the same folder and renamed
 * into place, so a reader (another rank, another process) sees a whole old entry or a whole new
 * one, never half of one; its header carries a magic, the key, the payload's length and SHA-256,
 * so a corrupt or truncated entry is reported as such, never returned. No eviction, no locking:
 * two writers of one key both write the same bytes, and the last rename wins. */
#ifndef TSR_BASE_DISK_CACHE_H
#define TSR_BASE_DISK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

typedef enum {
  TSRI_DISK_CACHE_HIT = 0, /* *data holds the payload (free() it) */
  TSRI_DISK_CACHE_MISS,    /* no entry for the key */
  TSRI_DISK_CACHE_CORRUPT, /* an entry exists but fails a check (why says which); rewrite it */
  TSRI_DISK_CACHE_ERROR    /* the folder or file could not be read, or no memory (why says) */
} tsri_disk_cache_result;

/* The entry's header: magic, format version, header size, key, payload length and SHA-256. */
#define TSRI_DISK_CACHE_HEADER_BYTES 88

/* `dir`/`key_hex`.bin, or false when it does not fit in `size`. */
bool tsri_disk_cache_path(const char *dir, const char *key_hex, char *path, size_t size);

tsri_disk_cache_result tsri_disk_cache_load(const char *dir, const uint8_t key[TSRI_SHA256_BYTES],
                                            unsigned char **data, size_t *len, char *why,
                                            size_t why_size);

/* Creates `dir` (and its parents, mode 0700) when missing, writes the entry to a temporary file
 * beside its final name, fsyncs it and renames it into place. False (why says) on any failure,
 * the temporary file then removed. */
bool tsri_disk_cache_store(const char *dir, const uint8_t key[TSRI_SHA256_BYTES], const void *data,
                           size_t len, char *why, size_t why_size);

#endif

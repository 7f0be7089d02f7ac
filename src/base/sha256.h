/* base/sha256.h — SHA-256 (FIPS 180-4), for the kernel sources' hashes, the JIT cache keys and
 * the integrity check of cache entries. Not a cryptographic toolkit: no HMAC, no other digests. */
#ifndef TSR_BASE_SHA256_H
#define TSR_BASE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define TSRI_SHA256_BYTES 32
#define TSRI_SHA256_HEX 65 /* 64 lowercase hex digits and the terminator */

typedef struct {
  uint32_t state[8];
  uint64_t length_bytes;
  uint8_t block[64];
  size_t block_used;
} tsri_sha256;

void tsri_sha256_init(tsri_sha256 *h);
void tsri_sha256_update(tsri_sha256 *h, const void *data, size_t len);
void tsri_sha256_final(tsri_sha256 *h, uint8_t digest[TSRI_SHA256_BYTES]);

/* One-shot helpers. */
void tsri_sha256_bytes(const void *data, size_t len, uint8_t digest[TSRI_SHA256_BYTES]);
void tsri_sha256_to_hex(const uint8_t digest[TSRI_SHA256_BYTES], char hex[TSRI_SHA256_HEX]);

#endif

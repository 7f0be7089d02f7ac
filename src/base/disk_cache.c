/* base/disk_cache.c — checked blobs in a folder, written by temporary file and rename (see
 * disk_cache.h). POSIX file calls only; the caller decides what a miss or corrupt entry means. */
#include "disk_cache.h" /* beside this file: tests compile this file in */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char cache_magic[8] = {'T', 'S', 'R', 'C', 'A', 'C', 'H', 'E'};
enum { CACHE_FORMAT_VERSION = 1 };

bool tsri_disk_cache_path(const char *dir, const char *key_hex, char *path, size_t size) {
  int n = snprintf(path, size, "%s/%s.bin", dir, key_hex);
  return n > 0 && (size_t)n < size;
}

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* Layout: magic[8] version u32 header_bytes u32 key[32] payload_bytes u64 payload_sha256[32]. */
static void make_header(unsigned char header[TSRI_DISK_CACHE_HEADER_BYTES],
                        const uint8_t key[TSRI_SHA256_BYTES], const void *data, size_t len) {
  memcpy(header, cache_magic, 8);
  put_u32(header + 8, CACHE_FORMAT_VERSION);
  put_u32(header + 12, TSRI_DISK_CACHE_HEADER_BYTES);
  memcpy(header + 16, key, TSRI_SHA256_BYTES);
  put_u64(header + 48, len);
  tsri_sha256_bytes(data, len, header + 56);
}

static bool read_all(int fd, void *buf, size_t len) {
  unsigned char *p = buf;
  while (len > 0) {
    ssize_t got = read(fd, p, len);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    len -= (size_t)got;
  }
  return true;
}

static bool write_all(int fd, const void *buf, size_t len) {
  const unsigned char *p = buf;
  while (len > 0) {
    ssize_t put = write(fd, p, len);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put;
    len -= (size_t)put;
  }
  return true;
}

/* Checks the header against the key and the file's size; NULL when it is sound. */
static const char *header_problem(const unsigned char *header, const uint8_t *key,
                                  uint64_t file_bytes) {
  if (memcmp(header, cache_magic, 8) != 0) return "bad magic";
  if (get_le(header + 8, 4) != CACHE_FORMAT_VERSION) return "unknown format version";
  if (get_le(header + 12, 4) != TSRI_DISK_CACHE_HEADER_BYTES) return "bad header size";
  if (memcmp(header + 16, key, TSRI_SHA256_BYTES) != 0) return "written for another key";
  if (get_le(header + 48, 8) != file_bytes - TSRI_DISK_CACHE_HEADER_BYTES)
    return "truncated or extended (length differs from the header's)";
  return NULL;
}

static tsri_disk_cache_result load_open(int fd, const char *path, const uint8_t *key,
                                        unsigned char **data, size_t *len, char *why,
                                        size_t why_size) {
  struct stat st;
  unsigned char header[TSRI_DISK_CACHE_HEADER_BYTES];
  if (fstat(fd, &st) != 0) {
    snprintf(why, why_size, "%s: %s", path, strerror(errno));
    return TSRI_DISK_CACHE_ERROR;
  }
  uint64_t file_bytes = (uint64_t)st.st_size;
  const char *problem = file_bytes < sizeof header ? "shorter than its header" : NULL;
  if (!problem && !read_all(fd, header, sizeof header)) problem = "unreadable header";
  if (!problem) problem = header_problem(header, key, file_bytes);
  if (problem) {
    snprintf(why, why_size, "%s: %s", path, problem);
    return TSRI_DISK_CACHE_CORRUPT;
  }
  size_t payload_bytes = (size_t)(file_bytes - sizeof header);
  unsigned char *payload = malloc(payload_bytes ? payload_bytes : 1);
  if (!payload) {
    snprintf(why, why_size, "%s: no memory for %zu bytes", path, payload_bytes);
    return TSRI_DISK_CACHE_ERROR;
  }
  uint8_t digest[TSRI_SHA256_BYTES];
  bool read_ok = read_all(fd, payload, payload_bytes);
  if (read_ok) tsri_sha256_bytes(payload, payload_bytes, digest);
  if (!read_ok || memcmp(digest, header + 56, TSRI_SHA256_BYTES) != 0) {
    snprintf(why, why_size, "%s: %s", path,
             read_ok ? "payload SHA-256 differs from the header's" : "payload unreadable");
    free(payload);
    return TSRI_DISK_CACHE_CORRUPT;
  }
  *data = payload;
  *len = payload_bytes;
  return TSRI_DISK_CACHE_HIT;
}

tsri_disk_cache_result tsri_disk_cache_load(const char *dir, const uint8_t key[TSRI_SHA256_BYTES],
                                            unsigned char **data, size_t *len, char *why,
                                            size_t why_size) {
  char key_hex[TSRI_SHA256_HEX], path[4096];
  tsri_sha256_to_hex(key, key_hex);
  if (!tsri_disk_cache_path(dir, key_hex, path, sizeof path)) {
    snprintf(why, why_size, "%s: cache path too long", dir);
    return TSRI_DISK_CACHE_ERROR;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, why_size, "%s: %s", path, strerror(errno));
    return errno == ENOENT ? TSRI_DISK_CACHE_MISS : TSRI_DISK_CACHE_ERROR;
  }
  tsri_disk_cache_result result = load_open(fd, path, key, data, len, why, why_size);
  close(fd);
  return result;
}

/* mkdir -p with mode 0700; an existing folder is fine. */
static bool make_dirs(const char *dir, char *why, size_t why_size) {
  char path[4096];
  int n = snprintf(path, sizeof path, "%s", dir);
  if (n <= 0 || (size_t)n >= sizeof path) {
    snprintf(why, why_size, "%s: cache path too long", dir);
    return false;
  }
  for (char *p = path + 1;; p++) {
    bool last = *p == '\0';
    if (*p != '/' && !last) continue;
    *p = '\0';
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
      snprintf(why, why_size, "mkdir %s: %s", path, strerror(errno));
      return false;
    }
    if (last) return true;
    *p = '/';
  }
}

bool tsri_disk_cache_store(const char *dir, const uint8_t key[TSRI_SHA256_BYTES], const void *data,
                           size_t len, char *why, size_t why_size) {
  char key_hex[TSRI_SHA256_HEX], path[4096], temp[4096 + 16];
  tsri_sha256_to_hex(key, key_hex);
  if (!tsri_disk_cache_path(dir, key_hex, path, sizeof path)) {
    snprintf(why, why_size, "%s: cache path too long", dir);
    return false;
  }
  if (!make_dirs(dir, why, why_size)) return false;
  snprintf(temp, sizeof temp, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(temp);
  if (fd < 0) {
    snprintf(why, why_size, "mkstemp %s: %s", temp, strerror(errno));
    return false;
  }
  unsigned char header[TSRI_DISK_CACHE_HEADER_BYTES];
  make_header(header, key, data, len);
  bool ok = write_all(fd, header, sizeof header) && write_all(fd, data, len) && fsync(fd) == 0;
  int saved_errno = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    saved_errno = errno;
  }
  if (ok && rename(temp, path) != 0) {
    ok = false;
    saved_errno = errno;
  }
  if (!ok) {
    snprintf(why, why_size, "writing %s: %s", path, strerror(saved_errno));
    unlink(temp);
  }
  return ok;
}

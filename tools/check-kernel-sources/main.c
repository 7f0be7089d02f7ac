/* tools/check-kernel-sources — the gate of DESIGN.md's kernel shipping: proves that the kernel
 * sources embedded in the built libtessera (read through tsr_kernel_source*) equal the files in
 * the source tree and the hashes recorded in src/cuda/kernels/SHA256SUMS, byte for byte, and that
 * the folder holds nothing the manifest does not list. Every problem found is printed; exit 0
 * when there is none, 1 otherwise, 2 on a usage error. CMake runs it right after it links (a
 * POST_BUILD step, so a failing gate fails the build) and ctest runs it first (a fixture every
 * test requires); tests/cuda/kernel_gate_mutations.sh proves it fails on each kind of damage. */
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <tessera/kernels.h>

#include "base/sha256.h"

#define MANIFEST "cuda/kernels/SHA256SUMS"
#define KERNEL_FOLDER "cuda/kernels"
enum { MAX_ENTRIES = 256, NAME_MAX_BYTES = 256 };

typedef struct {
  char name[NAME_MAX_BYTES];
  char sha256[TSRI_SHA256_HEX];
} manifest_entry;

static int problems;

__attribute__((format(printf, 1, 2))) static void problem(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("check-kernel-sources: FAIL: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  problems++;
}

/* The whole file, NUL appended; NULL when it cannot be read. */
static unsigned char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char *data = NULL;
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
      (data = malloc((size_t)st.st_size + 1)) != NULL) {
    *len = fread(data, 1, (size_t)st.st_size, f);
    data[*len] = '\0';
    if (*len != (size_t)st.st_size) {
      free(data);
      data = NULL;
    }
  }
  fclose(f);
  return data;
}

static void hash_hex(const void *data, size_t len, char hex[TSRI_SHA256_HEX]) {
  uint8_t digest[TSRI_SHA256_BYTES];
  tsri_sha256_bytes(data, len, digest);
  tsri_sha256_to_hex(digest, hex);
}

/* A manifest line is "<64 lowercase hex>  <name>" (sha256sum's text mode), nothing else. */
static bool parse_line(char *line, manifest_entry *out) {
  size_t n = strlen(line);
  if (n > 0 && line[n - 1] == '\n') line[--n] = '\0';
  if (n < 67 || n - 66 >= NAME_MAX_BYTES || line[64] != ' ' || line[65] != ' ') return false;
  for (int i = 0; i < 64; i++)
    if (!strchr("0123456789abcdef", line[i]) || line[i] == '\0') return false;
  memcpy(out->sha256, line, 64);
  out->sha256[64] = '\0';
  memcpy(out->name, line + 66, n - 66 + 1); /* n - 66 < NAME_MAX_BYTES, checked above */
  return !strchr(out->name, '\r');
}

static int read_manifest(const char *src, manifest_entry *entries) {
  char path[4096], line[NAME_MAX_BYTES + 80];
  snprintf(path, sizeof path, "%s/%s", src, MANIFEST);
  FILE *f = fopen(path, "r");
  if (!f) {
    problem("%s: cannot be read (the manifest is missing)", path);
    return 0;
  }
  int count = 0;
  while (fgets(line, sizeof line, f)) {
    if (count == MAX_ENTRIES || !parse_line(line, &entries[count])) {
      problem("%s: malformed line '%s' (want '<sha256>  <name>')", path, line);
      continue;
    }
    for (int i = 0; i < count; i++)
      if (strcmp(entries[i].name, entries[count].name) == 0)
        problem("%s: %s is listed twice", path, entries[count].name);
    count++;
  }
  fclose(f);
  return count;
}

/* Text rules every kernel source keeps, so that what the JIT compiles is what a reader sees. */
static void check_text(const char *name, const unsigned char *data, size_t len) {
  if (len == 0) problem("%s: empty file", name);
  if (len >= 3 && data[0] == 0xef && data[1] == 0xbb && data[2] == 0xbf)
    problem("%s: starts with a UTF-8 BOM", name);
  if (memchr(data, '\r', len)) problem("%s: has CR bytes (CRLF line ends)", name);
  if (memchr(data, '\0', len)) problem("%s: has NUL bytes", name);
  if (len > 0 && data[len - 1] != '\n') problem("%s: does not end with a newline", name);
}

/* The file on disk against its manifest line and the library's embedded copy. */
static void check_entry(const char *src, const manifest_entry *entry) {
  char path[4096], file_hash[TSRI_SHA256_HEX], embedded_hash[TSRI_SHA256_HEX];
  snprintf(path, sizeof path, "%s/%s", src, entry->name);
  size_t file_len = 0, embedded_len = 0;
  unsigned char *file = read_file(path, &file_len);
  const char *embedded = tsr_kernel_source(entry->name, &embedded_len);
  const char *recorded = tsr_kernel_source_sha256(entry->name);
  if (!file) problem("%s: listed in the manifest but missing (%s)", entry->name, path);
  if (!embedded || !recorded)
    problem("%s: listed in the manifest but not embedded in the library", entry->name);
  if (file) {
    check_text(entry->name, file, file_len);
    hash_hex(file, file_len, file_hash);
    if (strcmp(file_hash, entry->sha256) != 0)
      problem("%s: the file hashes to %s; the manifest records another (stale hash)", entry->name,
              file_hash);
  }
  if (embedded && recorded) {
    hash_hex(embedded, embedded_len, embedded_hash);
    if (strcmp(embedded_hash, recorded) != 0)
      problem("%s: the library's bytes hash to %s, not to its recorded hash", entry->name,
              embedded_hash);
    if (strcmp(recorded, entry->sha256) != 0)
      problem("%s: the library records %s; the manifest another", entry->name, recorded);
  }
  if (file && embedded && (file_len != embedded_len || memcmp(file, embedded, file_len) != 0))
    problem("%s: the embedded bytes differ from %s", entry->name, path);
  free(file);
}

static bool listed(const manifest_entry *entries, int count, const char *name) {
  for (int i = 0; i < count; i++)
    if (strcmp(entries[i].name, name) == 0) return true;
  return false;
}

/* Every file in the kernel folder must be listed (the manifest itself aside), and every source
   the library embeds too. */
static void check_extras(const char *src, const manifest_entry *entries, int count) {
  char path[4096], name[NAME_MAX_BYTES + 32];
  snprintf(path, sizeof path, "%s/%s", src, KERNEL_FOLDER);
  DIR *dir = opendir(path);
  if (!dir) {
    problem("%s: the kernel folder cannot be read", path);
    return;
  }
  for (struct dirent *e; (e = readdir(dir)) != NULL;) {
    if (e->d_name[0] == '.' || strcmp(e->d_name, "SHA256SUMS") == 0) continue;
    snprintf(name, sizeof name, "%s/%.*s", KERNEL_FOLDER, NAME_MAX_BYTES, e->d_name);
    if (!listed(entries, count, name))
      problem("%s: in the kernel folder but not in the manifest (extra or renamed file)", name);
  }
  closedir(dir);
  for (size_t i = 0; i < tsr_kernel_source_count(); i++)
    if (!listed(entries, count, tsr_kernel_source_name(i)))
      problem("%s: embedded in the library but not in the manifest", tsr_kernel_source_name(i));
}

int main(int argc, char **argv) {
  const char *src = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--src") == 0 && i + 1 < argc) {
      src = argv[++i];
    } else {
      fprintf(stderr, "usage: check-kernel-sources --src SOURCE_TREE/src\n");
      return 2;
    }
  }
  if (!src) {
    fprintf(stderr, "usage: check-kernel-sources --src SOURCE_TREE/src\n");
    return 2;
  }
  static manifest_entry entries[MAX_ENTRIES];
  int count = read_manifest(src, entries);
  for (int i = 0; i < count; i++)
    check_entry(src, &entries[i]);
  check_extras(src, entries, count);
  if (problems) {
    fprintf(stderr,
            "check-kernel-sources: %d problem(s) in %s. After editing a kernel source, record its "
            "hash (cd src && sha256sum <the files> > " MANIFEST ") and rebuild.\n",
            problems, src);
    return 1;
  }
  printf("check-kernel-sources: ok: %zu embedded sources equal %s and " MANIFEST "\n",
         tsr_kernel_source_count(), src);
  return 0;
}

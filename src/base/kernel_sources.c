/* base/kernel_sources.c — the public tsr_kernel_source* over the generated table, and include
 * closures; nothing here compiles or loads a kernel (cuda/modules.c does). */
#include "base/kernel_sources.h"

#include <stdlib.h>
#include <string.h>

#include "tessera/kernels.h"

const tsri_kernel_source_entry *tsri_kernel_source_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < tsri_kernel_source_table_count; i++)
    if (strcmp(tsri_kernel_source_table[i].name, name) == 0) return &tsri_kernel_source_table[i];
  return NULL;
}

/* The name of a `#include "X"` line starting at `line` (leading blanks allowed, as the
   preprocessor allows), copied into `out`; false for any other line or a name too long. */
static bool include_name(const char *line, const char *end, char *out, size_t size) {
  const char *p = line;
  while (p < end && (*p == ' ' || *p == '\t'))
    p++;
  if (p == end || *p++ != '#') return false;
  while (p < end && (*p == ' ' || *p == '\t'))
    p++;
  if ((size_t)(end - p) < 7 || memcmp(p, "include", 7) != 0) return false;
  p += 7;
  while (p < end && (*p == ' ' || *p == '\t'))
    p++;
  if (p == end || *p++ != '"') return false;
  const char *close = memchr(p, '"', (size_t)(end - p));
  if (!close || (size_t)(close - p) >= size) return false;
  memcpy(out, p, (size_t)(close - p));
  out[close - p] = '\0';
  return true;
}

static void mark_closure(size_t index, bool *in_closure) {
  if (in_closure[index]) return;
  in_closure[index] = true;
  const tsri_kernel_source_entry *source = &tsri_kernel_source_table[index];
  const char *text = (const char *)source->bytes, *end = text + source->length;
  while (text < end) {
    const char *newline = memchr(text, '\n', (size_t)(end - text));
    const char *line_end = newline ? newline : end;
    char name[256];
    const tsri_kernel_source_entry *included;
    if (include_name(text, line_end, name, sizeof name) &&
        (included = tsri_kernel_source_find(name)) != NULL)
      mark_closure((size_t)(included - tsri_kernel_source_table), in_closure);
    text = line_end + (newline ? 1 : 0);
  }
}

bool tsri_kernel_source_closure(const char *name, bool *in_closure) {
  const tsri_kernel_source_entry *root = tsri_kernel_source_find(name);
  if (!root) return false;
  memset(in_closure, 0, tsri_kernel_source_table_count * sizeof *in_closure);
  mark_closure((size_t)(root - tsri_kernel_source_table), in_closure);
  return true;
}

bool tsri_kernel_source_closure_sha256(const char *name, char hex[TSRI_SHA256_HEX]) {
  bool *in_closure = calloc(tsri_kernel_source_table_count + 1, sizeof *in_closure);
  bool found = in_closure && tsri_kernel_source_closure(name, in_closure);
  if (found) {
    tsri_sha256 h;
    tsri_sha256_init(&h);
    for (size_t i = 0; i < tsri_kernel_source_table_count; i++) {
      if (!in_closure[i]) continue;
      const tsri_kernel_source_entry *source = &tsri_kernel_source_table[i];
      tsri_sha256_update(&h, source->name, strlen(source->name));
      tsri_sha256_update(&h, "\n", 1);
      tsri_sha256_update(&h, source->sha256, strlen(source->sha256));
      tsri_sha256_update(&h, "\n", 1);
    }
    uint8_t digest[TSRI_SHA256_BYTES];
    tsri_sha256_final(&h, digest);
    tsri_sha256_to_hex(digest, hex);
  }
  free(in_closure);
  return found;
}

/* ---- the public contract (tessera/kernels.h) --------------------------------------------- */

size_t tsr_kernel_source_count(void) {
  return tsri_kernel_source_table_count;
}

const char *tsr_kernel_source_name(size_t i) {
  return i < tsri_kernel_source_table_count ? tsri_kernel_source_table[i].name : NULL;
}

const char *tsr_kernel_source(const char *name, size_t *len) {
  const tsri_kernel_source_entry *source = tsri_kernel_source_find(name);
  if (len) *len = source ? source->length : 0;
  return source ? (const char *)source->bytes : NULL;
}

const char *tsr_kernel_source_sha256(const char *name) {
  const tsri_kernel_source_entry *source = tsri_kernel_source_find(name);
  return source ? source->sha256 : NULL;
}

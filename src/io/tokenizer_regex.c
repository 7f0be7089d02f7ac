/* io/tokenizer_regex.c — the pre-tokenizer's Split regex through PCRE2. tokenizer.json's
 * patterns are written for the `tokenizers` library, whose regex engine is Oniguruma: its \s
 * lacks U+180E, which PCRE2's \s has, and its \p{L} and \p{N} follow a newer Unicode than
 * PCRE2 10.42's 14.0. So \s, \S, \p{L}, \P{L}, \p{N} and \P{N} are rewritten into explicit
 * classes (tokenizer_unicode.c, measured on the library) before compiling. Other constructs
 * are taken as PCRE2 reads them; the two engines agree on everything GLM's and GPT-2's
 * patterns use. Not the matching loop: tokenizer_encode.c runs the compiled code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/tokenizer.h"

typedef struct {
  char *bytes;
  size_t len, cap;
  bool failed;
} text_buf;

static void put(text_buf *b, const char *s, size_t n) {
  if (b->failed) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 1024;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *grown = realloc(b->bytes, cap);
    if (!grown) {
      b->failed = true;
      return;
    }
    b->bytes = grown;
    b->cap = cap;
  }
  memcpy(b->bytes + b->len, s, n);
  b->len += n;
  b->bytes[b->len] = '\0';
}

static void put_str(text_buf *b, const char *s) {
  put(b, s, strlen(s));
}

/* The ranges as class items: \x{9}-\x{D}\x{20}... */
static void put_ranges(text_buf *b, const tsri_codepoint_range *ranges, size_t count) {
  char item[40];
  for (size_t i = 0; i < count; i++) {
    int n = ranges[i].first == ranges[i].last
                ? snprintf(item, sizeof item, "\\x{%X}", (unsigned)ranges[i].first)
                : snprintf(item, sizeof item, "\\x{%X}-\\x{%X}", (unsigned)ranges[i].first,
                           (unsigned)ranges[i].last);
    put(b, item, (size_t)n);
  }
}

/* Which escape at p (just after the backslash) is rewritten: 's', 'L', 'N', or 0. Sets
 * *negated and *skip (the pattern bytes the escape takes after the backslash). */
static char rewritten_escape(const char *p, bool *negated, size_t *skip) {
  *negated = p[0] == 'S' || p[0] == 'P';
  *skip = 1;
  if (p[0] == 's' || p[0] == 'S') return 's';
  if ((p[0] == 'p' || p[0] == 'P') && p[1] == '{' && (p[2] == 'L' || p[2] == 'N') && p[3] == '}') {
    *skip = 4;
    return p[2];
  }
  return 0;
}

/* The items of a rewritten class, to go inside brackets. */
static void put_class_items(text_buf *b, char which) {
  if (which == 's') put_ranges(b, tsri_tok_space, tsri_tok_space_count);
  if (which == 'L') {
    put_str(b, "\\p{L}");
    put_ranges(b, tsri_tok_letter_extra, tsri_tok_letter_extra_count);
  }
  if (which == 'N') {
    put_str(b, "\\p{N}");
    put_ranges(b, tsri_tok_number_extra, tsri_tok_number_extra_count);
  }
}

/* One escape at pattern[*i] (a backslash). In a class, a negated class escape cannot be spelled
 * as items; that and \Q...\E quoting are refused. */
static tsr_status rewrite_escape(text_buf *b, const char *pattern, size_t *i, bool in_class,
                                 const char *path, const char *where) {
  const char *p = pattern + *i + 1;
  bool negated;
  size_t skip;
  char which = rewritten_escape(p, &negated, &skip);
  if (p[0] == 'Q' || (which && negated && in_class))
    return tsri_error(TSR_ERR_UNSUPPORTED,
                      "tokenizer %s: %s uses \\%.*s %s at offset %zu, which is not supported", path,
                      where, (int)skip, p, p[0] == 'Q' ? "quoting" : "inside a class", *i);
  if (!which) {
    put(b, pattern + *i, p[0] ? 2 : 1);
    *i += p[0] ? 2 : 1;
    return TSR_OK;
  }
  if (!in_class) put_str(b, negated ? "[^" : "[");
  put_class_items(b, which);
  if (!in_class) put_str(b, "]");
  *i += 1 + skip;
  return TSR_OK;
}

/* Copies the opening of a class: '[', an optional '^', and a ']' that is literal there. */
static void open_class(text_buf *b, const char *pattern, size_t *i) {
  size_t j = *i + 1;
  if (pattern[j] == '^') j++;
  if (pattern[j] == ']') j++;
  put(b, pattern + *i, j - *i);
  *i = j;
}

static tsr_status rewrite(text_buf *b, const char *pattern, const char *path, const char *where) {
  bool in_class = false;
  for (size_t i = 0; pattern[i];) {
    char c = pattern[i];
    if (c == '\\') {
      tsr_status status = rewrite_escape(b, pattern, &i, in_class, path, where);
      if (status != TSR_OK) return status;
    } else if (c == '[' && !in_class) {
      open_class(b, pattern, &i);
      in_class = true;
    } else if (c == '[' && pattern[i + 1] == ':') { /* a POSIX class such as [:alpha:] */
      const char *end = strstr(pattern + i + 2, ":]");
      size_t n = end ? (size_t)(end - (pattern + i)) + 2 : 1;
      put(b, pattern + i, n);
      i += n;
    } else {
      in_class = in_class && c != ']';
      put(b, &pattern[i], 1);
      i++;
    }
  }
  return TSR_OK;
}

tsr_status tsri_tok_regex_compile(pcre2_code **out, const char *pattern, const char *path,
                                  const char *where) {
  *out = NULL;
  text_buf b = {0};
  tsr_status status = rewrite(&b, pattern, path, where);
  if (status == TSR_OK && (b.failed || !b.bytes)) put(&b, "", 0);
  if (status == TSR_OK && b.failed)
    status = tsri_error(TSR_ERR_NOMEM, "tokenizer %s: no memory to rewrite %s", path, where);
  if (status != TSR_OK) goto done;
  int code;
  PCRE2_SIZE offset;
  *out = pcre2_compile((PCRE2_SPTR)b.bytes, b.len, PCRE2_UTF | PCRE2_UCP, &code, &offset, NULL);
  if (!*out) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(code, message, sizeof message);
    status = tsri_error(TSR_ERR_UNSUPPORTED,
                        "tokenizer %s: %s does not compile with PCRE2 (%s, at offset %zu of the "
                        "rewritten pattern)",
                        path, where, (const char *)message, (size_t)offset);
    goto done;
  }
  /* Without JIT support (or memory for it) PCRE2 interprets the same code. */
  (void)pcre2_jit_compile(*out, PCRE2_JIT_COMPLETE);
done:
  free(b.bytes);
  return status;
}

/* io/npy.c — the .npy header parser, whole-file reader and writer. Plain little-endian dtypes in
 * C order only: Fortran order, big-endian, structured and object arrays are refused as
 * TSR_ERR_IO, never guessed at. Nothing here knows about arrays (npy_array.c does). */
#include "io/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/shape.h"
#include "base/status.h"
#include "io/file.h"

/* "\x93NUMPY", then the major and minor version bytes, then the header length: 2 bytes
 * little-endian in version 1.0, 4 bytes in 2.0 and 3.0 (3.0 only allows UTF-8 in the header). */
static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
/* A header longer than this is corrupt rather than large (numpy writes ~128 bytes). */
#define NPY_HEADER_MAX ((size_t)1 << 20)
/* numpy leaves room to grow the first axis in place: the header gets 21 - digits(shape[0])
 * spaces more, and the whole preamble is padded to a multiple of 64 bytes. */
#define NPY_GROWTH_DIGITS 21
#define NPY_ALIGN 64

typedef struct {
  const char *descr;
  size_t item_bytes;
  bool has_dtype;
  tsr_dtype dtype;
} npy_kind;

static const npy_kind npy_kinds[] = {
    {"<f4", 4, true, TSR_FLOAT32}, {"<f2", 2, true, TSR_FLOAT16}, {"<u2", 2, false, TSR_UINT8},
    {"<i4", 4, true, TSR_INT32},   {"<i8", 8, true, TSR_INT64},   {"<u4", 4, true, TSR_UINT32},
    {"|u1", 1, true, TSR_UINT8},   {"|i1", 1, true, TSR_INT8},    {"|b1", 1, true, TSR_BOOL},
};
#define NPY_KIND_COUNT (sizeof npy_kinds / sizeof npy_kinds[0])

/* The entry for a descr; one-byte types may be spelled with '<' as well as '|'. */
static const npy_kind *find_kind(const char *descr) {
  char norm[TSRI_NPY_DESCR_MAX];
  if (strlen(descr) != 3) return NULL;
  memcpy(norm, descr, 4);
  if (norm[0] == '<' && norm[2] == '1') norm[0] = '|';
  for (size_t i = 0; i < NPY_KIND_COUNT; i++)
    if (strcmp(npy_kinds[i].descr, norm) == 0) return &npy_kinds[i];
  return NULL;
}

bool tsri_npy_dtype_of(const char *descr, tsr_dtype *out) {
  const npy_kind *kind = descr ? find_kind(descr) : NULL;
  if (!kind || !kind->has_dtype) return false;
  *out = kind->dtype;
  return true;
}

const char *tsri_npy_descr_of(tsr_dtype dtype) {
  if (dtype == TSR_BFLOAT16) return "<u2";
  for (size_t i = 0; i < NPY_KIND_COUNT; i++)
    if (npy_kinds[i].has_dtype && npy_kinds[i].dtype == dtype) return npy_kinds[i].descr;
  return NULL;
}

/* ---- the header dictionary -------------------------------------------------------------- */

typedef struct {
  const char *p, *end;
  const char *path;
} cursor;

static void skip_space(cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
    c->p++;
}

static bool accept(cursor *c, char ch) {
  skip_space(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return true;
  }
  return false;
}

/* A Python string literal in single or double quotes, without escapes (none is valid here). */
static bool parse_string(cursor *c, char *buf, size_t cap) {
  skip_space(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
  char quote = *c->p++;
  size_t n = 0;
  while (c->p < c->end && *c->p != quote) {
    if (n + 1 >= cap) return false;
    buf[n++] = *c->p++;
  }
  if (c->p >= c->end) return false;
  c->p++;
  buf[n] = '\0';
  return true;
}

static bool accept_word(cursor *c, const char *word) {
  skip_space(c);
  size_t n = strlen(word);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return false;
  c->p += n;
  return true;
}

static tsr_status parse_dim(cursor *c, int64_t *dim) {
  skip_space(c);
  if (c->p >= c->end || *c->p < '0' || *c->p > '9')
    return tsri_error(TSR_ERR_IO, "npy %s: header shape holds something that is not a dimension",
                      c->path);
  int64_t value = 0;
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    int digit = *c->p++ - '0';
    if (value > (INT64_MAX - digit) / 10)
      return tsri_error(TSR_ERR_IO, "npy %s: header shape has a dimension that overflows int64",
                        c->path);
    value = value * 10 + digit;
  }
  if (c->p < c->end && *c->p == 'L') c->p++; /* written by Python 2 */
  *dim = value;
  return TSR_OK;
}

/* "(2, 3)", "(3,)" or "()". */
static tsr_status parse_shape(cursor *c, tsri_npy *out) {
  if (!accept(c, '('))
    return tsri_error(TSR_ERR_IO, "npy %s: header shape is not a tuple", c->path);
  out->ndim = 0;
  while (!accept(c, ')')) {
    if (out->ndim == TSR_MAX_NDIM)
      return tsri_error(TSR_ERR_IO, "npy %s: more than %d dimensions (tessera's limit)", c->path,
                        TSR_MAX_NDIM);
    tsr_status status = parse_dim(c, &out->shape[out->ndim++]);
    if (status != TSR_OK) return status;
    if (!accept(c, ',')) {
      if (!accept(c, ')'))
        return tsri_error(TSR_ERR_IO, "npy %s: header shape tuple is malformed", c->path);
      break;
    }
  }
  return TSR_OK;
}

/* count and data_bytes from shape and item_bytes, by the library's one rule for shapes
   (base/shape.h): refused when the non-zero dimensions' byte product overflows, whatever the
   order of the axes and whether or not another dimension is 0. */
static tsr_status size_data(tsri_npy *out, const char *path) {
  int64_t count = 0;
  if (!tsri_dims_count(out->shape, out->ndim, (int64_t)out->item_bytes, &count) ||
      (uint64_t)count > (uint64_t)SIZE_MAX / out->item_bytes) {
    char dims[TSR_MAX_NDIM * 24 + 4] = "";
    size_t n = 0;
    for (int d = 0; d < out->ndim && n < sizeof dims; d++)
      n += (size_t)snprintf(dims + n, sizeof dims - n, d ? ", %lld" : "%lld",
                            (long long)out->shape[d]);
    return tsri_error(TSR_ERR_IO,
                      "npy %s: shape (%s) of %zu-byte elements: its byte size overflows int64 (the "
                      "product of the non-zero dimensions counts, in any axis order)",
                      path, dims, out->item_bytes);
  }
  out->count = count;
  out->data_bytes = (size_t)count * out->item_bytes;
  return TSR_OK;
}

static tsr_status set_descr(tsri_npy *out, const char *descr, const char *path) {
  const npy_kind *kind = find_kind(descr);
  if (!kind) {
    if (descr[0] == '>')
      return tsri_error(TSR_ERR_IO, "npy %s: big-endian dtype '%s' is not supported", path, descr);
    return tsri_error(TSR_ERR_IO,
                      "npy %s: dtype '%s' is not supported (use <f4 <f2 <u2 <i4 <i8 <u4 |u1 |i1 "
                      "|b1)",
                      path, descr);
  }
  memcpy(out->descr, kind->descr, strlen(kind->descr) + 1);
  out->item_bytes = kind->item_bytes;
  return TSR_OK;
}

/* One "'key': value" entry of the dictionary; *seen gets a bit per key. */
static tsr_status parse_entry(cursor *c, tsri_npy *out, unsigned *seen) {
  char key[32], descr[32];
  skip_space(c);
  if (c->p == c->end)
    return tsri_error(TSR_ERR_IO, "npy %s: header dictionary is malformed or truncated", c->path);
  if (!parse_string(c, key, sizeof key) || !accept(c, ':'))
    return tsri_error(TSR_ERR_IO, "npy %s: header is not a {'key': value} dictionary", c->path);
  if (strcmp(key, "descr") == 0) {
    *seen |= 1u;
    if (!parse_string(c, descr, sizeof descr))
      return tsri_error(TSR_ERR_IO,
                        "npy %s: header descr is not a plain dtype string "
                        "(structured dtypes are not supported)",
                        c->path);
    return set_descr(out, descr, c->path);
  }
  if (strcmp(key, "fortran_order") == 0) {
    *seen |= 2u;
    if (accept_word(c, "False")) return TSR_OK;
    if (accept_word(c, "True"))
      return tsri_error(TSR_ERR_IO,
                        "npy %s: Fortran-order arrays are not supported (save it in C "
                        "order: np.ascontiguousarray)",
                        c->path);
    return tsri_error(TSR_ERR_IO, "npy %s: header fortran_order is neither True nor False",
                      c->path);
  }
  if (strcmp(key, "shape") == 0) {
    *seen |= 4u;
    return parse_shape(c, out);
  }
  return tsri_error(TSR_ERR_IO, "npy %s: header has an unknown key '%s'", c->path, key);
}

tsr_status tsri_npy_parse_header(tsri_npy *out, const char *header, size_t len, const char *path) {
  cursor c = {header, header + len, path};
  unsigned seen = 0;
  if (!accept(&c, '{'))
    return tsri_error(TSR_ERR_IO, "npy %s: header does not start with '{'", path);
  while (!accept(&c, '}')) {
    tsr_status status = parse_entry(&c, out, &seen);
    if (status != TSR_OK) return status;
    if (!accept(&c, ',')) {
      if (!accept(&c, '}'))
        return tsri_error(TSR_ERR_IO, "npy %s: header dictionary is malformed or truncated", path);
      break;
    }
  }
  skip_space(&c);
  if (c.p != c.end)
    return tsri_error(TSR_ERR_IO, "npy %s: header has text after the dictionary", path);
  if (seen != 7u)
    return tsri_error(TSR_ERR_IO, "npy %s: header lacks %s", path,
                      !(seen & 1u)   ? "'descr'"
                      : !(seen & 2u) ? "'fortran_order'"
                                     : "'shape'");
  return size_data(out, path);
}

/* ---- reading ---------------------------------------------------------------------------- */

static uint32_t read_le(const unsigned char *bytes, int n) {
  uint32_t value = 0;
  for (int i = n - 1; i >= 0; i--)
    value = (value << 8) | bytes[i];
  return value;
}

/* The preamble: magic, version and header length; *preamble_bytes is 10 or 12. */
static tsr_status read_preamble(FILE *f, const char *path, int64_t file_bytes, size_t *header_len,
                                size_t *preamble_bytes) {
  unsigned char pre[12];
  if (fread(pre, 1, 10, f) != 10)
    return tsri_error(TSR_ERR_IO, "npy %s: truncated: %lld bytes, shorter than the preamble", path,
                      (long long)file_bytes);
  if (memcmp(pre, npy_magic, sizeof npy_magic) != 0)
    return tsri_error(TSR_ERR_IO, "npy %s: bad magic (not an .npy file)", path);
  int major = pre[6], minor = pre[7];
  if (major < 1 || major > 3 || minor != 0)
    return tsri_error(TSR_ERR_IO, "npy %s: unsupported format version %d.%d", path, major, minor);
  *preamble_bytes = major == 1 ? 10 : 12;
  if (major > 1 && fread(pre + 10, 1, 2, f) != 2)
    return tsri_error(TSR_ERR_IO, "npy %s: truncated preamble", path);
  *header_len = read_le(pre + 8, major == 1 ? 2 : 4);
  if (*header_len > NPY_HEADER_MAX)
    return tsri_error(TSR_ERR_IO, "npy %s: header length %zu is corrupt", path, *header_len);
  if ((int64_t)(*preamble_bytes + *header_len) > file_bytes)
    return tsri_error(TSR_ERR_IO, "npy %s: truncated header (%zu bytes announced, %lld present)",
                      path, *header_len, (long long)(file_bytes - (int64_t)*preamble_bytes));
  return TSR_OK;
}

static tsr_status read_header(FILE *f, const char *path, size_t header_len, tsri_npy *out) {
  char *header = malloc(header_len + 1);
  if (!header) return tsri_error(TSR_ERR_NOMEM, "npy %s: no memory for the header", path);
  tsr_status status = TSR_OK;
  if (fread(header, 1, header_len, f) != header_len)
    status = tsri_error(TSR_ERR_IO, "npy %s: truncated header", path);
  else
    status = tsri_npy_parse_header(out, header, header_len, path);
  free(header);
  return status;
}

/* A bool array holds only bytes 0 and 1; anything else is corruption, not truth. */
static tsr_status check_bools(const tsri_npy *npy, const char *path) {
  if (strcmp(npy->descr, "|b1") != 0) return TSR_OK;
  const unsigned char *bytes = npy->data;
  for (size_t i = 0; i < npy->data_bytes; i++)
    if (bytes[i] > 1)
      return tsri_error(TSR_ERR_IO, "npy %s: bool element %zu holds %u", path, i, bytes[i]);
  return TSR_OK;
}

static tsr_status read_body(FILE *f, const char *path, int64_t file_bytes, size_t offset,
                            tsri_npy *out) {
  int64_t have = file_bytes - (int64_t)offset;
  if (have < (int64_t)out->data_bytes)
    return tsri_error(TSR_ERR_IO, "npy %s: truncated data (%lld of %zu bytes)", path,
                      (long long)have, out->data_bytes);
  if (have > (int64_t)out->data_bytes)
    return tsri_error(TSR_ERR_IO, "npy %s: %lld bytes after the data (corrupt header or file)",
                      path, (long long)(have - (int64_t)out->data_bytes));
  if (out->data_bytes == 0) return TSR_OK;
  out->data = malloc(out->data_bytes);
  if (!out->data)
    return tsri_error(TSR_ERR_NOMEM, "npy %s: no memory for %zu bytes", path, out->data_bytes);
  if (fread(out->data, 1, out->data_bytes, f) != out->data_bytes)
    return tsri_error(TSR_ERR_IO, "npy %s: read failed: %s", path,
                      ferror(f) ? strerror(errno) : "short read");
  return check_bools(out, path);
}

tsr_status tsri_npy_read(tsri_npy *out, const char *path) {
  memset(out, 0, sizeof *out);
  FILE *f = NULL;
  int64_t file_bytes = 0;
  /* Regular files only, checked without blocking (a FIFO without a writer would hang here). */
  tsr_status status = tsri_file_open_read("npy", path, &f, &file_bytes);
  if (status != TSR_OK) return status;
  size_t header_len = 0, preamble = 0;
  status = read_preamble(f, path, file_bytes, &header_len, &preamble);
  if (status == TSR_OK) status = read_header(f, path, header_len, out);
  if (status == TSR_OK) status = read_body(f, path, file_bytes, preamble + header_len, out);
  fclose(f);
  if (status != TSR_OK) tsri_npy_free(out);
  return status;
}

void tsri_npy_free(tsri_npy *npy) {
  if (!npy) return;
  free(npy->data);
  npy->data = NULL;
}

/* ---- writing ---------------------------------------------------------------------------- */

/* The dictionary exactly as numpy's format.write_array_header writes it, padded. */
static size_t format_header(char *buf, size_t cap, const char *descr, const int64_t *shape,
                            int ndim) {
  char dims[TSR_MAX_NDIM * 24 + 4] = "";
  size_t n = 0;
  for (int d = 0; d < ndim; d++)
    n += (size_t)snprintf(dims + n, sizeof dims - n, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (ndim == 1) snprintf(dims + n, sizeof dims - n, ",");
  int len =
      snprintf(buf, cap, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, dims);
  size_t used = (size_t)len;
  if (ndim > 0) {
    int digits = snprintf(NULL, 0, "%lld", (long long)shape[0]);
    for (int i = digits; i < NPY_GROWTH_DIGITS; i++)
      buf[used++] = ' ';
  }
  size_t pad = NPY_ALIGN - (10 + used + 1) % NPY_ALIGN; /* 10: the version 1.0 preamble */
  memset(buf + used, ' ', pad);
  used += pad;
  buf[used++] = '\n';
  return used;
}

static tsr_status write_all(FILE *f, const void *data, size_t bytes, const char *path) {
  if (bytes && fwrite(data, 1, bytes, f) != bytes)
    return tsri_error(TSR_ERR_IO, "npy %s: write failed: %s", path, strerror(errno));
  return TSR_OK;
}

tsr_status tsri_npy_write(const char *path, const char *descr, const int64_t *shape, int ndim,
                          const void *data, size_t data_bytes) {
  char header[TSR_MAX_NDIM * 24 + 256];
  size_t header_len = format_header(header, sizeof header, descr, shape, ndim);
  /* The header is at most a few hundred bytes (TSR_MAX_NDIM dimensions), so version 1.0 with
   * its 2-byte length always suffices. */
  unsigned char pre[10];
  memcpy(pre, npy_magic, sizeof npy_magic);
  pre[6] = 1;
  pre[7] = 0;
  pre[8] = (unsigned char)(header_len & 0xFF);
  pre[9] = (unsigned char)(header_len >> 8);
  /* Through a temporary file renamed over the target: a failure leaves the target as it was and
     removes nothing but the temporary file; a device, FIFO or directory is never written to. */
  tsri_file_writer writer;
  tsr_status status = tsri_file_write_begin(&writer, "npy", path);
  if (status != TSR_OK) return status;
  status = write_all(writer.file, pre, sizeof pre, path);
  if (status == TSR_OK) status = write_all(writer.file, header, header_len, path);
  if (status == TSR_OK) status = write_all(writer.file, data, data_bytes, path);
  if (status == TSR_OK)
    status = tsri_file_write_commit(&writer);
  else
    tsri_file_write_abort(&writer);
  return status;
}

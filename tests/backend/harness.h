/* tests/backend/harness.h — the backend conformance harness: a table of op cases (cases_*.c),
 * each run on seeded pseudo-random inputs, contiguous and as strided views, on every backend
 * present; the CPU is the reference. Public API only (include/tessera/), as outside code would
 * use it. Not a numeric oracle for the ops themselves: tests/ops and tests/quant check the CPU
 * against float64 references and MLX; this harness checks that layouts, streams and backends
 * agree with that CPU.
 *
 * A case names a builder (op constructors on a stream), its inputs (dtype, shape, how the values
 * are drawn) and its tolerance, {0, 0} meaning bit for bit. Each tolerance is derived from the
 * arithmetic in a one-line comment beside the case. */
#ifndef TSR_TESTS_BACKEND_HARNESS_H
#define TSR_TESTS_BACKEND_HARNESS_H

#include "check.h"

#define CONF_MAX_INPUTS 6
#define CONF_MAX_OUTPUTS 3

/* Units for tolerances: the float32 unit roundoff, and the relative spacing of the half types
   (one ulp of a float16/bfloat16 value is at most this fraction of it). */
#define CONF_U32 0x1p-24
#define CONF_ULP32 0x1p-23
#define CONF_ULP16 0x1p-10
#define CONF_ULPBF16 0x1p-7

/* How an input's values are drawn from the harness's seeded generator. */
typedef enum {
  CONF_UNIFORM, /* floats uniform in [lo, hi), rounded to the dtype; integers in [lo, hi); bool
                   true or false */
  CONF_SPECIAL, /* integers in [lo, hi) as floats (ties), with ±0, ±inf and NaN mixed in */
  CONF_BITS,    /* every bit pattern of an integer dtype */
  CONF_PERM     /* lo, lo + 1, ... in a random order: all distinct (for selections with no ties) */
} conf_gen;

/* Views an input must not be given (the harness gives each other one that its rank allows). */
enum { CONF_NO_TRANSPOSED = 1, CONF_NO_STRIDED = 2, CONF_NO_BROADCAST = 4, CONF_NO_REVERSED = 8 };

typedef struct {
  tsr_dtype dtype;
  conf_gen gen;
  double lo, hi;
  int ndim;
  int64_t shape[TSR_MAX_NDIM];
  unsigned no_views;
} conf_input;

/* |got - want| <= abs + rel * |want|; NaN matches NaN, an infinity only itself. {0, 0}: the bits
   must be equal (any NaN matching any NaN). */
typedef struct {
  double abs, rel;
} conf_tol;

typedef tsr_status (*conf_unary_fn)(tsr_array **out, tsr_array *x, tsr_stream *s);
typedef tsr_status (*conf_binary_fn)(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);
typedef tsr_status (*conf_reduce_fn)(tsr_array **out, tsr_array *a, const int *axes, int naxes,
                                     bool keepdims, tsr_stream *s);

/* The parameters a builder reads; each builder documents which. */
typedef struct {
  conf_unary_fn unary;
  conf_binary_fn binary;
  conf_reduce_fn reduce;
  int axis, k, naxes;
  int axes[TSR_MAX_NDIM];
  bool flag, flag2;
  double x, y, z;
  int ndim;
  int64_t shape[TSR_MAX_NDIM];
  int64_t start[TSR_MAX_NDIM], stop[TSR_MAX_NDIM], step[TSR_MAX_NDIM];
  tsr_dtype dtype;
  tsr_quant_mode mode;
  int bits, group_size;
  uint64_t seed;
} conf_params;

/* Builds the case's outputs on s from its inputs (which live on s's device). On failure the
   builder releases what it made; outputs it did set are released by the caller. */
typedef tsr_status (*conf_build_fn)(tsr_array **outs, tsr_array *const *in, const conf_params *p,
                                    tsr_stream *s);

typedef struct {
  const char *name;
  conf_build_fn build;
  int ninputs, noutputs;
  conf_input in[CONF_MAX_INPUTS];
  conf_params p;
  conf_tol tol;
} conf_case;

/* Table helpers: CONF_CASE(name, builder, inputs, outputs) starts an entry; CONF_SHAPE(7, 33)
   fills .ndim and .shape; CONF_IN(dtype, gen, lo, hi, dims...) is one input. */
#define CONF_CASE(name_, build_, ninputs_, noutputs_) \
  .name = (name_), .build = (build_), .ninputs = (ninputs_), .noutputs = (noutputs_)
#define CONF_NDIM_(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define CONF_SHAPE(...) .ndim = CONF_NDIM_(__VA_ARGS__), .shape = {__VA_ARGS__}
#define CONF_IN(dtype_, gen_, lo_, hi_, ...) \
  { .dtype = (dtype_), .gen = (gen_), .lo = (lo_), .hi = (hi_), CONF_SHAPE(__VA_ARGS__) }
/* A 0-d input. */
#define CONF_IN_SCALAR(dtype_, gen_, lo_, hi_) \
  { .dtype = (dtype_), .gen = (gen_), .lo = (lo_), .hi = (hi_), .ndim = 0 }

/* The tables, one per op family. */
extern const conf_case conf_cases_layout[];
extern const size_t conf_cases_layout_count;
extern const conf_case conf_cases_elementwise[];
extern const size_t conf_cases_elementwise_count;
extern const conf_case conf_cases_reduce[];
extern const size_t conf_cases_reduce_count;
extern const conf_case conf_cases_nn[];
extern const size_t conf_cases_nn_count;
extern const conf_case conf_cases_quant[];
extern const size_t conf_cases_quant_count;

/* The position scalar of a dynamic op's case (rope's offset, slice_update's start, sdpa's length):
   the value p->y as p->dtype (int32 or int64) of shape p->shape (p->ndim axes, one element), made
   on s, or in host memory when p->z != 0 (so a GPU case reads a copy placement inserts). */
tsr_status conf_position_scalar(tsr_array **out, const conf_params *p, tsr_stream *s);

/* ---- running a case ------------------------------------------------------------------------ */

/* The layouts each case runs in. The view variants hold the same values as BASE; BROADCAST holds
   values repeated along one axis, and BROADCAST_COPY the same values contiguous. */
typedef enum {
  CONF_BASE,
  CONF_TRANSPOSED, /* a contiguous x^T, transposed back: reversed strides */
  CONF_STRIDED,    /* x[1::2, 1::2, ...] of a bigger array: offset and step 2 on every axis */
  CONF_REVERSED,   /* x reversed on every axis and stored, then sliced [::-1, ...]: negative
                      strides */
  CONF_BROADCAST,  /* broadcast_to of an array with one axis of size 1 */
  CONF_BROADCAST_COPY,
  CONF_VARIANTS
} conf_variant;
const char *conf_variant_name(conf_variant v);

/* One output read back to the host, row-major. */
typedef struct {
  tsr_dtype dtype;
  int ndim;
  int64_t shape[TSR_MAX_NDIM];
  int64_t size;
  unsigned char *bytes;
} conf_output;

typedef struct {
  int n;
  conf_output out[CONF_MAX_OUTPUTS];
} conf_result;

void conf_result_free(conf_result *r);

/* The host values of one case's inputs (BASE and BROADCAST sets), drawn once per case. */
typedef struct conf_values conf_values;
conf_values *conf_values_new(const conf_case *c, uint64_t seed);
void conf_values_free(conf_values *v);
/* Whether variant v changes any input of c (else it would repeat BASE). */
bool conf_variant_applies(const conf_case *c, const conf_values *values, conf_variant v);

/* Exits with a message when a view variant of a 2-D input is contiguous on the CPU. */
void conf_check_views_are_views(void);

/* Places the inputs of variant v on s's device, builds the case on s, evaluates every output and
   reads it back, then checks that every input still holds its values (no op writes into an input).
   A failure returns its status (tsr_last_error() says why) and leaves r empty. */
tsr_status conf_run(const conf_case *c, const conf_values *values, conf_variant v, tsr_stream *s,
                    conf_result *r);

/* Compares got with want under tol. On a mismatch, prints one line naming `what`, the output,
   its shape, the first element that differs (flat and multi-index), both values and the
   tolerance, then returns false. Shapes or dtypes that differ are mismatches too. */
bool conf_compare(const char *what, const conf_result *got, const conf_result *want, conf_tol tol);

/* The checks only a GPU has (gpu_only.c): placement, copies between devices, cross-stream
   edges, the GPU ledger. Returns the number of checks that failed (each printed). */
int conf_gpu_only(tsr_device gpu, tsr_stream *second);

#endif

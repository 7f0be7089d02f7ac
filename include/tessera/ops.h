/* tessera/ops.h — op constructors.
 *
 * Every op has one shape: tsr_status tsr_NAME(tsr_array **out, inputs..., params..., stream).
 * It validates its arguments at once (bad input is TSR_ERR_INVALID with the shapes and dtypes in
 * the message, before any graph exists) and returns a lazy array owned by the caller; the work
 * runs on `s` (NULL: the default stream of the default device) when the array is evaluated.
 *
 *   tsr_array *y = NULL;
 *   tsr_status st = tsr_add(&y, a, b, NULL);   // a [2, 3] + b [3] -> y [2, 3]
 *
 * Broadcasting follows NumPy: shapes are aligned at the last axis, and each pair of dimensions
 * must be equal or one of them 1. Type promotion: equal dtypes stay; otherwise the result is the
 * first of float32 > bfloat16 > float16 > int64 > uint32 > int32 > int8 > uint8 > bool that either
 * input has, except where neither type holds the other: float16 with bfloat16 gives float32,
 * uint32 with int8 or int32 gives int64, uint8 with int8 gives int32.
 */
#ifndef TESSERA_OPS_H
#define TESSERA_OPS_H

#include "tessera/array.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- creation ----------------------------------------------------------------------------- */
TSR_API tsr_status tsr_zeros(tsr_array **out, const int64_t *shape, int ndim, tsr_dtype dtype,
                             tsr_stream *s);
TSR_API tsr_status tsr_ones(tsr_array **out, const int64_t *shape, int ndim, tsr_dtype dtype,
                            tsr_stream *s);
/* Every element `value`: rounded once to a float dtype; truncated toward zero and saturated for an
   integer dtype (NaN gives 0); != 0 for bool. */
TSR_API tsr_status tsr_full(tsr_array **out, const int64_t *shape, int ndim, double value,
                            tsr_dtype dtype, tsr_stream *s);
/* [start, stop) by step: ceil((stop - start) / step) elements (an empty range gives shape [0]),
   element i computed as start + i * step in float64, then converted as tsr_full converts.
   start, stop and step must be finite and step != 0. */
TSR_API tsr_status tsr_arange(tsr_array **out, double start, double stop, double step,
                              tsr_dtype dtype, tsr_stream *s);
/* Conversion between any dtypes (always a new array): to float16/bfloat16 by round to nearest
   even; float to integer truncates toward zero (NaN gives 0, out of range saturates); integer to
   integer wraps (two's complement); to bool is != 0; bool is 0/1. */
TSR_API tsr_status tsr_astype(tsr_array **out, tsr_array *a, tsr_dtype dtype, tsr_stream *s);

/* ---- views and layout (no copy where the layout allows) ------------------------------------- */
/* One dimension may be -1 (inferred). A non-contiguous input is copied first. */
TSR_API tsr_status tsr_reshape(tsr_array **out, tsr_array *a, const int64_t *shape, int ndim,
                               tsr_stream *s);
/* axes: a permutation of 0..ndim-1 (negative values count from the end); NULL reverses. */
TSR_API tsr_status tsr_transpose(tsr_array **out, tsr_array *a, const int *axes, int naxes,
                                 tsr_stream *s);
/* a[start[i]:stop[i]:step[i]] on axes 0..naxes-1 (later axes whole), Python's rules: negative
   start/stop count from the end and are clamped; step may be negative, never 0; step NULL = 1. */
TSR_API tsr_status tsr_slice(tsr_array **out, tsr_array *a, const int64_t *start,
                             const int64_t *stop, const int64_t *step, int naxes, tsr_stream *s);
/* Joins arrays of one dtype whose shapes agree except on `axis`. */
TSR_API tsr_status tsr_concatenate(tsr_array **out, tsr_array *const *arrays, int n, int axis,
                                   tsr_stream *s);
TSR_API tsr_status tsr_expand_dims(tsr_array **out, tsr_array *a, int axis, tsr_stream *s);
/* Removes the given size-1 axes (NULL: every size-1 axis). */
TSR_API tsr_status tsr_squeeze(tsr_array **out, tsr_array *a, const int *axes, int naxes,
                               tsr_stream *s);
TSR_API tsr_status tsr_broadcast_to(tsr_array **out, tsr_array *a, const int64_t *shape, int ndim,
                                    tsr_stream *s);
/* A row-major contiguous copy (or a itself when it already is). */
TSR_API tsr_status tsr_contiguous(tsr_array **out, tsr_array *a, tsr_stream *s);

/* ---- indexing ------------------------------------------------------------------------------- */
/* Integer indices (any integer dtype); the result's shape is a.shape[:axis] + indices.shape +
   a.shape[axis+1:]. An index outside [0, dim) is TSR_ERR_INVALID at evaluation. */
TSR_API tsr_status tsr_take(tsr_array **out, tsr_array *a, tsr_array *indices, int axis,
                            tsr_stream *s);
/* out[..., i, ...] = a[..., indices[..., i, ...], ...] along axis; indices broadcast with a on
   the other axes. */
TSR_API tsr_status tsr_take_along_axis(tsr_array **out, tsr_array *a, tsr_array *indices, int axis,
                                       tsr_stream *s);
/* A copy of dst with dst[start:stop:step] (as tsr_slice) replaced by update (broadcast to the
   slice, converted to dst's dtype). When nothing else holds dst's buffer (the caller released
   dst and it has no views), the buffer is reused and only the slice is written: the KV-cache
   append costs the update, not the cache. */
TSR_API tsr_status tsr_slice_update(tsr_array **out, tsr_array *dst, tsr_array *update,
                                    const int64_t *start, const int64_t *stop, const int64_t *step,
                                    int naxes, tsr_stream *s);
/* tsr_slice_update on one axis with a start read when the op runs, so that one graph serves every
   step of a decode loop (recorded once, replayed): dst with dst[..., p:p+n, ...] on `axis`
   (negative counts from the end; other axes whole) replaced by update, n = update's extent on
   axis, p = the value of `start` clamped into [0, dst.shape[axis] - n] (as XLA's
   dynamic_update_slice: the write never leaves dst). `start` is an int32 or int64 array with
   exactly one element (any shape). update has dst's ndim and dst's extent on every other axis,
   n <= dst.shape[axis]; it is converted to dst's dtype. The same bits as tsr_slice_update with the
   clamped start, and the same reuse of dst's buffer when nothing else holds it. Bad shapes,
   dtypes or axis are TSR_ERR_INVALID here; the value of start is never an error. */
TSR_API tsr_status tsr_slice_update_dynamic(tsr_array **out, tsr_array *dst, tsr_array *update,
                                            tsr_array *start, int axis, tsr_stream *s);

/* ---- elementwise (broadcasting, promotion as above) -----------------------------------------
   Operands are first converted to the promoted dtype (as tsr_astype would), then computed: in
   float32 for float16/bfloat16 (rounded once), exactly or wrapping for integers. On bool (0/1),
   add is or, subtract xor, multiply and, maximum or, minimum and. */
/* a + b; integers wrap (two's complement), bool is logical or. */
TSR_API tsr_status tsr_add(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);
TSR_API tsr_status tsr_subtract(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);
TSR_API tsr_status tsr_multiply(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);
/* Float division; integer inputs give float32. */
TSR_API tsr_status tsr_divide(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);
/* NaN propagates. */
TSR_API tsr_status tsr_maximum(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);
TSR_API tsr_status tsr_minimum(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);
/* Integer power with a negative exponent gives the real result truncated toward zero (0 for a
   base of 0). */
TSR_API tsr_status tsr_power(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);
/* Comparisons give bool, compared in the promoted dtype; NaN compares unequal to everything. */
TSR_API tsr_status tsr_equal(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);
TSR_API tsr_status tsr_not_equal(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);
TSR_API tsr_status tsr_less(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);
TSR_API tsr_status tsr_less_equal(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);
TSR_API tsr_status tsr_greater(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);
TSR_API tsr_status tsr_greater_equal(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);
/* cond ? a : b, all three broadcast; cond of any dtype (nonzero = true). */
TSR_API tsr_status tsr_where(tsr_array **out, tsr_array *cond, tsr_array *a, tsr_array *b,
                             tsr_stream *s);
/* Unary ops keep float dtypes; integer and bool inputs give float32, except negative and abs,
   which keep the dtype (unsigned negative wraps; abs of the most negative value is itself; bool
   stays as it is). */
TSR_API tsr_status tsr_negative(tsr_array **out, tsr_array *x, tsr_stream *s);
TSR_API tsr_status tsr_abs(tsr_array **out, tsr_array *x, tsr_stream *s);
TSR_API tsr_status tsr_exp(tsr_array **out, tsr_array *x, tsr_stream *s);
TSR_API tsr_status tsr_log(tsr_array **out, tsr_array *x, tsr_stream *s);
TSR_API tsr_status tsr_sqrt(tsr_array **out, tsr_array *x, tsr_stream *s);
TSR_API tsr_status tsr_rsqrt(tsr_array **out, tsr_array *x, tsr_stream *s);
TSR_API tsr_status tsr_sigmoid(tsr_array **out, tsr_array *x, tsr_stream *s);
/* x * sigmoid(x) */
TSR_API tsr_status tsr_silu(tsr_array **out, tsr_array *x, tsr_stream *s);
TSR_API tsr_status tsr_tanh(tsr_array **out, tsr_array *x, tsr_stream *s);

/* ---- reductions (naxes 0: all axes; negative axes count from the end; duplicates invalid) --- */
/* Float sums and means accumulate in float64 and round once to the input's float dtype (so the
   result does not depend on layout or order); integer and bool sums return int64 (wrapping); the
   mean of integers is float32; max and min keep the dtype (NaN propagates; bool max is or, min
   is and). Over a zero-size axis: sum 0, mean NaN; max/min/argmax are TSR_ERR_INVALID at
   construction when the output has elements (NumPy's rule). */
TSR_API tsr_status tsr_sum(tsr_array **out, tsr_array *a, const int *axes, int naxes, bool keepdims,
                           tsr_stream *s);
TSR_API tsr_status tsr_mean(tsr_array **out, tsr_array *a, const int *axes, int naxes,
                            bool keepdims, tsr_stream *s);
TSR_API tsr_status tsr_max(tsr_array **out, tsr_array *a, const int *axes, int naxes, bool keepdims,
                           tsr_stream *s);
TSR_API tsr_status tsr_min(tsr_array **out, tsr_array *a, const int *axes, int naxes, bool keepdims,
                           tsr_stream *s);
/* int32 index of the first maximum (NaN counts as the maximum). */
TSR_API tsr_status tsr_argmax(tsr_array **out, tsr_array *a, int axis, bool keepdims,
                              tsr_stream *s);
/* Running sum along axis (float64 inside); reverse runs from the end; exclusive starts from 0.
   Float dtypes are kept; integer and bool inputs give int64. */
TSR_API tsr_status tsr_cumsum(tsr_array **out, tsr_array *a, int axis, bool reverse, bool inclusive,
                              tsr_stream *s);
/* int32 indices that sort along axis, ascending, stable. */
TSR_API tsr_status tsr_argsort(tsr_array **out, tsr_array *a, int axis, tsr_stream *s);
/* int32 indices such that the kth (negative counts from the end) is where a full sort puts it,
   smaller ones before, larger after (each side in any order). NaN sorts last. */
TSR_API tsr_status tsr_argpartition(tsr_array **out, tsr_array *a, int kth, int axis,
                                    tsr_stream *s);
/* The k largest along axis: values and int32 indices, in any order (today: largest first, ties to
   the lower index). Values are take_along_axis of the indices: evaluating both selects once. */
TSR_API tsr_status tsr_topk(tsr_array **values, tsr_array **indices, tsr_array *a, int k, int axis,
                            tsr_stream *s);

/* ---- transformer blocks ---------------------------------------------------------------------- */
/* Batched matrix product with broadcasting batch axes (1-D operands as NumPy promotes them);
   float16/bfloat16/integer inputs are converted, float32 accumulation (OpenBLAS sgemm); the
   result has the promoted float dtype. bool operands and M, N or K above 2^31-1 are invalid. */
TSR_API tsr_status tsr_matmul(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);
/* Softmax over axis, max-subtracted, in float32; the input's float dtype out (integer input is
   invalid). A NaN makes its whole line NaN; an all -inf line is NaN (0/0), as in NumPy. */
TSR_API tsr_status tsr_softmax(tsr_array **out, tsr_array *x, int axis, tsr_stream *s);
/* x * rsqrt(mean(x^2 over the last axis) + eps) * weight, float32 inside, rounded once; weight
   NULL = 1, else [D] or any shape that broadcasts to x without widening it; eps finite, >= 0. */
TSR_API tsr_status tsr_rms_norm(tsr_array **out, tsr_array *x, tsr_array *weight, float eps,
                                tsr_stream *s);
/* Rotary embedding over the first `dims` entries (even, <= D) of the last axis of x [..., T, D],
   position of row t = offset + t; traditional = interleaved pairs (2i, 2i+1), else half-split
   (i, i + dims/2); angle = position * base^(-2i/dims), computed in float32. dims even in
   [2, D], base finite and > 0, offset >= 0. */
TSR_API tsr_status tsr_rope(tsr_array **out, tsr_array *x, int dims, bool traditional, float base,
                            int64_t offset, tsr_stream *s);
/* tsr_rope with the offset read when the op runs (a replayed decode step's position): the value
   of `offset`, an int32 or int64 array with exactly one element (any shape). Any value is
   allowed, negative too (position offset + t, computed in int64 and wrapping past its range); the
   same bits as tsr_rope with that offset on the same backend. */
TSR_API tsr_status tsr_rope_dynamic(tsr_array **out, tsr_array *x, int dims, bool traditional,
                                    float base, tsr_array *offset, tsr_stream *s);
/* Attention: q [B, Hq, Tq, D], k and v [B, Hkv, Tk, D], Hq a multiple of Hkv (query head h reads
   kv head h / (Hq/Hkv)); causal masks key j for query i when j > i + (Tk - Tq); softmax in
   float32; the output [B, Hq, Tq, D] has q's dtype. causal with Tk < Tq is invalid (a query row
   would see no key); non-causal with Tk = 0 gives zeros. */
TSR_API tsr_status tsr_sdpa(tsr_array **out, tsr_array *q, tsr_array *k, tsr_array *v, float scale,
                            bool causal, tsr_stream *s);
/* Causal tsr_sdpa over the first L keys and values only, L read when the op runs: the value of
   `length` (an int32 or int64 array with exactly one element, any shape) clamped into [Tq, Tk],
   so every query row sees a key. The same bits as tsr_sdpa(q, k[:, :, :L], v[:, :, :L], scale,
   true) on the same backend; keys and values at L and beyond are never read (a cache's unused
   tail may hold anything, NaN included). Shapes and dtypes as tsr_sdpa with causal (Tk >= Tq). */
TSR_API tsr_status tsr_sdpa_dynamic(tsr_array **out, tsr_array *q, tsr_array *k, tsr_array *v,
                                    float scale, tsr_array *length, tsr_stream *s);

/* ---- random numbers: counter-based (Philox-4x32-10), so element i of a draw depends only on
   (seed, i): the same numbers on every run and every thread count. ------------------------------
 */
/* Uniform in [low, high), high excluded after rounding to dtype. Float dtypes only; finite
   parameters; at least one dtype value in [low, high). */
TSR_API tsr_status tsr_random_uniform(tsr_array **out, const int64_t *shape, int ndim, double low,
                                      double high, tsr_dtype dtype, uint64_t seed, tsr_stream *s);
/* Normal(mean, std) by Box-Muller over the same counters (std >= 0, float dtypes). */
TSR_API tsr_status tsr_random_normal(tsr_array **out, const int64_t *shape, int ndim, double mean,
                                     double std, tsr_dtype dtype, uint64_t seed, tsr_stream *s);
/* One int32 sample per row of `logits` (unnormalized log-probabilities) along axis (Gumbel-max). */
TSR_API tsr_status tsr_random_categorical(tsr_array **out, tsr_array *logits, int axis,
                                          uint64_t seed, tsr_stream *s);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_OPS_H */

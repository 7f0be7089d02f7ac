/* ops/unary.c — elementwise unary ops: argument checks and the result dtype. The kernels are the
 * backends' (cpu/unary.c).
 *
 * Float dtypes are kept; integer and bool inputs give float32, except negative and abs, which
 * keep every non-float dtype. Decisions where tessera/ops.h is silent: negative and abs of bool
 * keep bool and return the input's values (-1 and 1 are both true); negative of an unsigned
 * integer wraps (negative(uint8 1) is 255) and abs of the most negative signed value is itself,
 * as in two's complement hardware.
 */
#include "base/dtype.h"
#include "base/status.h"
#include "core/array.h"
#include "tessera/ops.h"

static tsr_status unary_op(const char *what, tsri_primitive primitive, bool keeps_integers,
                           tsr_array **out, tsr_array *x, tsr_stream *s) {
  if (!out || !x) return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what, !out ? "out" : "x");
  tsr_dtype dtype = x->dtype;
  if (!tsri_dtype_is_float(dtype) && !keeps_integers) dtype = TSR_FLOAT32;
  tsr_array *inputs[1] = {x};
  return tsri_node_new(out, primitive, NULL, 0, dtype, x->shape, x->ndim, inputs, 1, s);
}

#define UNARY_OP(name, primitive, keeps_integers)                       \
  tsr_status tsr_##name(tsr_array **out, tsr_array *x, tsr_stream *s) { \
    return unary_op(#name, primitive, keeps_integers, out, x, s);       \
  }

UNARY_OP(negative, TSRI_PRIM_NEGATIVE, true)
UNARY_OP(abs, TSRI_PRIM_ABS, true)
UNARY_OP(exp, TSRI_PRIM_EXP, false)
UNARY_OP(log, TSRI_PRIM_LOG, false)
UNARY_OP(sqrt, TSRI_PRIM_SQRT, false)
UNARY_OP(rsqrt, TSRI_PRIM_RSQRT, false)
UNARY_OP(sigmoid, TSRI_PRIM_SIGMOID, false)
UNARY_OP(silu, TSRI_PRIM_SILU, false)
UNARY_OP(tanh, TSRI_PRIM_TANH, false)

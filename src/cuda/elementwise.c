/* cuda/elementwise.c — the GPU's elementwise ops: the unary ops, astype, the binary arithmetic
 * ops and comparisons, and where (cuda/kernels/elementwise.cuh), every dtype, broadcasting and
 * any input layout. Each launch is one specialization: the op, the inputs' and output's dtypes,
 * and whether the layout is flat. Not full and arange (cuda/creation.c).
 *
 * The inputs' layouts over the output's shape are simplified before the launch: axes of extent
 * 1 are dropped and neighbouring axes that every input walks as one are merged, so packed
 * operands, broadcast scalars and many views become one axis (the kernel's flat path: no index
 * division); what stays n-d takes the strided walk. */
#include "cuda/kernels.h"

#include <stdio.h>

#include "base/dtype.h"
#include "cuda/launch.h"
#include "cuda/strided.h"

/* The kernel's name of each primitive it runs (TSR_EW_UNARY / TSR_EW_BINARY). */
static const char *const unary_names[TSRI_PRIM_COUNT] = {
    [TSRI_PRIM_NEGATIVE] = "negative", [TSRI_PRIM_ABS] = "abs",   [TSRI_PRIM_EXP] = "exp",
    [TSRI_PRIM_LOG] = "log",           [TSRI_PRIM_SQRT] = "sqrt", [TSRI_PRIM_RSQRT] = "rsqrt",
    [TSRI_PRIM_SIGMOID] = "sigmoid",   [TSRI_PRIM_SILU] = "silu", [TSRI_PRIM_TANH] = "tanh",
};
static const char *const binary_names[TSRI_PRIM_COUNT] = {
    [TSRI_PRIM_ADD] = "add",
    [TSRI_PRIM_SUBTRACT] = "subtract",
    [TSRI_PRIM_MULTIPLY] = "multiply",
    [TSRI_PRIM_DIVIDE] = "divide",
    [TSRI_PRIM_MAXIMUM] = "maximum",
    [TSRI_PRIM_MINIMUM] = "minimum",
    [TSRI_PRIM_POWER] = "power",
    [TSRI_PRIM_EQUAL] = "equal",
    [TSRI_PRIM_NOT_EQUAL] = "not_equal",
    [TSRI_PRIM_LESS] = "less",
    [TSRI_PRIM_LESS_EQUAL] = "less_equal",
    [TSRI_PRIM_GREATER] = "greater",
    [TSRI_PRIM_GREATER_EQUAL] = "greater_equal",
};

/* Launches the specialization `op_options` (the op and its inputs' dtypes) over the op's
 * inputs; the output's dtype and the flat switch are added here. */
static tsr_status launch(const tsri_op *op, const char *op_options) {
  const tsri_view *out = &op->out;
  if (out->size == 0) return TSR_OK;
  tsri_cuda_strided layout;
  tsri_cuda_strided_init(&layout, out);
  for (int k = 0; k < op->ninputs; k++)
    tsri_cuda_strided_add(&layout, &op->in[k]);
  tsri_cuda_strided_simplify(&layout);
  char options[320];
  snprintf(options, sizeof options, "%s -DTSR_EW_OUT=%s -DTSR_EW_FLAT=%d", op_options,
           tsr_dtype_name(out->dtype), layout.ndim <= 1);
  void *data[3] = {NULL, NULL, NULL};
  for (int k = 0; k < op->ninputs; k++)
    data[k] = op->in[k].data;
  void *args[] = {&layout, &data[0], &data[1], &data[2], (void *)&out->data};
  unsigned block = 256;
  return tsri_cuda_launch(op, "elementwise", options,
                          tsri_dim3(tsri_cuda_blocks_for(out->size, block)), tsri_dim3(block), 0,
                          args);
}

static tsr_status cuda_unary(const tsri_op *op) {
  char options[128];
  snprintf(options, sizeof options, "-DTSR_EW_UNARY=%s -DTSR_EW_IN0=%s", unary_names[op->primitive],
           tsr_dtype_name(op->in[0].dtype));
  return launch(op, options);
}

static tsr_status cuda_astype(const tsri_op *op) {
  char options[128];
  snprintf(options, sizeof options, "-DTSR_EW_ASTYPE -DTSR_EW_IN0=%s",
           tsr_dtype_name(op->in[0].dtype));
  return launch(op, options);
}

/* The computation dtype is cpu/binary.c's: the promoted dtype, float32 for divide when that is
 * an integer or bool (divide has no integer arithmetic). */
static tsr_status cuda_binary(const tsri_op *op) {
  tsr_dtype a = op->in[0].dtype, b = op->in[1].dtype;
  tsr_dtype compute = tsri_dtype_promote(a, b);
  if (op->primitive == TSRI_PRIM_DIVIDE && !tsri_dtype_is_float(compute)) compute = TSR_FLOAT32;
  char options[192];
  snprintf(options, sizeof options,
           "-DTSR_EW_BINARY=%s -DTSR_EW_IN0=%s -DTSR_EW_IN1=%s -DTSR_EW_COMPUTE=%s",
           binary_names[op->primitive], tsr_dtype_name(a), tsr_dtype_name(b),
           tsr_dtype_name(compute));
  return launch(op, options);
}

static tsr_status cuda_where(const tsri_op *op) {
  char options[160];
  snprintf(options, sizeof options,
           "-DTSR_EW_WHERE -DTSR_EW_IN0=%s -DTSR_EW_IN1=%s -DTSR_EW_IN2=%s",
           tsr_dtype_name(op->in[0].dtype), tsr_dtype_name(op->in[1].dtype),
           tsr_dtype_name(op->in[2].dtype));
  return launch(op, options);
}

void tsri_cuda_register_elementwise(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports) {
  (void)supports; /* every dtype and layout */
  for (int p = 0; p < TSRI_PRIM_COUNT; p++) {
    if (unary_names[p]) table[p] = cuda_unary;
    if (binary_names[p]) table[p] = cuda_binary;
  }
  table[TSRI_PRIM_ASTYPE] = cuda_astype;
  table[TSRI_PRIM_WHERE] = cuda_where;
}

/* core/primitive.h — the one list of primitives a graph node can name. An op (src/ops/) builds
 * the node; a backend (src/cpu/, src/cuda/) runs it through its kernel table indexed by this
 * enum. Adding a primitive touches this list, its op and each backend's table. */
#ifndef TSR_CORE_PRIMITIVE_H
#define TSR_CORE_PRIMITIVE_H

#include <stdint.h>

/* X(enum suffix, name used in messages). By the op file that builds them: data/copy (core,
   ops/copy.c); full/arange/astype (ops/creation.c); reshape..concatenate (ops/layout.c);
   take..slice_update (ops/indexing.c); add..where (ops/binary.c); negative..tanh (ops/unary.c);
   sum..topk (ops/reduce.c, ops/sort.c); matmul..sdpa (ops/matmul.c, ops/nn.c); random_*
   (ops/random.c); quantize..gather_qmm (ops/quant.c, ops/quant_matmul.c); all_sum/all_gather
   (dist/lazy.c: every backend runs them through core/collective.h, which calls the group); step
   (core/step.c: a recorded step's run, which core runs itself, as it runs views). */
// clang-format off
#define TSRI_PRIMITIVE_LIST(X)                                                                 \
  X(DATA, "data") X(COPY, "copy")                                                              \
  X(FULL, "full") X(ARANGE, "arange") X(ASTYPE, "astype")                                      \
  X(RESHAPE, "reshape") X(TRANSPOSE, "transpose") X(SLICE, "slice")                            \
  X(BROADCAST_TO, "broadcast_to") X(CONCATENATE, "concatenate")                                \
  X(TAKE, "take") X(TAKE_ALONG_AXIS, "take_along_axis") X(SLICE_UPDATE, "slice_update")        \
  X(ADD, "add") X(SUBTRACT, "subtract") X(MULTIPLY, "multiply") X(DIVIDE, "divide")            \
  X(MAXIMUM, "maximum") X(MINIMUM, "minimum") X(POWER, "power") X(EQUAL, "equal")              \
  X(NOT_EQUAL, "not_equal") X(LESS, "less") X(LESS_EQUAL, "less_equal")                        \
  X(GREATER, "greater") X(GREATER_EQUAL, "greater_equal") X(WHERE, "where")                    \
  X(NEGATIVE, "negative") X(ABS, "abs") X(EXP, "exp") X(LOG, "log") X(SQRT, "sqrt")            \
  X(RSQRT, "rsqrt") X(SIGMOID, "sigmoid") X(SILU, "silu") X(TANH, "tanh")                      \
  X(SUM, "sum") X(MEAN, "mean") X(MAX, "max") X(MIN, "min") X(ARGMAX, "argmax")                \
  X(CUMSUM, "cumsum") X(ARGSORT, "argsort") X(ARGPARTITION, "argpartition") X(TOPK, "topk")    \
  X(MATMUL, "matmul") X(SOFTMAX, "softmax") X(RMS_NORM, "rms_norm") X(ROPE, "rope")            \
  X(SDPA, "sdpa")                                                                              \
  X(RANDOM_UNIFORM, "random_uniform") X(RANDOM_NORMAL, "random_normal")                        \
  X(RANDOM_CATEGORICAL, "random_categorical")                                                 \
  X(QUANTIZE, "quantize") X(QUANT_PART, "quantize_part") X(DEQUANTIZE, "dequantize")           \
  X(QUANTIZED_MATMUL, "quantized_matmul") X(GATHER_QMM, "gather_qmm")                        \
  X(ALL_SUM, "all_sum") X(ALL_GATHER, "all_gather")                                          \
  X(STEP, "step")
// clang-format on

typedef enum {
#define TSRI_PRIMITIVE_ENUM(e, name) TSRI_PRIM_##e,
  TSRI_PRIMITIVE_LIST(TSRI_PRIMITIVE_ENUM)
#undef TSRI_PRIMITIVE_ENUM
      TSRI_PRIM_COUNT
} tsri_primitive;

const char *tsri_primitive_name(tsri_primitive p);

#endif

/* cuda/kernels.h — each CUDA kernel area (a file under src/cuda/ with its sources under
 * src/cuda/kernels/) fills its primitives' entries of the GPU kernel table (and, where a kernel
 * covers only some cases, of the supports table); cuda/backend.c calls
 * them all once. A primitive left empty is refused at construction on a GPU stream
 * (TSR_ERR_UNSUPPORTED), so the backend grows op by op. */
#ifndef TSR_CUDA_KERNELS_H
#define TSR_CUDA_KERNELS_H

#include "core/backend.h"

/* Whether a kernel runs this node (asked at construction, data pointers NULL); an area sets one
 * for a primitive whose kernel covers only some dtypes or parameters. NULL: all of them. */
typedef bool (*tsri_cuda_supports_fn)(const tsri_op *op);

void tsri_cuda_register_copy(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports); /* copy.c */
void tsri_cuda_register_indexing(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports);
void tsri_cuda_register_sort(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports);
void tsri_cuda_register_random(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports);
void tsri_cuda_register_elementwise(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports);
void tsri_cuda_register_creation(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports);
void tsri_cuda_register_matmul(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports);
void tsri_cuda_register_attention(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports);
void tsri_cuda_register_reduce(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports);
void tsri_cuda_register_cumsum(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports);
void tsri_cuda_register_nn(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports);
void tsri_cuda_register_quant(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports);

/* op->out [m, n] = a [m, k] · b [n, k]^T, a and b packed row-major of op->out's dtype (float32,
 * float16 or bfloat16), float32 accumulation, on op's stream through the device's cuBLASLt plans
 * (cuda/matmul.c). For kernels that make an operand first (cuda/qmm.c's dequantized prefill). */
tsr_status tsri_cuda_matmul_nt(const tsri_op *op, int64_t m, int64_t n, int64_t k, const void *a,
                               const void *b);

/* TSRI_PRIM_DEQUANTIZE's kernel (cuda/quant.c), for an op built around a scratch output. */
tsr_status tsri_cuda_dequantize(const tsri_op *op);
/* The same op's weights as a matmul uses them: affine into float32 as s * q + b in float32, not
 * rounded to the scales' dtype (quant-spec Part A §4), so a product does not depend on the path. */
tsr_status tsri_cuda_dequantize_weights(const tsri_op *op);

#endif

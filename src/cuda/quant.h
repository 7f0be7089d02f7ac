/* cuda/quant.h — the quantized ops' area of the CUDA backend, between its two files: cuda/quant.c
 * (quantize, dequantize, and the area's registration, tsri_cuda_register_quant in
 * cuda/kernels.h) and cuda/qmm.c (quantized_matmul, gather_qmm). */
#ifndef TSR_CUDA_QUANT_H
#define TSR_CUDA_QUANT_H

#include "cuda/kernels.h"

/* Fills the kernel (and supports) entries of TSRI_PRIM_QUANTIZED_MATMUL and TSRI_PRIM_GATHER_QMM
 * (cuda/qmm.c). */
void tsri_cuda_register_qmm(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports);

#endif

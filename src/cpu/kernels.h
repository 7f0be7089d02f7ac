/* cpu/kernels.h — each CPU kernel area (one file or file pair under src/cpu/) fills its
 * primitives' entries of the kernel table; cpu/backend.c calls them all once. */
#ifndef TSR_CPU_KERNELS_H
#define TSR_CPU_KERNELS_H

#include "core/backend.h"

void tsri_cpu_register_copy(tsri_kernel_fn *table);     /* cpu/copy.c */
void tsri_cpu_register_creation(tsri_kernel_fn *table); /* cpu/creation.c */
void tsri_cpu_register_layout(tsri_kernel_fn *table);   /* cpu/layout.c */
void tsri_cpu_register_indexing(tsri_kernel_fn *table); /* cpu/indexing.c */
void tsri_cpu_register_binary(tsri_kernel_fn *table);   /* cpu/binary.c */
void tsri_cpu_register_unary(tsri_kernel_fn *table);    /* cpu/unary.c */
void tsri_cpu_register_reduce(tsri_kernel_fn *table);   /* cpu/reduce.c */
void tsri_cpu_register_sort(tsri_kernel_fn *table);     /* cpu/sort.c */
void tsri_cpu_register_matmul(tsri_kernel_fn *table);   /* cpu/matmul.c */
void tsri_cpu_register_nn(tsri_kernel_fn *table);       /* cpu/nn.c */
void tsri_cpu_register_random(tsri_kernel_fn *table);   /* cpu/random.c */
void tsri_cpu_register_quant(tsri_kernel_fn *table);    /* cpu/quant.c */
void tsri_cpu_register_qmm(tsri_kernel_fn *table);      /* cpu/qmm.c */

#endif

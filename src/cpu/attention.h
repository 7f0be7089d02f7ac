/* cpu/attention.h — the sdpa kernel (cpu/attention.c) and the float32 softmax row it shares with
 * cpu/nn.c. */
#ifndef TSR_CPU_ATTENTION_H
#define TSR_CPU_ATTENTION_H

#include "core/op.h"

/* TSRI_PRIM_SDPA: q [B, Hq, Tq, D], k and v [B, Hkv, Tk, D], parameters tsri_sdpa_params. */
tsr_status tsri_cpu_sdpa(const tsri_op *op);

/* y = softmax(x) over n float32 values, max-subtracted, the sum formed in float32 chunk by chunk
 * (cpu/nn.c); x == y is allowed. */
void tsri_cpu_softmax_row_f32(const float *x, float *y, int64_t n);

#endif

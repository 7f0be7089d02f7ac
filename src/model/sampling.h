/* model/sampling.h — choosing the next token from logits: greedy, temperature and top-p, with a
 * counter-based draw so a session's i-th sample depends only on (seed, i) and the logits. */
#ifndef TSR_MODEL_SAMPLING_H
#define TSR_MODEL_SAMPLING_H

#include <tessera/tessera.h>

/* TSR_ERR_INVALID for a temperature below 0 or not finite, or top_p outside (0, 1]. */
tsr_status sampling_check(const tsr_sampling *p);
/* The token drawn from `logits` [vocab]; `draw` is the counter of this draw. */
int32_t sampling_draw(const float *logits, size_t vocab, const tsr_sampling *p, uint64_t draw);

#endif

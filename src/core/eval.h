/* core/eval.h — what the rest of core uses of evaluation besides the public tsr_eval: an
 * evaluation with hooks around its submission (a step's recording, core/step.c) and the walk of a
 * graph's lazy nodes. */
#ifndef TSR_CORE_EVAL_H
#define TSR_CORE_EVAL_H

#include "base/vec.h"
#include "core/array.h"

typedef struct {
  void *ctx;
  /* Under the evaluation lock, with the lazy nodes about to be submitted (inputs before their
     consumers): anything but TSR_OK (its message set) submits nothing and is returned. */
  tsr_status (*before_submit)(void *ctx, const tsri_ptrvec *order);
  /* Still under the lock, once every node went in and before the streams are flushed. May be
     NULL. */
  void (*submitted)(void *ctx);
} tsri_eval_hooks;

/* tsr_eval with hooks (NULL: none); `what` names the caller in messages. */
tsr_status tsri_eval_with(const char *what, tsr_array *const *arrays, size_t n,
                          const tsri_eval_hooks *hooks);
/* Appends the lazy nodes reachable from `arrays` to `order`, inputs before consumers (taken and
   released under the evaluation lock). */
tsr_status tsri_lazy_nodes(tsr_array *const *arrays, size_t n, tsri_ptrvec *order);

#endif

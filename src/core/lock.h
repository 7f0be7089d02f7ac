/* core/lock.h — the process-wide recursive evaluation lock (DESIGN.md "The evaluation lock and
 * the execution SPI"): graph walking and submission to streams happen under it. */
#ifndef TSR_CORE_LOCK_H
#define TSR_CORE_LOCK_H

void tsri_eval_lock(void);
void tsri_eval_unlock(void);

#endif

/* core/lock.c — the evaluation lock and tsr_with_serialized_evaluation. Stream workers and host
 * functions never take this lock; tsr_eval releases it before waiting. */
#include "core/lock.h"

#include <pthread.h>
#include <stdlib.h>

#include "base/status.h"
#include "tessera/spi.h"

static pthread_mutex_t eval_mutex;
static pthread_once_t eval_mutex_once = PTHREAD_ONCE_INIT;

static void init_eval_mutex(void) {
  pthread_mutexattr_t attr;
  if (pthread_mutexattr_init(&attr) != 0 ||
      pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE) != 0 ||
      pthread_mutex_init(&eval_mutex, &attr) != 0)
    abort(); /* no lock, no evaluation: a broken platform, not a user error */
  pthread_mutexattr_destroy(&attr);
}

void tsri_eval_lock(void) {
  pthread_once(&eval_mutex_once, init_eval_mutex);
  pthread_mutex_lock(&eval_mutex);
}

void tsri_eval_unlock(void) {
  pthread_mutex_unlock(&eval_mutex);
}

tsr_status tsr_with_serialized_evaluation(tsr_serialized_fn fn, void *ctx) {
  if (!fn) return tsri_error(TSR_ERR_INVALID, "with_serialized_evaluation: fn is NULL");
  tsri_eval_lock();
  tsr_status status = fn(ctx);
  tsri_eval_unlock();
  return status;
}

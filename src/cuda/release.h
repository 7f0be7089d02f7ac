/* cuda/release.h — the CUDA backend's release thread: batches of releases (core's after_current
 * callbacks, which drop a node's inputs and so may free device memory), each run after its event
 * has completed. One thread for the process, started on first use; it may call the CUDA API
 * (cudaFree), which CUDA's own host callbacks may not. */
#ifndef TSR_CUDA_RELEASE_H
#define TSR_CUDA_RELEASE_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct tsri_cuda_release_batch tsri_cuda_release_batch;

/* An empty batch, or NULL when out of host memory. */
tsri_cuda_release_batch *tsri_cuda_release_batch_new(void);
/* Appends fn(ctx); false when out of host memory (nothing appended). */
bool tsri_cuda_release_batch_add(tsri_cuda_release_batch *batch, void (*fn)(void *), void *ctx);
size_t tsri_cuda_release_batch_count(const tsri_cuda_release_batch *batch);
/* Takes the batch and the event (destroyed after use; NULL: wait for the whole device instead):
 * the release thread runs the batch's functions in order once the event has completed. If the
 * thread cannot be started, the caller does that itself before returning. */
void tsri_cuda_release_submit(tsri_cuda_release_batch *batch, cudaEvent_t event);
/* The same, but never runs the batch itself: false (nothing taken) when the thread cannot run
 * it. For a caller holding a lock a release may need (the batch is then submitted after it). */
bool tsri_cuda_release_enqueue(tsri_cuda_release_batch *batch, cudaEvent_t event);
/* Returns once every batch submitted before the call has run. From the release thread itself it
 * returns at once (it would wait for itself). */
void tsri_cuda_release_drain(void);
/* The same, waiting at most `ms` milliseconds: true when every such batch has run. */
bool tsri_cuda_release_drain_within(unsigned ms);
/* Drains, then stops the thread (backend shutdown). */
void tsri_cuda_release_shutdown(void);

#endif

/* tessera/array.h — devices, streams and lazy arrays.
 *
 * An array is an opaque, reference-counted handle. Arrays made from data are ready at once; an
 * op returns a lazy array that records what to compute and on which stream. tsr_eval walks the
 * graph behind the arrays it is given, submits each node to its stream and waits.
 *
 *   int64_t shape[1] = {4};
 *   float xs[4] = {1, 2, 3, 4}, out[4];
 *   tsr_array *x = NULL, *y = NULL;
 *   if (tsr_array_from_data(&x, xs, TSR_FLOAT32, shape, 1) != TSR_OK) goto fail;
 *   if (tsr_add(&y, x, x, NULL) != TSR_OK) goto fail;        // lazy: nothing computed yet
 *   if (tsr_array_read(y, out, sizeof out) != TSR_OK) goto fail; // evaluates, copies out
 *   // out == {2, 4, 6, 8}
 * fail:
 *   tsr_array_release(y);
 *   tsr_array_release(x);
 *
 * Threads: an evaluated array is immutable and may be read from any thread. Graphs may be built
 * and evaluated from several threads at once; one unevaluated array shared by two threads needs
 * the caller's own ordering. Errors met during evaluation belong to the arrays of the graph that
 * failed: tsr_eval returns the first one among the arrays it waited for, and those arrays stay
 * failed. TSR_ERR_CAP and TSR_ERR_NOMEM are recoverable: free memory, rebuild the op from its
 * still-valid inputs, evaluate again.
 */
#ifndef TESSERA_ARRAY_H
#define TESSERA_ARRAY_H

#include "tessera/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most axes an array may have. */
#define TSR_MAX_NDIM 8

typedef enum { TSR_CPU = 0, TSR_GPU = 1 } tsr_device_type;
typedef struct {
  tsr_device_type type;
  int index;
} tsr_device;

/* GPU 0 when this build has a usable GPU backend and a GPU is present, else CPU;
 * TSR_DEFAULT_DEVICE=cpu|gpu|gpu:N overrides (an unusable override falls back to the CPU with a
 * warning). Never fails; any thread. */
TSR_API tsr_device tsr_default_device(void);
/* Process-wide. TSR_ERR_DEVICE for a device that does not exist or has no backend in this build. */
TSR_API tsr_status tsr_set_default_device(tsr_device d);

typedef struct tsr_stream tsr_stream;
/* The device's default stream, owned by the library (never free it); NULL if no such device. */
TSR_API tsr_stream *tsr_default_stream(tsr_device d);
/* A new stream on d (a CPU stream is a worker thread running its tasks in order). Free it with
 * tsr_stream_free. TSR_ERR_DEVICE for an unknown device, TSR_ERR_NOMEM if no thread could start. */
TSR_API tsr_status tsr_stream_new(tsr_stream **out, tsr_device d);
/* Waits for the stream's work, then frees it; arrays it evaluated stay valid; evaluating a graph
 * that names the freed stream is TSR_ERR_STATE. TSR_ERR_INVALID for NULL or a default stream.
 * A freed handle stays safe to pass: every function taking a stream answers TSR_ERR_STATE for
 * it (freeing it again included), as for any handle from before tsr_shutdown; handles are never
 * reused. From a host function running on s itself: TSR_ERR_STATE (it would wait for itself). */
TSR_API tsr_status tsr_stream_free(tsr_stream *s);
/* Blocks until everything submitted to s before the call has run. NULL = default stream. On a
 * GPU it also waits (up to 10 s, for other streams' earlier work) until the buffers that work
 * released are back on the ledger, so a snapshot taken next shows what is really in use.
 * TSR_ERR_STATE for a freed handle, and from a host function when the wait could never end (on
 * its own stream, or on one that needs work queued behind it), naming the streams. */
TSR_API tsr_status tsr_stream_synchronize(tsr_stream *s);
/* The stream's device; the CPU for NULL; {TSR_CPU, -1} for a freed handle (tsr_last_error says
 * why). */
TSR_API tsr_device tsr_stream_device(const tsr_stream *s);

typedef struct tsr_array tsr_array;

/* Copies `data` (row-major, size * dtype_size bytes) into a new ready array on the default
 * device. TSR_ERR_INVALID for NULL out/data (data may be NULL when the size is 0), ndim outside
 * [0, TSR_MAX_NDIM], a negative dimension or a byte size that overflows; TSR_ERR_CAP/NOMEM when
 * the backing cannot be had. */
TSR_API tsr_status tsr_array_from_data(tsr_array **out, const void *data, tsr_dtype dtype,
                                       const int64_t *shape, int ndim);
/* The same on a chosen device; TSR_ERR_DEVICE when it does not exist. */
TSR_API tsr_status tsr_array_from_data_on(tsr_array **out, const void *data, tsr_dtype dtype,
                                          const int64_t *shape, int ndim, tsr_device d);
/* Wraps caller memory (host memory for the CPU, device memory for a GPU) without copying;
 * deleter(ctx) runs once the last reference and the last use on any stream are gone (on
 * whichever thread drops them). The bytes count as `active` on that device's ledger while
 * wrapped, so a cap can refuse the wrap (TSR_ERR_CAP). On any failure the deleter does not run
 * (the memory stays the caller's). deleter may be NULL. */
TSR_API tsr_status tsr_array_from_external(tsr_array **out, void *data, tsr_dtype dtype,
                                           const int64_t *shape, int ndim, tsr_device d,
                                           void (*deleter)(void *ctx), void *ctx);

TSR_API tsr_device tsr_array_device(const tsr_array *a);
/* Adds a reference; returns a. NULL is fine. */
TSR_API tsr_array *tsr_array_retain(tsr_array *a);
/* Drops a reference. NULL is fine. Never blocks on evaluation. */
TSR_API void tsr_array_release(tsr_array *a);
/* -1 for NULL. */
TSR_API int tsr_array_ndim(const tsr_array *a);
/* Negative axis counts from the end; an axis out of range (or a NULL array) gives -1. */
TSR_API int64_t tsr_array_dim(const tsr_array *a, int axis);
/* Number of elements (-1 for NULL). */
TSR_API int64_t tsr_array_size(const tsr_array *a);
/* (tsr_dtype)-1 for NULL, a value outside the enum (tsr_dtype_size gives 0 for it,
 * tsr_dtype_name "unknown"), with tsr_last_error saying why; never a dtype a real array has. */
TSR_API tsr_dtype tsr_array_dtype(const tsr_array *a);

/* Evaluates the arrays: walks their graphs in dependency order under the evaluation lock,
 * submits each node to its stream, releases the lock and waits. Returns the first error among
 * the arrays (in the order given), with that array's message. NULL entries are TSR_ERR_INVALID;
 * a graph naming a freed stream is TSR_ERR_STATE and nothing of it is submitted. Called from a
 * host function, a wait that could never end (for work queued behind it on its own stream, or
 * on a stream that needs such work) is TSR_ERR_STATE naming the streams, not a deadlock; the
 * arrays stay submitted and run once the host function has returned. */
TSR_API tsr_status tsr_eval(tsr_array *const *arrays, size_t n);
/* The same without waiting: returns once everything is submitted. */
TSR_API tsr_status tsr_async_eval(tsr_array *const *arrays, size_t n);
/* Evaluates a, then copies its elements, row-major, to dst. dst_bytes must be exactly
 * size * dtype_size (TSR_ERR_INVALID with both numbers otherwise). */
TSR_API tsr_status tsr_array_read(tsr_array *a, void *dst, size_t dst_bytes);
/* After evaluation (a is evaluated if it is not): the backing pointer (host or device) of a
 * contiguous array, for outside code under the execution SPI. Raw work on another stream that
 * uses it must be recorded with tsr_array_record_stream, so the allocator does not reuse the
 * buffer before that stream has passed this point. */
TSR_API tsr_status tsr_array_data(tsr_array *a, void **ptr);
/* Keeps a's buffer backed until stream s has run everything submitted to it so far. */
TSR_API tsr_status tsr_array_record_stream(tsr_array *a, tsr_stream *s);
/* A lazy copy of a on device d, made on stream s (NULL: d's default stream). */
TSR_API tsr_status tsr_to_device(tsr_array **out, tsr_array *a, tsr_device d, tsr_stream *s);

/* Joins the stream workers (after their work), frees every stream not yet freed (their handles
 * then answer TSR_ERR_STATE), empties the buffer caches and releases backend state. Arrays still
 * held stay readable if evaluated, and may be released afterwards. The library starts again on
 * next use. Not to be called while another thread is using tessera; from a host function it
 * does nothing (an error is logged): it would join that function's own worker. */
TSR_API void tsr_shutdown(void);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_ARRAY_H */

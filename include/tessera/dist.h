/* tessera/dist.h — distributed: groups of processes and their sealed collectives.
 *
 * A group is the set of ranks a collective runs over: "local" (this process alone), "mpi"
 * (OpenMPI, one process per rank, launched by mpirun) or "nccl" (one process per GPU, CUDA
 * streams; bootstrapped over MPI). Collectives are ordinary lazy ops (tsr_all_sum,
 * tsr_all_gather) or a raw sum of caller memory on a stream (tsr_group_all_sum_raw). Every call
 * is sealed: before data moves, the ranks agree on (sequence number, count, dtype, operation), so
 * a rank that calls with other arguments, or not at all, is an error on every rank instead of a
 * hang or a wrong sum. Run with `mpirun -np 2 ./prog`:
 *
 *   tsr_group *g = NULL;
 *   if (tsr_group_init(&g, "auto") != TSR_OK) { puts(tsr_last_error()); return 1; }
 *   float mine[4] = {1, 2, 3, (float)tsr_group_rank(g)};
 *   int64_t shape[1] = {4};
 *   tsr_array *x = NULL, *sum = NULL;
 *   tsr_array_from_data(&x, mine, TSR_FLOAT32, shape, 1);
 *   tsr_status st = tsr_all_sum(&sum, x, g, NULL);     // lazy: nothing moves yet
 *   if (st == TSR_OK) st = tsr_array_read(sum, mine, sizeof mine);  // sealed, summed
 *   printf("rank %d: %s %g\n", tsr_group_rank(g), tsr_status_name(st), (double)mine[0]);
 *   tsr_array_release(sum);
 *   tsr_array_release(x);
 *   tsr_group_free(g);
 *   tsr_shutdown();
 *
 * Rules every rank must follow: the collectives of one group are made in the same order on every
 * rank (lazy ones are evaluated in the order they were created; raw ones are sealed in the order
 * of the calls), from one thread at a time per group or in an order the caller fixes. Summed
 * dtypes: float32, float16, bfloat16 (both travel and accumulate in float32, rounded once at the
 * end), int32 and int64 (exact, wrapping). all_gather takes any dtype. A failed collective sets
 * the message with this rank's "[rank r/n]" and the values of both sides; diagnostics go through
 * the logger (tsr_log_set_callback) tagged the same way.
 */
#ifndef TESSERA_DIST_H
#define TESSERA_DIST_H

#include "tessera/array.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_group tsr_group;

/* A group over `backend`: "local" (a group of one, any build), "mpi" (every rank of the mpirun
 * job; initializes MPI with MPI_THREAD_MULTIPLE when nobody has, and tsr_shutdown finalizes it
 * then), "nccl" (one GPU per rank, the rank's index on its node picks it; bootstrapped over MPI;
 * libnccl.so.2 is loaded at run time), or "auto"/NULL: nccl when every rank has its own GPU, mpi
 * under mpirun otherwise, else local. Collective over the job for mpi and nccl (every rank calls
 * it). TSR_ERR_INVALID for NULL out or an unknown name; TSR_ERR_DIST for "mpi"/"nccl" in a
 * process mpirun did not launch (one line saying so; MPI is not touched), for MPI initialized by
 * the caller without MPI_THREAD_MULTIPLE, or after MPI was finalized; TSR_ERR_UNSUPPORTED for
 * "mpi" in a build without MPI, and for "nccl" in a build without NCCL or when a rank has no GPU
 * of its own or no libnccl (every rank then returns it). Blocks; any thread. */
TSR_API tsr_status tsr_group_init(tsr_group **out, const char *backend);
/* This process's rank in [0, size) and the number of ranks; -1 / 0 for NULL. Never fail. */
TSR_API int tsr_group_rank(const tsr_group *g);
TSR_API int tsr_group_size(const tsr_group *g);
/* Where this rank's side of the group lives: its own GPU for nccl groups (the one picked by the
 * rank's index on its node), the CPU for mpi and local groups (which also take arrays on other
 * devices); {TSR_CPU, -1} for NULL. A split model's device for an nccl group must be this one
 * (the CLI places it there when --device is not given). Never fails. */
TSR_API tsr_device tsr_group_device(const tsr_group *g);
/* Frees the group (NULL is fine); every rank frees its own, none waits for the others. Work
 * already queued on streams that uses it still runs; a lazy collective of it that has not run
 * fails with TSR_ERR_STATE when evaluated. After a timeout (the group is broken) it returns
 * without waiting for the absent rank: what MPI still has pending on the group's communicators
 * is left for MPI_Finalize. Any thread. */
TSR_API void tsr_group_free(tsr_group *g);

/* The lazy element-wise sum of x over the ranks: same shape and dtype (see the dtypes above).
 * The output lives on s's device (NULL = the default stream): any stream for mpi groups (device
 * memory is staged through the host), the rank's GPU for nccl groups, any for local ones (where
 * it is x itself, reshaped). Construction seals
 * nothing: the seal happens when it is evaluated, on every rank, in creation order per group
 * (each collective of a group depends on the group's previous one, which runs first; a failed one
 * fails the later ones of that evaluation with its error). TSR_ERR_INVALID for NULL arguments or
 * a dtype that is not summed; TSR_ERR_UNSUPPORTED for a stream the group cannot run on;
 * TSR_ERR_STATE for a broken group. At evaluation: TSR_ERR_DIST as the raw form below. */
TSR_API tsr_status tsr_all_sum(tsr_array **out, tsr_array *x, tsr_group *g, tsr_stream *s);
/* The lazy concatenation of every rank's x along axis 0, rank order: [size * d0, d1, ...] (a 0-d
 * x gives [size]). Any dtype; x must have the same shape on every rank (the seal checks its
 * element count). Otherwise as tsr_all_sum. */
TSR_API tsr_status tsr_all_gather(tsr_array **out, tsr_array *x, tsr_group *g, tsr_stream *s);

/* recv[i] = the sum over the ranks of send[i], for i < count: host memory for a CPU stream, device
 * memory for a GPU stream (nccl groups; mpi groups stage it through the host, and then return
 * only once it has moved). send == recv sums in place; other overlaps are undefined. Local
 * groups take CPU streams. The seal runs now, on the calling thread (blocking until every rank
 * has made its call or the timeout passes); the data then moves asynchronously in s's order, so
 * send and recv must stay valid and untouched until s has passed this point
 * (tsr_stream_synchronize). count 0 is sealed
 * too and moves nothing (send and recv may then be NULL). Errors, all before anything is queued:
 * TSR_ERR_INVALID for a NULL group or pointer, a dtype that is not summed, or an s whose device
 * the group cannot use (this rank then still takes part in the seal, so the others fail at once
 * with TSR_ERR_DIST naming it instead of waiting); TSR_ERR_STATE for a freed stream or a broken
 * group; TSR_ERR_DIST when the ranks disagree (every rank gets it, with its own and the other
 * side's sequence, count, dtype and operation; recv is untouched and the group stays usable) or
 * when a rank did not arrive within the timeout (the group is then broken). A failure while the
 * data moves (a rank vanished after the seal, an MPI error) is logged with this rank's tag and
 * breaks the group: the next call returns TSR_ERR_STATE with that message. To submit it while
 * other threads evaluate on the same stream, call it inside tsr_with_serialized_evaluation. Any
 * thread; calls on one group are ordered by the caller. */
TSR_API tsr_status tsr_group_all_sum_raw(tsr_group *g, const void *send, void *recv, size_t count,
                                         tsr_dtype dtype, tsr_stream *s);

/* How many of this rank's calls on g so far took part in their seal as a refusal. A collective
 * that fails on this rank before it can run (a lazy one whose input failed or whose output could
 * not be allocated, a raw call with invalid arguments) still seals, as a refusal, so the other
 * ranks' matching call fails at once with TSR_ERR_DIST naming this rank. A caller that abandons a
 * series of collectives after a failure of its own compares this with its value before the
 * series: unchanged, the other ranks have not heard of the failure and wait at their next
 * collective; one refusal tells them (tsr_group_all_sum_raw with NULL buffers and a count of 1).
 * The count is the group's on this rank, whichever thread's calls refused: with several threads
 * calling on one group, compare only across a series no other thread's calls overlap. A lazy
 * collective the caller built and released unevaluated is never run after that (it would seal
 * out of step). 0 for NULL. Any thread. */
TSR_API uint64_t tsr_group_refusals(const tsr_group *g);

/* How long a collective waits for the other ranks, in seconds (default 60; 0 waits forever),
 * from the next call on: at the seal, and for mpi groups while the data moves (NCCL's device-side
 * movement has no deadline). TSR_ERR_INVALID for NULL or a negative/NaN value. Any thread. */
TSR_API tsr_status tsr_group_set_timeout(tsr_group *g, double seconds);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_DIST_H */

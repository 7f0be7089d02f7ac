/* dist/mpi_runtime.c — MPI's process-wide state (dist/mpi_runtime.h). MPI is initialized once per
 * process by definition, so whether tessera did it is process-wide too; everything a group owns
 * (its communicators) lives in the group. */
#include "dist/mpi_runtime.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "base/env.h"
#include "base/log.h"
#include "base/status.h"
#include "core/device.h"

static pthread_mutex_t mpi_mutex = PTHREAD_MUTEX_INITIALIZER;
static bool tessera_initialized_mpi; /* mpi_mutex: tsr_shutdown finalizes it then */

static void finalize_at_shutdown(void) {
  pthread_mutex_lock(&mpi_mutex);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (tessera_initialized_mpi && initialized && !finalized) MPI_Finalize();
  tessera_initialized_mpi = false;
  pthread_mutex_unlock(&mpi_mutex);
}

/* tessera's all-sums move their data with MPI_Iallreduce (driven to a deadline, so an absent rank
   cannot hang the others), which OpenMPI runs in libnbc. Its default picks binomial trees,
   0.10-0.78 of a blocking MPI_Allreduce from 4 KiB to 16 MiB on the dev VM; its ring gave 0.77-2.2
   from 64 KiB and cut the time added at 4 KiB from 10-11 µs to 1.4-4.4, small sums unchanged
   (bench/RESULTS.md, "allsum: libnbc's ring"). So when tessera initializes MPI and the
   environment names no algorithm, it asks for the ring through the MPI tool interface, right
   after MPI_Init: every rank of the job does the same, so they run one algorithm. Another MPI has
   no such variable, and nothing happens. */
static void prefer_ring_iallreduce(void) {
  if (tsri_env()->mpi_iallreduce_algorithm_given) return;
  int provided = 0, index = -1, count = 0, ring = 1;
  if (MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return;
  MPI_T_cvar_handle handle;
  if (MPI_T_cvar_get_index("coll_libnbc_iallreduce_algorithm", &index) == MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) == MPI_SUCCESS) {
    if (count == 1 && MPI_T_cvar_write(handle, &ring) == MPI_SUCCESS)
      tsri_log(TSRI_LOG_DEBUG, "MPI: libnbc's iallreduce set to its ring algorithm");
    MPI_T_cvar_handle_free(&handle);
  }
  MPI_T_finalize();
}

static tsr_status init_locked(const char *what) {
  int initialized = 0, finalized = 0, provided = 0;
  MPI_Finalized(&finalized);
  if (finalized)
    return tsri_error(TSR_ERR_DIST,
                      "%s: MPI was already finalized in this process (by tsr_shutdown or the "
                      "caller); MPI cannot be initialized twice",
                      what);
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      return tsri_error(TSR_ERR_DIST, "%s: MPI_Init_thread failed", what);
    tessera_initialized_mpi = true;
    tsri_shutdown_hook_add(finalize_at_shutdown);
    prefer_ring_iallreduce();
  }
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE)
    return tsri_error(TSR_ERR_DIST,
                      "%s: MPI provides thread level %d, tessera needs MPI_THREAD_MULTIPLE (%d): "
                      "initialize MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) or let "
                      "tessera do it",
                      what, provided, MPI_THREAD_MULTIPLE);
  return TSR_OK;
}

tsr_status tsri_mpi_ready(const char *what) {
  if (!tsri_env()->mpi_launched)
    return tsri_error(TSR_ERR_DIST,
                      "%s: this process was not launched by mpirun (run it as `mpirun -np N "
                      "PROGRAM`, or use a \"local\" group)",
                      what);
  pthread_mutex_lock(&mpi_mutex);
  tsr_status status = init_locked(what);
  pthread_mutex_unlock(&mpi_mutex);
  if (status != TSR_OK) return status;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  tsri_log_set_rank(rank, size);
  return TSR_OK;
}

bool tsri_mpi_finalized(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

const char *tsri_mpi_error_text(int code, char *buf, size_t len) {
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  if (MPI_Error_string(code, text, &n) != MPI_SUCCESS) snprintf(text, sizeof text, "unknown");
  snprintf(buf, len, "MPI error %d: %s", code, text);
  return buf;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* How long to spin on MPI_Testall before yielding the core between tests: a few microseconds
   covers a peer that is already there (the seal's latency), and yielding after that lets
   oversubscribed ranks (more ranks than cores) run. */
#define SPIN_S 20e-6

tsr_status tsri_mpi_wait(MPI_Request *requests, int count, double timeout_s, const char *what,
                         int *pending) {
  double start = now_s();
  *pending = -1;
  for (;;) {
    int done = 0;
    int code = MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE);
    if (code != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING + 32];
      return tsri_error(TSR_ERR_DIST, "%s: %s", what, tsri_mpi_error_text(code, text, sizeof text));
    }
    if (done) return TSR_OK;
    double waited = now_s() - start;
    if (timeout_s > 0 && waited > timeout_s) break;
    if (waited > SPIN_S) sched_yield();
  }
  for (int i = 0; i < count; i++) { /* the first still incomplete names who is missing */
    if (requests[i] == MPI_REQUEST_NULL) continue;
    int done = 0;
    MPI_Test(&requests[i], &done, MPI_STATUS_IGNORE);
    if (!done) {
      *pending = i;
      return tsri_error(TSR_ERR_DIST, "%s: timed out after %g s", what, timeout_s);
    }
  }
  return TSR_OK; /* everything completed at the deadline */
}

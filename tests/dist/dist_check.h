/* tests/dist/dist_check.h — what the distributed tests share: each rank checks with tests/check.h
 * (a failed check prints and exits 1, which fails the mpirun job), tags its lines with its rank,
 * and values every rank can compute for every other rank, so each knows the exact sum. */
#ifndef TSR_TESTS_DIST_CHECK_H
#define TSR_TESTS_DIST_CHECK_H

#include <math.h>
#include <time.h>

#include "check.h"

/* Rank r's element i as a double: small integers, so every dtype holds them and their sum over
 * up to 4 ranks exactly (float16 and bfloat16 included: at most 4 * 40 = 160 < 256). */
static inline double dist_value(int rank, uint64_t i) {
  return (double)((i * 7 + (uint64_t)rank * 3) % 41);
}

/* Stores v as element i of a buffer of dtype. */
static inline void dist_store(void *buf, tsr_dtype dtype, uint64_t i, double v) {
  switch (dtype) {
    case TSR_FLOAT32:
      ((float *)buf)[i] = (float)v;
      break;
    case TSR_FLOAT16:
      ((uint16_t *)buf)[i] = tsr_f32_to_f16((float)v);
      break;
    case TSR_BFLOAT16:
      ((uint16_t *)buf)[i] = tsr_f32_to_bf16((float)v);
      break;
    case TSR_INT32:
      ((int32_t *)buf)[i] = (int32_t)v;
      break;
    case TSR_INT64:
      ((int64_t *)buf)[i] = (int64_t)v + ((int64_t)1 << 40);
      break; /* needs 64 bits */
    default:
      CHECK(!"dist_store: dtype");
  }
}

/* Element i of a buffer of dtype as a double (int64 without the 2^40 offset per rank). */
static inline double dist_load(const void *buf, tsr_dtype dtype, uint64_t i, int ranks) {
  switch (dtype) {
    case TSR_FLOAT32:
      return ((const float *)buf)[i];
    case TSR_FLOAT16:
      return tsr_f16_to_f32(((const uint16_t *)buf)[i]);
    case TSR_BFLOAT16:
      return tsr_bf16_to_f32(((const uint16_t *)buf)[i]);
    case TSR_INT32:
      return ((const int32_t *)buf)[i];
    case TSR_INT64:
      return (double)(((const int64_t *)buf)[i] - (int64_t)ranks * ((int64_t)1 << 40));
    default:
      CHECK(!"dist_load: dtype");
      return 0;
  }
}

static inline void dist_fill(void *buf, tsr_dtype dtype, uint64_t n, int rank) {
  for (uint64_t i = 0; i < n; i++)
    dist_store(buf, dtype, i, dist_value(rank, i));
}

/* Every element of buf is the sum over `ranks` ranks of dist_value. */
static inline void dist_check_sum(const void *buf, tsr_dtype dtype, uint64_t n, int ranks,
                                  const char *what) {
  for (uint64_t i = 0; i < n; i++) {
    double want = 0;
    for (int r = 0; r < ranks; r++)
      want += dist_value(r, i);
    double got = dist_load(buf, dtype, i, ranks);
    if (got != want)
      CHECK_FAIL_("%s: %s element %" PRIu64 " of %" PRIu64 ": got %g, want %g", what,
                  tsr_dtype_name(dtype), i, n, got, want);
  }
}

/* The CPU's default stream: raw sums of host memory name it (NULL would be the default device's,
 * a GPU's on a machine with one). */
static inline tsr_stream *dist_cpu(void) {
  return tsr_default_stream((tsr_device){TSR_CPU, 0});
}

/* Monotonic seconds: how long a failure took to reach a rank. */
static inline double dist_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline tsr_group *dist_group(const char *backend) {
  tsr_group *g = NULL;
  CHECK_OK(tsr_group_init(&g, backend));
  CHECK(tsr_group_size(g) >= 1);
  return g;
}

#define DIST_SUMMED_DTYPES \
  { TSR_FLOAT32, TSR_FLOAT16, TSR_BFLOAT16, TSR_INT32, TSR_INT64 }

#endif

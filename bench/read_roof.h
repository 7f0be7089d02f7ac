/* bench/read_roof.h — the read roof the decode benchmarks divide by (bench/qmm_cpu,
 * bench/ggml/ggml_decode): the op's own weight buffers read by as many threads as the op uses
 * (TSR_NUM_THREADS, else the online cores), each summing its slice of every buffer, with the
 * widest loads the CPU has (64-byte AVX-512, else AVX2, else uint64) — or, `wide` off, Step 3's
 * scalar uint64 loop. The threads wait at a barrier between reads, so a read times only the
 * reading. One set of readers per process: readers_start, then plain_read as often as needed,
 * then readers_stop. */
#ifndef TSR_BENCH_READ_ROOF_H
#define TSR_BENCH_READ_ROOF_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

enum { READ_ROOF_MAX_THREADS = 256 };

/* Up to three buffers read in one pass (a quantized weight's codes, scales and biases; a count
   of 0 skips one). */
typedef struct {
  const uint64_t *words[3];
  size_t counts[3]; /* uint64 words per buffer */
} read_target;

static struct {
  int threads;
  pthread_barrier_t start, done;
  const read_target *target;
  bool wide; /* this pass reads with vector loads */
  uint64_t sums[READ_ROOF_MAX_THREADS];
  bool stop;
  pthread_t ids[READ_ROOF_MAX_THREADS];
} readers;

/* The Step 3 plain read: a uint64 summing loop, built without -march (so SSE2 at best). */
static uint64_t scalar_sum(const uint64_t *w, size_t begin, size_t end) {
  uint64_t sum = 0;
  for (size_t i = begin; i < end; i++)
    sum += w[i];
  return sum;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_WIDE_READ 1

/* The roof: 64-byte loads, four independent accumulators (one add per load, so the adds never
   limit the loads), 256 bytes per step; the < 256-byte tail by the scalar loop. */
__attribute__((target("avx512f"))) static uint64_t avx512_sum(const uint64_t *w, size_t begin,
                                                              size_t end) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = begin;
  for (; i + 32 <= end; i += 32) {
    a0 = _mm512_add_epi64(a0, _mm512_loadu_si512((const void *)(w + i)));
    a1 = _mm512_add_epi64(a1, _mm512_loadu_si512((const void *)(w + i + 8)));
    a2 = _mm512_add_epi64(a2, _mm512_loadu_si512((const void *)(w + i + 16)));
    a3 = _mm512_add_epi64(a3, _mm512_loadu_si512((const void *)(w + i + 24)));
  }
  __m512i all = _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3));
  return (uint64_t)_mm512_reduce_add_epi64(all) + scalar_sum(w, i, end);
}

__attribute__((target("avx2"))) static uint64_t avx2_sum(const uint64_t *w, size_t begin,
                                                         size_t end) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = begin;
  for (; i + 16 <= end; i += 16) {
    a0 = _mm256_add_epi64(a0, _mm256_loadu_si256((const __m256i *)(const void *)(w + i)));
    a1 = _mm256_add_epi64(a1, _mm256_loadu_si256((const __m256i *)(const void *)(w + i + 4)));
    a2 = _mm256_add_epi64(a2, _mm256_loadu_si256((const __m256i *)(const void *)(w + i + 8)));
    a3 = _mm256_add_epi64(a3, _mm256_loadu_si256((const __m256i *)(const void *)(w + i + 12)));
  }
  uint64_t lanes[4];
  __m256i all = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  _mm256_storeu_si256((__m256i *)(void *)lanes, all);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + scalar_sum(w, i, end);
}
#endif

typedef uint64_t (*sum_fn)(const uint64_t *w, size_t begin, size_t end);

/* The widest loads this CPU has, and their name. */
static sum_fn wide_sum(const char **name) {
#ifdef HAVE_WIDE_READ
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    *name = "AVX-512";
    return avx512_sum;
  }
  if (__builtin_cpu_supports("avx2")) {
    *name = "AVX2";
    return avx2_sum;
  }
#endif
  *name = "uint64";
  return scalar_sum;
}

static void read_slice(int index) {
  const char *name;
  sum_fn sum_of = readers.wide ? wide_sum(&name) : scalar_sum;
  uint64_t sum = 0;
  for (int b = 0; b < 3; b++) {
    size_t count = readers.target->counts[b];
    size_t begin = count * (size_t)index / (size_t)readers.threads;
    size_t end = count * (size_t)(index + 1) / (size_t)readers.threads;
    sum += sum_of(readers.target->words[b], begin, end);
  }
  readers.sums[index] = sum;
}

static void *reader_main(void *arg) {
  int index = (int)(intptr_t)arg;
  for (;;) {
    pthread_barrier_wait(&readers.start);
    if (readers.stop) return NULL;
    read_slice(index);
    pthread_barrier_wait(&readers.done);
  }
}

static void plain_read(const read_target *target, bool wide) {
  readers.target = target;
  readers.wide = wide;
  pthread_barrier_wait(&readers.start);
  read_slice(0);
  pthread_barrier_wait(&readers.done);
  uint64_t total = 0;
  for (int i = 0; i < readers.threads; i++)
    total += readers.sums[i];
  __asm__ volatile("" : : "r"(total) : "memory");
}

/* As many threads as the op uses: TSR_NUM_THREADS, else the online cores. */
static void readers_start(void) {
  const char *v = getenv("TSR_NUM_THREADS");
  long n = v && *v ? strtol(v, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
  readers.threads = n < 1 ? 1 : n > READ_ROOF_MAX_THREADS ? READ_ROOF_MAX_THREADS : (int)n;
  pthread_barrier_init(&readers.start, NULL, (unsigned)readers.threads);
  pthread_barrier_init(&readers.done, NULL, (unsigned)readers.threads);
  for (int i = 1; i < readers.threads; i++)
    pthread_create(&readers.ids[i], NULL, reader_main, (void *)(intptr_t)i);
}

static void readers_stop(void) {
  readers.stop = true;
  pthread_barrier_wait(&readers.start);
  for (int i = 1; i < readers.threads; i++)
    pthread_join(readers.ids[i], NULL);
  pthread_barrier_destroy(&readers.start);
  pthread_barrier_destroy(&readers.done);
}

#endif

/* tests/backend/gpu_only.c — the conformance checks only a GPU has: copies between host and
 * device (tsr_to_device both ways, every dtype, from a strided view), an op whose inputs live on
 * two devices, a graph crossing two GPU streams and the CPU, and the GPU ledger back at zero.
 * All exact: nothing here rounds. Run by test_backend_conformance.c for each usable GPU. */
#include "harness.h"

static const tsr_device cpu = {TSR_CPU, 0};

static int gpu_failures;

#define GPU_CHECK(gpu, cond, ...)                                 \
  do {                                                            \
    if (!(cond)) {                                                \
      printf("FAIL gpu:%d only: ", (gpu).index);                  \
      printf(__VA_ARGS__);                                        \
      printf(" (%s; last error: %s)\n", #cond, tsr_last_error()); \
      gpu_failures++;                                             \
    }                                                             \
  } while (0)

static uint64_t lcg_state = 0x2545F4914F6CDD1Dull;
static uint8_t random_byte(void) {
  lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint8_t)(lcg_state >> 56);
}

static bool same_device(tsr_device a, tsr_device b) {
  return a.type == b.type && a.index == b.index;
}

/* Reads a's bytes into a new buffer (NULL on failure). */
static void *read_all(tsr_array *a) {
  size_t bytes = (size_t)tsr_array_size(a) * tsr_dtype_size(tsr_array_dtype(a));
  void *buf = malloc(bytes ? bytes : 1);
  CHECK(buf);
  if (tsr_array_read(a, buf, bytes) != TSR_OK) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* Random bytes (any bit pattern, NaN payloads included; bool 0/1) as a [7, 65] CPU array, its
   rows 1, 3, 5 as a view, to the GPU and back: the same bytes, on the right devices. */
static void round_trip(tsr_device gpu, tsr_dtype t) {
  int64_t shape[2] = {7, 65}, start[2] = {1, 0}, stop[2] = {7, 65}, step[2] = {2, 1};
  size_t width = tsr_dtype_size(t), n = 7 * 65 * width;
  uint8_t *data = malloc(n);
  CHECK(data);
  for (size_t i = 0; i < n; i++)
    data[i] = t == TSR_BOOL ? random_byte() & 1 : random_byte();
  tsr_array *host = NULL, *view = NULL, *on_gpu = NULL, *back = NULL;
  CHECK_OK(tsr_array_from_data_on(&host, data, t, shape, 2, cpu));
  CHECK_OK(tsr_slice(&view, host, start, stop, step, 2, NULL));
  tsr_status st = tsr_to_device(&on_gpu, view, gpu, NULL);
  if (st == TSR_OK) st = tsr_to_device(&back, on_gpu, cpu, NULL);
  GPU_CHECK(gpu, st == TSR_OK, "round trip of %s: %s", tsr_dtype_name(t), tsr_status_name(st));
  if (st == TSR_OK) {
    GPU_CHECK(gpu, same_device(tsr_array_device(on_gpu), gpu), "to_device(%s) lives elsewhere",
              tsr_dtype_name(t));
    GPU_CHECK(gpu, same_device(tsr_array_device(back), cpu), "back to the cpu lives elsewhere");
    void *want = read_all(view), *got = read_all(back), *direct = read_all(on_gpu);
    GPU_CHECK(gpu, want && got && !memcmp(got, want, 3 * 65 * width),
              "%s [3, 65] round trip changed the bytes", tsr_dtype_name(t));
    GPU_CHECK(gpu, want && direct && !memcmp(direct, want, 3 * 65 * width),
              "%s [3, 65] read from the gpu differs", tsr_dtype_name(t));
    free(want);
    free(got);
    free(direct);
  }
  tsr_array *arrays[4] = {host, view, on_gpu, back};
  for (int i = 0; i < 4; i++)
    tsr_array_release(arrays[i]);
  free(data);
}

/* a on the CPU, b on the GPU, each op on a stream of its own, the last on the CPU:
   ((a + b) on the gpu's second stream, max with a on its default stream) - a on the cpu. */
static tsr_status mixed_chain(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *first,
                              tsr_stream *second) {
  tsr_array *sum = NULL, *high = NULL;
  tsr_status st = tsr_add(&sum, a, b, second);
  if (st == TSR_OK) st = tsr_maximum(&high, sum, a, first);
  if (st == TSR_OK) st = tsr_subtract(out, high, a, tsr_default_stream(cpu));
  tsr_array_release(sum);
  tsr_array_release(high);
  return st;
}

static void placement_and_streams(tsr_device gpu, tsr_stream *second) {
  float xa[7 * 33], xb[33];
  for (int i = 0; i < 7 * 33; i++)
    xa[i] = (float)(random_byte() % 64) - 32;
  for (int i = 0; i < 33; i++)
    xb[i] = (float)(random_byte() % 64) - 32;
  int64_t sa[2] = {7, 33}, sb[1] = {33};
  tsr_array *a = NULL, *b_cpu = NULL, *b_gpu = NULL, *got = NULL, *want = NULL;
  CHECK_OK(tsr_array_from_data_on(&a, xa, TSR_FLOAT32, sa, 2, cpu));
  CHECK_OK(tsr_array_from_data_on(&b_cpu, xb, TSR_FLOAT32, sb, 1, cpu));
  tsr_status st = tsr_array_from_data_on(&b_gpu, xb, TSR_FLOAT32, sb, 1, gpu);
  if (st == TSR_OK) st = mixed_chain(&got, a, b_gpu, tsr_default_stream(gpu), second);
  GPU_CHECK(gpu, st == TSR_OK, "a graph over two gpu streams and the cpu: %s", tsr_status_name(st));
  CHECK_OK(mixed_chain(&want, a, b_cpu, tsr_default_stream(cpu), tsr_default_stream(cpu)));
  if (st == TSR_OK) {
    void *g = read_all(got), *w = read_all(want);
    GPU_CHECK(gpu, g && w && !memcmp(g, w, sizeof xa),
              "a graph over two gpu streams and the cpu differs from the cpu's");
    free(g);
    free(w);
  }
  tsr_array *arrays[5] = {a, b_cpu, b_gpu, got, want};
  for (int i = 0; i < 5; i++)
    tsr_array_release(arrays[i]);
}

int conf_gpu_only(tsr_device gpu, tsr_stream *second) {
  gpu_failures = 0;
  static const tsr_dtype dtypes[9] = {TSR_BOOL,  TSR_UINT8,   TSR_UINT32,   TSR_INT8,   TSR_INT32,
                                      TSR_INT64, TSR_FLOAT16, TSR_BFLOAT16, TSR_FLOAT32};
  for (int i = 0; i < 9; i++)
    round_trip(gpu, dtypes[i]);
  placement_and_streams(gpu, second);
  CHECK_OK(tsr_stream_synchronize(second));
  GPU_CHECK(gpu, tsr_memory_clear_cache(gpu) == TSR_OK, "clear_cache");
  tsr_backing_snapshot snap = {0};
  GPU_CHECK(gpu, tsr_calibration_snapshot(gpu, &snap) == TSR_OK, "snapshot");
  GPU_CHECK(gpu, snap.active == 0 && snap.pending == 0,
            "the gpu ledger holds %llu active and %llu pending bytes after every array is gone",
            (unsigned long long)snap.active, (unsigned long long)snap.pending);
  return gpu_failures;
}

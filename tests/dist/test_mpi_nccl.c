/* tests/dist/test_mpi_nccl.c — NCCL groups, one GPU per rank: raw sums of device memory on a GPU
 * stream for every summed dtype (float16/bfloat16 through float32 on the device) and several
 * sizes, lazy all_sum and all_gather on the GPU stream, and a seal mismatch over the MPI
 * bootstrap. Without GPUs (or NCCL, or a GPU per rank)
 * "nccl" is TSR_ERR_UNSUPPORTED on every rank and the test says it skipped. Run with 1 and 2
 * ranks (a one-GPU machine runs the 1-rank case). */
#include "dist_check.h"

static tsr_device gpu0(void) {
  return (tsr_device){TSR_GPU, 0};
}

/* A GPU array holding n elements of rank r's values (or zeros), evaluated; its device pointer. */
static tsr_array *gpu_array(tsr_dtype dtype, uint64_t n, int rank, bool zeros, void **ptr) {
  size_t bytes = (size_t)n * tsr_dtype_size(dtype);
  unsigned char *host = calloc(1, bytes + 1);
  CHECK(host);
  if (!zeros) dist_fill(host, dtype, n, rank);
  int64_t shape[1] = {(int64_t)n};
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data_on(&a, host, dtype, shape, 1, gpu0()));
  CHECK_OK(tsr_eval(&a, 1));
  *ptr = NULL;
  if (n > 0) CHECK_OK(tsr_array_data(a, ptr));
  free(host);
  return a;
}

static void raw_case(tsr_group *g, tsr_stream *s, tsr_dtype dtype, uint64_t n) {
  void *send = NULL, *recv = NULL;
  tsr_array *a = gpu_array(dtype, n, tsr_group_rank(g), false, &send);
  tsr_array *b = gpu_array(dtype, n, 0, true, &recv);
  CHECK_OK(tsr_group_all_sum_raw(g, send, recv, n, dtype, s));
  CHECK_OK(tsr_stream_synchronize(s));
  size_t bytes = (size_t)n * tsr_dtype_size(dtype);
  unsigned char *got = malloc(bytes + 1);
  CHECK(got);
  CHECK_OK(tsr_array_read(b, got, bytes));
  dist_check_sum(got, dtype, n, tsr_group_size(g), "nccl raw");
  free(got);
  tsr_array_release(a);
  tsr_array_release(b);
}

static void lazy_cases(tsr_group *g, tsr_stream *s) {
  void *ptr = NULL;
  tsr_array *x = gpu_array(TSR_FLOAT32, 1000, tsr_group_rank(g), false, &ptr);
  tsr_array *sum = NULL, *gathered = NULL;
  CHECK_OK(tsr_all_sum(&sum, x, g, s));
  CHECK_OK(tsr_all_gather(&gathered, x, g, s));
  float got[1000 * 8];
  CHECK_OK(tsr_array_read(sum, got, 1000 * sizeof *got));
  dist_check_sum(got, TSR_FLOAT32, 1000, tsr_group_size(g), "nccl lazy");
  CHECK_OK(tsr_array_read(gathered, got, (size_t)(1000 * tsr_group_size(g)) * sizeof *got));
  for (int r = 0; r < tsr_group_size(g); r++)
    for (int i = 0; i < 1000; i++)
      CHECK(got[r * 1000 + i] == (float)dist_value(r, (uint64_t)i));
  tsr_array *h = gpu_array(TSR_BFLOAT16, 999, tsr_group_rank(g), false, &ptr), *hs = NULL;
  CHECK_OK(tsr_all_sum(&hs, h, g, s));
  uint16_t half[999];
  CHECK_OK(tsr_array_read(hs, half, sizeof half));
  dist_check_sum(half, TSR_BFLOAT16, 999, tsr_group_size(g), "nccl lazy bfloat16");
  tsr_array_release(h);
  tsr_array_release(hs);
  tsr_array_release(x);
  tsr_array_release(sum);
  tsr_array_release(gathered);
}

int main(void) {
  tsr_group *g = NULL;
  tsr_status st = tsr_group_init(&g, "nccl");
  if (st == TSR_ERR_UNSUPPORTED) {
    printf("test_mpi_nccl: skipped (%s)\n", tsr_last_error());
    tsr_shutdown();
    return 0;
  }
  CHECK_OK(st);
  CHECK_OK(tsr_group_set_timeout(g, 60));
  tsr_device home = tsr_group_device(g); /* one rank per GPU: this one's by its node index */
  CHECK(home.type == TSR_GPU && home.index == tsr_group_rank(g) % tsr_device_count(TSR_GPU));
  tsr_stream *s = tsr_default_stream(gpu0());
  CHECK(s != NULL);
  const tsr_dtype dtypes[] = DIST_SUMMED_DTYPES;
  const uint64_t sizes[] = {0, 1, 7, 1000, 1 << 20};
  for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
    for (size_t k = 0; k < 5; k++)
      raw_case(g, s, dtypes[d], sizes[k]);
  lazy_cases(g, s);
  if (tsr_group_size(g) > 1) { /* the seal goes through the MPI bootstrap */
    float *none = NULL;
    size_t count = tsr_group_rank(g) == 0 ? 0 : 1;
    void *recv = NULL;
    tsr_array *b = gpu_array(TSR_FLOAT32, 1, 0, true, &recv);
    CHECK_STATUS(
        tsr_group_all_sum_raw(g, count ? recv : none, count ? recv : none, count, TSR_FLOAT32, s),
        TSR_ERR_DIST);
    CHECK_MESSAGE("disagree");
    tsr_array_release(b);
  }
  printf("[rank %d/%d] test_mpi_nccl: ok\n", tsr_group_rank(g), tsr_group_size(g));
  tsr_group_free(g);
  tsr_shutdown();
  return 0;
}

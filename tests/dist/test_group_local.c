/* tests/dist/test_group_local.c — one plain process, no mpirun: "local" groups (a group of one:
 * sums and gathers are copies, lazy and raw), "auto" choosing local, "mpi" refused in one line
 * without MPI's abort banner, "nccl" refused where the build or machine has none, and the bad
 * inputs of every function with their statuses and messages. (The log callback is tested where
 * something logs: test_mpi_seal.) */
#include "dist_check.h"
#include "tessera/testing.h"

static void local_basics(void) {
  tsr_group *g = dist_group("local");
  CHECK_EQ_INT(tsr_group_rank(g), 0);
  CHECK_EQ_INT(tsr_group_size(g), 1);
  tsr_device home = tsr_group_device(g);
  CHECK(home.type == TSR_CPU && home.index == 0);
  CHECK_OK(tsr_group_set_timeout(g, 0));
  CHECK_OK(tsr_group_set_timeout(g, 2.5));
  const tsr_dtype dtypes[] = DIST_SUMMED_DTYPES;
  for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
    unsigned char send[64 * 8], recv[64 * 8];
    dist_fill(send, dtypes[d], 64, 0);
    CHECK_OK(tsr_group_all_sum_raw(g, send, recv, 64, dtypes[d], dist_cpu()));
    CHECK_OK(tsr_group_all_sum_raw(g, send, send, 64, dtypes[d], dist_cpu())); /* in place */
    CHECK_OK(tsr_stream_synchronize(dist_cpu()));
    dist_check_sum(recv, dtypes[d], 64, 1, "local raw");
    dist_check_sum(send, dtypes[d], 64, 1, "local raw in place");
  }
  CHECK_OK(tsr_group_all_sum_raw(g, NULL, NULL, 0, TSR_FLOAT32, dist_cpu())); /* count 0: nothing */
  tsr_group_free(g);
  tsr_group_free(NULL);
}

static void local_lazy(void) {
  tsr_group *g = dist_group("local");
  float data[6] = {1, 2, 3, 4, 5, 6}, got[6];
  int64_t shape[2] = {2, 3};
  tsr_array *x = NULL, *sum = NULL, *gathered = NULL, *scalar = NULL, *one = NULL;
  CHECK_OK(tsr_array_from_data(&x, data, TSR_FLOAT32, shape, 2));
  CHECK_OK(tsr_all_sum(&sum, x, g, NULL));
  CHECK_OK(tsr_all_gather(&gathered, x, g, NULL));
  CHECK_EQ_INT(tsr_array_ndim(gathered), 2);
  CHECK_EQ_INT(tsr_array_dim(gathered, 0), 2);
  CHECK_OK(tsr_array_read(sum, got, sizeof got));
  CHECK(memcmp(got, data, sizeof got) == 0);
  CHECK_OK(tsr_array_read(gathered, got, sizeof got));
  CHECK(memcmp(got, data, sizeof got) == 0);
  CHECK_OK(tsr_array_from_data(&scalar, data, TSR_FLOAT32, NULL, 0));
  CHECK_OK(tsr_all_gather(&one, scalar, g, NULL)); /* a 0-d x gathers to [size] */
  CHECK_EQ_INT(tsr_array_ndim(one), 1);
  CHECK_EQ_INT(tsr_array_dim(one, 0), 1);
  tsr_array *arrays[] = {x, sum, gathered, scalar, one};
  for (size_t i = 0; i < 5; i++)
    tsr_array_release(arrays[i]);
  tsr_group_free(g);
}

static void bad_inputs(void) {
  tsr_group *g = NULL;
  CHECK_STATUS(tsr_group_init(NULL, "local"), TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  CHECK_STATUS(tsr_group_init(&g, "tcp"), TSR_ERR_INVALID);
  CHECK_MESSAGE("\"tcp\"");
  CHECK(g == NULL);
  CHECK_EQ_INT(tsr_group_rank(NULL), -1);
  CHECK_EQ_INT(tsr_group_size(NULL), 0);
  CHECK(tsr_group_device(NULL).index == -1);
  CHECK_STATUS(tsr_group_set_timeout(NULL, 1), TSR_ERR_INVALID);
  g = dist_group("local");
  CHECK_STATUS(tsr_group_set_timeout(g, -1), TSR_ERR_INVALID);
  CHECK_MESSAGE("-1");
  CHECK_STATUS(tsr_group_set_timeout(g, NAN), TSR_ERR_INVALID);
  float f[4] = {0};
  CHECK_STATUS(tsr_group_all_sum_raw(NULL, f, f, 4, TSR_FLOAT32, dist_cpu()), TSR_ERR_INVALID);
  CHECK_MESSAGE("g is NULL");
  CHECK_STATUS(tsr_group_all_sum_raw(g, NULL, f, 4, TSR_FLOAT32, dist_cpu()), TSR_ERR_INVALID);
  CHECK_MESSAGE("send is NULL with count 4");
  CHECK_STATUS(tsr_group_all_sum_raw(g, f, NULL, 4, TSR_FLOAT32, dist_cpu()), TSR_ERR_INVALID);
  CHECK_MESSAGE("recv is NULL");
  CHECK_STATUS(tsr_group_all_sum_raw(g, f, f, 4, TSR_UINT8, dist_cpu()), TSR_ERR_INVALID);
  CHECK_MESSAGE("uint8 is not summed");
  CHECK_STATUS(tsr_group_all_sum_raw(g, f, f, 4, (tsr_dtype)99, dist_cpu()), TSR_ERR_INVALID);
  tsr_stream *s = NULL;
  CHECK_OK(tsr_stream_new(&s, (tsr_device){TSR_CPU, 0}));
  CHECK_OK(tsr_stream_free(s));
  CHECK_STATUS(tsr_group_all_sum_raw(g, f, f, 4, TSR_FLOAT32, s), TSR_ERR_STATE);
  CHECK_MESSAGE("freed");
  int64_t shape[1] = {4};
  tsr_array *x = NULL, *y = NULL;
  CHECK_OK(tsr_array_from_data(&x, f, TSR_FLOAT32, shape, 1));
  CHECK_STATUS(tsr_all_sum(NULL, x, g, NULL), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_all_sum(&y, NULL, g, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("x is NULL");
  CHECK_STATUS(tsr_all_gather(&y, x, NULL, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("g is NULL");
  CHECK_STATUS(tsr_all_sum(&y, x, g, s), TSR_ERR_STATE); /* the freed stream */
  tsr_array *b = NULL;
  uint8_t bytes[4] = {0};
  CHECK_OK(tsr_array_from_data(&b, bytes, TSR_BOOL, shape, 1));
  CHECK_STATUS(tsr_all_sum(&y, b, g, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("bool");
  CHECK_OK(tsr_all_gather(&y, b, g, NULL)); /* a gather takes any dtype */
  tsr_array_release(y);
  tsr_array_release(b);
  tsr_array_release(x);
  CHECK_STATUS(tsr_testing_group_set_chunk(g, 0), TSR_ERR_INVALID);
  tsr_group_free(g);
}

/* Not launched by mpirun: "mpi" is one clear line and MPI is never touched (no abort banner, the
   process goes on); "auto" is a local group; "nccl" is unsupported or needs mpirun. */
static void outside_mpirun(void) {
  tsr_group *g = NULL;
  tsr_status mpi = tsr_group_init(&g, "mpi"); /* UNSUPPORTED in a build without MPI */
  CHECK(mpi == TSR_ERR_DIST || mpi == TSR_ERR_UNSUPPORTED);
  CHECK_MESSAGE(mpi == TSR_ERR_DIST ? "not launched by mpirun" : "no MPI");
  CHECK(strchr(tsr_last_error(), '\n') == NULL);
  CHECK(g == NULL);
  tsr_status st = tsr_group_init(&g, "nccl");
  CHECK(st == TSR_ERR_UNSUPPORTED || st == TSR_ERR_DIST);
  CHECK(g == NULL);
  CHECK_OK(tsr_group_init(&g, "auto"));
  CHECK_EQ_INT(tsr_group_size(g), 1);
  tsr_group_free(g);
  CHECK_OK(tsr_group_init(&g, NULL));
  CHECK_EQ_INT(tsr_group_size(g), 1);
  tsr_group_free(g);
}

int main(void) {
  unsetenv("OMPI_COMM_WORLD_SIZE"); /* in case ctest itself runs under mpirun */
  local_basics();
  local_lazy();
  bad_inputs();
  outside_mpirun();
  CHECK_NO_LEAKS();
  tsr_shutdown();
  printf("test_group_local: ok\n");
  return 0;
}

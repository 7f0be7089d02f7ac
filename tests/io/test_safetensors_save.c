/* tests/io/test_safetensors_save.c — tessera/safetensors.h when things go wrong around a save
 * or a load: bad arguments, a missing folder, an array that fails to evaluate, saving through a
 * symlink and a write that fails midway (a child process under RLIMIT_FSIZE: the target keeps its
 * contents, no temporary file stays), and loads refused by a ledger cap (a child process with the
 * cap installed before anything is backed) leaving nothing on the ledger, wrapped or copied. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "check.h"
#include "io/test_safetensors.h"
#include "tessera/testing.h"

static const tsr_device cpu = {TSR_CPU, 0};

static void test_save_errors(void) {
  tsr_array *w = st_f32_array((float[]){1.0f, 2.0f}, 2);
  tsr_array *arrays[] = {w, w};
  const char *path = st_path("no/such/folder/x.safetensors");
  const char *names[] = {"w", "v"};
  CHECK_STATUS(tsr_safetensors_save(path, names, arrays, 2, NULL, NULL, 0), TSR_ERR_IO);
  CHECK_MESSAGE(path);
  CHECK(access(st_path("no"), F_OK) != 0);
  path = st_path("invalid.safetensors");
  const char *twice[] = {"w", "w"};
  CHECK_STATUS(tsr_safetensors_save(path, twice, arrays, 2, NULL, NULL, 0), TSR_ERR_INVALID);
  CHECK_MESSAGE("tensor name 'w' given twice");
  const char *reserved[] = {"__metadata__"};
  CHECK_STATUS(tsr_safetensors_save(path, reserved, arrays, 1, NULL, NULL, 0), TSR_ERR_INVALID);
  CHECK_MESSAGE("'__metadata__' cannot name a tensor");
  const char *empty[] = {""};
  CHECK_STATUS(tsr_safetensors_save(path, empty, arrays, 1, NULL, NULL, 0), TSR_ERR_INVALID);
  const char *keys[] = {"format", "format"}, *values[] = {"pt", "mlx"};
  CHECK_STATUS(tsr_safetensors_save(path, names, arrays, 2, keys, values, 2), TSR_ERR_INVALID);
  CHECK_MESSAGE("metadata key 'format' given twice");
  CHECK_STATUS(tsr_safetensors_save(path, names, arrays, 2, keys, NULL, 1), TSR_ERR_INVALID);
  CHECK_MESSAGE("meta_values is NULL");
  CHECK_STATUS(tsr_safetensors_save(NULL, names, arrays, 2, NULL, NULL, 0), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_safetensors_save(path, NULL, arrays, 2, NULL, NULL, 0), TSR_ERR_INVALID);
  tsr_array *holes[] = {w, NULL};
  CHECK_STATUS(tsr_safetensors_save(path, names, holes, 2, NULL, NULL, 0), TSR_ERR_INVALID);
  CHECK_MESSAGE("arrays[1] is NULL");
  CHECK(access(path, F_OK) != 0);
  /* No tensors is a valid file: metadata only. */
  CHECK_OK(tsr_safetensors_save(path, NULL, NULL, 0, keys, values, 1));
  tsr_safetensors *st = NULL;
  CHECK_OK(tsr_safetensors_open(&st, path));
  CHECK_EQ_U64(tsr_safetensors_count(st), 0);
  CHECK(strcmp(tsr_safetensors_metadata(st, "format"), "pt") == 0);
  tsr_safetensors_close(st);
  tsr_array_release(w);
  CHECK_EQ_INT(st_leftovers(st_tmp_dir), 0);
}

/* An array that fails to evaluate fails the save before any file is touched. */
static void test_save_failed_array(void) {
  const char *path = st_path("kept.safetensors");
  tsr_array *w = st_f32_array((float[]){1.0f, 2.0f}, 2);
  const char *name = "w";
  CHECK_OK(tsr_safetensors_save(path, &name, &w, 1, NULL, NULL, 0));
  tsr_array *big = NULL, *sum = NULL;
  CHECK_OK(tsr_zeros(&big, (int64_t[]){1 << 16}, 1, TSR_FLOAT32, NULL));
  CHECK_OK(tsr_eval(&big, 1));
  CHECK_OK(tsr_add(&sum, big, big, NULL));
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_OK(tsr_testing_fail_allocation(cpu, 1));
  CHECK_STATUS(tsr_safetensors_save(path, &name, &sum, 1, NULL, NULL, 0), TSR_ERR_NOMEM);
  CHECK_EQ_U64(tsr_testing_fail_allocation_pending(cpu), 0);
  CHECK_MESSAGE("safetensors_save: ");
  CHECK_MESSAGE(path);
  tsr_safetensors *st = NULL;
  CHECK_OK(tsr_safetensors_open(&st, path));
  st_check_load(st, "w", TSR_FLOAT32, 1, (int64_t[]){2}, (float[]){1.0f, 2.0f}, 8);
  tsr_safetensors_close(st);
  CHECK_EQ_INT(st_leftovers(st_tmp_dir), 0);
  tsr_array_release(sum);
  tsr_array_release(big);
  tsr_array_release(w);
}

/* Runs this program again as child `mode` on the scratch folder; its failure fails the test. */
static void run_child(const char *mode) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    execl("/proc/self/exe", "test_safetensors_save", mode, st_tmp_dir, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    CHECK_FAIL_("child '%s' failed (status %d)", mode, status);
}

/* Saving through a symlink replaces its target (the link stays a link); a save that fails midway
 * leaves the target as it was and no temporary file. */
static void test_save_symlink(void) {
  const char *real = st_path("real.safetensors"), *link = st_path("link.safetensors");
  tsr_array *w = st_f32_array((float[]){1.0f, 2.0f}, 2);
  const char *name = "w";
  CHECK_OK(tsr_safetensors_save(real, &name, &w, 1, NULL, NULL, 0));
  struct stat info;
  CHECK_EQ_INT(stat(real, &info), 0);
  CHECK_EQ_INT(info.st_mode & 0777, 0644); /* a new file: 0666 less the umask (022) */
  CHECK_EQ_INT(symlink("real.safetensors", link), 0);
  tsr_array *v = st_f32_array((float[]){3.0f, 4.0f}, 2);
  CHECK_OK(tsr_safetensors_save(link, &name, &v, 1, NULL, NULL, 0));
  CHECK_EQ_INT(lstat(link, &info), 0);
  CHECK(S_ISLNK(info.st_mode));
  tsr_safetensors *st = NULL;
  CHECK_OK(tsr_safetensors_open(&st, real));
  st_check_load(st, "w", TSR_FLOAT32, 1, (int64_t[]){2}, (float[]){3.0f, 4.0f}, 8);
  tsr_safetensors_close(st);
  run_child("fsize");
  CHECK_EQ_INT(lstat(link, &info), 0);
  CHECK(S_ISLNK(info.st_mode));
  CHECK_OK(tsr_safetensors_open(&st, real));
  st_check_load(st, "w", TSR_FLOAT32, 1, (int64_t[]){2}, (float[]){3.0f, 4.0f}, 8);
  tsr_safetensors_close(st);
  CHECK_EQ_INT(st_leftovers(st_tmp_dir), 0);
  tsr_array_release(v);
  tsr_array_release(w);
}

/* The child: a file size limit makes the write fail after the temporary file exists. */
static void child_fsize(void) {
  signal(SIGXFSZ, SIG_IGN);
  struct rlimit limit = {4096, 4096};
  CHECK_EQ_INT(setrlimit(RLIMIT_FSIZE, &limit), 0);
  tsr_array *big = NULL;
  CHECK_OK(tsr_zeros(&big, (int64_t[]){1 << 14}, 1, TSR_FLOAT32, NULL));
  const char *name = "w";
  CHECK_STATUS(tsr_safetensors_save(st_path("link.safetensors"), &name, &big, 1, NULL, NULL, 0),
               TSR_ERR_IO);
  CHECK_MESSAGE("real.safetensors: write failed: File too large");
  tsr_array_release(big);
}

/* ---- the ledger cap ------------------------------------------------------------------------ */

#define CAP_BYTES (64 << 10)
#define BIG (1 << 16) /* floats: 256 KiB, past the cap */

static void test_cap(void) {
  tsr_array *arrays[2] = {NULL, NULL};
  CHECK_OK(tsr_zeros(&arrays[0], (int64_t[]){BIG}, 1, TSR_FLOAT32, NULL));
  CHECK_OK(tsr_zeros(&arrays[1], (int64_t[]){16}, 1, TSR_UINT8, NULL));
  const char *names[] = {"big", "small"}, *shifted[] = {"s", "big"};
  CHECK_OK(tsr_safetensors_save(st_path("cap.safetensors"), names, arrays, 2, NULL, NULL, 0));
  tsr_array *odd = NULL; /* 3 bytes first: "big" at an offset no float aligns to */
  CHECK_OK(tsr_zeros(&odd, (int64_t[]){3}, 1, TSR_UINT8, NULL));
  tsr_array *unaligned[] = {odd, arrays[0]};
  CHECK_OK(
      tsr_safetensors_save(st_path("cap_copy.safetensors"), shifted, unaligned, 2, NULL, NULL, 0));
  tsr_array_release(odd);
  tsr_array_release(arrays[0]);
  tsr_array_release(arrays[1]);
  run_child("cap");
}

static void expect_refused(const char *file) {
  tsr_safetensors *st = NULL;
  tsr_array *a = NULL;
  CHECK_OK(tsr_safetensors_open(&st, st_path(file)));
  CHECK_STATUS(tsr_safetensors_load(&a, st, "big", cpu), TSR_ERR_CAP);
  CHECK(a == NULL);
  CHECK_MESSAGE(file);
  CHECK_MESSAGE("tensor 'big' (262144 bytes)");
  CHECK_MESSAGE("refused by the cap");
  CHECK_EQ_U64(st_active_bytes(), 0);
  tsr_safetensors_close(st);
}

/* The child: the cap installed before anything is backed; loads that do not fit leave nothing. */
static void child_cap(void) {
  CHECK_OK(tsr_calibration_install_cap(cpu, CAP_BYTES));
  expect_refused("cap.safetensors");      /* wrapped in place */
  expect_refused("cap_copy.safetensors"); /* copied */
  tsr_safetensors *st = NULL;
  tsr_array *a = NULL;
  CHECK_OK(tsr_safetensors_open(&st, st_path("cap.safetensors")));
  CHECK_OK(tsr_safetensors_load(&a, st, "small", cpu));
  CHECK_EQ_U64(st_active_bytes(), 16);
  tsr_array_release(a);
  tsr_safetensors_close(st);
}

int main(int argc, char **argv) {
  umask(022);
  if (argc == 3) { /* a child: argv[1] says which, argv[2] is the scratch folder */
    snprintf(st_tmp_dir, sizeof st_tmp_dir, "%s", argv[2]);
    if (strcmp(argv[1], "cap") == 0)
      child_cap();
    else if (strcmp(argv[1], "fsize") == 0)
      child_fsize();
    else
      CHECK_FAIL_("unknown child mode '%s'", argv[1]);
  } else {
    st_make_tmp_dir("test_safetensors_save");
    test_save_errors();
    test_save_failed_array();
    test_save_symlink();
    test_cap();
    st_remove_tmp_dir();
  }
  tsr_memory_clear_cache(cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  if (argc != 3) printf("test_safetensors_save: ok\n");
  return 0;
}

/* tests/io/test_npy_hostile.c — .npy files and paths an attacker would pick: headers whose shape
 * overflows only in some axis orders (the answer must not depend on the order), a FIFO with no
 * writer (must not hang), devices and directories where a file is expected, and saves that fail
 * halfway or point at a symlink, a device or a FIFO: the target is replaced whole or not at all,
 * nothing but tessera's own temporary file is ever removed, nothing is left behind. The plain
 * format is tests/io/test_npy.c's. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "tessera/io.h"

static char dir[64];

static const char *in_dir(const char *name) {
  static char paths[4][160];
  static int next;
  char *path = paths[next++ % 4];
  snprintf(path, 160, "%s/%s", dir, name);
  return path;
}

static void write_bytes(const char *path, const void *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  CHECK(fwrite(bytes, 1, n, f) == n);
  CHECK(fclose(f) == 0);
}

static size_t read_bytes(const char *path, unsigned char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) CHECK_FAIL_("cannot open %s: %s", path, strerror(errno));
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

/* A version 1.0 file: preamble, the header padded with spaces to a multiple of 64, data zeros. */
static void write_npy(const char *path, const char *dict, size_t data_bytes) {
  unsigned char buf[512] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  size_t len = strlen(dict), padded = len + 1;
  while ((10 + padded) % 64)
    padded++;
  buf[8] = (unsigned char)padded;
  buf[9] = (unsigned char)(padded >> 8);
  memcpy(buf + 10, dict, len);
  memset(buf + 10 + len, ' ', padded - len - 1);
  buf[10 + padded - 1] = '\n';
  CHECK(10 + padded + data_bytes <= sizeof buf);
  write_bytes(path, buf, 10 + padded + data_bytes);
}

/* Only the entries the test made itself remain in the folder (no temporary file left). */
static void check_dir_holds(int expected) {
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  int count = 0;
  char names[512] = "";
  for (struct dirent *e; (e = readdir(d));) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    count++;
    strncat(names, e->d_name, sizeof names - strlen(names) - 2);
    strcat(names, " ");
  }
  closedir(d);
  if (count != expected)
    CHECK_FAIL_("%s holds %d entries (%s), want %d", dir, count, names, expected);
}

/* Item 1 for .npy: [0, 2^40, 2^40] in any order is refused the same way; [0, 2^30, 2^30] of
   float32 in any order loads as a zero-size array. */
static void test_header_shapes_any_order(void) {
  static const char *const overflowing[] = {"(0, 1099511627776, 1099511627776)",
                                            "(1099511627776, 0, 1099511627776)",
                                            "(1099511627776, 1099511627776, 0)"};
  static const char *const fitting[] = {
      "(0, 1073741824, 1073741824)", "(1073741824, 0, 1073741824)", "(1073741824, 1073741824, 0)"};
  char dict[160];
  for (int i = 0; i < 3; i++) {
    snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }",
             overflowing[i]);
    write_npy(in_dir("shape.npy"), dict, 0);
    tsr_array *a = NULL;
    CHECK_STATUS(tsr_npy_load(&a, in_dir("shape.npy")), TSR_ERR_IO);
    CHECK(a == NULL);
    CHECK_MESSAGE("1099511627776");
    CHECK_MESSAGE("overflows");

    snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }",
             fitting[i]);
    write_npy(in_dir("shape.npy"), dict, 0);
    CHECK_OK(tsr_npy_load(&a, in_dir("shape.npy")));
    CHECK_EQ_INT(tsr_array_size(a), 0);
    CHECK_EQ_INT(tsr_array_ndim(a), 3);
    int64_t dims = 0;
    for (int d = 0; d < 3; d++)
      dims += tsr_array_dim(a, d);
    CHECK_EQ_INT(dims, 2 * ((int64_t)1 << 30));
    /* And back: the zero-size array saves and loads again with its shape. */
    CHECK_OK(tsr_npy_save(in_dir("again.npy"), a));
    tsr_array *b = NULL;
    CHECK_OK(tsr_npy_load(&b, in_dir("again.npy")));
    for (int d = 0; d < 3; d++)
      CHECK_EQ_INT(tsr_array_dim(b, d), tsr_array_dim(a, d));
    tsr_array_release(a);
    tsr_array_release(b);
    remove(in_dir("again.npy"));
  }
  remove(in_dir("shape.npy"));
}

/* Item 3: a FIFO with no writer, a directory and devices are refused at once, not read. */
static void test_load_not_regular(void) {
  CHECK(mkfifo(in_dir("fifo.npy"), 0600) == 0);
  alarm(20); /* before the fix the load blocked in open(): the alarm ends the test as failed */
  tsr_array *a = NULL;
  CHECK_STATUS(tsr_npy_load(&a, in_dir("fifo.npy")), TSR_ERR_IO);
  CHECK_MESSAGE("not a regular file");
  CHECK_MESSAGE("FIFO");
  CHECK_MESSAGE(in_dir("fifo.npy"));
  CHECK_STATUS(tsr_npy_load_as(&a, in_dir("fifo.npy"), TSR_UINT8), TSR_ERR_IO);
  alarm(0);
  CHECK(a == NULL);
  CHECK_STATUS(tsr_npy_load(&a, dir), TSR_ERR_IO);
  CHECK_MESSAGE("directory");
  CHECK_STATUS(tsr_npy_load(&a, "/dev/null"), TSR_ERR_IO);
  CHECK_MESSAGE("character device");
  CHECK_STATUS(tsr_npy_load(&a, "/dev/zero"), TSR_ERR_IO);
  CHECK(a == NULL);
  remove(in_dir("fifo.npy"));
}

static tsr_array *small_array(float base) {
  float xs[6];
  for (int i = 0; i < 6; i++)
    xs[i] = base + (float)i;
  int64_t shape[2] = {2, 3};
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, xs, TSR_FLOAT32, shape, 2));
  return a;
}

/* Item 4: a save through a symlink to a device writes nothing and keeps the symlink (before the
   fix it wrote to the device, failed on /dev/full, and removed the user's symlink). */
static void test_save_refuses_non_regular(void) {
  tsr_array *a = small_array(1.0f);
  CHECK(symlink("/dev/full", in_dir("link.npy")) == 0);
  CHECK_STATUS(tsr_npy_save(in_dir("link.npy"), a), TSR_ERR_IO);
  CHECK_MESSAGE(in_dir("link.npy"));
  struct stat st;
  CHECK(lstat(in_dir("link.npy"), &st) == 0 && S_ISLNK(st.st_mode));
  check_dir_holds(1);
  remove(in_dir("link.npy"));

  CHECK(mkfifo(in_dir("fifo.npy"), 0600) == 0);
  alarm(20); /* opening a FIFO for writing with no reader would block */
  CHECK_STATUS(tsr_npy_save(in_dir("fifo.npy"), a), TSR_ERR_IO);
  alarm(0);
  CHECK_MESSAGE("FIFO");
  CHECK(lstat(in_dir("fifo.npy"), &st) == 0 && S_ISFIFO(st.st_mode));
  remove(in_dir("fifo.npy"));

  CHECK(mkdir(in_dir("sub.npy"), 0700) == 0);
  CHECK_STATUS(tsr_npy_save(in_dir("sub.npy"), a), TSR_ERR_IO);
  CHECK_MESSAGE("directory");
  CHECK(stat(in_dir("sub.npy"), &st) == 0 && S_ISDIR(st.st_mode));
  rmdir(in_dir("sub.npy"));

  CHECK(symlink(in_dir("nowhere/x.npy"), in_dir("dangling.npy")) == 0);
  CHECK_STATUS(tsr_npy_save(in_dir("dangling.npy"), a), TSR_ERR_IO);
  CHECK(lstat(in_dir("dangling.npy"), &st) == 0 && S_ISLNK(st.st_mode));
  remove(in_dir("dangling.npy"));

  CHECK_STATUS(tsr_npy_save(in_dir("missing/x.npy"), a), TSR_ERR_IO);
  CHECK_MESSAGE("missing");
  check_dir_holds(0);
  tsr_array_release(a);
}

/* A symlink to a regular file: the symlink stays, its target gets the new contents. */
static void test_save_through_symlink(void) {
  tsr_array *a = small_array(1.0f), *b = small_array(10.0f), *back = NULL;
  CHECK_OK(tsr_npy_save(in_dir("real.npy"), a));
  CHECK(symlink("real.npy", in_dir("alias.npy")) == 0);
  CHECK_OK(tsr_npy_save(in_dir("alias.npy"), b));
  struct stat st;
  CHECK(lstat(in_dir("alias.npy"), &st) == 0 && S_ISLNK(st.st_mode));
  CHECK_OK(tsr_npy_load(&back, in_dir("real.npy")));
  float got[6];
  CHECK_OK(tsr_array_read(back, got, sizeof got));
  CHECK(got[0] == 10.0f && got[5] == 15.0f);
  check_dir_holds(2);
  remove(in_dir("alias.npy"));
  remove(in_dir("real.npy"));
  tsr_array_release(a), tsr_array_release(b), tsr_array_release(back);
}

/* A save that fails halfway (the file size limit, as a full disk would) leaves the old file whole
   and no temporary file; run in a child, since the limit is process-wide. */
static void test_save_fails_halfway(void) {
  tsr_array *old = small_array(1.0f);
  CHECK_OK(tsr_npy_save(in_dir("kept.npy"), old));
  tsr_array_release(old);
  unsigned char before[512], after[512];
  size_t before_len = read_bytes(in_dir("kept.npy"), before, sizeof before);
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN); /* writes past the limit then fail with EFBIG */
    struct rlimit limit = {200, 200};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(3);
    float big[1024] = {0};
    int64_t shape[1] = {1024};
    tsr_array *a = NULL;
    if (tsr_array_from_data(&a, big, TSR_FLOAT32, shape, 1) != TSR_OK) _exit(4);
    tsr_status st = tsr_npy_save(in_dir("kept.npy"), a);
    bool named = strstr(tsr_last_error(), "kept.npy") != NULL;
    tsr_array_release(a);
    tsr_shutdown();
    _exit(st == TSR_ERR_IO && named ? 0 : 5);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK_EQ_INT(WEXITSTATUS(status), 0);
  size_t after_len = read_bytes(in_dir("kept.npy"), after, sizeof after);
  CHECK_EQ_INT(after_len, before_len);
  CHECK(memcmp(before, after, before_len) == 0);
  check_dir_holds(1);
  remove(in_dir("kept.npy"));
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/tessera-npy-hostile-XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  test_header_shapes_any_order();
  test_load_not_regular();
  test_save_refuses_non_regular();
  test_save_through_symlink();
  test_save_fails_halfway();
  check_dir_holds(0);
  CHECK(rmdir(dir) == 0);
  CHECK_OK(tsr_memory_clear_cache((tsr_device){TSR_CPU, 0}));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_npy_hostile: ok");
  return 0;
}

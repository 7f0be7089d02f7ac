/* io/file.c — the io layer's file opening (io/file.h): regular files only, reads that cannot hang
 * on a FIFO, writes through a temporary file renamed over the target. Not a file format. */
#include "io/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/status.h"

static const char *kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

tsr_status tsri_file_open_read(const char *what, const char *path, FILE **out, int64_t *bytes) {
  /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return tsri_error(TSR_ERR_IO, "%s %s: cannot open: %s", what, path, strerror(errno));
  struct stat st;
  tsr_status status = TSR_OK;
  if (fstat(fd, &st) != 0) {
    status = tsri_error(TSR_ERR_IO, "%s %s: cannot stat: %s", what, path, strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    status =
        tsri_error(TSR_ERR_IO, "%s %s: not a regular file (%s)", what, path, kind_of(st.st_mode));
  } else {
    int flags = fcntl(fd, F_GETFL);
    FILE *f = NULL;
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 || !(f = fdopen(fd, "rb"))) {
      status = tsri_error(TSR_ERR_IO, "%s %s: cannot open: %s", what, path, strerror(errno));
    } else {
      *out = f;
      *bytes = (int64_t)st.st_size;
      return TSR_OK;
    }
  }
  close(fd);
  return status;
}

/* The file a write to `path` replaces: path itself (existing regular file or nothing yet), or the
   resolved target of a symlink to a regular file. Anything else is refused. */
static tsr_status resolve_target(const char *what, const char *path, char **target) {
  struct stat st;
  if (lstat(path, &st) != 0) {
    if (errno != ENOENT)
      return tsri_error(TSR_ERR_IO, "%s %s: cannot stat: %s", what, path, strerror(errno));
    *target = strdup(path);
  } else if (S_ISREG(st.st_mode)) {
    *target = strdup(path);
  } else if (S_ISLNK(st.st_mode)) {
    char *resolved = realpath(path, NULL);
    if (!resolved)
      return tsri_error(TSR_ERR_IO, "%s %s: a symlink that does not resolve: %s", what, path,
                        strerror(errno));
    if (stat(resolved, &st) != 0 || !S_ISREG(st.st_mode)) {
      tsr_status status = tsri_error(TSR_ERR_IO, "%s %s: a symlink to %s, not to a regular file",
                                     what, path, resolved);
      free(resolved);
      return status;
    }
    *target = resolved;
    return TSR_OK;
  } else {
    return tsri_error(TSR_ERR_IO, "%s %s: not a regular file (%s); nothing written", what, path,
                      kind_of(st.st_mode));
  }
  if (!*target) return tsri_error(TSR_ERR_NOMEM, "%s %s: out of host memory", what, path);
  return TSR_OK;
}

/* Creates a new file beside `target`, exclusively (never an existing file or a symlink). */
static tsr_status create_temporary(tsri_file_writer *w) {
  static atomic_uint counter;
  const char *slash = strrchr(w->target, '/');
  int dir_len = slash ? (int)(slash - w->target) + 1 : 0;
  size_t cap = (size_t)dir_len + 64;
  w->temporary = malloc(cap);
  if (!w->temporary)
    return tsri_error(TSR_ERR_NOMEM, "%s %s: out of host memory", w->what, w->target);
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
    unsigned serial = atomic_fetch_add(&counter, 1);
    unsigned long noise = (unsigned long)time(NULL) ^ ((unsigned long)clock() << 16);
    snprintf(w->temporary, cap, "%.*s.tessera-%ld-%u-%lx.tmp", dir_len, w->target, (long)getpid(),
             serial, noise & 0xFFFFFFul);
    fd = open(w->temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    tsr_status status =
        tsri_error(TSR_ERR_IO, "%s %s: cannot create a temporary file beside it (%s): %s", w->what,
                   w->target, w->temporary, strerror(errno));
    free(w->temporary);
    w->temporary = NULL;
    return status;
  }
  w->file = fdopen(fd, "wb");
  if (!w->file) {
    tsr_status status = tsri_error(TSR_ERR_NOMEM, "%s %s: out of host memory", w->what, w->target);
    close(fd);
    unlink(w->temporary);
    free(w->temporary);
    w->temporary = NULL;
    return status;
  }
  return TSR_OK;
}

tsr_status tsri_file_write_begin(tsri_file_writer *w, const char *what, const char *path) {
  memset(w, 0, sizeof *w);
  w->what = what;
  tsr_status status = resolve_target(what, path, &w->target);
  if (status == TSR_OK) status = create_temporary(w);
  if (status != TSR_OK) {
    free(w->target);
    w->target = NULL;
  }
  return status;
}

static void finish(tsri_file_writer *w, bool remove_temporary) {
  if (w->file) fclose(w->file);
  if (remove_temporary && w->temporary) unlink(w->temporary);
  free(w->temporary);
  free(w->target);
  memset(w, 0, sizeof *w);
}

tsr_status tsri_file_write_commit(tsri_file_writer *w) {
  tsr_status status = TSR_OK;
  FILE *f = w->file;
  w->file = NULL;
  /* Each step's error is the file's: a full disk shows up at the flush, an I/O error at the sync,
     a late NFS error at the close. Only then is the target replaced. */
  bool written = fflush(f) == 0 && !ferror(f);
  if (written && fsync(fileno(f)) != 0) written = false;
  int saved = errno;
  if (fclose(f) != 0 && written) {
    written = false;
    saved = errno;
  }
  if (!written)
    status = tsri_error(TSR_ERR_IO, "%s %s: write failed: %s; the file is unchanged", w->what,
                        w->target, strerror(saved));
  else if (rename(w->temporary, w->target) != 0)
    status = tsri_error(TSR_ERR_IO, "%s %s: cannot replace it: %s; the file is unchanged", w->what,
                        w->target, strerror(errno));
  finish(w, status != TSR_OK);
  return status;
}

void tsri_file_write_abort(tsri_file_writer *w) {
  finish(w, true);
}

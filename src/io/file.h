/* io/file.h — opening files the io layer reads and writes, safely against what a path may name:
 * a reader never blocks on a FIFO or a device and refuses anything but a regular file; a writer
 * never writes through to a device, FIFO or directory, writes a temporary file in the target's
 * folder and renames it over the target only once everything is written, and on failure removes
 * only its own temporary file. Every reader and writer of files under src/io goes through here. */
#ifndef TSR_IO_FILE_H
#define TSR_IO_FILE_H

#include <stdint.h>
#include <stdio.h>

#include "tessera/base.h"

/* Opens `path` for reading: non-blocking open (a FIFO without a writer cannot hang it), fstat,
 * TSR_ERR_IO unless it is a regular file; then an ordinary blocking FILE. *bytes gets its size.
 * Messages start with `what` and name the path. */
tsr_status tsri_file_open_read(const char *what, const char *path, FILE **out, int64_t *bytes);

typedef struct {
  FILE *file;      /* write here */
  char *target;    /* the regular file to replace (a symlink's resolved target) */
  char *temporary; /* beside it, created exclusively */
  const char *what;
} tsri_file_writer;

/* Starts writing `path`: TSR_ERR_IO when path names something other than a regular file (or a
 * symlink to one: the symlink is kept and its target replaced) that exists, or when the folder
 * does not take a new file; TSR_ERR_NOMEM. On failure nothing was created. */
tsr_status tsri_file_write_begin(tsri_file_writer *w, const char *what, const char *path);
/* Flushes, syncs and closes the temporary file and renames it over the target. On failure the
 * temporary file is removed and the target is as it was. Either way `w` is finished. */
tsr_status tsri_file_write_commit(tsri_file_writer *w);
/* Gives up: removes the temporary file; the target is as it was. */
void tsri_file_write_abort(tsri_file_writer *w);

#endif

/* tools/tessera/cli.c — the helpers every subcommand shares; no subcommand logic lives here. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_exit_code(tsr_status st) {
  switch (st) {
    case TSR_OK:
      return CLI_EXIT_OK;
    case TSR_ERR_CAP:
      return CLI_EXIT_CAP;
    case TSR_ERR_INVALID:
    case TSR_ERR_IO:
      return CLI_EXIT_USAGE;
    default:
      return CLI_EXIT_FAILURE;
  }
}

int cli_report_failure(const char *command, const char *what, tsr_status st) {
  fprintf(stderr, "tessera %s: %s: %s: %s\n", command, what, tsr_status_name(st), tsr_last_error());
  return cli_exit_code(st);
}

int cli_usage_error(const char *command, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "tessera %s: ", command);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see 'tessera %s --help')\n", command);
  return CLI_EXIT_USAGE;
}

bool cli_parse_device(const char *text, tsr_device *out) {
  if (strcmp(text, "cpu") == 0 || strcmp(text, "cpu:0") == 0) {
    *out = (tsr_device){TSR_CPU, 0};
    return true;
  }
  if (strcmp(text, "gpu") == 0) {
    *out = (tsr_device){TSR_GPU, 0};
    return true;
  }
  if (strncmp(text, "gpu:", 4) != 0 || text[4] < '0' || text[4] > '9') return false;
  char *end = NULL;
  errno = 0;
  long index = strtol(text + 4, &end, 10);
  if (errno != 0 || *end != '\0' || index > INT_MAX) return false;
  *out = (tsr_device){TSR_GPU, (int)index};
  return true;
}

const char *cli_device_name(tsr_device d, char buf[32]) {
  if (d.type == TSR_CPU)
    snprintf(buf, 32, "cpu");
  else
    snprintf(buf, 32, "gpu:%d", d.index);
  return buf;
}

bool cli_print_json(cJSON *root) {
  char *text = root ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  if (!text) {
    fprintf(stderr, "tessera: could not render the JSON output (out of memory)\n");
    return false;
  }
  printf("%s\n", text);
  cJSON_free(text);
  return true;
}

const char *cli_format_bytes(unsigned long long bytes, char buf[32]) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = (double)bytes;
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    unit++;
  }
  if (unit == 0)
    snprintf(buf, 32, "%llu B", bytes);
  else
    snprintf(buf, 32, "%.1f %s", value, units[unit]);
  return buf;
}

void cli_guard_std_fds(void) {
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0) continue;
    if (null_fd != fd) { /* a lower descriptor was also missing and took it first: move it */
      dup2(null_fd, fd);
      close(null_fd);
    }
  }
}

int cli_finish(int code) {
  /* Output is buffered: a failed write may show only at the flush, or only as the stream's error
     flag from an earlier printf; the close catches what the kernel reports last. */
  int error = 0;
  errno = 0;
  if (fflush(stdout) != 0) error = errno ? errno : EIO;
  if (!error && ferror(stdout)) error = EIO;
  if (fclose(stdout) != 0 && !error) error = errno ? errno : EIO;
  if (!error) return code;
  fprintf(stderr, "tessera: could not write the output to stdout: %s\n", strerror(error));
  return code == CLI_EXIT_OK ? CLI_EXIT_FAILURE : code;
}

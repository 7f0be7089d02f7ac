/* tools/tessera/cli.h — what the subcommands of the tessera program share (exit codes, flag and
 * device parsing, output helpers); not part of the library, and nothing here is installed. */
#ifndef TSR_TOOLS_CLI_H
#define TSR_TOOLS_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>
#include <tessera/tessera.h>

/* The exit codes of every subcommand (shared/API.md, "Command-line program"). */
enum {
  CLI_EXIT_OK = 0,
  CLI_EXIT_FAILURE = 1, /* anything else that went wrong */
  CLI_EXIT_USAGE = 2,   /* bad usage or bad input */
  CLI_EXIT_CAP = 3      /* a backing cap refused memory */
};

/* A subcommand: `argv[0]` is its own name; returns the process's exit code. */
typedef int (*cli_command_fn)(int argc, char **argv);

int cli_info(int argc, char **argv);
int cli_selfcheck(int argc, char **argv);
int cli_generate(int argc, char **argv);
int cli_logits(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_convert(int argc, char **argv);
int cli_calibrate(int argc, char **argv);

/* The exit code for a failed library call: 3 for TSR_ERR_CAP, 2 for bad input (TSR_ERR_INVALID,
 * TSR_ERR_IO), 1 otherwise (0 for TSR_OK). */
int cli_exit_code(tsr_status st);

/* Prints "tessera COMMAND: what: TSR_ERR_X: <tsr_last_error()>" on stderr and returns the exit
 * code for st. */
int cli_report_failure(const char *command, const char *what, tsr_status st);

/* Prints "tessera COMMAND: <message>" and a pointer to --help on stderr; returns 2. */
int cli_usage_error(const char *command, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Parses "cpu", "gpu" (= gpu:0) or "gpu:N"; false when the text is none of those. It does not
 * check that the device exists. */
bool cli_parse_device(const char *text, tsr_device *out);
/* "cpu" or "gpu:N"; `buf` holds 32 bytes. */
const char *cli_device_name(tsr_device d, char buf[32]);

/* Called first by main: a standard descriptor (0, 1, 2) the program was started without is
 * reopened on /dev/null, read-only, so writes to it fail visibly (EBADF) instead of landing in
 * the next file the program opens, which would otherwise take that descriptor number. */
void cli_guard_std_fds(void);
/* Called on every exit path of main with the exit code so far: flushes and closes stdout and
 * returns `code`, or 1 (when `code` was 0) after a message on stderr if any output could not be
 * written (a full disk, /dev/full, a closed or read-only descriptor). */
int cli_finish(int code);

/* Prints a JSON document on stdout followed by a newline and deletes it; false (with a message
 * on stderr) when it could not be rendered. */
bool cli_print_json(cJSON *root);

/* Writes a byte count as "1.5 GiB" style text into buf (32 bytes). */
const char *cli_format_bytes(unsigned long long bytes, char buf[32]);

#endif

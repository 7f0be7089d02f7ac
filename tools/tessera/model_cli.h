/* tools/tessera/model_cli.h — what the model subcommands (generate, logits, bench generate)
 * share: their common flags, token-list and byte-size parsing, and loading the model. */
#ifndef TSR_TOOLS_MODEL_CLI_H
#define TSR_TOOLS_MODEL_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

/* "1,2,3" -> a malloc'd array of ids (free() it); false for anything but comma-separated
 * non-negative integers below 2^31. */
bool cli_parse_tokens(const char *text, int32_t **tokens, size_t *n);
/* "1000000", "512M", "8G", "1.5GiB" (K/M/G/T with an optional "i" and "B": powers of 1024)
 * -> bytes; false when malformed or zero. */
bool cli_parse_bytes(const char *text, uint64_t *out);
/* A non-negative integer no larger than max; false otherwise. */
bool cli_parse_count(const char *text, uint64_t max, uint64_t *out);
/* A finite float; false otherwise. */
bool cli_parse_float(const char *text, float *out);

/* --group: "mpi" or "nccl" (false for anything else). */
bool cli_parse_group(const char *text);
/* Joins the tensor-parallel group `backend` ("mpi"/"nccl"; NULL: none, *out = NULL). Ranks other
 * than 0 then write nothing: their stdout and stderr go to /dev/null (a failure is still
 * reported, in one line, by cli_group_leave). On failure prints the error and returns its exit
 * code (0 on success). */
int cli_group_join(const char *command, const char *backend, tsr_group **out);
/* Frees the group and shuts the library down (MPI is finalized), reporting on the original
 * stderr a failure (`code` != 0) of a rank other than 0. Returns code. NULL group: returns code. */
int cli_group_leave(const char *command, tsr_group *g, int code);
/* Loads the model at `dir` on `*device` (cap 0 = none), split over `group` (NULL: none), with the
 * progress bar when stderr is a terminal; on failure prints the error and returns its exit code
 * (0 on success). An nccl group's rank holds its model on its own GPU (tsr_group_device): a
 * device left at the default is moved there (*device tells where), another one is refused with
 * exit 2 before anything loads. */
int cli_load_model_in(const char *command, const char *dir, tsr_device *device, uint64_t cap,
                      tsr_group *group, tsr_model **out);

/* Seconds on a monotonic clock. */
double cli_now_s(void);

#endif

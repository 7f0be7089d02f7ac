/* tools/tessera/calibrate.h — what `tessera calibrate`'s two files share: the parsed flags and
 * the results, and the report (calibrate_report.c: the text table, the JSON object, the recipe
 * file). */
#ifndef TSR_TOOLS_CALIBRATE_H
#define TSR_TOOLS_CALIBRATE_H

#include "model_cli.h"

enum { CALIBRATE_MAX_PROMPTS = 256 };

typedef struct {
  const char *dir, *recipe_path;
  const char *texts[CALIBRATE_MAX_PROMPTS]; /* -p */
  const char *ids[CALIBRATE_MAX_PROMPTS];   /* --tokens */
  size_t n_texts, n_ids;
  uint64_t cap;
  double bits_budget; /* 0: no recipe */
  bool json;
  tsr_device device;
  const char *group; /* --group mpi|nccl under mpirun, or NULL */
} calibrate_args;

typedef struct {
  tsr_model_calibration *calibration;
  char *recipe; /* the quantization block, or NULL */
  tsr_backing_snapshot ledger;
  double seconds;
} calibrate_result;

/* Prints the table (or the JSON object) on stdout. */
void calibrate_print(const calibrate_args *a, const calibrate_result *r);
/* Writes the recipe to a->recipe_path through a temporary file renamed into place, so the path
 * holds either the whole recipe or what it held before. */
tsr_status calibrate_write_recipe(const calibrate_args *a, const calibrate_result *r);

#endif

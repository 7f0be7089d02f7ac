/* tools/tessera/demo_model.h — `tessera demo-model`: the small GLM-4.5-MoE-shaped checkpoint
 * `make run` generates with (deterministic random weights in mlx-community's 4-bit layout, and a
 * small byte-level BPE tokenizer), written by tessera itself. */
#ifndef TSR_TOOLS_DEMO_MODEL_H
#define TSR_TOOLS_DEMO_MODEL_H

#include <stddef.h>

#include "cli.h"

enum { DEMO_MERGES = 240 };

/* Ids the config needs from the tokenizer. */
typedef struct {
  int first_special, end_of_text, user, observation, vocab;
} demo_token_ids;

/* Writes DIR/tokenizer.json; fills ids. */
tsr_status demo_write_tokenizer(const char *dir, demo_token_ids *ids);
/* Writes `bytes` to path through a temporary file renamed over it. */
tsr_status demo_write_file(const char *path, const char *bytes, size_t n);

int cli_demo_model(int argc, char **argv);

#endif

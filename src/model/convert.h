/* model/convert.h — what the files of tsr_model_convert share: the converter's state, the
 * sharded safetensors writer, and the config and side files. Internal to src/model. */
#ifndef TSR_MODEL_CONVERT_H
#define TSR_MODEL_CONVERT_H

#include <tessera/tessera.h>

#include "model/glm_config.h"
#include "model/progress.h"

/* Output tensors in shards of at most `shard_limit` bytes (a larger tensor gets one of its own,
 * as mlx-lm's make_shards does), written into `dir` as shard-NNNNN.safetensors and renamed to
 * their final names by conv_writer_finish, which also writes the index. */
typedef struct {
  char *name;
  int shard; /* 0-based */
} conv_entry;

typedef struct {
  const char *dir;
  uint64_t shard_limit;
  char **names; /* the shard being filled */
  tsr_array **arrays;
  size_t n, cap, cap_arrays;
  uint64_t bytes;
  int shards; /* shards written so far */
  conv_entry *entries;
  size_t n_entries, cap_entries;
  uint64_t total_bytes, total_parameters;
} conv_writer;

/* Adds `array` (the reference is taken, also on failure) as `name`: evaluated now (an error
 * names the tensor), the current shard written first when it would pass the limit. */
tsr_status conv_writer_add(conv_writer *w, const char *name, tsr_array *array);
/* Writes the last shard, renames the shards to model.safetensors or
 * model-0000i-of-0000K.safetensors, and writes model.safetensors.index.json. */
tsr_status conv_writer_finish(conv_writer *w);
void conv_writer_free(conv_writer *w);

typedef struct {
  const char *hf_dir;
  const glm_config *cfg;
  tsr_safetensors *in;
  glm_quant quant;   /* quantized = true; mode, bits, group_size resolved */
  glm_config recipe; /* only its per-module overrides are used (none without a recipe) */
  bool *recipe_used; /* [recipe.n_overrides]: which entries matched a module */
  int dtype;         /* the cast target, or -1 for none */
  conv_writer *out;
  progress_bar bar;
} converter;

/* TSR_ERR_INVALID with tsr_quantize's message when it does not take q's parameters. */
tsr_status conv_check_quant(const glm_quant *q);

/* Reads the recipe file at `path` into c->recipe and c->quant (convert_recipe.c): its global
 * parameters and per-module overrides, each checked with conv_check_quant. */
tsr_status conv_recipe_load(converter *c, const char *path);
/* The quantization of module `path`: the recipe's entry for it (marked used), else c->quant. */
glm_quant conv_quant_for(converter *c, const char *path);
/* TSR_ERR_INVALID naming the first recipe entry that matched no module of the checkpoint. */
tsr_status conv_recipe_check_used(const converter *c, const char *recipe_path);
void conv_recipe_free(converter *c);

/* Every tensor of the input, in name order, converted and handed to the writer. */
tsr_status conv_tensors(converter *c);

/* The cast target when the options ask for none (mlx-lm's rule): config.json's torch_dtype when it
 * is float16, bfloat16 or float32 (mlx-lm's rule), else -1. TSR_ERR_IO for a config that does not
 * read. */
tsr_status conv_auto_dtype(const char *hf_dir, int *dtype);
/* `tmp`/config.json: the source's config.json as mlx-lm writes it back (generation_config's
 * eos_token_id merged in, the quantization and quantization_config blocks, keys sorted), plus
 * the top-level rope keys mlx-lm 0.32.2 needs (glm-spec §4.6) when only rope_parameters has them.
 * The blocks hold the recipe's per-module entries after the global parameters, as mlx-lm writes a
 * mixed quantization. TSR_ERR_IO when the source already has a quantization block. */
tsr_status conv_write_config(const char *hf_dir, const char *tmp, const glm_quant *quant,
                             const glm_config *recipe);
/* Copies generation_config.json and the tokenizer files that exist from hf_dir into tmp. */
tsr_status conv_copy_files(const char *hf_dir, const char *tmp);
/* Removes a folder of plain files (the temporary output). */
void conv_remove_dir(const char *dir);

#endif

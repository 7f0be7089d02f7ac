/* tessera/convert.h — a Hugging Face GLM checkpoint to the MLX layout mlx-lm writes.
 *
 * `tsr_model_convert` reads a Hugging Face GLM-4 (`glm4`) or GLM-4.5 (`glm4_moe`) folder
 * (config.json, model.safetensors or shards with their index; bf16, fp16 or fp32) and writes
 * what `mlx_lm.convert -q` writes from it (shared/glm-spec.md §4): every linear layer and the
 * embedding quantized (weight, scales and, for affine, biases), unless its input width is not a
 * multiple of the group size, when it stays float as in mlx-lm; the routed experts stacked into
 * `switch_mlp` tensors [E, out, in]; the router, its correction bias, the norms and the linear
 * biases left float; the MTP layer (index >= num_hidden_layers) dropped; config.json with the
 * `quantization` and `quantization_config` blocks; sharded safetensors (`model.safetensors`, or
 * `model-0000i-of-0000K.safetensors` past the shard size) with model.safetensors.index.json;
 * generation_config.json and the tokenizer files copied.
 *
 *   tsr_convert_options opt = tsr_convert_default_options();   // affine, 4 bits, group 64
 *   opt.progress = true;
 *   tsr_status st = tsr_model_convert("GLM-4-9B-0414", "GLM-4-9B-0414-4bit", &opt);
 *   if (st != TSR_OK) fprintf(stderr, "%s: %s\n", tsr_status_name(st), tsr_last_error());
 *
 * It streams: one output tensor at a time is read (mmapped), stacked, cast and quantized on the
 * CPU, and held until its shard is written, so peak memory stays near one shard. Everything is
 * written into a temporary folder beside the output (`OUT.partial-XXXXXX`) and renamed to OUT at
 * the end, after the result has been loaded back by tessera's own loader: OUT is either a whole
 * checkpoint or absent, also when the process is killed (the temporary folder is then left).
 *
 * Threads: any thread; it blocks until the checkpoint is written. */
#ifndef TESSERA_CONVERT_H
#define TESSERA_CONVERT_H

#include "tessera/base.h"
#include "tessera/quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* All zero is the default (tsr_convert_default_options returns it with nothing else set). */
typedef struct {
  tsr_quant_mode mode;  /* default affine */
  int bits;             /* 0 = the mode's default (affine 4, mxfp4/nvfp4 4, mxfp8 8) */
  int group_size;       /* 0 = the mode's default (affine 64, mxfp4/mxfp8 32, nvfp4 16) */
  bool cast;            /* false: as mlx-lm, cast the float tensors to config.json's torch_dtype
                           when it is float16, bfloat16 or float32, else keep each tensor's own;
                           true: cast them to `dtype`. Before quantization; glm4_moe's
                           e_score_correction_bias is never cast, as in mlx-lm */
  tsr_dtype dtype;      /* with cast: TSR_FLOAT16, TSR_BFLOAT16 or TSR_FLOAT32 */
  uint64_t shard_bytes; /* 0 = mlx-lm's 5 GiB; a tensor larger than it gets a shard of its own */
  bool progress;        /* progress bar on stderr (only when stderr is a terminal) */
  const char *recipe;   /* NULL, or a JSON file holding a `quantization` block (the object itself
                           or {"quantization": {...}}), as `tessera calibrate --recipe` writes:
                           its group_size/bits/mode replace mode, bits and group_size above, and
                           each entry keyed by a module path ("model.layers.0.mlp.down_proj")
                           quantizes that module with its own parameters ({...}) or keeps it
                           float (false). Written into config.json as mlx-lm writes mixed
                           quantization, which mlx-lm and tessera load. */
  uint64_t reserved[7]; /* the recipe pointer took the first: the struct keeps its size */
} tsr_convert_options;

/* affine, 4 bits, group 64, mlx-lm's dtype rule, 5 GiB shards, no progress bar. */
TSR_API tsr_convert_options tsr_convert_default_options(void);

/* Converts the Hugging Face checkpoint folder `hf_dir` into a new folder `out_dir` (opt NULL =
 * defaults). `out_dir` must not exist; its parent must. TSR_ERR_INVALID for NULL arguments, an
 * existing `out_dir`, or bits/group_size/mode that tsr_quantize does not accept (its message,
 * for the recipe's too) or a recipe entry naming a module the checkpoint does not have;
 * TSR_ERR_IO for a recipe file that is missing, not JSON or malformed (naming it);
 * TSR_ERR_IO naming the file and tensor for a missing or malformed config.json or safetensors
 * file, a tensor that is not float (or already quantized: a `quantization` block), a tensor that
 * is not part of the model, or one that is missing or of the wrong shape; TSR_ERR_UNSUPPORTED for
 * a model_type other than glm4 and glm4_moe; TSR_ERR_NOMEM. On failure `out_dir` is not created
 * and the temporary folder is removed. */
TSR_API tsr_status tsr_model_convert(const char *hf_dir, const char *out_dir,
                                     const tsr_convert_options *opt);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_CONVERT_H */

/* model/glm_loader.h — what the weight loader's files share: the loading context, single-tensor
 * and linear-layer reads with their checks, and the progress bar. Internal to src/model. */
#ifndef TSR_MODEL_GLM_LOADER_H
#define TSR_MODEL_GLM_LOADER_H

#include <stdio.h>

#include "model/glm_shard.h"
#include "model/glm_weights.h"
#include "model/progress.h"

typedef struct {
  const glm_config *cfg;
  const glm_shard *shard; /* what this rank holds (everything without tensor parallelism) */
  tsr_safetensors *ckpt;
  tsr_device device;
  glm_weights *w;
  /* progress */
  bool progress;       /* a bar was asked for */
  uint64_t done_bytes; /* bytes of the tensors loaded so far */
  progress_bar bar;
} glm_loader;

/* A range [start, stop) of one axis of a tensor; axis < 0 means the whole tensor. */
typedef struct {
  int axis;
  int64_t start, stop;
} glm_slice;

/* What part of a linear layer a rank holds: all of it, a range of its outputs (column-parallel),
 * of its inputs (row-parallel), or of its stacked experts. */
typedef enum { PART_WHOLE = 0, PART_OUTPUTS, PART_INPUTS, PART_EXPERTS } glm_part_kind;
typedef struct {
  glm_part_kind kind;
  int64_t start, count;
} glm_part;

/* One tensor as stored, its shape checked against `shape` (ndim entries). */
tsr_status loader_tensor(glm_loader *ld, const char *name, const int64_t *shape, int ndim,
                         tsr_array **out);
/* Only `slice` of it (NULL: all), its whole shape checked first; only the slice is read. */
tsr_status loader_tensor_slice(glm_loader *ld, const char *name, const int64_t *shape, int ndim,
                               const glm_slice *slice, tsr_array **out);
/* A float tensor (F32/F16/BF16) as stored, its dtype checked before its shape. */
tsr_status loader_float_tensor(glm_loader *ld, const char *name, const int64_t *shape, int ndim,
                               tsr_array **out);
/* Only `slice` of a float tensor (NULL: all), its dtype checked before its shape. */
tsr_status loader_float_tensor_slice(glm_loader *ld, const char *name, const int64_t *shape,
                                     int ndim, const glm_slice *slice, tsr_array **out);
/* TSR_ERR_IO: "load: <file>: tensor '<name>' is <dtype>, <want>". */
tsr_status loader_dtype_error(glm_loader *ld, const char *name, const char *want);
/* A float tensor (F32/F16/BF16) of the given shape converted to float32 and evaluated. */
tsr_status loader_float32(glm_loader *ld, const char *name, const int64_t *shape, int ndim,
                          tsr_array **out);
/* The linear layer at module path `path` ("model.layers.0.self_attn.q_proj"): float or quantized
 * by the config's rule, experts > 0 for a stacked [experts, out, in] layer, its own bias when
 * `has_bias`. */
tsr_status loader_linear(glm_loader *ld, const char *path, int64_t experts, int64_t out_features,
                         int64_t in_features, bool has_bias, glm_linear *lin);
/* The same, only `part` of it (its own bias sliced with the outputs); lin's out_features and
 * in_features are the part's. A row-parallel part of a quantized layer must cover whole groups
 * (TSR_ERR_INVALID naming the module otherwise). */
tsr_status loader_linear_part(glm_loader *ld, const char *path, int64_t experts,
                              int64_t out_features, int64_t in_features, bool has_bias,
                              glm_part part, glm_linear *lin);
/* How module `path` is stored: float, or quantized with the parameters that apply to it. */
glm_quant loader_quant_of(glm_loader *ld, const char *path);
void linear_free(glm_linear *lin);

/* The experts of an MoE layer, stacked, from switch_mlp (MLX), experts.{e} (HF) or fused
 * experts.gate_up_proj / down_proj (transformers 5 re-saved). */
tsr_status loader_experts(glm_loader *ld, const char *layer_prefix, glm_moe *moe);

void loader_progress_begin(glm_loader *ld);
void loader_progress_tick(glm_loader *ld, uint64_t bytes);
void loader_progress_end(glm_loader *ld);

#endif

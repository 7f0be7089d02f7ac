/* model/glm_loader.h — what the weight loader's files share: the loading context, single-tensor
 * and linear-layer reads with their checks, and the progress bar. Internal to src/model. */
#ifndef TSR_MODEL_GLM_LOADER_H
#define TSR_MODEL_GLM_LOADER_H

#include <stdio.h>

#include "model/glm_weights.h"
#include "model/progress.h"

typedef struct {
  const glm_config *cfg;
  tsr_safetensors *ckpt;
  tsr_device device;
  glm_weights *w;
  /* progress */
  bool progress;       /* a bar was asked for */
  uint64_t done_bytes; /* bytes of the tensors loaded so far */
  progress_bar bar;
} glm_loader;

/* One tensor as stored, its shape checked against `shape` (ndim entries). */
tsr_status loader_tensor(glm_loader *ld, const char *name, const int64_t *shape, int ndim,
                         tsr_array **out);
/* A float tensor (F32/F16/BF16) as stored, its dtype checked before its shape. */
tsr_status loader_float_tensor(glm_loader *ld, const char *name, const int64_t *shape, int ndim,
                               tsr_array **out);
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
void linear_free(glm_linear *lin);

/* The experts of an MoE layer, stacked, from switch_mlp (MLX), experts.{e} (HF) or fused
 * experts.gate_up_proj / down_proj (transformers 5 re-saved). */
tsr_status loader_experts(glm_loader *ld, const char *layer_prefix, glm_moe *moe);

void loader_progress_begin(glm_loader *ld);
void loader_progress_tick(glm_loader *ld, uint64_t bytes);
void loader_progress_end(glm_loader *ld);

#endif

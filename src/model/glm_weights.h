/* model/glm_weights.h — a GLM model's weights as arrays, loaded from a checkpoint in the MLX-LM
 * layout (quantized linears as .weight/.scales/.biases, experts stacked as switch_mlp) or the
 * Hugging Face layout (float linears, experts one by one), glm-spec §3–4. Norms, linear biases,
 * the router and its correction bias are float32; linear weights keep the checkpoint's dtype.
 * Experts are always held stacked [E, out, in]. */
#ifndef TSR_MODEL_GLM_WEIGHTS_H
#define TSR_MODEL_GLM_WEIGHTS_H

#include <tessera/tessera.h>

#include "model/glm_config.h"
#include "model/glm_shard.h"

/* A linear layer y = x W^T (+ bias): W float [..., out, in] or quantized (w_q/scales/biases). */
typedef struct {
  tsr_array *weight;
  tsr_array *scales, *biases; /* quantized only (biases: affine only) */
  tsr_array *bias;            /* the layer's own bias, float32 [out], or NULL */
  glm_quant quant;
  int64_t out_features, in_features;
} glm_linear;

typedef struct {
  glm_linear gate_up; /* glm4 dense: fused [2I, H], gate rows first */
  glm_linear gate, up, down;
  bool fused;
} glm_mlp;

typedef struct {
  tsr_array *router;          /* float32 [E, H] */
  tsr_array *correction_bias; /* float32 [E] */
  glm_linear gate, up, down;  /* stacked [E, Im, H], [E, Im, H], [E, H, Im] */
  glm_mlp shared;             /* whole, sharded, or absent on this rank (model/glm_shard.h) */
  bool has_shared;            /* this rank adds a shared expert's output */
} glm_moe;

typedef struct {
  tsr_array *input_norm;          /* input_layernorm */
  tsr_array *post_self_attn_norm; /* glm4 only: normalizes the attention output */
  tsr_array *pre_mlp_norm;        /* post_attention_layernorm (the name misleads) */
  tsr_array *post_mlp_norm;       /* glm4 only: normalizes the MLP output */
  glm_linear q, k, v, o;
  tsr_array *q_norm, *k_norm; /* use_qk_norm only, float32 [head_dim] */
  bool is_moe;
  glm_mlp mlp;
  glm_moe moe;
} glm_layer;

typedef struct {
  glm_linear embed; /* [V, H]: rows are looked up (dequantized when quantized) */
  glm_linear lm_head;
  tsr_array *final_norm;
  glm_layer *layers;
  int64_t n_layers;
  uint64_t bytes;          /* weight bytes held (the checkpoint's tensors as loaded) */
  uint64_t streamed_bytes; /* what one decode step reads: all but an untied embedding table */
} glm_weights;

typedef struct tsr_safetensors tsr_safetensors;

/* Loads every weight the config calls for, on `device`, evaluated (so the bytes are on the
 * ledger): only this rank's part of each under `shard` (NULL: all of it; model/glm_shard.h).
 * TSR_ERR_IO names the tensor and file for a missing tensor, a wrong shape or dtype, or quantized
 * shapes that disagree with the bits and group size that apply. On failure nothing is left held.
 * `progress` draws a bar on stderr when it is a terminal. */
tsr_status glm_weights_load(glm_weights *w, const glm_config *cfg, const glm_shard *shard,
                            tsr_safetensors *ckpt, tsr_device device, bool progress);
void glm_weights_free(glm_weights *w);

#endif

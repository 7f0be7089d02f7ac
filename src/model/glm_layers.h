/* model/glm_layers.h — the pieces of a GLM forward pass as graph-building functions (glm-spec
 * §2): linear layers, the embedding lookup, attention with the KV cache, the MLPs and the MoE
 * block. Each takes and returns float32 activations [T, features]. Internal to src/model. */
#ifndef TSR_MODEL_GLM_LAYERS_H
#define TSR_MODEL_GLM_LAYERS_H

#include "model/glm_model.h"
#include "model/graph.h"

/* x [..., in] -> [..., out]: x W^T (+ bias), quantized or float. */
tsr_array *layer_linear(glm_graph *g, const glm_linear *lin, tsr_array *x);
/* ids [T] int32 -> rows of the embedding [T, H], dequantized when quantized. */
tsr_array *layer_embed(glm_graph *g, const glm_linear *embed, tsr_array *ids);
/* Attention over x [T, H] (already normed) at positions cache->length.., writing the layer's keys
 * and values into the cache (the cache's arrays are replaced by the updated ones). Under tensor
 * parallelism: this rank's heads only, the output o_proj's partial sum (all-summed by the
 * caller). */
tsr_array *layer_attention(glm_graph *g, const tsr_model *m, const glm_layer *layer,
                           glm_cache *cache, int64_t index, tsr_array *x);
/* The dense MLP: fused gate_up (glm4) or separate gate/up/down. */
tsr_array *layer_mlp(glm_graph *g, const glm_mlp *mlp, tsr_array *x);
/* The MoE block (router on the host, routed experts gathered, the shared expert added). Evaluates
 * the router's logits, so it synchronizes with the stream. Under tensor parallelism: every token
 * routed, only this rank's experts (and its part of the shared expert) computed, the partial sum
 * returned (all-summed by the caller). */
tsr_array *layer_moe(glm_graph *g, tsr_model *m, const glm_moe *moe, int64_t index, tsr_array *x);

/* Host-side routing of one token (glm-spec §2.5): `scores` sigmoid scores [E], `bias` the
 * correction bias [E]; writes k expert ids ascending and their weights. `scratch` holds 2E
 * floats. */
void moe_route_token(const glm_config *cfg, const float *scores, const float *bias, float *scratch,
                     int32_t *experts, float *weights);

#endif

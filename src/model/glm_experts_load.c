/* model/glm_experts_load.c — an MoE layer's routed experts, always held stacked [E, out, in]:
 * MLX's switch_mlp (stacked on disk, quantized or float), Hugging Face's experts.{e} (stacked
 * here, one copy), or transformers 5's fused experts.gate_up_proj [E, 2 Im, H] and
 * experts.down_proj [E, H, Im] (sliced, no copy). */
#include <stdlib.h>
#include <string.h>

#include "model/glm_loader.h"

/* experts.{first..first+count-1}.<proj>.weight (this rank's) stacked along a new first axis and
 * evaluated. */
static tsr_status stack_hf_experts(glm_loader *ld, const char *prefix, const char *proj,
                                   int64_t out_features, int64_t in_features, glm_linear *lin) {
  int64_t experts = ld->shard->experts, first = ld->shard->first_expert;
  int64_t shape[2] = {out_features, in_features};
  tsr_array **parts = calloc((size_t)experts, sizeof *parts);
  if (!parts) return tsr_error_set(TSR_ERR_NOMEM, "load: out of memory stacking %s", prefix);
  tsr_status st = TSR_OK;
  char name[512];
  for (int64_t e = 0; e < experts && st == TSR_OK; e++) {
    tsr_array *one = NULL;
    snprintf(name, sizeof name, "%s.experts.%lld.%s.weight", prefix, (long long)(first + e), proj);
    st = loader_float_tensor(ld, name, shape, 2, &one);
    if (st == TSR_OK && e > 0 && tsr_array_dtype(one) != tsr_array_dtype(parts[0]))
      st = loader_dtype_error(ld, name, "the dtype of expert 0 was expected");
    if (st == TSR_OK) st = tsr_expand_dims(&parts[e], one, 0, NULL);
    tsr_array_release(one);
  }
  if (st == TSR_OK) st = tsr_concatenate(&lin->weight, parts, (int)experts, 0, NULL);
  if (st == TSR_OK) st = tsr_eval(&lin->weight, 1);
  for (int64_t e = 0; e < experts; e++)
    tsr_array_release(parts[e]);
  free(parts);
  return st;
}

/* rows [begin, end) of axis 1 of a fused [E, rows, in] tensor. */
static tsr_status fused_rows(tsr_array *fused, int64_t begin, int64_t end, tsr_array **out) {
  int64_t start[2] = {0, begin}, stop[2] = {tsr_array_dim(fused, 0), end};
  return tsr_slice(out, fused, start, stop, NULL, 2, NULL);
}

static tsr_status load_fused(glm_loader *ld, const char *prefix, glm_moe *moe) {
  const glm_config *c = ld->cfg;
  int64_t e = c->n_routed_experts, im = c->moe_intermediate_size, h = c->hidden_size;
  char name[512];
  tsr_array *fused = NULL;
  int64_t gate_up_shape[3] = {e, 2 * im, h}, down_shape[3] = {e, h, im};
  const glm_shard *sh = ld->shard;
  glm_slice mine = {0, sh->first_expert, sh->first_expert + sh->experts};
  snprintf(name, sizeof name, "%s.experts.gate_up_proj", prefix);
  tsr_status st = loader_float_tensor_slice(ld, name, gate_up_shape, 3, &mine, &fused);
  if (st == TSR_OK) st = fused_rows(fused, 0, im, &moe->gate.weight);
  if (st == TSR_OK) st = fused_rows(fused, im, 2 * im, &moe->up.weight);
  tsr_array_release(fused);
  snprintf(name, sizeof name, "%s.experts.down_proj", prefix);
  if (st == TSR_OK)
    st = loader_float_tensor_slice(ld, name, down_shape, 3, &mine, &moe->down.weight);
  return st;
}

static void set_dims(glm_linear *lin, int64_t out_features, int64_t in_features) {
  lin->out_features = out_features;
  lin->in_features = in_features;
}

tsr_status loader_experts(glm_loader *ld, const char *prefix, glm_moe *moe) {
  const glm_config *c = ld->cfg;
  int64_t e = c->n_routed_experts, im = c->moe_intermediate_size, h = c->hidden_size;
  char name[512], path[512];
  snprintf(name, sizeof name, "%s.switch_mlp.gate_proj.weight", prefix);
  if (tsr_safetensors_has(ld->ckpt, name)) {
    static const char *const projs[3] = {"gate_proj", "up_proj", "down_proj"};
    glm_linear *lins[3] = {&moe->gate, &moe->up, &moe->down};
    glm_part mine = {PART_EXPERTS, ld->shard->first_expert, ld->shard->experts};
    tsr_status st = TSR_OK;
    for (int i = 0; i < 3 && st == TSR_OK; i++) {
      snprintf(path, sizeof path, "%s.switch_mlp.%s", prefix, projs[i]);
      st = loader_linear_part(ld, path, e, i == 2 ? h : im, i == 2 ? im : h, false, mine, lins[i]);
    }
    return st;
  }
  set_dims(&moe->gate, im, h);
  set_dims(&moe->up, im, h);
  set_dims(&moe->down, h, im);
  snprintf(name, sizeof name, "%s.experts.gate_up_proj", prefix);
  if (tsr_safetensors_has(ld->ckpt, name)) return load_fused(ld, prefix, moe);
  tsr_status st = stack_hf_experts(ld, prefix, "gate_proj", im, h, &moe->gate);
  if (st == TSR_OK) st = stack_hf_experts(ld, prefix, "up_proj", im, h, &moe->up);
  if (st == TSR_OK) st = stack_hf_experts(ld, prefix, "down_proj", h, im, &moe->down);
  return st;
}

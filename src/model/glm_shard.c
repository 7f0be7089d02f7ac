/* model/glm_shard.c — the tensor-parallel split of a GLM model (model/glm_shard.h): which part of
 * each kind of weight a rank holds, and the checks that say why a model cannot be split. Nothing
 * here loads or computes. */
#include "model/glm_shard.h"

static tsr_status indivisible(const char *what, int64_t count, int ranks) {
  return tsr_error_set(
      TSR_ERR_INVALID, "tensor parallel: %s %lld cannot be split over %d ranks (%lld %% %d = %lld)",
      what, (long long)count, ranks, (long long)count, ranks, (long long)(count % ranks));
}

/* Key/value heads: split when the ranks divide them, else replicated, one per rank, when they
 * divide the ranks (rank r holds head r / (ranks / kv_heads), the one its query heads read). */
static tsr_status plan_kv_heads(glm_shard *s, const glm_config *cfg) {
  int64_t kv = cfg->num_kv_heads, ranks = s->ranks;
  if (kv % ranks == 0) {
    s->kv_heads = kv / ranks;
    s->first_kv_head = s->rank * s->kv_heads;
    return TSR_OK;
  }
  if (ranks % kv != 0)
    return tsr_error_set(TSR_ERR_INVALID,
                         "tensor parallel: num_key_value_heads %lld and %d ranks: one must divide "
                         "the other (heads are split, or replicated over groups of ranks)",
                         (long long)kv, s->ranks);
  s->kv_heads = 1;
  s->first_kv_head = s->rank / (ranks / kv);
  return TSR_OK;
}

static bool has_dense_layers(const glm_config *cfg) {
  return cfg->kind == GLM_DENSE || cfg->first_k_dense_replace > 0;
}

tsr_status glm_shard_plan(glm_shard *s, const glm_config *cfg, int rank, int ranks) {
  *s = (glm_shard){.rank = rank, .ranks = ranks};
  if (cfg->num_heads % ranks != 0) return indivisible("num_attention_heads", cfg->num_heads, ranks);
  s->heads = cfg->num_heads / ranks;
  s->first_head = rank * s->heads;
  tsr_status st = plan_kv_heads(s, cfg);
  if (st != TSR_OK) return st;
  if (has_dense_layers(cfg) && cfg->intermediate_size % ranks != 0)
    return indivisible("intermediate_size", cfg->intermediate_size, ranks);
  if (cfg->kind == GLM_MOE) {
    if (cfg->n_routed_experts % ranks != 0)
      return indivisible("n_routed_experts", cfg->n_routed_experts, ranks);
    s->experts = cfg->n_routed_experts / ranks;
    s->first_expert = rank * s->experts;
  }
  s->vocab_split = ranks > 1 && cfg->vocab_size % ranks == 0; /* else lm_head is replicated */
  s->vocab_rows = s->vocab_split ? cfg->vocab_size / ranks : cfg->vocab_size;
  s->first_vocab = s->vocab_split ? rank * s->vocab_rows : 0;
  return TSR_OK;
}

bool glm_shard_columns_split(const glm_shard *s, int64_t in_features, const glm_quant *q) {
  if (in_features % s->ranks != 0) return false;
  int64_t part = in_features / s->ranks;
  if (!q->quantized) return true;
  return part % q->group_size == 0 && (part * q->bits) % 32 == 0;
}

tsr_status glm_shard_columns_error(const glm_shard *s, const char *path, int64_t in_features,
                                   const glm_quant *q) {
  if (in_features % s->ranks != 0 || !q->quantized)
    return tsr_error_set(TSR_ERR_INVALID,
                         "tensor parallel: %s: its %lld inputs cannot be split over %d ranks", path,
                         (long long)in_features, s->ranks);
  int64_t part = in_features / s->ranks;
  return tsr_error_set(TSR_ERR_INVALID,
                       "tensor parallel: %s: %lld inputs over %d ranks give %lld per rank, which "
                       "is not a whole number of quantization groups (group_size %d, bits %d): a "
                       "quantized row-parallel layer is split at group boundaries",
                       path, (long long)in_features, s->ranks, (long long)part, q->group_size,
                       q->bits);
}

/* model/glm_shard.h — how a GLM model is split over the ranks of a tensor-parallel group: which
 * query and key/value heads, MLP columns, experts and vocabulary rows this rank holds, and the
 * checks that a model can be split that many ways (as TSR_ERR_INVALID naming the tensor or key
 * and the values). The rules (Megatron-style, glm-spec §2):
 *   - q/k/v are column-parallel (this rank's heads' rows), o_proj row-parallel (the same heads'
 *     input columns); the attention output is all-summed. Key/value heads are split when the
 *     ranks divide them and replicated when the heads divide the ranks: rank r then holds kv head
 *     r / (ranks / kv_heads), the one its query heads read.
 *   - dense MLPs: gate/up column-parallel, down row-parallel, all-summed.
 *   - MoE: every rank routes every token and holds experts [r E/N, (r+1) E/N); the shared expert
 *     is sharded like a dense MLP when its width splits at the quantization groups of its
 *     down_proj, else held whole by rank 0 alone; routed and shared parts meet in one all-sum.
 *   - embedding replicated (a lookup reads one row per token); lm_head vocabulary-sharded and
 *     the logits all-gathered, so every rank has all of them, when the ranks divide the
 *     vocabulary; else replicated (every rank computes all the logits: `make run`'s demo model
 *     has 355 entries).
 * A quantized row-parallel layer is split at group boundaries of its packed input axis. Without
 * a group the plan is one rank holding everything, and the forward pass is the same code. */
#ifndef TSR_MODEL_GLM_SHARD_H
#define TSR_MODEL_GLM_SHARD_H

#include "model/glm_config.h"

typedef struct {
  int rank, ranks;                 /* 0 and 1 without tensor parallelism */
  int64_t heads, first_head;       /* query heads held */
  int64_t kv_heads, first_kv_head; /* key/value heads held */
  int64_t experts, first_expert;   /* routed experts held */
  int64_t vocab_rows, first_vocab; /* lm_head rows held */
  bool vocab_split;                /* lm_head sharded (the logits gathered), not replicated */
} glm_shard;

/* The plan for `rank` of `ranks` (>= 1). TSR_ERR_INVALID ("tensor parallel: ...") when the
 * heads, the key/value heads, the dense MLP width or the experts cannot be split that many
 * ways. */
tsr_status glm_shard_plan(glm_shard *s, const glm_config *cfg, int rank, int ranks);

/* Whether a row-parallel linear of `in_features` inputs quantized by `q` (or float) splits
 * evenly over s->ranks at its group and 32-bit word boundaries. */
bool glm_shard_columns_split(const glm_shard *s, int64_t in_features, const glm_quant *q);

/* TSR_ERR_INVALID naming module `path` and why its `in_features` inputs cannot be split over
 * s->ranks (call when glm_shard_columns_split is false). */
tsr_status glm_shard_columns_error(const glm_shard *s, const char *path, int64_t in_features,
                                   const glm_quant *q);

#endif

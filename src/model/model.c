/* model/model.c — tsr_model: loading a checkpoint folder (config, weights, tokenizer), stateless
 * logits, text encoding and decoding, GLM's chat format and stop tokens. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/glm_model.h"

tsr_model_options tsr_model_default_options(void) {
  tsr_model_options opt;
  memset(&opt, 0, sizeof opt);
  opt.device = tsr_default_device();
  return opt;
}

static tsr_status load_tokenizer(tsr_model *m, const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  struct stat info;
  if (stat(path, &info) != 0) return TSR_OK; /* optional: token ids still work */
  return tsr_tokenizer_load(&m->tokenizer, path);
}

static tsr_status install_cap(const tsr_model_options *opt) {
  if (opt->backing_cap == 0) return TSR_OK;
  return tsr_calibration_install_cap(opt->device, opt->backing_cap);
}

/* This rank's part of the model: everything without a group. */
static tsr_status plan_shard(tsr_model *m, tsr_group *group) {
  int rank = group ? tsr_group_rank(group) : 0, ranks = group ? tsr_group_size(group) : 1;
  if (ranks < 1) return tsr_error_set(TSR_ERR_INVALID, "model_load: the group has %d ranks", ranks);
  m->group = group;
  return glm_shard_plan(&m->shard, &m->cfg, rank, ranks);
}

static tsr_status load_parts(tsr_model *m, const char *dir, const tsr_model_options *opt) {
  tsr_status st = glm_config_load(&m->cfg, dir);
  if (st != TSR_OK) return st;
  if ((st = plan_shard(m, opt->group)) != TSR_OK) return st;
  if ((st = install_cap(opt)) != TSR_OK) return st;
  tsr_safetensors *ckpt = NULL;
  if ((st = tsr_safetensors_open(&ckpt, dir)) != TSR_OK) return st;
  st = glm_weights_load(&m->weights, &m->cfg, &m->shard, ckpt, opt->device, opt->progress);
  tsr_safetensors_close(ckpt);
  if (st != TSR_OK) return st;
  return load_tokenizer(m, dir);
}

tsr_status tsr_model_load(tsr_model **out, const char *dir, const tsr_model_options *opt) {
  if (!out || !dir)
    return tsr_error_set(TSR_ERR_INVALID, "model_load: out and dir must not be NULL");
  tsr_model_options defaults = tsr_model_default_options();
  if (!opt) opt = &defaults;
  struct stat info;
  if (stat(dir, &info) != 0 || !S_ISDIR(info.st_mode))
    return tsr_error_set(TSR_ERR_IO, "model_load: %s is not a folder", dir);
  tsr_model *m = calloc(1, sizeof *m);
  if (!m) return tsr_error_set(TSR_ERR_NOMEM, "model_load: out of memory");
  m->device = opt->device;
  m->progress = opt->progress;
  tsr_status st = load_parts(m, dir, opt);
  if (st != TSR_OK) {
    /* Name the checkpoint where the message does not already (a missing tensor, a bad shape). */
    if (!strstr(tsr_last_error(), dir)) st = tsr_error_set(st, "%s: %s", dir, tsr_last_error());
    tsr_model_free(m);
    return st;
  }
  *out = m;
  return TSR_OK;
}

void tsr_model_free(tsr_model *m) {
  if (!m) return;
  glm_weights_free(&m->weights);
  glm_config_free(&m->cfg);
  tsr_tokenizer_free(m->tokenizer);
  free(m);
}

int64_t tsr_model_vocab_size(const tsr_model *m) {
  return m ? m->cfg.vocab_size : -1;
}

bool tsr_model_is_stop_token(const tsr_model *m, int32_t token) {
  for (int i = 0; m && i < m->cfg.n_stop_tokens; i++)
    if (m->cfg.stop_tokens[i] == token) return true;
  return false;
}

tsr_status tsr_model_logits(tsr_model *m, const int32_t *tokens, size_t n, float *dst,
                            size_t dst_len) {
  if (!m || !tokens || !dst || n == 0)
    return tsr_error_set(TSR_ERR_INVALID, "model_logits: NULL argument or no tokens");
  if (dst_len != n * (size_t)m->cfg.vocab_size)
    return tsr_error_set(TSR_ERR_INVALID, "model_logits: dst_len %zu, want %zu tokens x %lld = %zu",
                         dst_len, n, (long long)m->cfg.vocab_size, n * (size_t)m->cfg.vocab_size);
  glm_cache cache;
  tsr_status st = glm_cache_new(&cache, m, (int64_t)n);
  if (st != TSR_OK) return st;
  st = glm_forward(m, &cache, tokens, n, true, dst);
  glm_cache_free(&cache);
  return st;
}

uint64_t tsr_model_weight_bytes(const tsr_model *m) {
  return m ? m->weights.bytes : 0;
}

uint64_t tsr_model_decode_bytes(const tsr_model *m) {
  return m ? m->weights.streamed_bytes : 0;
}

bool tsr_model_has_tokenizer(const tsr_model *m) {
  return m && m->tokenizer;
}

static tsr_status need_tokenizer(const tsr_model *m, const char *what) {
  if (!m) return tsr_error_set(TSR_ERR_INVALID, "%s: model is NULL", what);
  if (!m->tokenizer)
    return tsr_error_set(TSR_ERR_STATE, "%s: the checkpoint has no tokenizer.json (give token ids)",
                         what);
  return TSR_OK;
}

tsr_status tsr_model_encode(tsr_model *m, const char *text, int32_t **tokens, size_t *n) {
  tsr_status st = need_tokenizer(m, "model_encode");
  return st != TSR_OK ? st : tsr_tokenizer_encode(m->tokenizer, text, tokens, n);
}

tsr_status tsr_model_decode(tsr_model *m, const int32_t *tokens, size_t n, char **text) {
  tsr_status st = need_tokenizer(m, "model_decode");
  return st != TSR_OK ? st : tsr_tokenizer_decode(m->tokenizer, tokens, n, text);
}

void tsr_testing_model_routing_hook(tsr_model *m, tsr_testing_routing_hook hook, void *ctx) {
  if (!m) return;
  m->routing_hook = hook;
  m->routing_ctx = ctx;
}

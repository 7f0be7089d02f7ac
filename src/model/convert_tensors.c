/* model/convert_tensors.c — what becomes of each tensor of a Hugging Face GLM checkpoint in the
 * MLX layout (glm-spec §3, §4.1–4.3): linear layers and the embedding are quantized when their
 * input width is a multiple of the group size (else left float, as mlx-lm's quantize_model
 * does), experts.{e}.<proj>.weight are stacked into switch_mlp.<proj> (transformers 5's fused
 * experts.gate_up_proj / down_proj are split into it), the MTP layer is dropped, and everything
 * else (norms, linear biases, the router and its correction bias) is copied, cast to the target
 * dtype except the correction bias. A name that belongs to none of these is an error, as it is
 * for mlx-lm's strict load. One output tensor is built at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/convert.h"

typedef enum {
  ROLE_FLOAT,         /* copied, cast */
  ROLE_FLOAT_NO_CAST, /* copied as is: e_score_correction_bias */
  ROLE_LINEAR,        /* quantized when its width allows */
  ROLE_EXPERT,        /* experts.{e}.<proj>.weight: stacked at e = 0 */
  ROLE_FUSED_GATE_UP, /* experts.gate_up_proj [E, 2 Im, H] */
  ROLE_FUSED_DOWN,    /* experts.down_proj [E, H, Im] */
  ROLE_SKIP,          /* MTP layer */
} tensor_role;

typedef struct {
  tensor_role role;
  long long layer;  /* -1 outside model.layers */
  long long expert; /* ROLE_EXPERT */
  char proj[16];    /* ROLE_EXPERT: gate_proj, up_proj, down_proj */
} tensor_kind;

static bool in_list(const char *s, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(s, list[i]) == 0) return true;
  return false;
}

/* What follows "model.layers.N." in a layer tensor's name. */
static tensor_role layer_role(const char *rest, tensor_kind *k) {
  static const char *const floats[] = {
      "input_layernorm.weight",          "post_attention_layernorm.weight",
      "post_self_attn_layernorm.weight", "post_mlp_layernorm.weight",
      "self_attn.q_norm.weight",         "self_attn.k_norm.weight",
      "self_attn.q_proj.bias",           "self_attn.k_proj.bias",
      "self_attn.v_proj.bias",           "mlp.gate.weight"};
  static const char *const linears[] = {"self_attn.q_proj.weight",
                                        "self_attn.k_proj.weight",
                                        "self_attn.v_proj.weight",
                                        "self_attn.o_proj.weight",
                                        "mlp.gate_up_proj.weight",
                                        "mlp.gate_proj.weight",
                                        "mlp.up_proj.weight",
                                        "mlp.down_proj.weight",
                                        "mlp.shared_experts.gate_proj.weight",
                                        "mlp.shared_experts.up_proj.weight",
                                        "mlp.shared_experts.down_proj.weight"};
  if (in_list(rest, floats, sizeof floats / sizeof floats[0])) return ROLE_FLOAT;
  if (in_list(rest, linears, sizeof linears / sizeof linears[0])) return ROLE_LINEAR;
  if (strcmp(rest, "mlp.gate.e_score_correction_bias") == 0) return ROLE_FLOAT_NO_CAST;
  if (strcmp(rest, "mlp.experts.gate_up_proj") == 0) return ROLE_FUSED_GATE_UP;
  if (strcmp(rest, "mlp.experts.down_proj") == 0) return ROLE_FUSED_DOWN;
  int used = 0;
  char proj[16] = "";
  if (sscanf(rest, "mlp.experts.%lld.%15[a-z_].weight%n", &k->expert, proj, &used) == 2 &&
      rest[used] == '\0' && k->expert >= 0 &&
      (strcmp(proj, "gate_proj") == 0 || strcmp(proj, "up_proj") == 0 ||
       strcmp(proj, "down_proj") == 0)) {
    memcpy(k->proj, proj, sizeof proj);
    return ROLE_EXPERT;
  }
  return (tensor_role)-1;
}

static tsr_status classify(const converter *c, const tsr_tensor_info *info, tensor_kind *k) {
  *k = (tensor_kind){.role = ROLE_FLOAT, .layer = -1};
  const char *name = info->name;
  int used = 0;
  if (strcmp(name, "model.embed_tokens.weight") == 0 || strcmp(name, "lm_head.weight") == 0)
    k->role = ROLE_LINEAR;
  else if (strcmp(name, "model.norm.weight") == 0)
    k->role = ROLE_FLOAT;
  else if (sscanf(name, "model.layers.%lld.%n", &k->layer, &used) == 1 && used > 0 && k->layer >= 0)
    k->role = k->layer >= c->cfg->num_layers ? ROLE_SKIP : layer_role(name + used, k);
  else
    k->role = (tensor_role)-1;
  if (k->role == (tensor_role)-1)
    return tsr_error_set(TSR_ERR_IO, "convert: %s: tensor '%s' is not part of a GLM model",
                         info->file, name);
  if (k->role == ROLE_EXPERT && k->expert >= c->cfg->n_routed_experts)
    return tsr_error_set(TSR_ERR_IO,
                         "convert: %s: tensor '%s' names expert %lld, but config.json has "
                         "n_routed_experts %lld",
                         info->file, name, k->expert, (long long)c->cfg->n_routed_experts);
  return TSR_OK;
}

static bool is_float(tsr_dtype t) {
  return t == TSR_FLOAT32 || t == TSR_FLOAT16 || t == TSR_BFLOAT16;
}

/* The input tensor `name` as a CPU array (mmapped), after checking it is float. */
static tsr_status read_float(converter *c, const char *name, tsr_array **out) {
  tsr_tensor_info info;
  tsr_status st = tsr_safetensors_find(c->in, name, &info);
  if (st != TSR_OK)
    return tsr_error_set(TSR_ERR_IO, "convert: tensor '%s' is missing from %s", name, c->hf_dir);
  if (!is_float(info.dtype))
    return tsr_error_set(TSR_ERR_IO,
                         "convert: %s: tensor '%s' is %s; a float tensor (F32, F16, BF16) was "
                         "expected",
                         info.file, name, tsr_dtype_name(info.dtype));
  st = tsr_safetensors_load(out, c->in, name, (tsr_device){TSR_CPU, 0});
  if (st == TSR_OK) progress_tick(&c->bar, info.nbytes);
  return st;
}

static tsr_status cast(const converter *c, tsr_array **a) {
  if (c->dtype < 0 || tsr_array_dtype(*a) == (tsr_dtype)c->dtype) return TSR_OK;
  tsr_array *converted = NULL;
  tsr_status st = tsr_astype(&converted, *a, (tsr_dtype)c->dtype, NULL);
  tsr_array_release(*a);
  *a = converted;
  return st;
}

static void parameters_add(converter *c, tsr_array *w) {
  c->out->total_parameters += (uint64_t)tsr_array_size(w);
}

static tsr_status add_named(converter *c, const char *path, const char *suffix, tsr_array *a) {
  char name[512];
  snprintf(name, sizeof name, "%s.%s", path, suffix);
  return conv_writer_add(c->out, name, a);
}

/* A linear layer as stored: weight (packed or float), scales and biases (NULL when absent). */
typedef struct {
  tsr_array *part[3];
} linear_parts;

static const char *const part_names[3] = {"weight", "scales", "biases"};

static void parts_release(linear_parts *p) {
  for (int i = 0; i < 3; i++)
    tsr_array_release(p->part[i]);
  memset(p, 0, sizeof *p);
}

/* w (taken) cast, then quantized as the recipe (or the options) say for `path`, when its input
 * width is a multiple of that group size. */
static tsr_status quantize_linear(converter *c, const char *path, tsr_array *w, linear_parts *out) {
  memset(out, 0, sizeof *out);
  tsr_status st = cast(c, &w);
  if (st != TSR_OK) {
    tsr_array_release(w);
    return st;
  }
  parameters_add(c, w);
  glm_quant q = conv_quant_for(c, path);
  if (!q.quantized || tsr_array_ndim(w) < 2 || tsr_array_dim(w, -1) % q.group_size != 0) {
    out->part[0] = w;
    return TSR_OK;
  }
  st = tsr_quantize(&out->part[0], &out->part[1], &out->part[2], w, q.group_size, q.bits, q.mode,
                    NULL);
  tsr_array_release(w);
  if (st != TSR_OK) return tsr_error_set(st, "convert: %s: %s", path, tsr_last_error());
  return TSR_OK;
}

/* path.weight, path.scales, path.biases (those present) to the writer; p is emptied. */
static tsr_status emit_parts(converter *c, const char *path, linear_parts *p) {
  tsr_status st = TSR_OK;
  for (int i = 0; i < 3; i++) {
    if (p->part[i] && st == TSR_OK)
      st = add_named(c, path, part_names[i], p->part[i]);
    else
      tsr_array_release(p->part[i]);
    p->part[i] = NULL;
  }
  return st;
}

/* The linear layer at module path `path` with float weight w (taken). */
static tsr_status emit_linear(converter *c, const char *path, tsr_array *w) {
  linear_parts p;
  tsr_status st = quantize_linear(c, path, w, &p);
  return st == TSR_OK ? emit_parts(c, path, &p) : st;
}

/* Expert e's weight, checked against expert 0's dtype and shape (`first`). */
static tsr_status read_expert(converter *c, const char *name, const tsr_tensor_info *first,
                              tsr_array **out) {
  tsr_tensor_info info;
  if (tsr_safetensors_find(c->in, name, &info) == TSR_OK &&
      (info.dtype != first->dtype || info.ndim != 2 || first->ndim != 2 ||
       info.shape[0] != first->shape[0] || info.shape[1] != first->shape[1]))
    return tsr_error_set(TSR_ERR_IO,
                         "convert: %s: tensor '%s' differs from expert 0 in dtype or shape (%s "
                         "[%lld, %lld] vs %s [%lld, %lld])",
                         info.file, name, tsr_dtype_name(info.dtype), (long long)info.shape[0],
                         (long long)info.shape[1], tsr_dtype_name(first->dtype),
                         (long long)first->shape[0], (long long)first->shape[1]);
  return read_float(c, name, out);
}

/* Stacks part i of every expert along a new first axis. */
static tsr_status stack_part(linear_parts *each, int64_t experts, int i, tsr_array **out) {
  tsr_array **rows = calloc((size_t)experts, sizeof *rows);
  if (!rows) return tsr_error_set(TSR_ERR_NOMEM, "convert: out of memory stacking experts");
  tsr_status st = TSR_OK;
  for (int64_t e = 0; e < experts && st == TSR_OK; e++)
    st = tsr_expand_dims(&rows[e], each[e].part[i], 0, NULL);
  if (st == TSR_OK) st = tsr_concatenate(out, rows, (int)experts, 0, NULL);
  for (int64_t e = 0; e < experts; e++)
    tsr_array_release(rows[e]);
  free(rows);
  return st;
}

/* experts.{0..E-1}.<proj>.weight of layer `prefix` as switch_mlp.<proj> [E, out, in]. Each
 * expert is cast and quantized on its own and the results stacked: the same bytes as quantizing
 * the stack (rows are quantized independently), with one expert's float copy at a time. */
static tsr_status emit_experts(converter *c, const char *prefix, const char *proj) {
  int64_t experts = c->cfg->n_routed_experts;
  linear_parts *each = calloc((size_t)experts, sizeof *each), stacked = {{NULL}};
  if (!each) return tsr_error_set(TSR_ERR_NOMEM, "convert: out of memory stacking %s", prefix);
  char name[512], path[512];
  snprintf(path, sizeof path, "%s.switch_mlp.%s", prefix, proj);
  snprintf(name, sizeof name, "%s.experts.0.%s.weight", prefix, proj);
  tsr_tensor_info first;
  tsr_status st = tsr_safetensors_find(c->in, name, &first);
  for (int64_t e = 0; e < experts && st == TSR_OK; e++) {
    tsr_array *one = NULL;
    snprintf(name, sizeof name, "%s.experts.%lld.%s.weight", prefix, (long long)e, proj);
    st = read_expert(c, name, &first, &one);
    if (st == TSR_OK) st = quantize_linear(c, path, one, &each[e]);
    for (int i = 0; i < 3 && st == TSR_OK; i++)
      if (each[e].part[i]) st = tsr_eval(&each[e].part[i], 1);
  }
  for (int i = 0; i < 3 && st == TSR_OK; i++)
    if (each[0].part[i]) st = stack_part(each, experts, i, &stacked.part[i]);
  for (int64_t e = 0; e < experts; e++)
    parts_release(&each[e]);
  free(each);
  if (st == TSR_OK) return emit_parts(c, path, &stacked);
  parts_release(&stacked);
  return st;
}

/* Rows [begin, end) of axis 1 of fused [E, rows, in]: the gate or the up half. */
static tsr_status fused_half(tsr_array *fused, bool second, tsr_array **out) {
  int64_t half = tsr_array_dim(fused, 1) / 2;
  int64_t start[2] = {0, second ? half : 0},
          stop[2] = {tsr_array_dim(fused, 0), second ? 2 * half : half};
  return tsr_slice(out, fused, start, stop, NULL, 2, NULL);
}

static tsr_status emit_fused_gate_up(converter *c, const char *name, const char *prefix) {
  tsr_array *fused = NULL;
  tsr_status st = read_float(c, name, &fused);
  char path[512];
  for (int half = 0; half < 2 && st == TSR_OK; half++) {
    tsr_array *part = NULL;
    st = tsr_array_ndim(fused) == 3 && tsr_array_dim(fused, 1) % 2 == 0
             ? fused_half(fused, half == 1, &part)
             : tsr_error_set(TSR_ERR_IO, "convert: tensor '%s' is not [experts, 2 x width, in]",
                             name);
    snprintf(path, sizeof path, "%s.switch_mlp.%s", prefix, half ? "up_proj" : "gate_proj");
    if (st == TSR_OK) st = emit_linear(c, path, part);
  }
  tsr_array_release(fused);
  return st;
}

static tsr_status emit(converter *c, const tsr_tensor_info *info, const tensor_kind *k) {
  char prefix[64], path[512];
  snprintf(prefix, sizeof prefix, "model.layers.%lld.mlp", k->layer);
  tsr_array *a = NULL;
  tsr_status st = TSR_OK;
  switch (k->role) {
    case ROLE_SKIP:
      progress_tick(&c->bar, info->nbytes);
      return TSR_OK;
    case ROLE_EXPERT:
      if (k->expert != 0) return TSR_OK; /* stacked with expert 0 */
      return emit_experts(c, prefix, k->proj);
    case ROLE_FUSED_GATE_UP:
      return emit_fused_gate_up(c, info->name, prefix);
    case ROLE_FUSED_DOWN:
      snprintf(path, sizeof path, "%s.switch_mlp.down_proj", prefix);
      st = read_float(c, info->name, &a);
      return st == TSR_OK ? emit_linear(c, path, a) : st;
    case ROLE_LINEAR:
      snprintf(path, sizeof path, "%.*s", (int)(strlen(info->name) - strlen(".weight")),
               info->name);
      st = read_float(c, info->name, &a);
      return st == TSR_OK ? emit_linear(c, path, a) : st;
    case ROLE_FLOAT:
    case ROLE_FLOAT_NO_CAST:
      st = read_float(c, info->name, &a);
      if (st == TSR_OK && k->role == ROLE_FLOAT) st = cast(c, &a);
      if (st != TSR_OK) {
        tsr_array_release(a);
        return st;
      }
      parameters_add(c, a);
      return conv_writer_add(c->out, info->name, a);
  }
  return st;
}

tsr_status conv_tensors(converter *c) {
  size_t count = tsr_safetensors_count(c->in);
  progress_begin(&c->bar, "converting", c->bar.on, progress_checkpoint_bytes(c->in));
  tsr_status st = TSR_OK;
  for (size_t i = 0; i < count && st == TSR_OK; i++) {
    tsr_tensor_info info;
    tensor_kind kind;
    st = tsr_safetensors_info(c->in, i, &info);
    if (st == TSR_OK) st = classify(c, &info, &kind);
    if (st == TSR_OK) st = emit(c, &info, &kind);
  }
  progress_end(&c->bar);
  return st;
}

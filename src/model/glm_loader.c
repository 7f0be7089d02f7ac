/* model/glm_loader.c — single tensors and linear layers out of a checkpoint, each checked against
 * the shape the config implies, with messages naming the tensor and its file. */
#include "model/glm_loader.h"

#include <stdlib.h>
#include <string.h>

static void shape_text(const int64_t *shape, int ndim, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < ndim && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (used < size) snprintf(buf + used, size - used, "]");
}

static tsr_status check_shape(const tsr_tensor_info *info, const int64_t *shape, int ndim) {
  bool same = info->ndim == ndim;
  for (int i = 0; same && i < ndim; i++)
    same = info->shape[i] == shape[i];
  if (same) return TSR_OK;
  char got[128], want[128];
  shape_text(info->shape, info->ndim, got, sizeof got);
  shape_text(shape, ndim, want, sizeof want);
  return tsr_error_set(TSR_ERR_IO, "load: %s: tensor '%s' has shape %s, the config implies %s",
                       info->file, info->name, got, want);
}

tsr_status loader_tensor_slice(glm_loader *ld, const char *name, const int64_t *shape, int ndim,
                               const glm_slice *slice, tsr_array **out) {
  tsr_tensor_info info;
  if (tsr_safetensors_find(ld->ckpt, name, &info) != TSR_OK) /* one lookup; our own message */
    return tsr_error_set(TSR_ERR_IO, "load: tensor '%s' is missing from the checkpoint", name);
  tsr_status st = check_shape(&info, shape, ndim);
  if (st != TSR_OK) return st;
  if (slice && slice->axis >= 0)
    st = tsr_safetensors_load_slice(out, ld->ckpt, name, slice->axis, slice->start, slice->stop,
                                    ld->device);
  else
    st = tsr_safetensors_load(out, ld->ckpt, name, ld->device);
  /* The bytes this rank holds: the slice's, not the whole tensor's. */
  if (st == TSR_OK)
    loader_progress_tick(ld,
                         (uint64_t)tsr_array_size(*out) * tsr_dtype_size(tsr_array_dtype(*out)));
  return st;
}

tsr_status loader_tensor(glm_loader *ld, const char *name, const int64_t *shape, int ndim,
                         tsr_array **out) {
  return loader_tensor_slice(ld, name, shape, ndim, NULL, out);
}

static bool is_float(tsr_dtype t) {
  return t == TSR_FLOAT32 || t == TSR_FLOAT16 || t == TSR_BFLOAT16;
}

static bool is_packed(tsr_dtype t) {
  return t == TSR_UINT32;
}

static bool is_scale_byte(tsr_dtype t) {
  return t == TSR_UINT8;
}

tsr_status loader_dtype_error(glm_loader *ld, const char *name, const char *want) {
  tsr_tensor_info info;
  tsr_status st = tsr_safetensors_find(ld->ckpt, name, &info);
  if (st != TSR_OK) return st;
  return tsr_error_set(TSR_ERR_IO, "load: %s: tensor '%s' is %s, %s", info.file, name,
                       tsr_dtype_name(info.dtype), want);
}

/* TSR_OK when `name` is absent (loader_tensor reports that) or its dtype passes `ok`; else the
 * dtype error. Run before the shape check, so that a packed tensor where a float one belongs is
 * reported as a dtype, not as a puzzling shape. */
static tsr_status check_dtype(glm_loader *ld, const char *name, bool (*ok)(tsr_dtype),
                              const char *want) {
  tsr_tensor_info info;
  if (!tsr_safetensors_has(ld->ckpt, name)) return TSR_OK;
  tsr_status st = tsr_safetensors_find(ld->ckpt, name, &info);
  if (st != TSR_OK || ok(info.dtype)) return st;
  return loader_dtype_error(ld, name, want);
}

tsr_status loader_float_tensor_slice(glm_loader *ld, const char *name, const int64_t *shape,
                                     int ndim, const glm_slice *slice, tsr_array **out) {
  tsr_status st = check_dtype(ld, name, is_float, "a float dtype was expected");
  return st != TSR_OK ? st : loader_tensor_slice(ld, name, shape, ndim, slice, out);
}

tsr_status loader_float_tensor(glm_loader *ld, const char *name, const int64_t *shape, int ndim,
                               tsr_array **out) {
  return loader_float_tensor_slice(ld, name, shape, ndim, NULL, out);
}

/* A float tensor's slice (NULL: all of it) converted to float32 and evaluated. */
static tsr_status float32_slice(glm_loader *ld, const char *name, const int64_t *shape, int ndim,
                                const glm_slice *slice, tsr_array **out) {
  tsr_array *raw = NULL, *converted = NULL;
  tsr_status st = loader_float_tensor_slice(ld, name, shape, ndim, slice, &raw);
  if (st != TSR_OK) return st;
  if (tsr_array_dtype(raw) == TSR_FLOAT32) {
    *out = raw;
    return TSR_OK;
  }
  st = tsr_astype(&converted, raw, TSR_FLOAT32, NULL);
  if (st == TSR_OK) st = tsr_eval(&converted, 1);
  tsr_array_release(raw);
  if (st != TSR_OK) {
    tsr_array_release(converted);
    return st;
  }
  *out = converted;
  return TSR_OK;
}

tsr_status loader_float32(glm_loader *ld, const char *name, const int64_t *shape, int ndim,
                          tsr_array **out) {
  return float32_slice(ld, name, shape, ndim, NULL, out);
}

void linear_free(glm_linear *lin) {
  tsr_array_release(lin->weight);
  tsr_array_release(lin->scales);
  tsr_array_release(lin->biases);
  tsr_array_release(lin->bias);
  memset(lin, 0, sizeof *lin);
}

/* The slice of a linear layer's tensor [..., out, width] that `part` means, where the last axis
 * holds `per_input` entries per input (bits/32 for a packed weight, 1/group_size for scales). */
static glm_slice part_slice(glm_part part, int ndim, int64_t numerator, int64_t denominator) {
  switch (part.kind) {
    case PART_OUTPUTS:
      return (glm_slice){ndim - 2, part.start, part.start + part.count};
    case PART_INPUTS:
      return (glm_slice){ndim - 1, part.start * numerator / denominator,
                         (part.start + part.count) * numerator / denominator};
    case PART_EXPERTS:
      return (glm_slice){0, part.start, part.start + part.count};
    default:
      return (glm_slice){-1, 0, 0};
  }
}

/* A row-parallel part of a quantized layer covers whole groups and whole 32-bit words. */
static bool part_on_groups(glm_part part, const glm_quant *q) {
  if (part.kind != PART_INPUTS) return true;
  return part.start % q->group_size == 0 && part.count % q->group_size == 0 &&
         (part.start * q->bits) % 32 == 0 && (part.count * q->bits) % 32 == 0;
}

/* The quantized tensors of a linear layer: w_q uint32 [.., out, in*bits/32], scales (float for
 * affine, uint8 otherwise) and, for affine, biases [.., out, in/group] of the scales' dtype. */
static tsr_status load_quantized(glm_loader *ld, const char *path, int64_t *shape, int ndim,
                                 glm_part part, glm_linear *lin) {
  char name[512];
  const glm_quant *q = &lin->quant;
  bool affine = q->mode == TSR_QUANT_AFFINE;
  int64_t in = shape[ndim - 1];
  if (q->group_size <= 0 || in % q->group_size != 0 || (in * q->bits) % 32 != 0)
    return tsr_error_set(TSR_ERR_IO,
                         "load: %s: %lld inputs cannot be quantized with group_size %d and "
                         "bits %d",
                         path, (long long)in, q->group_size, q->bits);
  if (!part_on_groups(part, q)) return glm_shard_columns_error(ld->shard, path, in, q);
  tsr_status st;
  shape[ndim - 1] = in * q->bits / 32;
  glm_slice slice = part_slice(part, ndim, q->bits, 32);
  snprintf(name, sizeof name, "%s.weight", path);
  if ((st = check_dtype(ld, name, is_packed, "uint32 (packed) was expected")) ||
      (st = loader_tensor_slice(ld, name, shape, ndim, &slice, &lin->weight)))
    return st;
  shape[ndim - 1] = in / q->group_size;
  slice = part_slice(part, ndim, 1, q->group_size);
  snprintf(name, sizeof name, "%s.scales", path);
  if ((st = check_dtype(ld, name, affine ? is_float : is_scale_byte,
                        affine ? "a float dtype was expected (affine scales)"
                               : "uint8 was expected (the mode's scales)")) ||
      (st = loader_tensor_slice(ld, name, shape, ndim, &slice, &lin->scales)))
    return st;
  if (!affine) return TSR_OK;
  snprintf(name, sizeof name, "%s.biases", path);
  if ((st = loader_tensor_slice(ld, name, shape, ndim, &slice, &lin->biases))) return st;
  if (tsr_array_dtype(lin->biases) != tsr_array_dtype(lin->scales)) {
    char want[96];
    snprintf(want, sizeof want, "the dtype of its scales (%s) was expected",
             tsr_dtype_name(tsr_array_dtype(lin->scales)));
    return loader_dtype_error(ld, name, want);
  }
  return TSR_OK;
}

/* A module left float: .scales must not exist (an override `false` for a quantized module) and
 * the weight must be a float tensor (a packed one without .scales is named as such). */
static tsr_status load_float_weight(glm_loader *ld, const char *path, const int64_t *shape,
                                    int ndim, glm_part part, glm_linear *lin) {
  char name[512];
  snprintf(name, sizeof name, "%s.scales", path);
  if (tsr_safetensors_has(ld->ckpt, name))
    return tsr_error_set(TSR_ERR_IO,
                         "load: tensor '%s' exists but config.json's quantization entry for %s "
                         "is false (left float)",
                         name, path);
  snprintf(name, sizeof name, "%s.weight", path);
  char want[600];
  snprintf(want, sizeof want, "a float dtype was expected: %s is not quantized (no .scales)", path);
  tsr_status st = check_dtype(ld, name, is_float, want);
  glm_slice slice = part_slice(part, ndim, 1, 1);
  return st != TSR_OK ? st : loader_tensor_slice(ld, name, shape, ndim, &slice, &lin->weight);
}

glm_quant loader_quant_of(glm_loader *ld, const char *path) {
  char name[512];
  snprintf(name, sizeof name, "%s.scales", path);
  return glm_config_quant_for(ld->cfg, path, tsr_safetensors_has(ld->ckpt, name));
}

/* The layer's own bias: the outputs' slice of it for a column-parallel part, else all of it. */
static tsr_status load_bias(glm_loader *ld, const char *path, int64_t out_features, glm_part part,
                            glm_linear *lin) {
  char name[512];
  snprintf(name, sizeof name, "%s.bias", path);
  if (part.kind == PART_INPUTS) /* every rank would add it to the sum */
    return tsr_error_set(TSR_ERR_UNSUPPORTED,
                         "tensor parallel: %s has a bias but is split by its inputs", path);
  glm_slice slice = {-1, 0, 0};
  if (part.kind == PART_OUTPUTS) slice = (glm_slice){0, part.start, part.start + part.count};
  return float32_slice(ld, name, &out_features, 1, &slice, &lin->bias);
}

static tsr_status load_linear_parts(glm_loader *ld, const char *path, int64_t experts,
                                    int64_t out_features, int64_t in_features, bool has_bias,
                                    glm_part part, glm_linear *lin) {
  char name[512];
  int64_t shape[3];
  int ndim = 0;
  if (experts > 0) shape[ndim++] = experts;
  shape[ndim++] = out_features;
  shape[ndim++] = in_features;
  snprintf(name, sizeof name, "%s.scales", path);
  lin->quant = loader_quant_of(ld, path);
  if (tsr_safetensors_has(ld->ckpt, name) && !ld->cfg->has_quantization)
    return tsr_error_set(
        TSR_ERR_IO, "load: tensor '%s' exists but config.json has no quantization block", name);
  tsr_status st = lin->quant.quantized ? load_quantized(ld, path, shape, ndim, part, lin)
                                       : load_float_weight(ld, path, shape, ndim, part, lin);
  if (st != TSR_OK || !has_bias) return st;
  return load_bias(ld, path, out_features, part, lin);
}

tsr_status loader_linear_part(glm_loader *ld, const char *path, int64_t experts,
                              int64_t out_features, int64_t in_features, bool has_bias,
                              glm_part part, glm_linear *lin) {
  memset(lin, 0, sizeof *lin);
  lin->out_features = part.kind == PART_OUTPUTS ? part.count : out_features;
  lin->in_features = part.kind == PART_INPUTS ? part.count : in_features;
  tsr_status st =
      load_linear_parts(ld, path, experts, out_features, in_features, has_bias, part, lin);
  if (st != TSR_OK) linear_free(lin);
  return st;
}

tsr_status loader_linear(glm_loader *ld, const char *path, int64_t experts, int64_t out_features,
                         int64_t in_features, bool has_bias, glm_linear *lin) {
  glm_part whole = {PART_WHOLE, 0, 0};
  return loader_linear_part(ld, path, experts, out_features, in_features, has_bias, whole, lin);
}

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

tsr_status loader_tensor(glm_loader *ld, const char *name, const int64_t *shape, int ndim,
                         tsr_array **out) {
  tsr_tensor_info info;
  if (tsr_safetensors_find(ld->ckpt, name, &info) != TSR_OK) /* one lookup; our own message */
    return tsr_error_set(TSR_ERR_IO, "load: tensor '%s' is missing from the checkpoint", name);
  tsr_status st = check_shape(&info, shape, ndim);
  if (st == TSR_OK) st = tsr_safetensors_load(out, ld->ckpt, name, ld->device);
  if (st == TSR_OK) loader_progress_tick(ld, info.nbytes);
  return st;
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

tsr_status loader_float_tensor(glm_loader *ld, const char *name, const int64_t *shape, int ndim,
                               tsr_array **out) {
  tsr_status st = check_dtype(ld, name, is_float, "a float dtype was expected");
  return st != TSR_OK ? st : loader_tensor(ld, name, shape, ndim, out);
}

tsr_status loader_float32(glm_loader *ld, const char *name, const int64_t *shape, int ndim,
                          tsr_array **out) {
  tsr_array *raw = NULL, *converted = NULL;
  tsr_status st = loader_float_tensor(ld, name, shape, ndim, &raw);
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

void linear_free(glm_linear *lin) {
  tsr_array_release(lin->weight);
  tsr_array_release(lin->scales);
  tsr_array_release(lin->biases);
  tsr_array_release(lin->bias);
  memset(lin, 0, sizeof *lin);
}

/* The quantized tensors of a linear layer: w_q uint32 [.., out, in*bits/32], scales (float for
 * affine, uint8 otherwise) and, for affine, biases [.., out, in/group] of the scales' dtype. */
static tsr_status load_quantized(glm_loader *ld, const char *path, int64_t *shape, int ndim,
                                 glm_linear *lin) {
  char name[512];
  const glm_quant *q = &lin->quant;
  bool affine = q->mode == TSR_QUANT_AFFINE;
  int64_t in = shape[ndim - 1];
  if (q->group_size <= 0 || in % q->group_size != 0 || (in * q->bits) % 32 != 0)
    return tsr_error_set(TSR_ERR_IO,
                         "load: %s: %lld inputs cannot be quantized with group_size %d and "
                         "bits %d",
                         path, (long long)in, q->group_size, q->bits);
  tsr_status st;
  shape[ndim - 1] = in * q->bits / 32;
  snprintf(name, sizeof name, "%s.weight", path);
  if ((st = check_dtype(ld, name, is_packed, "uint32 (packed) was expected")) ||
      (st = loader_tensor(ld, name, shape, ndim, &lin->weight)))
    return st;
  shape[ndim - 1] = in / q->group_size;
  snprintf(name, sizeof name, "%s.scales", path);
  if ((st = check_dtype(ld, name, affine ? is_float : is_scale_byte,
                        affine ? "a float dtype was expected (affine scales)"
                               : "uint8 was expected (the mode's scales)")) ||
      (st = loader_tensor(ld, name, shape, ndim, &lin->scales)))
    return st;
  if (!affine) return TSR_OK;
  snprintf(name, sizeof name, "%s.biases", path);
  if ((st = loader_tensor(ld, name, shape, ndim, &lin->biases))) return st;
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
                                    int ndim, glm_linear *lin) {
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
  return st != TSR_OK ? st : loader_tensor(ld, name, shape, ndim, &lin->weight);
}

static tsr_status load_linear_parts(glm_loader *ld, const char *path, int64_t experts,
                                    bool has_bias, glm_linear *lin) {
  char name[512];
  int64_t shape[3];
  int ndim = 0;
  if (experts > 0) shape[ndim++] = experts;
  shape[ndim++] = lin->out_features;
  shape[ndim++] = lin->in_features;
  snprintf(name, sizeof name, "%s.scales", path);
  lin->quant = glm_config_quant_for(ld->cfg, path, tsr_safetensors_has(ld->ckpt, name));
  if (tsr_safetensors_has(ld->ckpt, name) && !ld->cfg->has_quantization)
    return tsr_error_set(
        TSR_ERR_IO, "load: tensor '%s' exists but config.json has no quantization block", name);
  tsr_status st = lin->quant.quantized ? load_quantized(ld, path, shape, ndim, lin)
                                       : load_float_weight(ld, path, shape, ndim, lin);
  if (st != TSR_OK || !has_bias) return st;
  snprintf(name, sizeof name, "%s.bias", path);
  return loader_float32(ld, name, &lin->out_features, 1, &lin->bias);
}

tsr_status loader_linear(glm_loader *ld, const char *path, int64_t experts, int64_t out_features,
                         int64_t in_features, bool has_bias, glm_linear *lin) {
  memset(lin, 0, sizeof *lin);
  lin->out_features = out_features;
  lin->in_features = in_features;
  tsr_status st = load_linear_parts(ld, path, experts, has_bias, lin);
  if (st != TSR_OK) linear_free(lin);
  return st;
}

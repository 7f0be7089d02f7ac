/* model/convert.c — tsr_model_convert: checks the request (quantization parameters through
 * tsr_quantize itself, the output folder, the source config), converts the tensors into a
 * temporary folder beside the output, writes config.json and copies the tokenizer, loads the
 * result back with the runner's own loader (which knows every tensor a model needs, with its
 * shape and quantization), and only then renames the folder into place. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/convert.h"
#include "model/glm_weights.h"

#define MLX_SHARD_BYTES ((uint64_t)5 << 30) /* mlx-lm's MAX_FILE_SIZE_GB = 5, as 5 << 30 */

tsr_convert_options tsr_convert_default_options(void) {
  tsr_convert_options opt;
  memset(&opt, 0, sizeof opt);
  opt.mode = TSR_QUANT_AFFINE;
  return opt;
}

/* The mode's defaults filled in, then one small tsr_quantize (conv_check_quant), so that exactly
 * the parameters the library quantizes with are accepted, with its message for the others. */
static tsr_status resolve_quant(const tsr_convert_options *opt, glm_quant *q) {
  static const int default_group[4] = {64, 32, 32, 16}, default_bits[4] = {4, 4, 8, 4};
  if ((int)opt->mode < 0 || (int)opt->mode > 3)
    return tsr_error_set(TSR_ERR_INVALID, "convert: unknown quantization mode %d", (int)opt->mode);
  *q = (glm_quant){true, opt->mode, opt->bits ? opt->bits : default_bits[opt->mode],
                   opt->group_size ? opt->group_size : default_group[opt->mode]};
  return conv_check_quant(q);
}

tsr_status conv_check_quant(const glm_quant *q) {
  if (q->group_size < 1 || q->group_size > 4096)
    return tsr_error_set(TSR_ERR_INVALID, "convert: group_size %d is out of range", q->group_size);
  int64_t shape[2] = {1, q->group_size};
  tsr_array *probe = NULL, *wq = NULL, *scales = NULL, *biases = NULL;
  tsr_status st = tsr_zeros(&probe, shape, 2, TSR_FLOAT32, NULL);
  if (st == TSR_OK)
    st = tsr_quantize(&wq, &scales, &biases, probe, q->group_size, q->bits, q->mode, NULL);
  tsr_array_release(probe);
  tsr_array_release(wq);
  tsr_array_release(scales);
  tsr_array_release(biases);
  if (st != TSR_OK) return tsr_error_set(TSR_ERR_INVALID, "convert: %s", tsr_last_error());
  return TSR_OK;
}

static tsr_status resolve_dtype(const tsr_convert_options *opt, const char *hf_dir, int *dtype) {
  if (!opt->cast) return conv_auto_dtype(hf_dir, dtype);
  if (opt->dtype != TSR_FLOAT16 && opt->dtype != TSR_BFLOAT16 && opt->dtype != TSR_FLOAT32)
    return tsr_error_set(TSR_ERR_INVALID,
                         "convert: cannot cast to dtype %d (%s): float16, bfloat16 or float32",
                         (int)opt->dtype, tsr_dtype_name(opt->dtype));
  *dtype = (int)opt->dtype;
  return TSR_OK;
}

/* `out_dir` must not exist; the temporary folder `OUT.partial-<pid>-<n>` is made beside it with
 * mkdir (not mkdtemp, whose 0700 would outlive the rename), so it gets 0777 less the umask. */
static tsr_status make_temp_dir(const char *out_dir, char *tmp, size_t size) {
  struct stat info;
  if (stat(out_dir, &info) == 0 || errno != ENOENT)
    return tsr_error_set(TSR_ERR_INVALID, "convert: %s already exists (choose a new folder)",
                         out_dir);
  size_t len = strlen(out_dir);
  while (len > 1 && out_dir[len - 1] == '/')
    len--;
  for (unsigned attempt = 0; attempt < 1000; attempt++) {
    if (snprintf(tmp, size, "%.*s.partial-%ld-%u", (int)len, out_dir, (long)getpid(), attempt) >=
        (int)size)
      return tsr_error_set(TSR_ERR_INVALID, "convert: output path too long: %s", out_dir);
    if (mkdir(tmp, 0777) == 0) return TSR_OK;
    if (errno != EEXIST) break;
  }
  return tsr_error_set(TSR_ERR_IO, "convert: cannot create %s: %s", tmp, strerror(errno));
}

/* Loads the written checkpoint the way tsr_model_load does (weights wrapped, not copied). */
static tsr_status verify(const char *dir, const char *hf_dir) {
  glm_config cfg;
  tsr_status st = glm_config_load(&cfg, dir);
  if (st != TSR_OK) return st;
  tsr_safetensors *ckpt = NULL;
  glm_weights weights;
  st = tsr_safetensors_open(&ckpt, dir);
  if (st == TSR_OK)
    st = glm_weights_load(&weights, &cfg, NULL, ckpt, (tsr_device){TSR_CPU, 0}, false);
  if (st == TSR_OK) glm_weights_free(&weights);
  tsr_safetensors_close(ckpt);
  glm_config_free(&cfg);
  if (st != TSR_OK)
    return tsr_error_set(st,
                         "convert: the converted checkpoint does not load (%s lacks a tensor the "
                         "model needs, or has one of the wrong shape): %s",
                         hf_dir, tsr_last_error());
  return TSR_OK;
}

static tsr_status convert_into(converter *c, const char *tmp, const char *recipe_path) {
  tsr_status st = conv_tensors(c);
  if (st == TSR_OK) st = conv_writer_finish(c->out);
  if (st == TSR_OK && recipe_path) st = conv_recipe_check_used(c, recipe_path);
  if (st == TSR_OK) st = conv_write_config(c->hf_dir, tmp, &c->quant, &c->recipe);
  if (st == TSR_OK) st = conv_copy_files(c->hf_dir, tmp);
  if (st == TSR_OK) st = verify(tmp, c->hf_dir);
  return st;
}

static tsr_status check_source(const char *hf_dir, const glm_config *cfg) {
  if (!cfg->has_quantization) return TSR_OK;
  return tsr_error_set(TSR_ERR_IO,
                       "convert: %s/config.json has a quantization block: the checkpoint is "
                       "already quantized (convert takes float checkpoints)",
                       hf_dir);
}

tsr_status tsr_model_convert(const char *hf_dir, const char *out_dir,
                             const tsr_convert_options *opt) {
  if (!hf_dir || !out_dir)
    return tsr_error_set(TSR_ERR_INVALID, "convert: hf_dir and out_dir must not be NULL");
  tsr_convert_options defaults = tsr_convert_default_options();
  if (!opt) opt = &defaults;
  converter c = {.hf_dir = hf_dir, .bar = {.on = opt->progress}};
  glm_config cfg;
  conv_writer out = {.shard_limit = opt->shard_bytes ? opt->shard_bytes : MLX_SHARD_BYTES};
  char tmp[4200];
  tsr_status st = resolve_quant(opt, &c.quant);
  if (st == TSR_OK && opt->recipe) st = conv_recipe_load(&c, opt->recipe);
  if (st == TSR_OK) st = glm_config_load(&cfg, hf_dir);
  if (st != TSR_OK) {
    conv_recipe_free(&c);
    return st;
  }
  if ((st = check_source(hf_dir, &cfg)) || (st = resolve_dtype(opt, hf_dir, &c.dtype)) ||
      (st = tsr_safetensors_open(&c.in, hf_dir)))
    goto done;
  if ((st = make_temp_dir(out_dir, tmp, sizeof tmp)) != TSR_OK) goto done;
  c.cfg = &cfg;
  c.out = &out;
  out.dir = tmp;
  st = convert_into(&c, tmp, opt->recipe);
  conv_writer_free(&out);
  if (st == TSR_OK && rename(tmp, out_dir) != 0)
    st = tsr_error_set(TSR_ERR_IO, "convert: cannot rename %s to %s: %s", tmp, out_dir,
                       strerror(errno));
  if (st != TSR_OK) conv_remove_dir(tmp);
done:
  tsr_safetensors_close(c.in);
  glm_config_free(&cfg);
  conv_recipe_free(&c);
  return st;
}

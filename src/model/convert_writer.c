/* model/convert_writer.c — the converter's output tensors as sharded safetensors: a shard is
 * filled in order until the next tensor would pass the size limit (mlx-lm's make_shards), then
 * written with tsr_safetensors_save and its arrays released, so only one shard is held at a
 * time. The index (model.safetensors.index.json) is written last, with weight_map sorted by name
 * and the metadata mlx-lm writes (total_size, total_parameters). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model/convert.h"

static const char *const meta_keys[1] = {"format"}, *const meta_values[1] = {"mlx"};

static void temp_shard_path(const conv_writer *w, int shard, char *path, size_t size) {
  snprintf(path, size, "%s/shard-%05d.safetensors", w->dir, shard + 1);
}

static void release_pending(conv_writer *w) {
  for (size_t i = 0; i < w->n; i++) {
    free(w->names[i]);
    tsr_array_release(w->arrays[i]);
  }
  w->n = 0;
  w->bytes = 0;
}

static tsr_status flush(conv_writer *w) {
  if (w->n == 0) return TSR_OK;
  char path[4200];
  temp_shard_path(w, w->shards, path, sizeof path);
  tsr_status st = tsr_safetensors_save(path, (const char *const *)w->names, w->arrays, w->n,
                                       meta_keys, meta_values, 1);
  release_pending(w);
  /* The shard's buffers would otherwise stay in the buffer cache (up to a quarter of memory):
   * giving them back keeps the process near one shard. */
  tsr_memory_clear_cache((tsr_device){TSR_CPU, 0});
  if (st == TSR_OK) w->shards++;
  return st;
}

static tsr_status grow(void **items, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return TSR_OK;
  size_t next = *cap ? *cap * 2 : 64;
  void *grown = realloc(*items, next * size);
  if (!grown) return tsr_error_set(TSR_ERR_NOMEM, "convert: out of memory listing tensors");
  *items = grown;
  *cap = next;
  return TSR_OK;
}

static tsr_status remember(conv_writer *w, const char *name) {
  tsr_status st = grow((void **)&w->entries, &w->cap_entries, w->n_entries + 1, sizeof *w->entries);
  if (st != TSR_OK) return st;
  char *copy = strdup(name);
  if (!copy) return tsr_error_set(TSR_ERR_NOMEM, "convert: out of memory listing tensors");
  w->entries[w->n_entries++] = (conv_entry){copy, w->shards};
  return TSR_OK;
}

static tsr_status append(conv_writer *w, const char *name, tsr_array *array, uint64_t bytes) {
  tsr_status st = grow((void **)&w->names, &w->cap, w->n + 1, sizeof *w->names);
  size_t cap = w->cap_arrays;
  if (st == TSR_OK) st = grow((void **)&w->arrays, &cap, w->n + 1, sizeof *w->arrays);
  w->cap_arrays = cap;
  char *copy = st == TSR_OK ? strdup(name) : NULL;
  if (st == TSR_OK && !copy) st = tsr_error_set(TSR_ERR_NOMEM, "convert: out of memory");
  if (st == TSR_OK) st = remember(w, name);
  if (st != TSR_OK) {
    free(copy);
    tsr_array_release(array);
    return st;
  }
  w->names[w->n] = copy;
  w->arrays[w->n++] = array;
  w->bytes += bytes;
  w->total_bytes += bytes;
  return TSR_OK;
}

tsr_status conv_writer_add(conv_writer *w, const char *name, tsr_array *array) {
  tsr_status st = tsr_eval(&array, 1);
  if (st != TSR_OK) {
    tsr_array_release(array);
    return tsr_error_set(st, "convert: tensor '%s': %s", name, tsr_last_error());
  }
  uint64_t bytes = (uint64_t)tsr_array_size(array) * tsr_dtype_size(tsr_array_dtype(array));
  if (w->n > 0 && w->bytes + bytes > w->shard_limit && (st = flush(w)) != TSR_OK) {
    tsr_array_release(array);
    return st;
  }
  return append(w, name, array, bytes);
}

static tsr_status rename_shards(conv_writer *w) {
  char from[4200], to[4200];
  for (int i = 0; i < w->shards; i++) {
    temp_shard_path(w, i, from, sizeof from);
    if (w->shards == 1)
      snprintf(to, sizeof to, "%s/model.safetensors", w->dir);
    else
      snprintf(to, sizeof to, "%s/model-%05d-of-%05d.safetensors", w->dir, i + 1, w->shards);
    if (rename(from, to) != 0)
      return tsr_error_set(TSR_ERR_IO, "convert: cannot rename %s to %s", from, to);
  }
  return TSR_OK;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const conv_entry *)a)->name, ((const conv_entry *)b)->name);
}

static cJSON *index_json(conv_writer *w) {
  qsort(w->entries, w->n_entries, sizeof *w->entries, by_name);
  cJSON *root = cJSON_CreateObject();
  cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
  cJSON_AddNumberToObject(meta, "total_size", (double)w->total_bytes);
  cJSON_AddNumberToObject(meta, "total_parameters", (double)w->total_parameters);
  cJSON *map = cJSON_AddObjectToObject(root, "weight_map");
  char file[64];
  for (size_t i = 0; map && i < w->n_entries; i++) {
    if (w->shards == 1)
      snprintf(file, sizeof file, "model.safetensors");
    else
      snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", w->entries[i].shard + 1,
               w->shards);
    cJSON_AddStringToObject(map, w->entries[i].name, file);
  }
  return root;
}

static tsr_status write_text(const char *path, const char *text) {
  FILE *f = text ? fopen(path, "wb") : NULL;
  if (!text) return tsr_error_set(TSR_ERR_NOMEM, "convert: out of memory writing %s", path);
  if (!f) return tsr_error_set(TSR_ERR_IO, "convert: cannot write %s", path);
  size_t n = strlen(text);
  bool ok = fwrite(text, 1, n, f) == n && fputc('\n', f) != EOF;
  ok = fclose(f) == 0 && ok;
  return ok ? TSR_OK : tsr_error_set(TSR_ERR_IO, "convert: cannot write %s", path);
}

tsr_status conv_writer_finish(conv_writer *w) {
  tsr_status st = flush(w);
  if (st == TSR_OK) st = rename_shards(w);
  if (st != TSR_OK) return st;
  cJSON *root = index_json(w);
  char *text = root ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  char path[4200];
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", w->dir);
  st = write_text(path, text);
  cJSON_free(text);
  return st;
}

void conv_writer_free(conv_writer *w) {
  release_pending(w);
  free(w->names);
  free(w->arrays);
  for (size_t i = 0; i < w->n_entries; i++)
    free(w->entries[i].name);
  free(w->entries);
  memset(w, 0, sizeof *w);
}

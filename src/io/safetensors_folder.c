/* io/safetensors_folder.c — which files a checkpoint path stands for (a file; a folder's
 * model.safetensors.index.json, else its model.safetensors, else its model*.safetensors in name
 * order) and the check of the tensors found against the index. It opens no safetensors file
 * itself: the reader maps the files this lists. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/status.h"
#include "io/file.h"
#include "io/safetensors.h"

#define INDEX_NAME "model.safetensors.index.json"
/* An index longer than this is not an index (GLM-4.5's, ~100k names, is ~10 MB). */
#define INDEX_MAX ((int64_t)256 << 20)

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *path = malloc(n);
  if (path) snprintf(path, n, "%s/%s", dir, name);
  return path;
}

static bool is_file(const char *path) {
  struct stat info;
  return stat(path, &info) == 0 && S_ISREG(info.st_mode);
}

static tsr_status add_file(tsri_st_layout *out, char *path, const char *what) {
  char **grown = path ? realloc(out->files, (out->nfiles + 1) * sizeof *grown) : NULL;
  if (!grown) {
    free(path);
    return tsri_error(TSR_ERR_NOMEM, "safetensors: %s: out of host memory", what);
  }
  out->files = grown;
  out->files[out->nfiles++] = path;
  return TSR_OK;
}

static int by_string(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every model*.safetensors in `dir`, in name order. */
static tsr_status find_shards(tsri_st_layout *out, const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return tsri_error(TSR_ERR_IO, "safetensors: %s: cannot list the folder: %s", dir,
                      strerror(errno));
  tsr_status status = TSR_OK;
  const char *suffix = ".safetensors";
  size_t suffix_len = strlen(suffix);
  struct dirent *entry;
  while (status == TSR_OK && (entry = readdir(d)) != NULL) {
    size_t len = strlen(entry->d_name);
    if (len >= 5 + suffix_len && strncmp(entry->d_name, "model", 5) == 0 &&
        strcmp(entry->d_name + len - suffix_len, suffix) == 0)
      status = add_file(out, join(dir, entry->d_name), dir);
  }
  closedir(d);
  if (status == TSR_OK && out->nfiles == 0)
    status = tsri_error(TSR_ERR_IO,
                        "safetensors: %s: the folder holds no " INDEX_NAME
                        ", model.safetensors or model*.safetensors",
                        dir);
  if (status == TSR_OK) qsort(out->files, out->nfiles, sizeof *out->files, by_string);
  return status;
}

static tsr_status read_text(const char *path, char **text) {
  FILE *f = NULL;
  int64_t n = 0;
  tsr_status status = tsri_file_open_read("safetensors:", path, &f, &n);
  if (status != TSR_OK) return status;
  if (n > INDEX_MAX) {
    status = tsri_error(TSR_ERR_IO, "safetensors: %s: %lld bytes, too large for an index", path,
                        (long long)n);
  } else if (!(*text = malloc((size_t)n + 1))) {
    status = tsri_error(TSR_ERR_NOMEM, "safetensors: %s: out of host memory", path);
  } else if (fread(*text, 1, (size_t)n, f) != (size_t)n) {
    status = tsri_error(TSR_ERR_IO, "safetensors: %s: short read", path);
    free(*text);
  } else {
    (*text)[n] = '\0';
  }
  fclose(f);
  return status;
}

static int by_entry_name(const void *a, const void *b) {
  return strcmp(((const tsri_st_index_entry *)a)->name, ((const tsri_st_index_entry *)b)->name);
}

/* weight_map's pairs, sorted by name, each a non-empty string; no name twice. */
static tsr_status index_entries(tsri_st_layout *out, const cJSON *weight_map) {
  const char *index = out->index_path;
  out->index = calloc((size_t)cJSON_GetArraySize(weight_map) + 1, sizeof *out->index);
  if (!out->index) return tsri_error(TSR_ERR_NOMEM, "safetensors: %s: out of host memory", index);
  const cJSON *item;
  cJSON_ArrayForEach(item, weight_map) {
    if (!cJSON_IsString(item) || !item->valuestring[0])
      return tsri_error(TSR_ERR_IO, "safetensors: %s: weight_map entry '%s' is not a file name",
                        index, item->string);
    out->index[out->nindex].name = item->string;
    out->index[out->nindex++].file = item->valuestring; /* a file name until resolved */
  }
  qsort(out->index, out->nindex, sizeof *out->index, by_entry_name);
  for (size_t i = 1; i < out->nindex; i++)
    if (strcmp(out->index[i - 1].name, out->index[i].name) == 0)
      return tsri_error(TSR_ERR_IO, "safetensors: %s: weight_map lists tensor '%s' twice", index,
                        out->index[i].name);
  return TSR_OK;
}

static tsr_status missing_shard(const tsri_st_layout *out, const char *shard) {
  const char *tensor = "";
  for (size_t i = 0; i < out->nindex && !tensor[0]; i++)
    if (strcmp(out->index[i].file, shard) == 0) tensor = out->index[i].name;
  return tsri_error(TSR_ERR_IO, "safetensors: %s: shard '%s' (of tensor '%s') does not exist",
                    out->index_path, shard, tensor);
}

/* The distinct shard names, in name order, become out->files; each entry's file its path. */
static tsr_status index_files(tsri_st_layout *out, const char *dir) {
  const char **names = malloc((out->nindex + 1) * sizeof *names);
  if (!names) return tsri_error(TSR_ERR_NOMEM, "safetensors: %s: out of host memory", dir);
  for (size_t i = 0; i < out->nindex; i++)
    names[i] = out->index[i].file;
  qsort(names, out->nindex, sizeof *names, by_string);
  tsr_status status = TSR_OK;
  size_t unique = 0;
  for (size_t i = 0; i < out->nindex && status == TSR_OK; i++)
    if (unique == 0 || strcmp(names[i], names[unique - 1]) != 0) {
      names[unique++] = names[i];
      status = add_file(out, join(dir, names[i]), dir);
    }
  for (size_t k = 0; k < unique && status == TSR_OK; k++)
    if (!is_file(out->files[k])) status = missing_shard(out, names[k]);
  for (size_t i = 0; i < out->nindex && status == TSR_OK; i++) {
    const char **hit = bsearch(&out->index[i].file, names, unique, sizeof *names, by_string);
    out->index[i].file = out->files[hit - names];
  }
  free(names);
  return status;
}

static tsr_status read_index(tsri_st_layout *out, const char *dir) {
  char *text = NULL;
  tsr_status status = read_text(out->index_path, &text);
  if (status != TSR_OK) return status;
  cJSON *root = cJSON_Parse(text);
  free(text);
  out->index_json = root;
  if (!root) return tsri_error(TSR_ERR_IO, "safetensors: %s: not valid JSON", out->index_path);
  const cJSON *weight_map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
  if (!cJSON_IsObject(root) || !cJSON_IsObject(weight_map))
    return tsri_error(TSR_ERR_IO, "safetensors: %s: no weight_map object", out->index_path);
  status = index_entries(out, weight_map);
  if (status == TSR_OK) status = index_files(out, dir);
  return status;
}

tsr_status tsri_st_layout_find(tsri_st_layout *out, const char *path) {
  memset(out, 0, sizeof *out);
  struct stat info;
  tsr_status status = TSR_OK;
  if (stat(path, &info) != 0) {
    status = tsri_error(TSR_ERR_IO, "safetensors: %s: cannot open: %s", path, strerror(errno));
  } else if (!S_ISDIR(info.st_mode)) {
    status = add_file(out, strdup(path), path);
  } else if (!(out->index_path = join(path, INDEX_NAME))) {
    status = tsri_error(TSR_ERR_NOMEM, "safetensors: %s: out of host memory", path);
  } else if (is_file(out->index_path)) {
    status = read_index(out, path);
  } else {
    free(out->index_path);
    out->index_path = NULL;
    char *single = join(path, "model.safetensors");
    if (single && is_file(single))
      status = add_file(out, single, path);
    else
      free(single), status = find_shards(out, path);
  }
  if (status != TSR_OK) tsri_st_layout_free(out);
  return status;
}

void tsri_st_layout_free(tsri_st_layout *layout) {
  for (size_t i = 0; i < layout->nfiles; i++)
    free(layout->files[i]);
  free(layout->files);
  free(layout->index_path);
  free(layout->index);
  cJSON_Delete(layout->index_json);
  memset(layout, 0, sizeof *layout);
}

tsr_status tsri_st_layout_check(const tsri_st_layout *layout, const tsri_st_tensor *tensors,
                                size_t count) {
  if (!layout->index_path) return TSR_OK;
  const char *index = layout->index_path;
  size_t i = 0, j = 0;
  while (i < count || j < layout->nindex) {
    int order = i == count            ? 1
                : j == layout->nindex ? -1
                                      : strcmp(tensors[i].name, layout->index[j].name);
    if (order < 0)
      return tsri_error(TSR_ERR_IO, "safetensors: %s: tensor '%s' in %s is not in the weight_map",
                        index, tensors[i].name, tensors[i].file->path);
    if (order > 0)
      return tsri_error(
          TSR_ERR_IO, "safetensors: %s: weight_map maps tensor '%s' to %s, which does not hold it",
          index, layout->index[j].name, layout->index[j].file);
    if (strcmp(tensors[i].file->path, layout->index[j].file) != 0)
      return tsri_error(TSR_ERR_IO,
                        "safetensors: %s: weight_map maps tensor '%s' to %s, but it is in %s",
                        index, tensors[i].name, layout->index[j].file, tensors[i].file->path);
    i++, j++;
  }
  return TSR_OK;
}

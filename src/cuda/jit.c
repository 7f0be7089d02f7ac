/* cuda/jit.c — NVRTC compiles a kernel specialization from the embedded sources to a CUBIN for
 * one compute capability, through the disk cache (base/disk_cache). No GPU is needed here: only
 * loading the result needs one (cuda/modules.c). */
#include <ctype.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/kernel_sources.h"
#include "base/log.h"
#include "base/status.h"
#include "cuda/modules.h"

enum { MAX_OPTION_WORDS = 16, OPTION_WORD_MAX = 128, FIXED_OPTIONS = 3 };

/* The NVRTC command line of one specialization: fixed options, then the specialization's words. */
typedef struct {
  char root[160];   /* cuda/kernels/<kernel>.cuh */
  char symbol[128]; /* tsr_<kernel>_jit_<hash> */
  char arch[48], suffix[64];
  char words[MAX_OPTION_WORDS][OPTION_WORD_MAX];
  const char *argv[FIXED_OPTIONS + MAX_OPTION_WORDS];
  int argc;
} jit_command;

/* A specialization word is -DNAME or -DNAME=VALUE with a plain identifier and value, so the
   options cannot smuggle in include paths or other compiler switches. */
static bool valid_word(const char *word) {
  if (strncmp(word, "-D", 2) != 0 || !(isalpha((unsigned char)word[2]) || word[2] == '_'))
    return false;
  const char *p = word + 2;
  while (isalnum((unsigned char)*p) || *p == '_')
    p++;
  if (*p == '\0') return true;
  if (*p++ != '=') return false;
  for (; *p; p++)
    if (!isalnum((unsigned char)*p) && !strchr("_.+-", *p)) return false;
  return true;
}

static tsr_status split_options(const char *options, jit_command *cmd) {
  const char *p = options;
  while (*p) {
    const char *end = strchr(p, ' ');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    int i = cmd->argc - FIXED_OPTIONS;
    if (i >= MAX_OPTION_WORDS || n == 0 || n >= OPTION_WORD_MAX)
      return tsri_error(TSR_ERR_INVALID, "kernel options '%s': at most %d words, one space apart",
                        options, MAX_OPTION_WORDS);
    memcpy(cmd->words[i], p, n);
    cmd->words[i][n] = '\0';
    if (!valid_word(cmd->words[i]))
      return tsri_error(TSR_ERR_INVALID, "kernel options '%s': '%s' is not -DNAME[=VALUE]", options,
                        cmd->words[i]);
    cmd->argv[cmd->argc++] = cmd->words[i];
    p += n + (end ? 1 : 0);
  }
  return TSR_OK;
}

static tsr_status make_command(const char *kernel, const char *options, int cc_major, int cc_minor,
                               jit_command *cmd) {
  memset(cmd, 0, sizeof *cmd);
  if (!kernel || !options || strlen(kernel) > 64)
    return tsri_error(TSR_ERR_INVALID, "kernel: a name (at most 64 bytes) and options are needed");
  snprintf(cmd->root, sizeof cmd->root, "cuda/kernels/%s.cuh", kernel);
  if (!tsri_kernel_source_find(cmd->root))
    return tsri_error(TSR_ERR_INVALID, "kernel '%s': no embedded source %s", kernel, cmd->root);
  uint8_t digest[TSRI_SHA256_BYTES];
  char hex[TSRI_SHA256_HEX];
  tsri_sha256_bytes(options, strlen(options), digest);
  tsri_sha256_to_hex(digest, hex);
  snprintf(cmd->symbol, sizeof cmd->symbol, "tsr_%s_jit_%.12s", kernel, hex);
  snprintf(cmd->suffix, sizeof cmd->suffix, "-DTSR_KERNEL_SUFFIX=_jit_%.12s", hex);
  snprintf(cmd->arch, sizeof cmd->arch, "--gpu-architecture=sm_%d%d", cc_major, cc_minor);
  cmd->argv[0] = cmd->arch;
  cmd->argv[1] = "-std=c++17";
  cmd->argv[2] = cmd->suffix;
  cmd->argc = FIXED_OPTIONS;
  return split_options(options, cmd);
}

static tsr_status command_key(const jit_command *cmd, int cc_major, int cc_minor,
                              uint8_t key[TSRI_SHA256_BYTES]) {
  char closure[TSRI_SHA256_HEX], line[320];
  int nvrtc_major = 0, nvrtc_minor = 0;
  if (!tsri_kernel_source_closure_sha256(cmd->root, closure))
    return tsri_error(TSR_ERR_NOMEM, "kernel %s: no memory for its include closure", cmd->root);
  if (nvrtcVersion(&nvrtc_major, &nvrtc_minor) != NVRTC_SUCCESS)
    return tsri_error(TSR_ERR_DEVICE, "NVRTC: nvrtcVersion failed");
  tsri_sha256 h;
  tsri_sha256_init(&h);
  snprintf(line, sizeof line, "tessera-jit-1\n%s\n%s\n", cmd->root, closure);
  tsri_sha256_update(&h, line, strlen(line));
  for (int i = 0; i < cmd->argc; i++) {
    tsri_sha256_update(&h, cmd->argv[i], strlen(cmd->argv[i]));
    tsri_sha256_update(&h, "\n", 1);
  }
  snprintf(line, sizeof line, "cc %d.%d\nnvrtc %d.%d\n", cc_major, cc_minor, nvrtc_major,
           nvrtc_minor);
  tsri_sha256_update(&h, line, strlen(line));
  tsri_sha256_final(&h, key);
  return TSR_OK;
}

tsr_status tsri_cuda_jit_key(const char *kernel, const char *options, int cc_major, int cc_minor,
                             uint8_t key[TSRI_SHA256_BYTES]) {
  jit_command cmd;
  tsr_status st = make_command(kernel, options, cc_major, cc_minor, &cmd);
  return st == TSR_OK ? command_key(&cmd, cc_major, cc_minor, key) : st;
}

/* The compile's failure with NVRTC's log (its first 700 bytes: the message has a fixed size). */
static tsr_status compile_error(nvrtcProgram program, nvrtcResult result, const jit_command *cmd) {
  size_t log_bytes = 0;
  char *log = NULL;
  if (nvrtcGetProgramLogSize(program, &log_bytes) == NVRTC_SUCCESS && log_bytes > 0 &&
      (log = malloc(log_bytes)) != NULL && nvrtcGetProgramLog(program, log) != NVRTC_SUCCESS)
    log[0] = '\0';
  tsr_status st = tsri_error(TSR_ERR_DEVICE, "NVRTC: %s (%s, %s): %.700s", cmd->root, cmd->arch,
                             nvrtcGetErrorString(result), log ? log : "(no log)");
  free(log);
  return st;
}

/* The embedded sources the root includes, given to NVRTC as named headers. */
static tsr_status closure_headers(const char *root, const char **bodies, const char **names,
                                  int *count) {
  bool *in_closure = calloc(tsri_kernel_source_table_count + 1, sizeof *in_closure);
  if (!in_closure) return tsri_error(TSR_ERR_NOMEM, "kernel %s: no memory", root);
  tsri_kernel_source_closure(root, in_closure);
  *count = 0;
  for (size_t i = 0; i < tsri_kernel_source_table_count; i++) {
    const tsri_kernel_source_entry *source = &tsri_kernel_source_table[i];
    if (!in_closure[i] || strcmp(source->name, root) == 0) continue;
    bodies[*count] = (const char *)source->bytes;
    names[(*count)++] = source->name;
  }
  free(in_closure);
  return TSR_OK;
}

static tsr_status nvrtc_compile(const jit_command *cmd, tsri_jit_module *out) {
  size_t n = tsri_kernel_source_table_count + 1;
  const char **bodies = calloc(n, sizeof *bodies), **names = calloc(n, sizeof *names);
  int header_count = 0;
  nvrtcProgram program = NULL;
  nvrtcResult result = NVRTC_SUCCESS;
  tsr_status st = bodies && names ? closure_headers(cmd->root, bodies, names, &header_count)
                                  : tsri_error(TSR_ERR_NOMEM, "kernel %s: no memory", cmd->root);
  if (st != TSR_OK) goto done;
  const char *source = (const char *)tsri_kernel_source_find(cmd->root)->bytes;
  result = nvrtcCreateProgram(&program, source, cmd->root, header_count, bodies, names);
  if (result == NVRTC_SUCCESS) result = nvrtcCompileProgram(program, cmd->argc, cmd->argv);
  if (result == NVRTC_SUCCESS) result = nvrtcGetCUBINSize(program, &out->image_bytes);
  if (result == NVRTC_SUCCESS && !(out->image = malloc(out->image_bytes + 1))) {
    st = tsri_error(TSR_ERR_NOMEM, "NVRTC: no memory for a %zu-byte CUBIN", out->image_bytes);
    goto done;
  }
  if (result == NVRTC_SUCCESS) result = nvrtcGetCUBIN(program, (char *)out->image);
  if (result != NVRTC_SUCCESS) st = compile_error(program, result, cmd);
done:
  if (program) nvrtcDestroyProgram(&program);
  free(bodies);
  free(names);
  return st;
}

/* Compiles and stores; `origin` says why it was compiled. */
static tsr_status compile_and_store(const jit_command *cmd, const char *cache_dir,
                                    tsri_jit_module *out) {
  tsr_status st = nvrtc_compile(cmd, out);
  char why[512];
  if (st == TSR_OK && cache_dir && *cache_dir &&
      !tsri_disk_cache_store(cache_dir, out->key, out->image, out->image_bytes, why, sizeof why))
    tsri_log(TSRI_LOG_WARN, "kernel cache: %s not stored (%s)", cmd->symbol, why);
  return st;
}

tsr_status tsri_cuda_jit_compile(const char *kernel, const char *options, int cc_major,
                                 int cc_minor, const char *cache_dir, tsri_jit_module *out) {
  memset(out, 0, sizeof *out);
  jit_command cmd;
  tsr_status st = make_command(kernel, options, cc_major, cc_minor, &cmd);
  if (st == TSR_OK) st = command_key(&cmd, cc_major, cc_minor, out->key);
  if (st != TSR_OK) return st;
  snprintf(out->symbol, sizeof out->symbol, "%s", cmd.symbol);
  out->origin = TSRI_JIT_COMPILED;
  if (cache_dir && *cache_dir) {
    char why[512];
    switch (tsri_disk_cache_load(cache_dir, out->key, &out->image, &out->image_bytes, why,
                                 sizeof why)) {
      case TSRI_DISK_CACHE_HIT:
        out->origin = TSRI_JIT_DISK_HIT;
        return TSR_OK;
      case TSRI_DISK_CACHE_CORRUPT:
        tsri_log(TSRI_LOG_WARN, "kernel cache: %s; compiling it again", why);
        out->origin = TSRI_JIT_REBUILT;
        break;
      case TSRI_DISK_CACHE_ERROR:
        tsri_log(TSRI_LOG_WARN, "kernel cache: %s; compiling without it", why);
        break;
      case TSRI_DISK_CACHE_MISS:
        break;
    }
  }
  st = compile_and_store(&cmd, cache_dir, out);
  if (st != TSR_OK) tsri_cuda_jit_module_free(out);
  return st;
}

void tsri_cuda_jit_module_free(tsri_jit_module *module) {
  free(module->image);
  module->image = NULL;
  module->image_bytes = 0;
}

static char jit_cache_dir[TSRI_ENV_PATH_MAX + 16];
static pthread_once_t jit_cache_dir_once = PTHREAD_ONCE_INIT;

static void make_jit_cache_dir(void) {
  const char *base = tsri_env()->cache_dir;
  if (*base) snprintf(jit_cache_dir, sizeof jit_cache_dir, "%s/kernels", base);
}

const char *tsri_cuda_jit_cache_dir(void) {
  pthread_once(&jit_cache_dir_once, make_jit_cache_dir);
  return jit_cache_dir;
}

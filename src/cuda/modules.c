/* cuda/modules.c — which module a kernel comes from (TSR_KERNELS: AOT fatbin or NVRTC), loading
 * it with the runtime's cudaLibraryLoadData, and the process-wide table of loaded modules (one
 * per path, kernel, options and compute capability: a cudaLibrary_t serves every device). Not the
 * compile (cuda/jit.c) and not the launch. */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/env.h"
#include "base/kernel_sources.h"
#include "base/log.h"
#include "base/status.h"
#include "cuda/modules.h"

typedef struct loaded_module {
  struct loaded_module *next; /* in its bucket */
  uint32_t hash;              /* of kernel and options */
  bool aot;
  bool auto_jit; /* TSR_KERNELS=auto resolved this specialization to this JIT module */
  int cc;        /* major * 10 + minor; JIT only (AOT modules carry every architecture they have) */
  char kernel[72], options[512];
  cudaLibrary_t library;
  cudaKernel_t entry;
} loaded_module;

/* The loaded modules, hashed by kernel and options: every launch looks its kernel up here (a
   decode step launches ~1500), so a lookup is a bucket's few entries, not a walk of every
   specialization in use. */
#define MODULE_BUCKETS 256
static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;
static loaded_module *modules[MODULE_BUCKETS];

static uint32_t module_hash(const char *kernel, const char *options) { /* FNV-1a */
  uint32_t h = 2166136261u;
  for (const char *p = kernel; *p; p++)
    h = (h ^ (unsigned char)*p) * 16777619u;
  h = (h ^ 0xffu) * 16777619u; /* a separator no name contains */
  for (const char *p = options; *p; p++)
    h = (h ^ (unsigned char)*p) * 16777619u;
  return h;
}

const tsri_kernel_aot_module *tsri_cuda_aot_find(const char *kernel, const char *options) {
  for (size_t i = 0; kernel && options && i < tsri_kernel_aot_table_count; i++) {
    const tsri_kernel_aot_module *m = &tsri_kernel_aot_table[i];
    if (strcmp(m->kernel, kernel) == 0 && strcmp(m->options, options) == 0) return m;
  }
  return NULL;
}

tsr_status tsri_cuda_aot_check(const tsri_kernel_aot_module *module) {
  char root[160], closure[TSRI_SHA256_HEX];
  snprintf(root, sizeof root, "cuda/kernels/%s.cuh", module->kernel);
  if (!tsri_kernel_source_closure_sha256(root, closure))
    return tsri_error(TSR_ERR_STATE, "AOT %s: its source %s is not embedded", module->symbol, root);
  if (strcmp(closure, module->closure_sha256) != 0)
    return tsri_error(TSR_ERR_STATE,
                      "AOT %s (%s): built from sources with closure SHA-256 %s, but the embedded "
                      "sources hash to %s",
                      module->symbol, module->options, module->closure_sha256, closure);
  return TSR_OK;
}

static loaded_module *find_loaded(bool aot, int cc, const char *kernel, const char *options) {
  uint32_t hash = module_hash(kernel, options);
  for (loaded_module *m = modules[hash % MODULE_BUCKETS]; m; m = m->next)
    if (m->hash == hash && m->aot == aot && (aot || m->cc == cc) &&
        strcmp(m->kernel, kernel) == 0 && strcmp(m->options, options) == 0)
      return m;
  return NULL;
}

/* Loads `image` and finds `symbol` in it; the caller holds modules_lock. */
static tsr_status load_image(const void *image, const char *symbol, bool aot, int cc,
                             const char *kernel, const char *options, cudaKernel_t *out) {
  loaded_module *m = calloc(1, sizeof *m);
  if (!m) return tsri_error(TSR_ERR_NOMEM, "kernel %s: no memory", symbol);
  cudaError_t err = cudaLibraryLoadData(&m->library, image, NULL, NULL, 0, NULL, NULL, 0);
  if (err == cudaSuccess) {
    err = cudaLibraryGetKernel(&m->entry, m->library, symbol);
    if (err != cudaSuccess) cudaLibraryUnload(m->library);
  }
  if (err != cudaSuccess) {
    (void)cudaGetLastError(); /* the runtime keeps it as its last error otherwise */
    free(m);
    return tsri_error(TSR_ERR_DEVICE, "kernel %s: %s module does not load: %s", symbol,
                      aot ? "AOT" : "JIT", cudaGetErrorString(err));
  }
  m->aot = aot;
  m->cc = cc;
  m->hash = module_hash(kernel, options);
  snprintf(m->kernel, sizeof m->kernel, "%s", kernel);
  snprintf(m->options, sizeof m->options, "%s", options);
  m->next = modules[m->hash % MODULE_BUCKETS];
  modules[m->hash % MODULE_BUCKETS] = m;
  *out = m->entry;
  return TSR_OK;
}

static tsr_status device_cc(int device, const char *kernel, int *cc) {
  int major = 0, minor = 0;
  cudaError_t err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return tsri_error(TSR_ERR_DEVICE, "kernel %s: GPU %d: %s", kernel, device,
                      cudaGetErrorString(err));
  }
  *cc = major * 10 + minor;
  return TSR_OK;
}

static tsr_status get_aot(const char *kernel, const char *options, int cc, cudaKernel_t *out) {
  const tsri_kernel_aot_module *module = tsri_cuda_aot_find(kernel, options);
  if (!module)
    return tsri_error(TSR_ERR_UNSUPPORTED, "kernel %s (%s): no AOT module was built for it", kernel,
                      options);
  if (cc < tsri_kernel_aot_min_cc)
    return tsri_error(TSR_ERR_UNSUPPORTED,
                      "kernel %s: the AOT modules need compute capability %d.%d; the GPU has %d.%d",
                      module->symbol, tsri_kernel_aot_min_cc / 10, tsri_kernel_aot_min_cc % 10,
                      cc / 10, cc % 10);
  loaded_module *m = find_loaded(true, 0, kernel, options);
  if (m) {
    *out = m->entry;
    return TSR_OK;
  }
  /* Checked when loaded, once: hashing a source closure takes 8-23 µs (elementwise.cuh's
     included files), which every launch of an AOT kernel used to pay. */
  tsr_status st = tsri_cuda_aot_check(module);
  if (st != TSR_OK) return st;
  return load_image(module->image, module->symbol, true, 0, kernel, options, out);
}

/* Appends "kernel|options" to TSR_KERNEL_RECORD's file, when set: one write of the whole line
   with O_APPEND, so the processes of a parallel test run append whole lines. A failure is
   warned about, never an error of the load. */
static void record_specialization(const char *kernel, const char *options) {
  const char *path = tsri_env()->kernel_record;
  if (!*path) return;
  char line[sizeof modules[0]->kernel + sizeof modules[0]->options + 2];
  int n = snprintf(line, sizeof line, "%s|%s\n", kernel, options);
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  bool written = fd >= 0 && n > 0 && (size_t)n < sizeof line && write(fd, line, (size_t)n) == n;
  if (fd >= 0) close(fd);
  if (!written) tsri_log(TSRI_LOG_WARN, "TSR_KERNEL_RECORD: %s not appended to %s", kernel, path);
}

static tsr_status get_jit(const char *kernel, const char *options, int cc, cudaKernel_t *out) {
  loaded_module *m = find_loaded(false, cc, kernel, options);
  if (m) {
    *out = m->entry;
    return TSR_OK;
  }
  tsri_jit_module jit;
  tsr_status st =
      tsri_cuda_jit_compile(kernel, options, cc / 10, cc % 10, tsri_cuda_jit_cache_dir(), &jit);
  if (st != TSR_OK) return st;
  st = load_image(jit.image, jit.symbol, false, cc, kernel, options, out);
  /* One line per specialization a process loads (TSR_LOG=debug): the list to give AOT modules
     so that a first run compiles nothing. */
  if (st == TSR_OK) {
    tsri_log(TSRI_LOG_DEBUG, "kernel %s \"%s\": JIT, %s", kernel, options,
             jit.origin == TSRI_JIT_DISK_HIT ? "from the disk cache" : "compiled");
    record_specialization(kernel, options);
  }
  tsri_cuda_jit_module_free(&jit);
  return st;
}

/* AUTO: AOT when built for this specialization and GPU, current and loadable; JIT otherwise. */
static tsr_status get_auto(const char *kernel, const char *options, int cc, cudaKernel_t *out,
                           bool *used_aot) {
  /* A specialization this path already resolved answers at once: its AOT module when loaded,
     else a JIT module auto chose before (a JIT module the jit path loaded does not count: an
     AOT module may still apply). The AOT table's linear search then runs once per
     specialization, not per launch. */
  loaded_module *m = find_loaded(true, 0, kernel, options);
  if (!m) {
    m = find_loaded(false, cc, kernel, options);
    if (m && !m->auto_jit) m = NULL;
  }
  if (m) {
    *out = m->entry;
    *used_aot = m->aot;
    return TSR_OK;
  }
  const tsri_kernel_aot_module *module = tsri_cuda_aot_find(kernel, options);
  if (module && cc >= tsri_kernel_aot_min_cc) {
    tsr_status st = get_aot(kernel, options, cc, out);
    if (st == TSR_OK) {
      *used_aot = true;
      return TSR_OK;
    }
    tsri_log(st == TSR_ERR_STATE ? TSRI_LOG_WARN : TSRI_LOG_INFO, "%s; using the JIT instead",
             tsr_last_error());
  }
  tsr_status st = get_jit(kernel, options, cc, out);
  if (st == TSR_OK) find_loaded(false, cc, kernel, options)->auto_jit = true;
  return st;
}

tsr_status tsri_cuda_kernel_get_via(const char *kernel, const char *options, int device,
                                    tsri_env_kernels path, cudaKernel_t *out, bool *used_aot) {
  bool aot = false;
  if (!kernel || !options || !out)
    return tsri_error(TSR_ERR_INVALID, "kernel get: kernel, options and out are required");
  if (strlen(kernel) >= sizeof modules[0]->kernel || strlen(options) >= sizeof modules[0]->options)
    return tsri_error(TSR_ERR_INVALID, "kernel get: kernel name or options too long");
  /* One lock over lookups, compiles and loads: a specialization is compiled once even when
     several threads ask for it first, and compiles are rare (once per process and key). */
  int cc = 0;
  tsr_status st = device_cc(device, kernel, &cc);
  if (st != TSR_OK) return st;
  pthread_mutex_lock(&modules_lock);
  if (path == TSRI_ENV_KERNELS_AOT) {
    st = get_aot(kernel, options, cc, out);
    aot = st == TSR_OK;
  } else if (path == TSRI_ENV_KERNELS_JIT) {
    st = get_jit(kernel, options, cc, out);
  } else {
    st = get_auto(kernel, options, cc, out, &aot);
  }
  pthread_mutex_unlock(&modules_lock);
  if (used_aot) *used_aot = aot;
  return st;
}

tsr_status tsri_cuda_kernel_get(const char *kernel, const char *options, int device,
                                cudaKernel_t *out) {
  return tsri_cuda_kernel_get_via(kernel, options, device, tsri_env()->kernels, out, NULL);
}

void tsri_cuda_modules_release(void) {
  pthread_mutex_lock(&modules_lock);
  for (size_t b = 0; b < MODULE_BUCKETS; b++)
    while (modules[b]) {
      loaded_module *m = modules[b];
      modules[b] = m->next;
      cudaLibraryUnload(m->library);
      free(m);
    }
  pthread_mutex_unlock(&modules_lock);
}

/* base/discovery.c — the one discovery pass (the CPU here, GPUs through the probe their backend
 * registered) and its process-wide cache; not a device registry with hot-plug: what the pass saw
 * is what exists. */
#include "base/discovery.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "base/status.h"

static tsri_discovery_result discovered;
static pthread_once_t discovery_once = PTHREAD_ONCE_INIT;
static atomic_uint_fast64_t discovery_passes;
/* Written only inside the pass (tsri_register_discovery_probes), so pthread_once orders it. */
static tsri_discovery_probe probes[TSRI_DEVICE_TYPE_COUNT];

/* ---- the CPU's name, size and caches ------------------------------------------------------ */

/* Copies the value of the first "model name : ..." line of /proc/cpuinfo; false if none. */
static bool read_cpuinfo_model_name(char *dst, size_t dst_size) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return false;
  char line[512];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    const char *value = strchr(line, ':');
    if (!value) continue;
    value++;
    while (*value == ' ' || *value == '\t')
      value++;
    size_t len = strcspn(value, "\n");
    while (len > 0 && (value[len - 1] == ' ' || value[len - 1] == '\t'))
      len--;
    if (len == 0) continue;
    snprintf(dst, dst_size, "%.*s", (int)len, value);
    found = true;
  }
  fclose(f);
  return found;
}

static void read_cpu_name(char *dst, size_t dst_size) {
  if (read_cpuinfo_model_name(dst, dst_size)) return;
  struct utsname machine;
  if (uname(&machine) == 0 && machine.machine[0]) {
    snprintf(dst, dst_size, "%s", machine.machine);
    return;
  }
  snprintf(dst, dst_size, "cpu");
}

/* Parses a sysfs cache size such as "1024K" or "2M" into bytes; 0 when unreadable. */
static uint64_t read_sysfs_size(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  unsigned long long value = 0;
  char unit = 0;
  int fields = fscanf(f, "%llu%c", &value, &unit);
  fclose(f);
  if (fields < 1) return 0;
  if (unit == 'K') return (uint64_t)value << 10;
  if (unit == 'M') return (uint64_t)value << 20;
  if (unit == 'G') return (uint64_t)value << 30;
  return (uint64_t)value;
}

static int read_sysfs_int(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int value = -1;
  if (fscanf(f, "%d", &value) != 1) value = -1;
  fclose(f);
  return value;
}

/* The per-core L2 size: glibc's answer first, else the sysfs cache entry whose level is 2. */
static uint64_t read_l2_bytes(void) {
#ifdef _SC_LEVEL2_CACHE_SIZE
  long from_libc = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (from_libc > 0) return (uint64_t)from_libc;
#endif
  for (int index = 0; index < 16; index++) {
    char path[128];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", index);
    int level = read_sysfs_int(path);
    if (level < 0) break;
    if (level != 2) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
    return read_sysfs_size(path);
  }
  return 0;
}

/* ---- CPU features (cpuid, and what the OS saves on a context switch) ---------------------- */

static void append_feature(char *features, size_t size, const char *name) {
  size_t used = strlen(features);
  snprintf(features + used, size - used, "%s%s", used ? " " : "", name);
}

#if defined(__x86_64__) || defined(__i386__)
/* XCR0: which register states the OS saves (bits 1-2: SSE+AVX; 5-7: the AVX-512 state). */
static uint64_t read_xcr0(void) {
  uint32_t low, high;
  __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return ((uint64_t)high << 32) | low;
}

/* One cpuid bit: leaf 1, leaf 7 subleaf 0, or leaf 7 subleaf 1 ("7.1"); register; bit; and which
 * register state the OS must save for the instructions to be usable. */
typedef enum { LEAF_1, LEAF_7, LEAF_7_1 } cpuid_leaf;
typedef enum { EAX, EBX, ECX, EDX } cpuid_register;
typedef enum { NEEDS_NOTHING, NEEDS_AVX_STATE, NEEDS_AVX512_STATE } os_state;
typedef struct {
  const char *name;
  cpuid_leaf leaf;
  cpuid_register reg;
  int bit;
  os_state needs;
} feature_bit;

static const feature_bit x86_features[] = {
    {"sse2", LEAF_1, EDX, 26, NEEDS_NOTHING},
    {"sse4.2", LEAF_1, ECX, 20, NEEDS_NOTHING},
    {"popcnt", LEAF_1, ECX, 23, NEEDS_NOTHING},
    {"avx", LEAF_1, ECX, 28, NEEDS_AVX_STATE},
    {"avx2", LEAF_7, EBX, 5, NEEDS_AVX_STATE},
    {"fma", LEAF_1, ECX, 12, NEEDS_AVX_STATE},
    {"f16c", LEAF_1, ECX, 29, NEEDS_AVX_STATE},
    {"bmi2", LEAF_7, EBX, 8, NEEDS_NOTHING},
    {"avx_vnni", LEAF_7_1, EAX, 4, NEEDS_AVX_STATE},
    {"avx512f", LEAF_7, EBX, 16, NEEDS_AVX512_STATE},
    {"avx512dq", LEAF_7, EBX, 17, NEEDS_AVX512_STATE},
    {"avx512bw", LEAF_7, EBX, 30, NEEDS_AVX512_STATE},
    {"avx512vl", LEAF_7, EBX, 31, NEEDS_AVX512_STATE},
    {"avx512_vnni", LEAF_7, ECX, 11, NEEDS_AVX512_STATE},
    {"avx512_bf16", LEAF_7_1, EAX, 5, NEEDS_AVX512_STATE},
    {"avx512_fp16", LEAF_7, EDX, 23, NEEDS_AVX512_STATE},
};

static bool has_bit(const uint32_t regs[4], cpuid_register reg, int bit) {
  return (regs[reg] >> bit) & 1u;
}

static void probe_x86_features(tsri_discovery_result *r) {
  uint32_t leaves[3][4] = {{0}};
  if (!__get_cpuid_count(1, 0, &leaves[LEAF_1][EAX], &leaves[LEAF_1][EBX], &leaves[LEAF_1][ECX],
                         &leaves[LEAF_1][EDX]))
    return;
  /* Leaf 7 answers zeros (or fails) on CPUs without it; the arrays then stay zero. */
  __get_cpuid_count(7, 0, &leaves[LEAF_7][EAX], &leaves[LEAF_7][EBX], &leaves[LEAF_7][ECX],
                    &leaves[LEAF_7][EDX]);
  if (leaves[LEAF_7][EAX] >= 1)
    __get_cpuid_count(7, 1, &leaves[LEAF_7_1][EAX], &leaves[LEAF_7_1][EBX], &leaves[LEAF_7_1][ECX],
                      &leaves[LEAF_7_1][EDX]);
  uint64_t xcr0 = has_bit(leaves[LEAF_1], ECX, 27) ? read_xcr0() : 0; /* OSXSAVE */
  bool os_saves[3] = {true, (xcr0 & 0x6u) == 0x6u, (xcr0 & 0xe6u) == 0xe6u};

  for (size_t i = 0; i < sizeof x86_features / sizeof x86_features[0]; i++) {
    const feature_bit *f = &x86_features[i];
    if (has_bit(leaves[f->leaf], f->reg, f->bit) && os_saves[f->needs])
      append_feature(r->cpu.features, sizeof r->cpu.features, f->name);
  }
  const uint32_t *leaf1 = leaves[LEAF_1], *leaf7 = leaves[LEAF_7];
  r->has_avx2 = os_saves[NEEDS_AVX_STATE] && has_bit(leaf7, EBX, 5);
  r->has_fma = os_saves[NEEDS_AVX_STATE] && has_bit(leaf1, ECX, 12);
  r->has_f16c = os_saves[NEEDS_AVX_STATE] && has_bit(leaf1, ECX, 29);
  r->has_avx512f = os_saves[NEEDS_AVX512_STATE] && has_bit(leaf7, EBX, 16);
  r->has_avx512bw = os_saves[NEEDS_AVX512_STATE] && has_bit(leaf7, EBX, 30);
  r->has_avx512vl = os_saves[NEEDS_AVX512_STATE] && has_bit(leaf7, EBX, 31);
}
#endif

/* ---- the pass ----------------------------------------------------------------------------- */

static void probe_cpu(tsri_discovery_result *r) {
  tsr_device_info *cpu = &r->cpu;
  cpu->device = (tsr_device){TSR_CPU, 0};
  read_cpu_name(cpu->name, sizeof cpu->name);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  cpu->compute_units = cores > 0 ? (int)cores : 1;
  long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  cpu->memory_bytes = (pages > 0 && page_size > 0) ? (uint64_t)pages * (uint64_t)page_size : 0;
  cpu->l2_bytes = read_l2_bytes();
#if defined(__x86_64__) || defined(__i386__)
  probe_x86_features(r);
#endif
}

void tsri_discovery_register_probe(tsr_device_type type, tsri_discovery_probe probe) {
  if ((unsigned)type < TSRI_DEVICE_TYPE_COUNT) probes[type] = probe;
}

static void probe_gpus(tsri_discovery_result *r) {
  if (!probes[TSR_GPU]) return; /* a build without a GPU backend: no GPUs */
  int count = probes[TSR_GPU](r->gpus, TSRI_MAX_GPUS);
  r->gpu_count = count < 0 ? 0 : count > TSRI_MAX_GPUS ? TSRI_MAX_GPUS : count;
  for (int i = 0; i < r->gpu_count; i++)
    r->gpus[i].device = (tsr_device){TSR_GPU, i};
}

static void run_discovery_pass(void) {
  tsri_register_discovery_probes();
  probe_cpu(&discovered);
  probe_gpus(&discovered);
  atomic_fetch_add(&discovery_passes, 1);
}

const tsri_discovery_result *tsri_discovery(void) {
  pthread_once(&discovery_once, run_discovery_pass);
  return &discovered;
}

/* ---- devices by name ---------------------------------------------------------------------- */

const char *tsri_device_str(tsr_device d, char buf[16]) {
  if (d.type == TSR_CPU && d.index == 0)
    snprintf(buf, 16, "cpu");
  else if (d.type == TSR_CPU)
    snprintf(buf, 16, "cpu:%d", d.index);
  else if (d.type == TSR_GPU)
    snprintf(buf, 16, "gpu:%d", d.index);
  else
    snprintf(buf, 16, "bad-type");
  return buf;
}

tsr_status tsri_device_check(tsr_device d, const char *what) {
  const tsri_discovery_result *r = tsri_discovery();
  char name[16];
  if (d.type == TSR_CPU) {
    if (d.index == 0) return TSR_OK;
    return tsri_error(TSR_ERR_DEVICE, "%s: no such device %s (this process has 1 CPU device, cpu)",
                      what, tsri_device_str(d, name));
  }
  if (d.type == TSR_GPU) {
    if (d.index >= 0 && d.index < r->gpu_count) return TSR_OK;
    return tsri_error(TSR_ERR_DEVICE, "%s: no such device %s (this process has %d GPU%s)", what,
                      tsri_device_str(d, name), r->gpu_count, r->gpu_count == 1 ? "" : "s");
  }
  return tsri_error(TSR_ERR_DEVICE, "%s: no such device type %d (use TSR_CPU or TSR_GPU)", what,
                    (int)d.type);
}

/* ---- the public face ---------------------------------------------------------------------- */

int tsr_device_count(tsr_device_type t) {
  const tsri_discovery_result *r = tsri_discovery();
  if (t == TSR_CPU) return 1;
  if (t == TSR_GPU) return r->gpu_count;
  return 0;
}

tsr_status tsr_device_info_get(tsr_device d, tsr_device_info *out) {
  if (!out) return tsri_error(TSR_ERR_INVALID, "device_info_get: out is NULL");
  tsr_status st = tsri_device_check(d, "device_info_get");
  if (st != TSR_OK) return st;
  const tsri_discovery_result *r = tsri_discovery();
  *out = d.type == TSR_CPU ? r->cpu : r->gpus[d.index];
  return TSR_OK;
}

uint64_t tsr_device_discovery_probes(void) {
  tsri_discovery();
  return (uint64_t)atomic_load(&discovery_passes);
}

/* memory/system_cpu.c — the CPU's system allocator: what a request is backed by and how many
 * bytes that is. Small blocks come from the heap, large ones are their own mappings. It keeps no
 * counts and knows nothing of caps or caches. */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memory/ledger.h"

/* Below this a buffer is a 64-byte aligned heap block; from it on, its own anonymous mapping
 * (unmapped when freed, so large frees really return memory to the system at once). */
#define CPU_MAP_THRESHOLD ((uint64_t)64 * 1024)
#define CPU_HEAP_ALIGNMENT ((uint64_t)64)

static uint64_t page_bytes(void) {
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? (uint64_t)page : 4096;
}

static uint64_t round_up(uint64_t n, uint64_t unit) {
  return (n + unit - 1) / unit * unit;
}

/* The decision is made on the rounded size, so alloc and free (which only sees the rounded
 * size) always agree: a request that rounds up to 64 KiB is mapped, and both ways count the
 * same bytes (64 KiB is a whole number of pages). Callers keep n below TSRI_LEDGER_MAX_BYTES. */
static uint64_t cpu_round(uint64_t n) {
  if (n == 0) return 0;
  uint64_t heap = round_up(n, CPU_HEAP_ALIGNMENT);
  return heap < CPU_MAP_THRESHOLD ? heap : round_up(n, page_bytes());
}

static void *cpu_alloc(int device_index, uint64_t bytes) {
  (void)device_index; /* one CPU device */
  if (bytes == 0 || bytes > SIZE_MAX) return NULL;
  if (bytes < CPU_MAP_THRESHOLD) {
    void *p = NULL;
    return posix_memalign(&p, CPU_HEAP_ALIGNMENT, (size_t)bytes) == 0 ? p : NULL;
  }
  void *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void cpu_free(void *ptr, uint64_t bytes) {
  if (!ptr) return;
  if (bytes < CPU_MAP_THRESHOLD)
    free(ptr);
  else if (munmap(ptr, (size_t)bytes) != 0)
    abort(); /* only a wrong pointer or size can fail it: the ledger would be lying */
}

static uint64_t cpu_total_bytes(int device_index) {
  (void)device_index;
  long pages = sysconf(_SC_PHYS_PAGES);
  return pages > 0 ? (uint64_t)pages * page_bytes() : 0;
}

const tsri_system_allocator tsri_cpu_allocator = {
    .round = cpu_round,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .total_bytes = cpu_total_bytes,
    .used_bytes = NULL,
};

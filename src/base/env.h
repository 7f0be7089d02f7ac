/* base/env.h — the environment knobs, read once per process (the first call reads them), and the
 * one checked integer parser every knob's number goes through. Every getenv of the library lives
 * in base/env.c; other layers read tsri_env(). */
#ifndef TSR_BASE_ENV_H
#define TSR_BASE_ENV_H

#include <stdbool.h>
#include <stdint.h>

/* TSR_NUM_THREADS accepts [1, TSRI_ENV_MAX_THREADS]. */
#define TSRI_ENV_MAX_THREADS 256

typedef enum {
  TSRI_ENV_DEVICE_UNSET = 0, /* TSR_DEFAULT_DEVICE unset, empty or unparseable (warned) */
  TSRI_ENV_DEVICE_CPU,
  TSRI_ENV_DEVICE_GPU
} tsri_env_device_kind;

typedef enum {
  TSRI_ENV_ISA_UNSET = -1, /* TSR_CPU_ISA unset, empty or unknown (warned) */
  TSRI_ENV_ISA_SCALAR = 0,
  TSRI_ENV_ISA_AVX2 = 1,
  TSRI_ENV_ISA_AVX512 = 2
} tsri_env_isa;

typedef enum {
  TSRI_ENV_KERNELS_AUTO = 0, /* TSR_KERNELS unset, empty or unknown (warned): AOT where built */
  TSRI_ENV_KERNELS_JIT,      /* NVRTC for every kernel */
  TSRI_ENV_KERNELS_AOT       /* the built fatbins only; a specialization without one fails */
} tsri_env_kernels;

/* The longest TSR_CACHE_DIR (or derived default) kept; a longer one is warned about and unused. */
#define TSRI_ENV_PATH_MAX 1024

typedef struct {
  int log_level;                    /* TSR_LOG: error|warn|info|debug (default warn) */
  char default_device[32];          /* TSR_DEFAULT_DEVICE as given (for messages), "" if unset */
  tsri_env_device_kind device_kind; /* ... parsed: cpu, gpu (= gpu:0) or gpu:N */
  int device_index;                 /* N, in [0, INT_MAX] */
  bool has_cache_limit;             /* TSR_CACHE_LIMIT set (bytes) */
  uint64_t cache_limit;             /* its value */
  int num_threads;                  /* TSR_NUM_THREADS, or 0 when unset or bad (warned) */
  tsri_env_isa cpu_isa;             /* TSR_CPU_ISA: avx512|avx2|scalar */
  char cpu_isa_text[16];            /* as given, for messages */
  tsri_env_kernels kernels;         /* TSR_KERNELS: auto|jit|aot */
  bool debug_poison;                /* TSR_DEBUG_POISON=1: NaN-fill CUDA quantized ops' outputs */
  bool profile;                     /* TSR_PROFILE=1: host time per primitive (core/profile.h) */
  bool cuda_graphs;                 /* TSR_CUDA_GRAPHS=1: kernels batched into graphs */
  /* TSR_QMV_MMA: the tensor-core decode kernel's shape for benchmarks, "R,W,B,X" (R tiles of 16
     weight rows per warp, 1|2; W warps per block, 4|8|16; B blocks per SM the registers are
     bounded for, 1..4; X 1: x staged in shared memory, 0: read by each lane), or "off" (decode on
     qmma.cuh as before it). Unset: qmv_mma = 0 and the library's choice. */
  int qmv_mma; /* -1 off, 0 unset, 1 set: the fields below */
  int qmv_mma_rows, qmv_mma_warps, qmv_mma_blocks, qmv_mma_staged;
  /* TSR_CACHE_DIR, else $XDG_CACHE_HOME/tessera (an absolute XDG_CACHE_HOME only, as the XDG
     spec says), else $HOME/.cache/tessera; "" when none of them is usable (no disk cache). */
  char cache_dir[TSRI_ENV_PATH_MAX];
  /* TSR_KERNEL_RECORD: a file each JIT specialization a process loads is appended to, one
     "kernel|options" line (the list scripts/test-gpu.sh builds a suite-wide AOT set from); ""
     when unset or too long (warned). */
  char kernel_record[TSRI_ENV_PATH_MAX];
  /* Launched by an MPI launcher (OpenMPI's mpirun sets OMPI_COMM_WORLD_SIZE, PMIx sets
     PMIX_RANK, MPICH's hydra PMI_RANK): what dist/ checks before it would call MPI_Init, so a
     plain launch that asks for an mpi group gets one line instead of MPI's own abort banner. */
  bool mpi_launched;
  /* OMPI_MCA_coll_libnbc_iallreduce_algorithm is set: the user chose OpenMPI's nonblocking
     all-reduce algorithm, so tessera does not (dist/mpi_runtime.c). */
  bool mpi_iallreduce_algorithm_given;
} tsri_env_knobs;

const tsri_env_knobs *tsri_env(void);

/* The checked integer parser: `text` is the whole number in decimal, nothing else. Digits only
 * for the unsigned form; the signed form also takes one leading '-'. No whitespace, no '+', no
 * empty string, no base prefix; leading zeros are fine. True and *out set when the value is in
 * [min, max]; false (out untouched) on anything else, an overflow of the type included. Any
 * layer may use it for text that names a number (knobs, CLI flags, file headers). */
bool tsri_env_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out);
bool tsri_env_parse_i64(const char *text, int64_t min, int64_t max, int64_t *out);

#endif

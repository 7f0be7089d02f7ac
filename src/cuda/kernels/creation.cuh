/* cuda/kernels/creation.cuh — full and arange on the GPU (cpu/creation.c is the reference). Not
 * astype, which is elementwise.cuh's.
 *
 * Specialized by one of:
 *   TSR_CREATION_FILL_BYTES=<1|2|4|8>: full; every element is the low TSR_CREATION_FILL_BYTES
 *       bytes of `pattern`, the value the launcher converted on the host with the CPU's own
 *       element rule (base/element.h), so both backends hold the same bits by construction;
 *   TSR_CREATION_ARANGE=<dtype name>: arange; element i is start + i * step in float64 (the
 *       multiply and the add each rounded, never fused, as the CPU computes it), then stored as
 *       the dtype by base/element.h's float64 rule. */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
/* base/element.h includes base/half.h; both are named here so the kernel manifest
   (scripts/update-kernel-manifest.sh) embeds both. */
#include "base/half.h"
#include "base/element.h"

#if defined(TSR_CREATION_FILL_BYTES)
#if TSR_CREATION_FILL_BYTES == 1
typedef uint8_t tsr_creation_word;
#elif TSR_CREATION_FILL_BYTES == 2
typedef uint16_t tsr_creation_word;
#elif TSR_CREATION_FILL_BYTES == 4
typedef uint32_t tsr_creation_word;
#elif TSR_CREATION_FILL_BYTES == 8
typedef uint64_t tsr_creation_word;
#else
#error "creation.cuh: TSR_CREATION_FILL_BYTES is 1, 2, 4 or 8 (the dtype's size)"
#endif
#elif defined(TSR_CREATION_ARANGE)
#define TSR_CREATION_DTYPE_bool TSRI_ELEMENT_BOOL
#define TSR_CREATION_DTYPE_uint8 TSRI_ELEMENT_UINT8
#define TSR_CREATION_DTYPE_uint32 TSRI_ELEMENT_UINT32
#define TSR_CREATION_DTYPE_int8 TSRI_ELEMENT_INT8
#define TSR_CREATION_DTYPE_int32 TSRI_ELEMENT_INT32
#define TSR_CREATION_DTYPE_int64 TSRI_ELEMENT_INT64
#define TSR_CREATION_DTYPE_float16 TSRI_ELEMENT_FLOAT16
#define TSR_CREATION_DTYPE_bfloat16 TSRI_ELEMENT_BFLOAT16
#define TSR_CREATION_DTYPE_float32 TSRI_ELEMENT_FLOAT32
#define TSR_CREATION_OUT TSR_KERNEL_CAT(TSR_CREATION_DTYPE_, TSR_CREATION_ARANGE)
#else
#error "creation.cuh: define TSR_CREATION_FILL_BYTES or TSR_CREATION_ARANGE"
#endif

/* n packed output elements; fill reads `pattern`, arange `start` and `step`. */
TSR_KERNEL_ENTRY(tsr_creation)(int64_t n, uint64_t pattern, double start, double step, void *out) {
  const int64_t grid_stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += grid_stride) {
#if defined(TSR_CREATION_FILL_BYTES)
    ((tsr_creation_word *)out)[i] = (tsr_creation_word)pattern;
#else
    double value = __dadd_rn(start, __dmul_rn((double)i, step));
    tsri_element_store_f64((unsigned char *)out + i * tsri_element_size(TSR_CREATION_OUT),
                           TSR_CREATION_OUT, value);
#endif
  }
#if defined(TSR_CREATION_FILL_BYTES)
  (void)start;
  (void)step;
#else
  (void)pattern;
#endif
}

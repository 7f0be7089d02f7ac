/* cuda/kernels/rtc_libc.cuh — the few libc names the kernels use, for NVRTC, which has no libc
 * headers: the fixed-width integers (<stdint.h>); bool is C++'s own and memcpy is a device
 * builtin. nvcc builds include the real headers instead (common.cuh includes this under NVRTC
 * only). */
#ifndef TSR_CUDA_KERNELS_RTC_LIBC_CUH
#define TSR_CUDA_KERNELS_RTC_LIBC_CUH

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;

static_assert(sizeof(int64_t) == 8 && sizeof(uint32_t) == 4 && sizeof(uint16_t) == 2,
              "the widths the kernels assume");

#endif

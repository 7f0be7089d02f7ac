/* cuda/kernels/qmma_codes.cuh — what the bfloat16 tensor-core kernels for affine 4- and 8-bit
 * codes (qmma.cuh, qmv_mma.cuh) share: one mma.sync m16n8k16 (bf16 in, float32 accumulate), a
 * lane's codes made exact bfloat16 as A's register pairs for a k-step, and x's bfloat16 pairs
 * permuted into B's registers in the same k order. Included after BITS (4 or 8) is defined; not
 * a kernel itself.
 *
 * The k order inside a lane's codes is free (a dot product does not care) as long as A and B
 * agree: 4-bit codes i and i + 4 of a word share a register (one lop3 into bfloat16's mantissa),
 * so x's pairs are permuted to match with prmt; 8-bit codes go in order. */
#ifndef TSR_CUDA_KERNELS_QMMA_CODES_CUH
#define TSR_CUDA_KERNELS_QMMA_CODES_CUH

#if !defined(BITS) || (BITS != 4 && BITS != 8)
#error "qmma_codes.cuh needs BITS 4 or 8"
#endif

static __device__ __forceinline__ void mma_bf16(float (&d)[4], uint32_t a0, uint32_t a1,
                                                uint32_t a2, uint32_t a3, uint32_t b0,
                                                uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

static __device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t selector) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(selector));
  return d;
}

#if BITS == 4
/* (w & 0x000f000f) | 0x43004300 in one lop3 (the compiler makes two): the nibbles at bits 0 and
   16 as bfloat16 128 + c. */
static __device__ __forceinline__ uint32_t nibbles_bf16(uint32_t w) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(d) : "r"(w), "r"(0x000f000fu), "r"(0x43004300u));
  return d;
}

/* w >> n for a constant n in [0, 32) as the high word of w * 2^(32 - n): an integer multiply
   (the FMA pipe), not a shift (the integer pipe, which the nibble masks already load most). */
static __device__ __forceinline__ uint32_t shift_right(uint32_t w, int n) {
  return n == 0 ? w : __umulhi(w, 1u << (32 - n));
}

#endif

/* A's two registers of one row for k-step j from the lane's words (qmma.cuh's a_pairs). */
static __device__ __forceinline__ void a_pairs(const uint32_t *words, int j, uint32_t *lo,
                                               uint32_t *hi) {
#if BITS == 4
  /* Word j/2 holds codes 0..7; step j takes (c0, c4), (c1, c5) or (c2, c6), (c3, c7): the nibbles
     at bits s and s + 16 land in bfloat16 mantissas as 128 + c (0x4300 | c), exact; one bf16x2
     fma takes the 128 off. */
  const uint32_t word = words[j >> 1];
  const uint32_t one = 0x3f803f80u, minus128 = 0xc300c300u;
  uint32_t p0 = nibbles_bf16(shift_right(word, 8 * (j & 1)));
  uint32_t p1 = nibbles_bf16(shift_right(word, 8 * (j & 1) + 4));
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(*lo) : "r"(p0), "r"(one), "r"(minus128));
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(*hi) : "r"(p1), "r"(one), "r"(minus128));
#else
  /* Word j holds codes 0..3: each byte into a float's mantissa (2^23 + c), 2^23 off, then the
     pairs (c0, c1) and (c2, c3), exact in bfloat16. */
  const uint32_t w = words[j];
  const float big = 8388608.0f;
  float c0 = __uint_as_float(prmt(w, 0x4b000000u, 0x7440u)) - big;
  float c1 = __uint_as_float(prmt(w, 0x4b000000u, 0x7441u)) - big;
  float c2 = __uint_as_float(prmt(w, 0x4b000000u, 0x7442u)) - big;
  float c3 = __uint_as_float(prmt(w, 0x4b000000u, 0x7443u)) - big;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(*lo) : "f"(c1), "f"(c0));
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(*hi) : "f"(c3), "f"(c2));
#endif
}

/* B's two registers for k-step j from the lane's x pairs xw (in k order), matching a_pairs. */
static __device__ __forceinline__ void b_pairs(const uint32_t *xw, int j, uint32_t *lo,
                                               uint32_t *hi) {
#if BITS == 4
  const int q = 4 * (j >> 1) + (j & 1);  /* (x0, x1) (x2, x3) (x4, x5) (x6, x7) of word j/2 */
  *lo = prmt(xw[q], xw[q + 2], 0x5410u); /* (x0, x4) or (x2, x6) */
  *hi = prmt(xw[q], xw[q + 2], 0x7632u); /* (x1, x5) or (x3, x7) */
#else
  *lo = xw[2 * j];
  *hi = xw[2 * j + 1];
#endif
}

#endif

/* bfloat16: the top half of an IEEE float (sign, 8 exponent bits, 7 mantissa bits), and the three ways
   between it and float that repoc uses: widening (exact), rounding to nearest even (checkpoints, the BF16
   products' operands, AdamW's parameter mirror, a frozen BF16 base) and stochastic rounding (AdamW's BF16
   moments). Inline: the products round every activation operand, and AdamW's BF16 state widens and rounds
   every moment in its step loop. */
#ifndef REPOC_BF16_H
#define REPOC_BF16_H

#include <stddef.h>
#include <stdint.h>

#include "common/real.h"

typedef uint16_t bf16; /* a bfloat16's bit pattern */

/* Round to nearest even, as torch's c10::BFloat16 (round_to_nearest_even): add 0x7FFF plus the lowest kept
   bit, then truncate. A tie (low half exactly 0x8000) therefore rounds up only when the kept part is odd;
   values past the largest bf16 carry into the exponent and become inf. Every NaN becomes the quiet NaN
   0x7FC0 (without the check a NaN with a small payload would round to inf). torch's AVX2 path writes 0xFFFF
   for NaN instead; both are NaN. */
static inline bf16 bf16_round_nearest(float x) {
    uint32_t u;
    __builtin_memcpy(&u, &x, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;
    return (bf16)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/* Widening is exact: `(uint32)bits << 16` */
static inline float bf16_to_f32(bf16 b) {
    uint32_t u = (uint32_t)b << 16;
    float x;
    __builtin_memcpy(&x, &u, 4);
    return x;
}

/* Stochastic rounding by the 16 random bits r: x + r·ulp/65536, truncated, so the result is the upper of
   the two neighbouring bf16 values with probability equal to x's distance from the lower one (unbiased).
   Infinity and NaN stay what they are (a NaN stays a NaN); a finite value never rounds up to infinity. */
static inline bf16 bf16_round_stochastic(float x, uint32_t r) {
    uint32_t bits;
    __builtin_memcpy(&bits, &x, 4);
    if ((bits & 0x7f800000u) == 0x7f800000u) return (bf16)(bits >> 16 | ((bits & 0xffff) ? 0x40 : 0));
    uint32_t up = bits + (r & 0xffffu);
    if ((up & 0x7f800000u) == 0x7f800000u) up = bits; /* never round a finite value up to infinity */
    return (bf16)(up >> 16);
}

/* out[i] = bf16_round_nearest(x[i]) for n reals, in the calling thread (a double build rounds through float):
   the gradients' BF16 wire (common/dist.c), AdamW's BF16 moments as loaded, SwiGLU's copies for the products */
static inline void bf16_round_reals(bf16* out, const real* x, size_t n) {
#pragma omp simd
    for (size_t i = 0; i < n; i++) out[i] = bf16_round_nearest((float)x[i]);
}

#endif

/* exp for the hot loops (softmax, attention, SiLU), written so the compiler
   vectorises it: in the float build a Cody-Waite range reduction and a degree-6
   polynomial (Cephes' expf coefficients; max relative error about 2 ulp against
   libm's expf, tested in tests/test_mathf.c); in the double build (the gradient
   checker) libm's exp, so the checks stay exact.
   Defined for every float: NaN gives NaN, x above the largest x whose expf is
   finite gives +Inf, x below ln FLT_MIN gives 0 (expf's subnormal results are
   flushed to 0), and no integer operation ever sees an out-of-range value. */
#ifndef REPOC_MATHF_H
#define REPOC_MATHF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/real.h"

#ifdef REPOC_F64
static inline real exp_r(real x) { return exp(x); }
static inline real exp_nonpos_r(real x) { return exp(x); }
#else
#define EXP_R_LO (-87.3365402f) /* the least float whose expf is a normal float */
#define EXP_R_HI 88.7228317f    /* the greatest float whose expf is finite */

/* exp(xc) = 2^n p for xc in [EXP_R_LO, EXP_R_HI]: n = round(xc / ln 2) into *n, p = exp(r) with
   r = xc - n ln 2 in [-ln2/2, ln2/2], so p is in [0.70, 1.42] */
static inline float exp_r_poly(float xc, float* n) {
    float t = xc * 1.44269504088896341f + 12582912.0f; /* 1.5 * 2^23: rounds to an integer */
    *n = t - 12582912.0f;                              /* in [-126, 128] */
    float r = xc - *n * 0.693359375f;                  /* ln 2, split so n * hi is exact */
    r = r + *n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    return p * r * r + r + 1.0f;
}

static inline float exp_r(float x) {
    float xc = x > EXP_R_LO ? x : EXP_R_LO; /* NaN compares false: it is clamped to lo here */
    xc = xc < EXP_R_HI ? xc : EXP_R_HI;
    float n, p = exp_r_poly(xc, &n);
    /* 2^n = 2^n1 2^n2 with n1, n2 in [-63, 64]: both normal floats, also for n = 128 */
    int32_t n1 = (int32_t)n / 2, n2 = (int32_t)n - n1;
    uint32_t b1 = (uint32_t)(n1 + 127) << 23, b2 = (uint32_t)(n2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, 4);
    memcpy(&s2, &b2, 4);
    float y = p * s1 * s2;
    return x != x ? x : (x < EXP_R_LO ? 0.0f : (x > EXP_R_HI ? INFINITY : y));
}

/* exp_r for arguments that are never positive: a softmax after its max or its log-sum-exp is subtracted
   (attention, cross-entropy, sampling). Bit for bit exp_r's value for every x <= 0, -Inf and NaN included
   (p 2^n rounds once either way), with one 2^n scale (n in [-126, 0] is a normal float) and no overflow
   branch; a positive x is taken as 0 and gives 1. */
static inline float exp_nonpos_r(float x) {
    float xc = x > EXP_R_LO ? x : EXP_R_LO;
    xc = xc < 0.0f ? xc : 0.0f;
    float n, p = exp_r_poly(xc, &n);
    uint32_t b = (uint32_t)((int32_t)n + 127) << 23;
    float s;
    memcpy(&s, &b, 4);
    float y = p * s;
    return x != x ? x : (x < EXP_R_LO ? 0.0f : y);
}
#endif

/* sin and cos of a double, written so the compiler vectorises a loop of them (RoPE's angles, which
   RePo layers form anew every step): a = k pi/2 + r, |r| <= pi/4, reduced with two fused multiply-adds
   (exact for |a| < 2^30), then the Taylor series of sin r to r^17 and cos r to r^18, whose truncation
   error is below 1e-19, and the quadrant k mod 4. Within about 1 ulp of libm's sin and cos
   (tests/test_mathf.c); the caller keeps |a| < SINCOS_FAST_MAX and uses libm beyond. */
#define SINCOS_FAST_MAX 0x1p30
static inline void sincos_fast(double a, double* sin_a, double* cos_a) {
    const double round = 0x1.8p52;                           /* adding and subtracting it rounds to an integer */
    double k = (a * 0.63661977236758134308 + round) - round; /* a / (pi/2), to the nearest */
    double r = fma(-k, 0x1.921fb54442d18p0, a);              /* pi/2 = hi + lo: a - k hi is exact */
    r = fma(-k, 0x1.1a62633145c07p-54, r);
    double r2 = r * r;
    double s = -1.0 / 355687428096000.0; /* 1/17!, down to 1/3!, with alternating signs */
    s = s * r2 + 1.0 / 1307674368000.0;
    s = s * r2 - 1.0 / 6227020800.0;
    s = s * r2 + 1.0 / 39916800.0;
    s = s * r2 - 1.0 / 362880.0;
    s = s * r2 + 1.0 / 5040.0;
    s = s * r2 - 1.0 / 120.0;
    s = s * r2 + 1.0 / 6.0;
    s = r - r * r2 * s;
    double c = 1.0 / 6402373705728000.0; /* 1/18!, down to 1/2! */
    c = c * r2 - 1.0 / 20922789888000.0;
    c = c * r2 + 1.0 / 87178291200.0;
    c = c * r2 - 1.0 / 479001600.0;
    c = c * r2 + 1.0 / 3628800.0;
    c = c * r2 - 1.0 / 40320.0;
    c = c * r2 + 1.0 / 720.0;
    c = c * r2 - 1.0 / 24.0;
    c = c * r2 + 0.5;
    c = 1.0 - r2 * c;
    double q = k - 4.0 * floor(k * 0.25); /* the quadrant, 0 .. 3 */
    double sq = q == 0 ? s : (q == 1 ? c : (q == 2 ? -s : -c));
    double cq = q == 0 ? c : (q == 1 ? -s : (q == 2 ? -c : s));
    *sin_a = sq;
    *cos_a = cq;
}

#endif

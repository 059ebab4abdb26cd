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
#else
static inline float exp_r(float x) {
    /* exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2] */
    const float lo = -87.3365402f;    /* the least float whose expf is a normal float */
    const float hi = 88.7228317f;     /* the greatest float whose expf is finite */
    float xc = x > lo ? x : lo;       /* NaN compares false: it is clamped to lo here */
    xc = xc < hi ? xc : hi;
    float t = xc * 1.44269504088896341f + 12582912.0f;   /* 1.5 * 2^23: rounds to an integer */
    float n = t - 12582912.0f;                           /* in [-126, 128] */
    float r = xc - n * 0.693359375f;                     /* ln 2, split so n * hi is exact */
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    /* 2^n = 2^n1 2^n2 with n1, n2 in [-63, 64]: both normal floats, also for n = 128 */
    int32_t n1 = (int32_t)n / 2, n2 = (int32_t)n - n1;
    uint32_t b1 = (uint32_t)(n1 + 127) << 23, b2 = (uint32_t)(n2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, 4);
    memcpy(&s2, &b2, 4);
    float y = p * s1 * s2;
    return x != x ? x : (x < lo ? 0.0f : (x > hi ? INFINITY : y));
}
#endif

#endif

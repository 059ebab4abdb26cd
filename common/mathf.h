/* exp for the hot loops (softmax, attention, SiLU), written so the compiler
   vectorises it: in the float build a Cody-Waite range reduction and a degree-6
   polynomial (Cephes' expf coefficients; max relative error about 2 ulp against
   libm's expf, tested in tests/test_model.c); in the double build (the gradient
   checker) libm's exp, so the checks stay exact. */
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
    float xc = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    float t = xc * 1.44269504088896341f + 12582912.0f;   /* 1.5 * 2^23: rounds to an integer */
    float n = t - 12582912.0f;
    float r = xc - n * 0.693359375f;                     /* ln 2, split so n * hi is exact */
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;             /* 2^n as a float */
    float scale;
    memcpy(&scale, &bits, 4);
    return x < -87.0f ? 0.0f : p * scale;                /* below float's range: 0, as expf */
}
#endif

#endif

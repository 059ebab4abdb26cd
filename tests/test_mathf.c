/* sincos_fast (common/mathf.h): its error against libm's sin and cos over the angles RoPE forms,
   one value at a time and in a vectorised loop, and at the quadrant edges.
   exp_r (common/mathf.h), the float build's vectorised exp: its error against
   libm's exp over the whole range where expf is a finite normal float, and its
   value for every kind of input outside it (NaN, ±Inf, overflow, underflow),
   both called one value at a time and in a loop the compiler vectorises.
   exp_nonpos_r, its variant for arguments that are never positive: equal to exp_r bit for bit.
   Under UBSan (make test-ubsan) this also shows no integer operation in it
   overflows or shifts a negative value, NaN included. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mathf.h"
#include "tests/testutil.h"

/* the edges named in common/mathf.h */
static const float LO = -87.3365402f, HI = 88.7228317f;

/* relative error against the double exp, in units of 2^-23 (float's ulp at 1) */
static double ulps(float got, float x) {
    double ref = exp((double)x);
    return fabs((double)got - ref) / ref * 8388608.0;
}

static void test_range(void) {
    const size_t n = 1 << 22;
    double worst = 0;
    float at = 0;
    for (size_t i = 0; i <= n; i++) {
        float x = LO + (float)((double)(HI - LO) * i / n);
        if (x < LO) x = LO;
        if (x > HI) x = HI;
        double u = ulps(exp_r(x), x);
        if (!(u <= worst)) {
            worst = u;
            at = x;
        }
    }
    EXPECT(worst <= 2, "%zu points over [ln FLT_MIN, ln FLT_MAX]: max rel error %.2f x 2^-23 at x = %.9g (<= 2)", n + 1,
           worst, at);
    float edges[] = {LO, HI, 88.0f, 88.5f, 88.7f, -87.0f, -87.2f, -87.3f, 0.0f, -0.0f, 1e-30f, -1e-30f};
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
        float x = edges[i], y = exp_r(x);
        EXPECT(isfinite(y) && ulps(y, x) <= 3, "exp_r(%.9g) = %.9g, exp = %.9g", x, y, exp((double)x));
    }
}

/* what exp_r must give outside the finite normal range, as expf does (expf's subnormals are 0) */
typedef struct {
    float x, want;
    const char* what;
} Case;

static int same(float a, float b) { return (isnan(a) && isnan(b)) || a == b; }

static void test_outside(void) {
    const Case cases[] = {
        {NAN, NAN, "NaN"},
        {-NAN, NAN, "-NaN"},
        {INFINITY, INFINITY, "+Inf"},
        {-INFINITY, 0.0f, "-Inf"},
        {nextafterf(HI, INFINITY), INFINITY, "the least float whose expf overflows"},
        {89.0f, INFINITY, "89"},
        {1000.0f, INFINITY, "1000"},
        {FLT_MAX, INFINITY, "FLT_MAX"},
        {nextafterf(LO, -INFINITY), 0.0f, "just below ln FLT_MIN"},
        {-100.0f, 0.0f, "-100"},
        {-FLT_MAX, 0.0f, "-FLT_MAX"},
    };
    size_t nc = sizeof(cases) / sizeof(cases[0]);
    float xs[64], ys[64];
    for (size_t i = 0; i < nc; i++) {
        float y = exp_r(cases[i].x);
        EXPECT(same(y, cases[i].want), "exp_r(%s) = %g (want %g)", cases[i].what, y, cases[i].want);
    }
    /* the same inputs through a loop like the hot ones (vectorised at -O3), 4 copies of each */
    size_t n = 0;
    for (size_t k = 0; k < 4; k++)
        for (size_t i = 0; i < nc; i++) xs[n++] = cases[i].x;
    for (size_t i = 0; i < n; i++) ys[i] = exp_r(xs[i]);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += !same(ys[i], cases[i % nc].want);
    EXPECT(bad == 0, "the same %zu inputs in a vectorisable loop: %zu differ", n, bad);
}

/* exp_nonpos_r against exp_r, bit for bit, on every float in [-88, 0] whose low 8 mantissa bits are zero
   (about 8 million), through a vectorisable loop, and on the special inputs; a positive x gives 1 */
static void test_nonpos(void) {
    enum { CAP = 1 << 24 };
    float* xs = malloc(CAP * sizeof(float));
    float* ys = malloc(CAP * sizeof(float));
    size_t n = 0;
    for (uint32_t b = 0x80000000u; b <= 0xc2b00000u && n < CAP; b += 256) { /* -0 .. -88 */
        memcpy(&xs[n], &b, 4);
        n++;
    }
    const float specials[] = {
        -INFINITY, NAN,      -NAN,  -FLT_MAX, -100.0f, LO, nextafterf(LO, -INFINITY), nextafterf(LO, 0.0f),
        -1e-40f,   -FLT_MIN, -0.0f, 0.0f};
    for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++) xs[n++] = specials[i];
    for (size_t i = 0; i < n; i++) ys[i] = exp_nonpos_r(xs[i]); /* the vectorised loop */
    size_t bad = 0;
    float at = 0;
    for (size_t i = 0; i < n; i++) {
        float want = exp_r(xs[i]);
        if (!(same(ys[i], want) && (isnan(want) || !memcmp(&ys[i], &want, 4)))) {
            if (!bad) at = xs[i];
            bad++;
        }
    }
    EXPECT(bad == 0,
           "exp_nonpos_r = exp_r bit for bit on %zu inputs <= 0 (-Inf, NaN, below ln FLT_MIN, "
           "subnormal, -0 included): %zu differ, first at %.9g",
           n, bad, at);
    float pos[] = {1e-30f, 1.0f, 88.0f, INFINITY};
    int ones = 1;
    for (size_t i = 0; i < 4; i++) ones &= exp_nonpos_r(pos[i]) == 1.0f;
    EXPECT(ones, "a positive x is taken as 0: exp_nonpos_r gives 1");
    free(xs);
    free(ys);
}

/* |got - libm| in units of 2^-52 (double's ulp at 1): sin and cos are at most 1 in magnitude */
static double err_sincos(double a, double s, double c) {
    double es = fabs(s - sin(a)), ec = fabs(c - cos(a));
    return (es > ec ? es : ec) * 4503599627370496.0;
}

static void test_sincos(void) {
    enum { N = 1 << 20 };
    static double as[N], ss[N], cs[N];
    uint64_t st = 12345;
    for (size_t i = 0; i < N; i++) { /* positions up to 2^20 times frequencies in (0, 1]; both signs */
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        double u = (double)(st >> 11) * 0x1.0p-53;
        as[i] = (i % 2 ? -1 : 1) * (i % 3 ? u * 64 : u * 1048576.0);
    }
    for (size_t i = 0; i < N; i++) sincos_fast(as[i], &ss[i], &cs[i]); /* the vectorised loop */
    double worst = 0, at = 0;
    for (size_t i = 0; i < N; i++) {
        double e = err_sincos(as[i], ss[i], cs[i]);
        if (!(e <= worst)) {
            worst = e;
            at = as[i];
        }
    }
    EXPECT(worst <= 2, "%d angles in (-2^20, 2^20): max error %.2f x 2^-52 at a = %.17g (<= 2)", N, worst, at);
    double edges[] = {0.0,
                      -0.0,
                      1e-300,
                      0.78539816339744828,
                      0.78539816339744839,
                      1.5707963267948966,
                      3.1415926535897931,
                      -3.1415926535897931,
                      4.7123889803846897,
                      6.2831853071795862,
                      1e5,
                      12345.678,
                      0x1p29,
                      -0x1p29 - 0.5};
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
        double s, c;
        sincos_fast(edges[i], &s, &c);
        EXPECT(err_sincos(edges[i], s, c) <= 2, "sincos_fast(%.17g) = (%.17g, %.17g), libm (%.17g, %.17g)", edges[i], s,
               c, sin(edges[i]), cos(edges[i]));
    }
    double s, c;
    sincos_fast(NAN, &s, &c);
    EXPECT(isnan(s) && isnan(c), "sincos_fast(NaN) = (%g, %g), want NaN", s, c);
}

int main(void) {
    test_sincos();
    test_range();
    test_outside();
    test_nonpos();
    printf("test_mathf: %d OK, %d NOT OK\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}

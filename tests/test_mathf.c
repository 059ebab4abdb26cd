/* exp_r (common/mathf.h), the float build's vectorised exp: its error against
   libm's exp over the whole range where expf is a finite normal float, and its
   value for every kind of input outside it (NaN, ±Inf, overflow, underflow),
   both called one value at a time and in a loop the compiler vectorises.
   Under UBSan (make test-ubsan) this also shows no integer operation in it
   overflows or shifts a negative value, NaN included. */
#include <float.h>
#include <math.h>
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
    EXPECT(worst <= 2, "%zu points over [ln FLT_MIN, ln FLT_MAX]: max rel error %.2f x 2^-23 at x = %.9g (<= 2)",
           n + 1, worst, at);
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

int main(void) {
    test_range();
    test_outside();
    printf("test_mathf: %d OK, %d NOT OK\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}

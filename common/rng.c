/* xoshiro256** seeded through splitmix64; see rng.h. */
#include "common/rng.h"

#include <math.h>

#include "common/hash.h"

void rng_seed(Rng* rng, uint64_t seed) {
    for (int i = 0; i < 4; i++) rng->s[i] = splitmix64_next(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_u64(Rng* rng) {
    uint64_t* s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rng_uniform(Rng* rng) { return (double)(rng_u64(rng) >> 11) * 0x1.0p-53; }

uint64_t rng_below(Rng* rng, uint64_t n) {
    /* rejection sampling: no modulo bias */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do { x = rng_u64(rng); } while (x >= limit);
    return x % n;
}

double rng_normal(Rng* rng) {
    double u1 = rng_uniform(rng), u2 = rng_uniform(rng);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

double rng_trunc_normal(Rng* rng, double std, double limit) {
    for (;;) {
        double x = std * rng_normal(rng);
        if (fabs(x) <= limit) return x;
    }
}

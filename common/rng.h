/* Seeded random numbers (splitmix64 + xoshiro256**): reproducible from the seed
   on every machine, with a state small enough to save in a checkpoint. */
#ifndef REPOC_RNG_H
#define REPOC_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} Rng;

void rng_seed(Rng* rng, uint64_t seed);
uint64_t rng_u64(Rng* rng);
double rng_uniform(Rng* rng);                                /* [0, 1) with 53 random bits */
uint64_t rng_below(Rng* rng, uint64_t n);                    /* uniform in [0, n), n > 0 */
double rng_normal(Rng* rng);                                 /* N(0, 1), Box-Muller */
double rng_trunc_normal(Rng* rng, double std, double limit); /* N(0,std²) redrawn outside ±limit */

#endif

/* Stateless 64-bit hashing for the data loaders: turns (seed, step, row) into
   an Rng seed, so that every batch row is a pure function of those numbers
   and any process can make any row without a shared cursor (data/README.md, "Batch rows").
   The finaliser is splitmix64's (Steele, Lea, Flood 2014). */
#ifndef REPOC_DATA_MIX_H
#define REPOC_DATA_MIX_H

#include <stdint.h>

/* splitmix64 finaliser: a bijection of uint64 with good avalanche */
static inline uint64_t mix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* hash of an ordered triple; `domain` separates the users (shuffle offsets,
   synthetic training rows, synthetic eval items) so they never share streams */
static inline uint64_t mix_triple(uint64_t domain, uint64_t a, uint64_t b, uint64_t c) {
    uint64_t h = mix64(domain);
    h = mix64(h ^ a);
    h = mix64(h ^ b);
    return mix64(h ^ c);
}

#endif

/* Stateless 64-bit hashing, one copy for every folder: splitmix64 (Steele,
   Lea, Flood 2014) seeds the RNG (common/rng.c), and its finaliser hashes
   keys for the tokenizer's tables, the dropout masks, stochastic rounding and
   the weights fingerprint. mix_triple turns (seed, step, row) into an Rng
   seed, so that every batch row is a pure function of those numbers and any
   process can make any row without a shared cursor (data/README.md, "Batch
   rows"). */
#ifndef REPOC_COMMON_HASH_H
#define REPOC_COMMON_HASH_H

#include <stdint.h>

/* splitmix64's increment, 2^64 divided by the golden ratio */
#define HASH_GOLDEN 0x9E3779B97F4A7C15ull

/* splitmix64's finaliser: a bijection of uint64 with good avalanche */
static inline uint64_t mix64_final(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* one splitmix64 output for the state z: the finaliser of z + HASH_GOLDEN */
static inline uint64_t mix64(uint64_t z) { return mix64_final(z + HASH_GOLDEN); }

/* the splitmix64 generator: advances the state *x and returns its next output */
static inline uint64_t splitmix64_next(uint64_t* x) { return mix64_final(*x += HASH_GOLDEN); }

/* hash of an ordered triple; `domain` separates the users (shuffle offsets,
   synthetic training rows, synthetic eval items) so they never share streams */
static inline uint64_t mix_triple(uint64_t domain, uint64_t a, uint64_t b, uint64_t c) {
    uint64_t h = mix64(domain);
    h = mix64(h ^ a);
    h = mix64(h ^ b);
    return mix64(h ^ c);
}

#endif

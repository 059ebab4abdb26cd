/* The fingerprint of a checkpoint directory's weights (hf/hf_fingerprint.h). */
#include "hf/hf_fingerprint.h"

#include <stdint.h>
#include <string.h>

#include "common/hash.h" /* mix64 */
#include "hf/shards.h"

/* 64 bits of b[0..n): four independent multiply-xor lanes over 8-byte words (memory-bound, not a
   cryptographic hash), the tail and the length folded in at the end */
static uint64_t hash_bytes(const uint8_t* b, size_t n, uint64_t seed) {
    uint64_t lane[4] = {seed ^ 0x243F6A8885A308D3ull, seed ^ 0x13198A2E03707344ull, seed ^ 0xA4093822299F31D0ull,
                        seed ^ 0x082EFA98EC4E6C89ull};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, b + i + 8 * k, 8);
            lane[k] = (lane[k] ^ w) * HASH_GOLDEN;
            lane[k] ^= lane[k] >> 29;
        }
    uint64_t h = seed ^ (uint64_t)n;
    for (int k = 0; k < 4; k++) h = mix64(h ^ lane[k]);
    for (; i < n; i++) h = mix64(h ^ b[i]);
    return h;
}

uint64_t hf_weights_fingerprint(const char* dir) {
    Shards s;
    memset(&s, 0, sizeof(s));
    cJSON* index;
    shards_list(dir, &s, &index);
    uint64_t sum = 0;
    for (size_t k = 0; k < s.n; k++) {
        const StFile* f = shard_open(dir, &s, k);
        for (size_t j = 0; j < f->n_tensors; j++) {
            const StTensor* st = &f->tensors[j];
            uint64_t h = hash_bytes((const uint8_t*)st->name, strlen(st->name), 0x6e616d65ull);
            h = mix64(h ^ (uint64_t)st->dtype);
            for (size_t d = 0; d < st->ndim; d++) h = mix64(h ^ st->shape[d]);
            sum += hash_bytes(f->data + st->begin, st->end - st->begin, h); /* a sum: shard order is free */
            shard_release_pages(f, st); /* resident memory grows by one tensor at most, as in loading */
        }
        shard_close(&s, k);
    }
    cJSON_Delete(index);
    return sum;
}

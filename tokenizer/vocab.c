/* The tokenizer's lookup tables built (tokenizer/tok_vocab.h): bytes -> id, and a pair of ids ->
   (rank, merged id). */
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "tokenizer/tok_vocab.h"

static size_t pow2_at_least(size_t n) {
    size_t c = 16;
    while (c < n) c <<= 1;
    return c;
}

void vocab_hash_build(Tokenizer* t) {
    t->vocab_cap = pow2_at_least(2 * t->V + 1);
    t->vocab_hash = mallocCheck(t->vocab_cap * sizeof(int32_t));
    memset(t->vocab_hash, 0xff, t->vocab_cap * sizeof(int32_t));
    for (size_t id = 0; id < t->V; id++) {
        if (!t->has[id]) continue;
        size_t len = t->off[id + 1] - t->off[id];
        if (tok_lookup(t, t->bytes + t->off[id], len) >= 0) continue; /* the first id keeps the bytes */
        size_t h = tok_hash_bytes(t->bytes + t->off[id], len) & (t->vocab_cap - 1);
        while (t->vocab_hash[h] >= 0) h = (h + 1) & (t->vocab_cap - 1);
        t->vocab_hash[h] = (int32_t)id;
    }
}

int32_t tok_lookup(const Tokenizer* t, const uint8_t* s, size_t n) {
    return vocab_lookup_hashed(t, s, n, tok_hash_bytes(s, n));
}

int merge_insert(Tokenizer* t, int32_t a, int32_t b, uint32_t rank, int32_t id) {
    uint64_t key = merge_pair_key(a, b);
    for (size_t h = mix64_final(key) & (t->merge_cap - 1);; h = (h + 1) & (t->merge_cap - 1)) {
        MergeSlot* m = &t->merges[h];
        if (m->id < 0 || m->key == key) {
            int dup = m->id >= 0;
            m->key = key;
            m->rank = rank;
            m->id = id;
            return dup;
        }
    }
}

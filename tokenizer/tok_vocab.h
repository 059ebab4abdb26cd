/* The tokenizer's two lookup tables, built once at load (tokenizer/vocab.c) and read by BPE
   (tokenizer/bpe.c, tokenizer/bpe_word.c): bytes -> id over every token, and a pair of ids ->
   (rank, merged id) over model.merges, both open addressing. The reads are inline: BPE asks them
   once per pre-token and once per candidate pair. */
#ifndef REPOC_TOK_VOCAB_H
#define REPOC_TOK_VOCAB_H

#include <stdint.h>
#include <string.h>

#include "common/hash.h"
#include "tokenizer/tok_internal.h"

/* the hash of a token's bytes, for the vocab table and the encoder's cache */
static inline uint64_t tok_hash_bytes(const uint8_t* s, size_t n) {
    uint64_t h = HASH_GOLDEN ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, s + i, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdULL;
        h ^= h >> 29;
    }
    /* the last r < 8 bytes whole, without a loop: two 4-byte loads that overlap, or the
       first, middle and last byte (n, in h, tells the lengths apart) */
    size_t r = n - i;
    const uint8_t* p = s + i;
    uint64_t tail = 0;
    if (r >= 4) {
        uint32_t a, b;
        memcpy(&a, p, 4);
        memcpy(&b, p + r - 4, 4);
        tail = a | (uint64_t)b << 32;
    } else if (r) {
        tail = p[0] | (uint64_t)p[r / 2] << 8 | (uint64_t)p[r - 1] << 16;
    }
    return mix64_final(h ^ tail);
}

/* tok_lookup with the bytes' tok_hash_bytes at hand (the cache hashes them the same way) */
static inline int32_t vocab_lookup_hashed(const Tokenizer* t, const uint8_t* s, size_t n, uint64_t hash) {
    size_t h = hash & (t->vocab_cap - 1);
    for (int32_t id; (id = t->vocab_hash[h]) >= 0; h = (h + 1) & (t->vocab_cap - 1)) {
        if (t->off[id + 1] - t->off[id] == n && memcmp(t->bytes + t->off[id], s, n) == 0) return id;
    }
    return -1;
}

/* the merge of (a, b), NULL when none */
static inline uint64_t merge_pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

static inline const MergeSlot* merge_find(const Tokenizer* t, int32_t a, int32_t b) {
    uint64_t key = merge_pair_key(a, b);
    for (size_t h = mix64_final(key) & (t->merge_cap - 1);; h = (h + 1) & (t->merge_cap - 1)) {
        const MergeSlot* m = &t->merges[h];
        if (m->id < 0) return NULL;
        if (m->key == key) return m;
    }
}

/* bytes -> id over every token (vocab and added) */
void vocab_hash_build(Tokenizer* t);
/* A later duplicate of a pair replaces the earlier one, as in the Hugging Face
   library (its merges become a hash map in order). Returns 1 for a duplicate. */
int merge_insert(Tokenizer* t, int32_t a, int32_t b, uint32_t rank, int32_t id);

#endif

/* Byte pair encoding of one pre-token through the tables of tokenizer/tok_vocab.h, and the
   per-encoder cache of pre-tokens already merged.
   BPE (the Hugging Face BPE model): start from the pre-token's bytes as
   single-byte tokens (byte-level BPE; the general model starts from the parts
   of tokenizer/bpe_word.c); repeatedly merge the adjacent pair with the lowest rank
   in model.merges (the leftmost on a tie) into its merged token, until no
   adjacent pair is a merge. With ignore_merges, a pre-token that is a vocab
   entry is that one token without merging (as tiktoken always does). */
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_vocab.h"

/* ---- the cache: pre-token bytes -> ids, per encoder, emptied when full ---- */
#define CACHE_SLOTS (1u << 16)        /* entries at most half of them */
#define CACHE_MAX_PIECE 64            /* longer pre-tokens are not cached */
#define CACHE_POOL (CACHE_SLOTS * 16) /* key bytes and ids, each */

typedef struct {
    uint64_t hash;
    uint32_t key_off, id_off; /* into key_pool / id_pool */
    uint16_t key_len, n_ids;  /* n_ids 0 = empty slot */
} CacheSlot;

typedef struct {
    CacheSlot slot[CACHE_SLOTS];
    uint8_t key_pool[CACHE_POOL];
    int32_t id_pool[CACHE_POOL];
    size_t n, key_used, id_used;
} Cache;

void bpe_cache_free(void* cache) { free(cache); }

static CacheSlot* cache_find(Cache* c, const uint8_t* s, size_t n, uint64_t h) {
    for (size_t k = h & (CACHE_SLOTS - 1);; k = (k + 1) & (CACHE_SLOTS - 1)) {
        CacheSlot* e = &c->slot[k];
        if (!e->n_ids || (e->hash == h && e->key_len == n && memcmp(c->key_pool + e->key_off, s, n) == 0)) return e;
    }
}

void tok_push_ids(TokEncoder* e, const int32_t* ids, size_t n) {
    if (!n) return;
    if (e->n_ids + n > e->cap_ids) {
        size_t cap = e->cap_ids ? e->cap_ids : 1024;
        while (cap < e->n_ids + n) cap *= 2;
        int32_t* p = realloc(e->ids, cap * sizeof(int32_t));
        CHECK(p, "out of memory growing the token buffer to %zu ids", cap);
        e->ids = p, e->cap_ids = cap;
    }
    memcpy(e->ids + e->n_ids, ids, n * sizeof(int32_t));
    e->n_ids += n;
}

/* The merge loop over parts (m ids) with ranks[k] the rank of (parts[k], parts[k+1]).
   Returns the number of parts left. */
static size_t merge_parts(const Tokenizer* t, int32_t* parts, uint32_t* ranks, size_t m) {
    for (size_t k = 0; k + 1 < m; k++) {
        const MergeSlot* ms = merge_find(t, parts[k], parts[k + 1]);
        ranks[k] = ms ? ms->rank : UINT32_MAX;
    }
    while (m > 1) {
        size_t best = 0;
        uint32_t r = UINT32_MAX;
        for (size_t k = 0; k + 1 < m; k++)
            if (ranks[k] < r) r = ranks[k], best = k;
        if (r == UINT32_MAX) break;
        parts[best] = merge_find(t, parts[best], parts[best + 1])->id;
        memmove(parts + best + 1, parts + best + 2, (m - best - 2) * sizeof(int32_t));
        memmove(ranks + best + 1, ranks + best + 2, (m - best - 2) * sizeof(uint32_t));
        m--;
        for (size_t k = best ? best - 1 : 0; k <= best && k + 1 < m; k++) {
            const MergeSlot* ms = merge_find(t, parts[k], parts[k + 1]);
            ranks[k] = ms ? ms->rank : UINT32_MAX;
        }
    }
    return m;
}

/* The same merges for long pre-tokens in O(n log n): a min-heap of candidate
   pairs keyed (rank, position of the left part), so the lowest rank and then
   the leftmost pair come out first, as in the scan above. A popped pair whose
   parts have changed since it was pushed is stale and skipped. */
typedef struct {
    uint32_t rank;
    uint32_t left, right; /* part positions (the index of their first byte) */
    int32_t id_l, id_r;   /* their ids when pushed */
} HeapItem;

static inline int heap_less(const HeapItem* a, const HeapItem* b) {
    return a->rank != b->rank ? a->rank < b->rank : a->left < b->left;
}

static void heap_push(HeapItem* h, size_t* n, HeapItem it) {
    size_t i = (*n)++;
    while (i > 0 && heap_less(&it, &h[(i - 1) / 2])) h[i] = h[(i - 1) / 2], i = (i - 1) / 2;
    h[i] = it;
}

static HeapItem heap_pop(HeapItem* h, size_t* n) {
    HeapItem top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && heap_less(&h[c + 1], &h[c])) c++;
        if (!heap_less(&h[c], &last)) break;
        h[i] = h[c], i = c;
    }
    if (*n) h[i] = last;
    return top;
}

/* parts (n ids, one per byte) merged in place; next/prev link the live parts. Returns the count left. */
static size_t merge_parts_heap(const Tokenizer* t, int32_t* parts, size_t n) {
    uint32_t* next = mallocCheck(n * sizeof(uint32_t));
    uint32_t* prev = mallocCheck(n * sizeof(uint32_t));
    HeapItem* h = mallocCheck(3 * n * sizeof(HeapItem)); /* n-1 pairs + 2 per merge (<= n-1) */
    size_t nh = 0;
    for (size_t i = 0; i < n; i++) next[i] = (uint32_t)(i + 1), prev[i] = (uint32_t)(i - 1);
    for (size_t i = 0; i + 1 < n; i++) {
        const MergeSlot* ms = merge_find(t, parts[i], parts[i + 1]);
        if (ms) heap_push(h, &nh, (HeapItem){ms->rank, (uint32_t)i, (uint32_t)(i + 1), parts[i], parts[i + 1]});
    }
    while (nh) {
        HeapItem it = heap_pop(h, &nh);
        if (parts[it.left] != it.id_l || next[it.left] != it.right || parts[it.right] != it.id_r) continue;
        parts[it.left] = merge_find(t, it.id_l, it.id_r)->id;
        parts[it.right] = -1; /* dead */
        next[it.left] = next[it.right];
        if (next[it.left] < n) prev[next[it.left]] = it.left;
        uint32_t p = prev[it.left]; /* UINT32_MAX before the first part */
        if (p != UINT32_MAX) {
            const MergeSlot* ms = merge_find(t, parts[p], parts[it.left]);
            if (ms) heap_push(h, &nh, (HeapItem){ms->rank, p, it.left, parts[p], parts[it.left]});
        }
        if (next[it.left] < n) {
            uint32_t q = next[it.left];
            const MergeSlot* ms = merge_find(t, parts[it.left], parts[q]);
            if (ms) heap_push(h, &nh, (HeapItem){ms->rank, it.left, q, parts[it.left], parts[q]});
        }
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i = next[i]) parts[m++] = parts[i];
    free(next), free(prev), free(h);
    return m;
}

/* pre-tokens longer than this merge through the heap */
#define HEAP_ABOVE 128

void bpe_encode_piece(TokEncoder* e, const uint8_t* s, size_t n) {
    const Tokenizer* t = e->t;
    int plain = t->byte_level && !t->prefix_len && !t->suffix_len; /* one part per byte */
    if (n == 1 && plain) {
        tok_push_ids(e, &t->byte_id[s[0]], 1);
        return;
    }
    /* one hash of the bytes serves the vocabulary and the cache */
    uint64_t h = t->ignore_merges || n <= CACHE_MAX_PIECE ? tok_hash_bytes(s, n) : 0;
    if (t->ignore_merges) {
        int32_t id = vocab_lookup_hashed(t, s, n, h);
        if (id >= 0) {
            tok_push_ids(e, &id, 1);
            return;
        }
    }
    CHECK(n <= TOK_MAX_PRETOKEN,
          "tokenizer '%s': a pre-token of %zu bytes (one run of letters, digits, spaces or "
          "other characters) is longer than the limit of %zu bytes (TOK_MAX_PRETOKEN, which bounds the merge's "
          "work space at about 90 MB)",
          t->name, n, TOK_MAX_PRETOKEN);
    Cache* c = e->cache;
    CacheSlot* slot = NULL;
    if (n <= CACHE_MAX_PIECE) {
        if (!c) c = e->cache = callocCheck(1, sizeof(Cache));
        slot = cache_find(c, s, n, h);
        if (slot->n_ids) {
            tok_push_ids(e, c->id_pool + slot->id_off, slot->n_ids);
            return;
        }
    }
    /* parts: one per byte; byte_fallback over an affixed character gives the affixes' bytes too */
    size_t need = plain ? n : n * (1 + t->prefix_len + t->suffix_len);
    if (need > e->cap_parts) {
        free(e->parts);
        free(e->ranks);
        e->cap_parts = need * 2;
        e->parts = mallocCheck(e->cap_parts * sizeof(int32_t));
        e->ranks = mallocCheck(e->cap_parts * sizeof(uint32_t));
    }
    size_t m = n;
    if (plain) {
        for (size_t k = 0; k < n; k++) e->parts[k] = t->byte_id[s[k]];
    } else {
        m = bpe_word_parts(t, s, n, e->parts);
    }
    m = m > HEAP_ABOVE ? merge_parts_heap(t, e->parts, m) : merge_parts(t, e->parts, e->ranks, m);
    tok_push_ids(e, e->parts, m);
    if (slot && m) { /* n_ids 0 marks an empty slot: a pre-token without parts is not cached */
        if (2 * (c->n + 1) > CACHE_SLOTS || c->key_used + n > CACHE_POOL || c->id_used + m > CACHE_POOL) {
            memset(c->slot, 0, sizeof c->slot); /* full: start over */
            c->n = c->key_used = c->id_used = 0;
            slot = cache_find(c, s, n, h);
        }
        memcpy(c->key_pool + c->key_used, s, n);
        memcpy(c->id_pool + c->id_used, e->parts, m * sizeof(int32_t));
        *slot = (CacheSlot){h, (uint32_t)c->key_used, (uint32_t)c->id_used, (uint16_t)n, (uint16_t)m};
        c->key_used += n, c->id_used += m, c->n++;
    }
}

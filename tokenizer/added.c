/* Added tokens matched verbatim in the text: a trie over their bytes.
   Matching is leftmost-longest: scanning the text from the left, the first
   position where some added token starts takes the longest added token that
   starts there (as the Hugging Face library does). Walking the trie from a
   position costs at most the length of the longest added token, whatever
   the number of added tokens. A trie edge (node, byte) -> child lives in one
   open-addressing table keyed (node << 8 | byte) + 1; node 0 is the root.
   Two added tokens with the same bytes: the lower id wins, as in tok_lookup. */
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/hash.h"
#include "tokenizer/tok_internal.h"

static inline uint64_t edge_key(size_t node, uint8_t b) { return ((uint64_t)node << 8 | b) + 1; }

static int32_t edge_child(const Tokenizer* t, size_t node, uint8_t b) {
    uint64_t key = edge_key(node, b);
    for (size_t h = mix64_final(key) & (t->edge_cap - 1);; h = (h + 1) & (t->edge_cap - 1)) {
        if (t->edge_keys[h] == key) return t->edge_to[h];
        if (!t->edge_keys[h]) return -1;
    }
}

static size_t edge_add(Tokenizer* t, size_t node, uint8_t b) {
    uint64_t key = edge_key(node, b);
    size_t h = mix64_final(key) & (t->edge_cap - 1);
    while (t->edge_keys[h] && t->edge_keys[h] != key) h = (h + 1) & (t->edge_cap - 1);
    if (!t->edge_keys[h]) {
        t->edge_keys[h] = key;
        t->edge_to[h] = (int32_t)t->n_nodes;
        t->node_id[t->n_nodes++] = -1;
    }
    return (size_t)t->edge_to[h];
}

void added_build(Tokenizer* t, const uint8_t* is_added) {
    size_t total = 0;
    t->n_added = 0;
    for (size_t id = 0; id < t->V; id++)
        if (is_added[id]) total += t->off[id + 1] - t->off[id], t->n_added++;
    t->edge_cap = 16;
    while (t->edge_cap < 2 * total + 1) t->edge_cap <<= 1;
    t->edge_keys = callocCheck(t->edge_cap, sizeof(uint64_t));
    t->edge_to = mallocCheck(t->edge_cap * sizeof(int32_t));
    t->node_id = mallocCheck((total + 1) * sizeof(int32_t));
    t->node_id[0] = -1;
    t->n_nodes = 1;
    for (size_t id = 0; id < t->V; id++) { /* in id order: the first id keeps its bytes */
        if (!is_added[id]) continue;
        size_t node = 0;
        for (size_t k = t->off[id]; k < t->off[id + 1]; k++) node = edge_add(t, node, t->bytes[k]);
        if (t->node_id[node] < 0) t->node_id[node] = (int32_t)id;
        t->added_first[t->bytes[t->off[id]]] = 1;
    }
}

void added_free(Tokenizer* t) {
    free(t->edge_keys);
    free(t->edge_to);
    free(t->node_id);
}

int32_t added_longest(const Tokenizer* t, const uint8_t* s, size_t n, size_t* len) {
    int32_t best = -1;
    size_t node = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t c = edge_child(t, node, s[i]);
        if (c < 0) break;
        node = (size_t)c;
        if (t->node_id[node] >= 0) {
            best = t->node_id[node];
            *len = i + 1;
        }
    }
    return best;
}

/* Added tokens matched verbatim in the text, as the Hugging Face library's
   AddedVocabulary does: those with normalized: false in the raw text first,
   then those with normalized: true in each normalized segment between them
   (their content normalized too). Matching is leftmost-longest: scanning from
   the left, the first position where some added token starts takes the
   longest one that starts there. single_word drops a match with a word
   character (a letter, number or '_') right before or after it; lstrip and
   rstrip make the token take the white space before or after it.
   Each pass walks a trie over the tokens' bytes, so a position costs at most
   the length of the longest added token, whatever their number, and only
   positions whose byte starts some token are walked at all. Two added tokens
   with the same bytes: the lower id wins, as in tok_lookup. */
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/hash.h"
#include "tokenizer/tok_internal.h"

static inline uint64_t edge_key(size_t node, uint8_t b) { return ((uint64_t)node << 8 | b) + 1; }

static int32_t edge_child(const AddedTrie* tr, size_t node, uint8_t b) {
    uint64_t key = edge_key(node, b);
    for (size_t h = mix64_final(key) & (tr->edge_cap - 1);; h = (h + 1) & (tr->edge_cap - 1)) {
        if (tr->edge_keys[h] == key) return tr->edge_to[h];
        if (!tr->edge_keys[h]) return -1;
    }
}

static size_t edge_add(AddedTrie* tr, size_t node, uint8_t b) {
    uint64_t key = edge_key(node, b);
    size_t h = mix64_final(key) & (tr->edge_cap - 1);
    while (tr->edge_keys[h] && tr->edge_keys[h] != key) h = (h + 1) & (tr->edge_cap - 1);
    if (!tr->edge_keys[h]) {
        tr->edge_keys[h] = key;
        tr->edge_to[h] = (int32_t)tr->n_nodes;
        tr->node_id[tr->n_nodes++] = -1;
    }
    return (size_t)tr->edge_to[h];
}

/* the bytes trie `which` knows token id by: its content, normalized for [1] (*owned to free) */
static const uint8_t* trie_bytes(const Tokenizer* t, int which, size_t id, size_t* len, uint8_t** owned) {
    const uint8_t* s = t->bytes + t->off[id];
    *len = t->off[id + 1] - t->off[id];
    *owned = NULL;
    void* region = NULL;
    if (which == 1 && tok_normalize(t, &region, s, *len, owned, len)) s = *owned;
    tok_regex_region_free(region);
    return s;
}

static int trie_of(const Tokenizer* t, size_t id) {
    return (t->added_flags[id] & ADDED_NORMALIZED) && t->n_norm ? 1 : 0;
}

static void trie_build(Tokenizer* t, int which) {
    AddedTrie* tr = &t->added[which];
    size_t total = 0, len;
    uint8_t* owned;
    for (size_t id = 0; id < t->V; id++) {
        if (!(t->added_flags[id] & ADDED) || trie_of(t, id) != which) continue;
        trie_bytes(t, which, id, &len, &owned);
        free(owned);
        total += len, tr->n++;
    }
    tr->edge_cap = 16;
    while (tr->edge_cap < 2 * total + 1) tr->edge_cap <<= 1;
    tr->edge_keys = callocCheck(tr->edge_cap, sizeof(uint64_t));
    tr->edge_to = mallocCheck(tr->edge_cap * sizeof(int32_t));
    tr->node_id = mallocCheck((total + 1) * sizeof(int32_t));
    tr->node_id[0] = -1;
    tr->n_nodes = 1;
    for (size_t id = 0; id < t->V; id++) { /* in id order: the first id keeps its bytes */
        if (!(t->added_flags[id] & ADDED) || trie_of(t, id) != which) continue;
        const uint8_t* s = trie_bytes(t, which, id, &len, &owned);
        size_t node = 0;
        for (size_t k = 0; k < len; k++) node = edge_add(tr, node, s[k]);
        if (len && tr->node_id[node] < 0) tr->node_id[node] = (int32_t)id;
        if (len) tr->first[s[0]] = 1;
        free(owned);
    }
}

void added_build(Tokenizer* t) {
    trie_build(t, 0);
    trie_build(t, 1);
}

void added_free(Tokenizer* t) {
    for (int w = 0; w < 2; w++) {
        free(t->added[w].edge_keys);
        free(t->added[w].edge_to);
        free(t->added[w].node_id);
    }
    free(t->added_flags);
}

/* the longest token of tr that s[0..n) starts with (its length in *len), -1 when none */
static int32_t trie_longest(const AddedTrie* tr, const uint8_t* s, size_t n, size_t* len) {
    int32_t best = -1;
    size_t node = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t c = edge_child(tr, node, s[i]);
        if (c < 0) break;
        node = (size_t)c;
        if (tr->node_id[node] >= 0) {
            best = tr->node_id[node];
            *len = i + 1;
        }
    }
    return best;
}

int32_t added_exact(const Tokenizer* t, const uint8_t* s, size_t n) {
    int32_t id = tok_lookup(t, s, n);
    return id >= 0 && (t->added_flags[id] & ADDED) ? id : -1;
}

/* the start of the character that ends at s[end] (end > floor); a lone byte when s[i..end) is not one */
static size_t char_before(const uint8_t* s, size_t end, size_t floor) {
    size_t i = end - 1, l;
    uint32_t cp;
    while (i > floor && end - i < 4 && (s[i] & 0xC0) == 0x80) i--;
    uc_next(s + i, end - i, &cp, &l);
    return i + l == end ? i : end - 1;
}

/* a word character (\w as single_word sees it: a letter, a number or '_') at s[i..n) */
static int word_at(const uint8_t* s, size_t i, size_t n) {
    uint32_t cp;
    size_t l;
    return (uc_next(s + i, n - i, &cp, &l) & (UC_LETTER | UC_NUMBER)) || s[i] == '_';
}

/* where the white space that ends at s[end] begins, not before floor */
static size_t space_back(const uint8_t* s, size_t end, size_t floor) {
    while (end > floor) {
        size_t i = char_before(s, end, floor), l;
        uint32_t cp;
        if (!(uc_next(s + i, end - i, &cp, &l) & UC_SPACE)) break;
        end = i;
    }
    return end;
}

static size_t space_forward(const uint8_t* s, size_t n, size_t a) {
    while (a < n) {
        uint32_t cp;
        size_t l;
        if (!(uc_next(s + a, n - a, &cp, &l) & UC_SPACE)) break;
        a += l;
    }
    return a;
}

int32_t added_next(const Tokenizer* t, int which, const uint8_t* s, size_t n, size_t from, size_t floor, size_t* a,
                   size_t* b) {
    const AddedTrie* tr = &t->added[which];
    if (!tr->n) return -1;
    for (size_t i = from; i < n; i++) {
        while (i < n && !tr->first[s[i]]) i++; /* most bytes start no added token */
        if (i == n) break;
        size_t len = 0;
        int32_t id = trie_longest(tr, s + i, n - i, &len);
        if (id < 0) continue;
        uint8_t f = t->added_flags[id];
        if ((f & ADDED_SINGLE_WORD) &&
            ((i > 0 && word_at(s, char_before(s, i, 0), i)) || (i + len < n && word_at(s, i + len, n)))) {
            i += len - 1; /* the search goes on after the dropped match */
            continue;
        }
        *a = f & ADDED_LSTRIP ? space_back(s, i, floor) : i;
        *b = f & ADDED_RSTRIP ? space_forward(s, n, i + len) : i + len;
        return id;
    }
    return -1;
}

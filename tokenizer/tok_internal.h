/* What the files of tokenizer/ share: the Tokenizer struct and the functions over it (added tokens, the
   normalizer, BPE). Its parts: tokenizer/tok_text.h (Unicode classes, the byte buffer), tokenizer/tok_regex.h,
   tokenizer/tok_steps.h (the pipeline's steps), tokenizer/tok_vocab.h (the lookup tables). Not for use
   outside tokenizer/. */
#ifndef REPOC_TOK_INTERNAL_H
#define REPOC_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tok_steps.h"
#include "tokenizer/tok_text.h"
#include "tokenizer/tokenizer.h"

/* ---- the normalizer (tokenizer/normalize.c) ---- */
/* s[0..n) through the normalizer into *out (malloc'd, *out_n bytes); false when there is no normalizer */
bool tok_normalize(const Tokenizer* t, void** region, const uint8_t* s, size_t n, uint8_t** out, size_t* out_n);

/* ---- a slot of the merge table (tokenizer/tok_vocab.h) ---- */
typedef struct {
    uint64_t key;  /* (left id << 32) | right id; 0 = empty slot (UINT64_MAX never a key) */
    uint32_t rank; /* position in model.merges */
    int32_t id;    /* the merged token */
} MergeSlot;

/* added tokens in a trie over their bytes (tokenizer/added.c). An edge (node, byte) -> child
   lives in one open-addressing table keyed (node << 8 | byte) + 1; node 0 is the root. */
typedef struct {
    size_t n;            /* added tokens in it */
    uint64_t* edge_keys; /* (edge_cap) 0 = empty slot */
    int32_t* edge_to;    /* (edge_cap) the edge's child node */
    size_t edge_cap;
    int32_t* node_id; /* (n_nodes) the added token that ends at the node, -1 when none */
    size_t n_nodes;
    uint8_t first[256]; /* 1 when some added token starts with this byte */
} AddedTrie;
/* An added token's flags: added, and its lstrip, rstrip, single_word and normalized options */
enum { ADDED = 1, ADDED_LSTRIP = 2, ADDED_RSTRIP = 4, ADDED_SINGLE_WORD = 8, ADDED_NORMALIZED = 16 };

struct Tokenizer {
    char name[512];      /* the file, for messages */
    size_t V;            /* largest id + 1 */
    uint8_t* bytes;      /* every token's bytes, back to back */
    size_t* off;         /* (V+1) token id's bytes are bytes[off[id] .. off[id+1]) */
    uint8_t* has;        /* (V) 1 when the id has a token */
    int32_t* vocab_hash; /* (vocab_cap) bytes -> id, open addressing; -1 = empty */
    size_t vocab_cap;
    MergeSlot* merges; /* (merge_cap) open addressing */
    size_t merge_cap;
    int32_t byte_id[256]; /* the token of each single byte */
    int ignore_merges;
    /* the general BPE model (tokenizer/bpe_word.c), used when byte_level is 0 or a prefix/suffix is set */
    int byte_level;                      /* a ByteLevel pre-tokenizer: vocab strings are bytes through GPT-2's map */
    int byte_fallback, fuse_unk;         /* model.byte_fallback, model.fuse_unk */
    int32_t unk;                         /* model.unk_token's id, -1 when none */
    int32_t fallback_id[256];            /* the <0xHH> tokens, -1 when missing */
    char prefix_str[32], suffix_str[32]; /* continuing_subword_prefix, end_of_word_suffix */
    size_t prefix_len, suffix_len;
    NormStep norm[MAX_NORM];
    size_t n_norm;
    DecStep dec[MAX_DEC];
    size_t n_dec;
    PreStep steps[MAX_STEPS];
    size_t n_steps;
    AddedTrie added[2];         /* added tokens matched in the raw text [0] and in the normalized text [1] */
    uint8_t* added_flags;       /* (V) ADDED_* of each id */
    int32_t prefix[MAX_AROUND]; /* post-processor ids before a sequence (BOS) */
    size_t n_prefix;
    int32_t suffix[MAX_AROUND]; /* and after it */
    size_t n_suffix;
    int32_t eos;
};

/* ids must lie below 2 x (vocab entries + added tokens) + TOK_ID_SLACK (memory goes to every id below the largest) */
#define TOK_ID_SLACK (1 << 20)
/* the longest pre-token BPE merges (bytes); a longer one is refused (tokenizer.h) */
#define TOK_MAX_PRETOKEN ((size_t)1 << 20)

/* ---- added tokens (tokenizer/added.c) ---- */
/* the tries of the ids with ADDED in t->added_flags: [1] holds those with ADDED_NORMALIZED,
   their content normalized, when there is a normalizer; [0] the rest */
void added_build(Tokenizer* t);
void added_free(Tokenizer* t);
/* The next added token of trie `which` in s[0..n) at or after from, leftmost-longest, with its
   single_word, lstrip and rstrip applied (lstrip reaches back no further than floor): its id and
   the span [*a, *b) it takes, or -1 when none. */
int32_t added_next(const Tokenizer* t, int which, const uint8_t* s, size_t n, size_t from, size_t floor, size_t* a,
                   size_t* b);
/* the added token whose content is exactly s[0..n), -1 when none */
int32_t added_exact(const Tokenizer* t, const uint8_t* s, size_t n);

/* ---- the BPE model ---- */
/* the parts of a pre-token for the general model (tokenizer/bpe_word.c): (<= n) ids */
size_t bpe_word_parts(const Tokenizer* t, const uint8_t* s, size_t n, int32_t* parts);
/* BPE of one pre-token into e->ids, through e's cache */
void bpe_encode_piece(TokEncoder* e, const uint8_t* s, size_t n);
void bpe_cache_free(void* cache);

#endif

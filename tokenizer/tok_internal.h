/* What the files of tokenizer/ share: the Tokenizer struct, the pre-tokenizer
   steps, the Unicode classes and the BPE tables. Not for use outside tokenizer/. */
#ifndef REPOC_TOK_INTERNAL_H
#define REPOC_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"

/* ---- Unicode (tokenizer/unicode.c) ---- */
enum { UC_OTHER = 0, UC_LETTER = 1, UC_NUMBER = 2, UC_SPACE = 4 };
void uc_init(void); /* builds the BMP table; idempotent, call before threads */
/* The character at s[0..n): its class and byte length (>= 1). A byte that does
   not start a valid UTF-8 sequence is a character of its own of class
   UC_OTHER (*cp = 0xFFFFFFFF). */
int uc_next(const uint8_t* s, size_t n, uint32_t* cp, size_t* len);

/* ---- pre-tokenizer steps (tokenizer/pretok.c) ---- */
typedef enum {
    STEP_SPLIT_GPT2,   /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
    STEP_SPLIT_CL100K, /* (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|... */
    STEP_DIGITS,       /* Digits: runs of \p{N} apart from the rest, or each one alone */
    STEP_PREFIX_SPACE  /* ByteLevel add_prefix_space: " " before a pre-token that does not start with one */
} StepKind;

typedef struct {
    StepKind kind;
    int max_digits; /* STEP_SPLIT_CL100K: 3 (cl100k, Llama-3) or 1 (Qwen) */
    int individual; /* STEP_DIGITS */
} PreStep;

#define MAX_STEPS 16
#define MAX_AROUND 8 /* special tokens a template puts on one side of the text */

/* The end of the regex match that starts at i of piece [0, n) (> i). */
size_t pretok_gpt2(const uint8_t* s, size_t n, size_t i);
size_t pretok_cl100k(const uint8_t* s, size_t n, size_t i, int max_digits);
/* Recognise a Split regex: the step for it, 0 when known, -1 when not. */
int pretok_recognise(const char* regex, PreStep* step);

/* ---- BPE tables (tokenizer/bpe.c) ---- */
typedef struct {
    uint64_t key;  /* (left id << 32) | right id; 0 = empty slot (UINT64_MAX never a key) */
    uint32_t rank; /* position in model.merges */
    int32_t id;    /* the merged token */
} MergeSlot;

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
    PreStep steps[MAX_STEPS];
    size_t n_steps;
    size_t n_added;      /* added tokens, in a trie over their bytes (tokenizer/added.c) */
    uint64_t* edge_keys; /* (edge_cap) (node << 8 | byte) + 1 of each edge; 0 = empty slot */
    int32_t* edge_to;    /* (edge_cap) the edge's child node */
    size_t edge_cap;
    int32_t* node_id; /* (n_nodes) the added token that ends at the node, -1 when none; 0 = root */
    size_t n_nodes;
    uint8_t added_first[256];   /* 1 when some added token starts with this byte */
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
/* the trie of the ids with is_added[id] (V entries) */
void added_build(Tokenizer* t, const uint8_t* is_added);
void added_free(Tokenizer* t);
/* The longest added token that s[0..n) starts with (its length in *len), -1 when none. */
int32_t added_longest(const Tokenizer* t, const uint8_t* s, size_t n, size_t* len);

/* BPE of one pre-token into e->ids, through e's cache */
void bpe_encode_piece(TokEncoder* e, const uint8_t* s, size_t n);
void bpe_cache_free(void* cache);
/* hash tables, built once at load */
void vocab_hash_build(Tokenizer* t);
int merge_insert(Tokenizer* t, int32_t a, int32_t b, uint32_t rank, int32_t id);
uint64_t tok_hash_bytes(const uint8_t* s, size_t n);

#endif

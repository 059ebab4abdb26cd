/* What the files of tokenizer/ share: the Tokenizer struct, the regex engine,
   the normalizer, pre-tokenizer and decoder steps, the Unicode classes and the
   BPE tables. Not for use outside tokenizer/. */
#ifndef REPOC_TOK_INTERNAL_H
#define REPOC_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"

/* ---- Unicode (tokenizer/unicode.c) ---- */
enum { UC_OTHER = 0, UC_LETTER = 1, UC_NUMBER = 2, UC_SPACE = 4 };
void uc_init(void); /* builds the BMP table; idempotent, call before threads */
/* the class of each code point below U+10000 (filled by uc_init) */
extern uint8_t uc_bmp_class[0x10000];
/* uc_next for a character that is not ASCII (s[0] >= 0x80) */
int uc_next_multi(const uint8_t* s, size_t n, uint32_t* cp, size_t* len);
/* The character at s[0..n): its class and byte length (>= 1). A byte that does
   not start a valid UTF-8 sequence is a character of its own of class
   UC_OTHER (*cp = 0xFFFFFFFF). Inline for ASCII, which the pre-tokenizer's
   matchers ask about most: a call per character was about 13% of the
   instructions of encoding the gpt2 corpus of tools/tokenizer_compare.sh (callgrind). */
static inline int uc_next(const uint8_t* s, size_t n, uint32_t* cp, size_t* len) {
    if (s[0] < 0x80) {
        *cp = s[0];
        *len = 1;
        return uc_bmp_class[s[0]];
    }
    return uc_next_multi(s, n, cp, len);
}

/* append s[0..n) to the buffer *p (*len bytes of *cap used; realloc'd) (tokenizer/bytebuf.c) */
void tok_buf_put(uint8_t** p, size_t* len, size_t* cap, const void* s, size_t n);

/* ---- regular expressions through Oniguruma (tokenizer/regex.c) ---- */
typedef struct TokRegex TokRegex;
/* pattern[0..len) compiled as Hugging Face tokenizers does (ONIG_SYNTAX_DEFAULT, UTF-8, no options);
   NULL with Oniguruma's message in err on a bad pattern */
TokRegex* tok_regex_new(const char* pattern, size_t len, char* err, size_t err_len);
void tok_regex_free(TokRegex* re);
/* a pattern that matches the string s literally (malloc'd) */
char* tok_regex_escape(const char* s);
/* The spans of s[0..n) as tokenizers' find_matches gives them: in order, covering the text,
   each matched (1) or not (0); an empty match is a span of its own. A byte that is not valid
   UTF-8 is a span of its own with is_match -1 (the regex sees each valid run alone).
   region: the caller's Oniguruma region, made when *region is NULL (tok_regex_region_free). */
typedef void (*SpanFn)(void* ctx, size_t a, size_t b, int is_match);
void tok_regex_spans(const TokRegex* re, void** region, const uint8_t* s, size_t n, SpanFn fn, void* ctx);
void tok_regex_region_free(void* region);

/* ---- pre-tokenizer steps (tokenizer/pretok.c) ---- */
typedef enum {
    STEP_SPLIT_GPT2,   /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
    STEP_SPLIT_CL100K, /* (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|... */
    STEP_DIGITS,       /* Digits: runs of \p{N} apart from the rest, or each one alone */
    STEP_PREFIX_SPACE, /* ByteLevel add_prefix_space: " " before a pre-token that does not start with one */
    STEP_SPLIT_REGEX,  /* Split (and Punctuation, Whitespace, WhitespaceSplit) through Oniguruma */
    STEP_METASPACE     /* Metaspace: spaces to the replacement, prepended per scheme, split before each */
} StepKind;

/* SplitDelimiterBehavior: what becomes of a match and the text around it */
typedef enum {
    SPLIT_ISOLATED,
    SPLIT_REMOVED,
    SPLIT_MERGED_PREVIOUS,
    SPLIT_MERGED_NEXT,
    SPLIT_CONTIGUOUS
} SplitBehavior;
enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER }; /* Metaspace prepend_scheme */

typedef struct {
    StepKind kind;
    int max_digits;         /* STEP_SPLIT_CL100K: 3 (cl100k, Llama-3) or 1 (Qwen) */
    int individual;         /* STEP_DIGITS */
    TokRegex* re;           /* STEP_SPLIT_REGEX: owned */
    SplitBehavior behavior; /* STEP_SPLIT_REGEX */
    int invert;             /* STEP_SPLIT_REGEX: matches and the text between them swap roles */
    uint8_t rep[4];         /* STEP_METASPACE: the replacement character's UTF-8 bytes */
    size_t rep_len;
    int prepend; /* STEP_METASPACE: PREPEND_* */
    int split;   /* STEP_METASPACE: split before each replacement character */
} PreStep;

#define MAX_STEPS 16
#define MAX_AROUND 8 /* special tokens a template puts on one side of the text */
#define MAX_NORM 16  /* normalizer steps */
#define MAX_DEC 16   /* decoder steps */

/* The end of the regex match that starts at i of piece [0, n) (> i). */
size_t pretok_gpt2(const uint8_t* s, size_t n, size_t i);
size_t pretok_cl100k(const uint8_t* s, size_t n, size_t i, int max_digits);
/* the three regexes with a hand-written matcher: GPT-2, cl100k (Llama-3), Qwen2 */
extern const char PRETOK_RE_GPT2[], PRETOK_RE_CL100K[], PRETOK_RE_QWEN[];
/* Recognise a Split regex with a hand-written matcher: the step for it, 0 when known, -1 when not. */
int pretok_recognise(const char* regex, PreStep* step);

/* ---- normalizers (tokenizer/normalize.c) ---- */
typedef enum {
    NORM_NFC,
    NORM_NFD,
    NORM_NFKC,
    NORM_NFKD,
    NORM_LOWERCASE,
    NORM_STRIP,
    NORM_PREPEND,
    NORM_REPLACE
} NormKind;
typedef struct {
    NormKind kind;
    int left, right; /* NORM_STRIP */
    char* str;       /* NORM_PREPEND: the prefix; NORM_REPLACE: the content (owned) */
    char* pat;       /* NORM_REPLACE: a {"String": ...} pattern, matched literally (owned) */
    TokRegex* re;    /* NORM_REPLACE: a {"Regex": ...} pattern (owned) */
} NormStep;
/* s[0..n) through the normalizer into *out (malloc'd, *out_n bytes); false when there is no normalizer */
bool tok_normalize(const Tokenizer* t, void** region, const uint8_t* s, size_t n, uint8_t** out, size_t* out_n);

/* ---- decoders (tokenizer/decode.c) ---- */
typedef enum { DEC_BYTE_LEVEL, DEC_BYTE_FALLBACK, DEC_FUSE, DEC_STRIP, DEC_REPLACE, DEC_METASPACE } DecKind;
typedef struct {
    DecKind kind;
    uint8_t ch[4]; /* DEC_STRIP: the character stripped; DEC_METASPACE: the replacement */
    size_t ch_len;
    size_t start, stop; /* DEC_STRIP: at most this many at the start and at the end */
    int prepend;        /* DEC_METASPACE: PREPEND_* */
    char* pat;          /* DEC_REPLACE: the string replaced (owned; a literal string) */
    char* content;      /* DEC_REPLACE: and its replacement (owned) */
} DecStep;

/* ---- BPE tables (tokenizer/bpe.c) ---- */
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

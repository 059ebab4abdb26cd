/* The steps of a tokenizer's pipeline as tokenizer.json describes them: pre-tokenizer steps with the
   hand-written matchers of tokenizer/pretok.c, normalizer steps (tokenizer/normalize.c) and decoder
   steps (tokenizer/decode.c). Not for use outside tokenizer/. */
#ifndef REPOC_TOK_STEPS_H
#define REPOC_TOK_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tok_regex.h"

/* ---- pre-tokenizer steps (tokenizer/pretok.c) ---- */
typedef enum {
    STEP_SPLIT_GPT2,   /* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
    STEP_SPLIT_CL100K, /* (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|... */
    STEP_SPLIT_O200K,  /* o200k_base's: letters split where the case changes (PRETOK_RE_O200K) */
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
/* Metaspace's prepend_scheme: always, first, never */
enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER };
/* how the contractions 's 't 're ... match: as written, in any ASCII case, or under (?i) (U+017F too) */
enum { CONTRACT_EXACT, CONTRACT_ASCII, CONTRACT_UNICODE };

typedef struct {
    StepKind kind;
    int max_digits;       /* STEP_SPLIT_CL100K: 3 (cl100k, Llama-3) or 1 (Qwen) */
    int contraction_fold; /* STEP_SPLIT_CL100K, _O200K: CONTRACT_UNICODE for (?i:'s|...), CONTRACT_ASCII spelled out */
    int individual;       /* STEP_DIGITS */
    TokRegex* re;         /* STEP_SPLIT_REGEX: owned */
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
size_t pretok_cl100k(const uint8_t* s, size_t n, size_t i, const PreStep* st);
size_t pretok_o200k(const uint8_t* s, size_t n, size_t i, const PreStep* st);
/* the regexes with a hand-written matcher: GPT-2, cl100k (Llama-3), Qwen2, o200k (GPT-4o); the contraction
   groups of the last three also as js-tiktoken spells them (every ASCII case written out, pretok_recognise) */
extern const char PRETOK_RE_GPT2[], PRETOK_RE_CL100K[], PRETOK_RE_QWEN[], PRETOK_RE_O200K[];
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

#endif

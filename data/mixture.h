/* A weighted mixture of token sources: data.train (or data.val) given as a
   list of {"name", "files", "weight", "exhausted"} objects. Each source is its
   own token stream (data/tokens.h); rows are dealt to sources in proportion
   to the weights, and a row is still a pure function of (seed, step, row), so
   exact resume and data-parallel slicing need no cursor.

   Dealing: p_k = weight_k / sum of weights. Global slot g (0, 1, 2, ...) goes
   to one source, and C_k(G), the slots among the first G that source k got,
   is a closed form: C_0(G) = floor(G p_0 + 1/2), then the rest G - C_0(G) is
   dealt the same way among sources 1.. with shares renormalised, and the last
   source takes what is left. Every C_k is nondecreasing, the C_k sum to G,
   and |C_k(G) - G p_k| stays below the number of sources: the proportions
   are exact up to a few rows at every step, with no sampling noise. Row r of
   step s (R rows per step) is slot g = s R + (r + o_s) mod R, o_s a hash of
   (seed, s), so a data-parallel rank does not see the same source pattern in
   every step. Source k's i-th row (i = C_k(g)) is:
     sequential: the window from (i T) mod N_k, like token_data_rows;
     shuffle:    a window from an Rng seeded by (seed, k, i), never wrapping.
   A source "runs out" when i T passes N_k (one pass over its tokens): it
   wraps around (exhausted "wrap", the default; the trainer prints a note at
   each new pass) or ends the run (exhausted "stop").

   One source kind today, token files; a new kind (say JSONL documents) adds
   a case to mix_source_parse and a reader behind mixture_rows. */
#ifndef REPOC_DATA_MIXTURE_H
#define REPOC_DATA_MIXTURE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/tokens.h"

#define MIX_MAX_SOURCES 16
#define MIX_NAME_LEN 48

/* What a source does at the end of its tokens: exhausted "wrap" (begin another pass) or "stop" (end the run) */
typedef enum { MIX_WRAP, MIX_STOP } MixExhausted;

typedef struct {
    char name[MIX_NAME_LEN];
    double weight; /* as given, > 0 */
    double share;  /* p_k = weight / sum of weights */
    MixExhausted exhausted;
    char** files; /* (n_files) the paths or globs, owned */
    size_t n_files;
    TokenData data; /* opened by mixture_open */
} MixSource;

typedef struct {
    MixSource src[MIX_MAX_SOURCES];
    size_t n;
} Mixture;

/* Is v the mixture form (a list whose entries are objects)? A list of strings is the single-stream form. */
bool mixture_given(const cJSON* v);

/* Parse and check the list at key (e.g. "data.train"): names unique and
   non-empty, files a non-empty list of strings, weight a finite number > 0,
   exhausted "wrap" | "stop", no other keys. Returns 0, or non-zero with err
   naming the entry ("data.train[1].weight: ..."). Opens no file; release
   with mixture_close. */
int mixture_parse(Mixture* mx, const cJSON* list, const char* key, char* err, size_t err_len);

/* Open every source's files (dies naming the file, or the source whose
   stream is shorter than T + 1 tokens) */
void mixture_open(Mixture* mx, const char* key, const char* format, size_t vocab_size, size_t T);
void mixture_close(Mixture* mx);

/* C_k(G): slots among the first G dealt to source k */
uint64_t mixture_count(const Mixture* mx, size_t k, uint64_t G);
/* The source of global slot g; *index = its row number within that source, C_k(g) */
size_t mixture_slot(const Mixture* mx, uint64_t g, uint64_t* index);

/* The rows rq asks (as token_data_rows); src_of (n, may be NULL) gets each row's source */
void mixture_rows(const Mixture* mx, const RowRequest* rq, int32_t* tokens, int32_t* targets, uint8_t* src_of);

/* Passes over source k's tokens begun after G global slots: 0 before its first row, then 1 + floor((C_k(G) - 1) T / N_k) */
uint64_t mixture_pass(const Mixture* mx, size_t k, uint64_t G, size_t T);

#endif

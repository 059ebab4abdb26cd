/* Synthetic long-context data (`data.synthetic`), made on the fly: a haystack
   of filler from a seeded Markov chain with needles planted at random depths
   and a query at the end, in the task families of RULER (single needle, multi
   keys, multi values, multi queries, distractors = noisy context, a flattened
   table = structured data). Every row and every eval item is a pure function
   of (config, seed, step, row) or (config, seed, family, index). All ids lie
   in one reserved range [first_id, first_id + synthetic_n_ids), so any vocab
   that holds it works (64 ids with the defaults). Layout: data/README.md. */
#ifndef REPOC_DATA_SYNTHETIC_H
#define REPOC_DATA_SYNTHETIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/real.h"
#include "data/rows.h"

/* The task families of the generator: what an item's needles are and what its query asks */
typedef enum {
    SYN_SINGLE,     /* one needle, query its key */
    SYN_MULTIKEY,   /* n_needles needles with distinct keys, query one */
    SYN_MULTIVALUE, /* n_values needles sharing one key; answer = all values in context order */
    SYN_MULTIQUERY, /* n_needles needles, query n_queries keys; answer = their values in query order */
    SYN_DISTRACTOR, /* the true needle + n_distractors whose keys differ from it in one token */
    SYN_TABLE,      /* table_rows rows [ROW key (COL_j cell_j)*]; query key + COL_j, answer cell_j */
    SYN_N_FAMILIES
} SynFamily;

#define SYN_MAX_KEY 8    /* key_len, value_len <= 8 */
#define SYN_MAX_ITEMS 16 /* needles, values, distractors + 1, table rows <= 16 */
#define SYN_MAX_COLS 8
#define SYN_MAX_ANSWER (SYN_MAX_ITEMS * SYN_MAX_KEY)

struct TokenData; /* data/tokens.h */

typedef struct {
    double weight[SYN_N_FAMILIES]; /* share of training rows per family; 0 = off (default all 1) */
    bool families_named;           /* weight came from data.synthetic.weights, not the default */
    size_t first_id;               /* the reserved range starts here (0) */
    size_t n_cols;                 /* table columns, each with its own COL id (4) */
    size_t alphabet;               /* ids that keys, values and cells are spelled with (32) */
    size_t filler_vocab;           /* ids of the filler chain (24) */
    size_t markov_order;           /* filler: the next id depends on the last `order` ids (1) */
    size_t markov_branching;       /* ... and is one of `branching` successors, uniformly (4) */
    uint64_t filler_seed;          /* the chain's transition table; keep it fixed across train and eval (1234) */
    size_t key_len;                /* tokens per key (2) */
    size_t value_len;              /* tokens per value / table cell (2) */
    size_t n_needles;              /* multikey and multiquery needles (4) */
    size_t n_queries;              /* multiquery: keys asked (2) */
    size_t n_values;               /* multivalue: values of the one key (3) */
    size_t n_distractors;          /* distractor: near-miss needles (3) */
    size_t table_rows;             /* table: rows (4) */
    /* training loss weight of each answer target, the others weigh 1 (1: the plain mean); the trainer applies it,
       validation rows always weigh 1 */
    double answer_weight;

    /* NULL: the filler is the Markov chain. Else it is real text (`filler_file`): each item's filler is one
       window of these tokens at an offset drawn per item; every text id lies below first_id, so the marks and
       symbols stay apart from the text */
    const struct TokenData* filler_text;
    char filler_file[256]; /* the file it was read from ("" for the chain), for the log */
} SyntheticConfig;

/* The reserved ids, all absolute (first_id already added) */
typedef struct {
    int32_t needle, sep, query, row; /* marks: NEEDLE, SEP, QUERY, ROW */
    int32_t col0;                    /* COL_j = col0 + j, j < n_cols */
    int32_t alpha0;                  /* key/value symbols: alpha0 .. alpha0 + alphabet - 1 */
    int32_t filler0;                 /* filler: filler0 .. filler0 + filler_vocab - 1 */
    int32_t end;                     /* one past the last reserved id */
} SynIds;

void synthetic_defaults(SyntheticConfig* cfg);
/* Dies naming the field on a bad value or when the range does not fit vocab_size */
void synthetic_validate(const SyntheticConfig* cfg, size_t vocab_size);
SynIds synthetic_ids(const SyntheticConfig* cfg);
size_t synthetic_n_ids(const SyntheticConfig* cfg); /* 4 + n_cols + alphabet + filler_vocab */

const char* synthetic_family_name(SynFamily f); /* "single", "multikey", ... */
int synthetic_family_parse(const char* name);   /* the SynFamily, or -1 */
const char* synthetic_family_list(void);        /* "single, multikey, ..., table", for messages */

/* Answer tokens of a family (value_len x values asked); fixed by the config */
size_t synthetic_answer_len(const SyntheticConfig* cfg, SynFamily f);
/* Fewest tokens an item of the family needs (needles + query + answer, no filler) */
size_t synthetic_min_len(const SyntheticConfig* cfg, SynFamily f);

/* Training rows, those rq asks (rq->order aside: every row is drawn): each row is one item of T+1 tokens x[0..T] ending with its
   answer; tokens[b*T+t] = x[t], targets[b*T+t] = x[t+1], answer_mask[b*T+t] = 1
   exactly where targets[b*T+t] is an answer token (the last answer_len
   targets), else 0; answer_mask may be NULL. Row r of step s uses the Rng
   seeded with mix_triple(TRAIN_DOMAIN, seed, s, r): the family is drawn by
   weight, then everything else; any split of the rows gives the same rows.
   Dies if T + 1 < synthetic_min_len of an enabled family. */
void synthetic_rows(const SyntheticConfig* cfg, const RowRequest* rq, int32_t* tokens, int32_t* targets,
                    uint8_t* answer_mask);
/* The same rows with the answers weighted instead of marked: target_weights[b*T+t] = cfg->answer_weight
   where answer_mask would be 1, else 1 (target_weights may be NULL) */
void synthetic_rows_weighted(const SyntheticConfig* cfg, const RowRequest* rq, int32_t* tokens, int32_t* targets,
                             real* target_weights);

/* One evaluation item: prompt (prompt_len tokens, ending with the query) and
   answer (synthetic_answer_len tokens), from (seed, family, index) in a
   stream separate from the training rows. depth in [0, 1] puts the queried
   needle (the table, for SYN_TABLE) at that fraction of the filler; depth < 0
   draws it at random like the others. Returns the token position in the
   prompt where the queried needle (or the table) begins. */
size_t synthetic_item(const SyntheticConfig* cfg, SynFamily family, uint64_t seed, size_t index, size_t prompt_len,
                      double depth, int32_t* prompt, int32_t* answer);

/* The resolved config, one line, for the start-up log */
void synthetic_print(const SyntheticConfig* cfg, FILE* out);

#endif

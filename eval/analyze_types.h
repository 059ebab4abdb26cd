/* What build/analyze measured of one checkpoint (docs/analyze.md): filled by
   programs/analyze*.c, reported by eval/analyze_out.c (summary, positions,
   attention) and eval/analyze_z_out.c (ranges, boundaries, mechanism, text). */
#ifndef REPOC_ANALYZE_TYPES_H
#define REPOC_ANALYZE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "eval/analyze_stats.h"
#include "eval/analyze_z.h"

/* What build/analyze reads its inputs from: synthetic items, a token file, or text */
typedef enum { INPUT_SYNTHETIC, INPUT_TOKENS, INPUT_TEXT } InputKind;

/* (a) one input length: z's range per RePo layer and KV head, means over the items */
typedef struct {
    size_t length, mult; /* length = mult x the analysed length */
    double yarn_factor;  /* the YaRN factor of this run; <= 1: none */
    bool with_yarn;      /* a --ranges-yarn run: YaRN with factor mult, original length the analysed one */
    size_t items;
    ZRange* head; /* (n_repo, KVH) */
} RangeRun;

typedef struct {
    /* what was analysed */
    const char* ckpt_dir;
    char label[64]; /* names the checkpoint in comparisons */
    ModelConfig cfg;
    size_t train_len; /* 0 = unknown */
    InputKind kind;
    bool synthetic; /* kind == INPUT_SYNTHETIC */
    SynFamily family;
    size_t length, items; /* tokens the model reads per item; items (1 for a token window or a text) */
    size_t prompt_len;    /* synthetic: the prompt's tokens (the rest are answer tokens) */
    uint64_t seed;
    double depth; /* < 0: drawn per item */
    const char* tokens_file;
    size_t offset;
    const char* text_from; /* text: "--text" or the --text-file path */
    char tokenizer[4200];  /* text: the tokenizer.json read */
    char** pieces;         /* text: (length) each token's text, NUL-terminated */

    /* learned positions: per RePo layer and KV head, over every item */
    bool has_pos;
    SegParams seg;
    size_t n_repo, repo_layer[MAX_LAYERS];
    PosStats* head_stats; /* (n_repo, KVH) */
    real* z0;             /* (n_repo, length, KVH) z of the first item */
    int32_t* tokens0;     /* (length) the first item's tokens */

    /* (b) boundary alignment and (c) query distance: synthetic items with positions */
    double top_frac;    /* large gaps: the top fraction of an item's |z[t+1] - z[t]| */
    int32_t eos;        /* the token that ends a document (-1: none known) */
    size_t bnd_large;   /* large gaps per item */
    double* bnd_share;  /* (items, n_repo, KVH) boundary_share */
    double* bnd_chance; /* (items) boundary_chance (the same for every head) */
    double* bnd_best;   /* (items) boundary_best (the same for every head) */
    double* d_needle;   /* (items, n_repo, KVH) z_query_distance .needle */
    double* d_filler;   /* (items, n_repo, KVH) z_query_distance .filler (NAN: an item without filler) */

    /* (a) ranges at several lengths */
    RangeRun* ranges;
    size_t n_ranges;

    /* attention mass over the layers att_layer */
    bool has_att;
    size_t n_att, att_layer[MAX_LAYERS];
    Mass* layer_rows; /* (n_att) the query rows, summed over items and heads */
    Mass* layer_sep;  /* (n_att) the SEP row alone */
    Mass* item_rows;  /* (items) the query rows of each item over all att layers */
    ItemSpans* spans; /* (items) synthetic: where needle and query sit */
} Analysis;

#endif

/* build/analyze's results for one checkpoint and their outputs (docs/analyze.md):
   the terminal summary, positions.csv, analysis.json (version
   ANALYZE_JSON_VERSION, which eval/analyze_compare.c reads back) and the
   figures. programs/analyze.c fills an Analysis. */
#ifndef REPOC_ANALYZE_OUT_H
#define REPOC_ANALYZE_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "eval/analyze_stats.h"

#define ANALYZE_JSON_VERSION 1

typedef struct {
    /* what was analysed */
    const char* ckpt_dir;
    char label[64]; /* names the checkpoint in comparisons */
    ModelConfig cfg;
    size_t train_len; /* 0 = unknown */
    bool synthetic;   /* synthetic items, else one window of a token file */
    SynFamily family;
    size_t length, items; /* tokens the model reads per item; items (1 for a token window) */
    size_t prompt_len;    /* synthetic: the prompt's tokens (the rest are answer tokens) */
    uint64_t seed;
    double depth; /* < 0: drawn per item */
    const char* tokens_file;
    size_t offset;

    /* learned positions: per RePo layer and KV head, over every item */
    bool has_pos;
    SegParams seg;
    size_t n_repo, repo_layer[MAX_LAYERS];
    PosStats* head_stats; /* (n_repo, KVH) */
    real* z0;             /* (n_repo, length, KVH) z of the first item */
    int32_t* tokens0;     /* (length) the first item's tokens */

    /* attention mass over the layers att_layer */
    bool has_att;
    size_t n_att, att_layer[MAX_LAYERS];
    Mass* layer_rows; /* (n_att) the query rows, summed over items and heads */
    Mass* layer_sep;  /* (n_att) the SEP row alone */
    Mass* item_rows;  /* (items) the query rows of each item over all att layers */
    ItemSpans* spans; /* (items) synthetic: where needle and query sit */
} Analysis;

void analysis_print(const Analysis* an);
/* positions.csv (layer,head,t,z of the first item), analysis.json and the
   SVG (+ PNG) figures into dir */
void analysis_write(const Analysis* an, const char* dir, const size_t* plot_heads, size_t n_plot_heads);

#endif

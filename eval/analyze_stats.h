/* What build/analyze measures (docs/analyze.md gives the exact definitions):
   - learned positions: per sequence of z (one RePo layer, one KV head) the
     range, the mean |step| and mean step between neighbours, and a class per
     non-overlapping segment of len tokens: near-constant, monotonic or hybrid;
   - attention mass: from the rotated q, k and the per-row log-sum-exp that a
     forward pass keeps (model/attention.h stores no probabilities), the
     probabilities of chosen query rows are recomputed exactly and summed over
     the needle tokens, the query tokens and the rest of a synthetic item. */
#ifndef REPOC_ANALYZE_STATS_H
#define REPOC_ANALYZE_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/real.h"
#include "data/synthetic.h"
#include "model/model.h"

/* The kinds of a segment of z (SegParams says when each holds): near-constant, monotonic, or neither */
typedef enum { SEG_CONSTANT, SEG_MONOTONIC, SEG_HYBRID, SEG_N_KINDS } SegKind;
const char* seg_kind_name(SegKind k); /* "constant", "monotonic", "hybrid" */

typedef struct {
    size_t len;       /* tokens per segment */
    double eps_const; /* near-constant: max - min < eps_const (position units) */
    double mono_frac; /* monotonic: at least this share of the len - 1 steps has one sign */
} SegParams;

/* The defaults of build/analyze and of train.log_positions: segments of 16
   tokens, near-constant below 0.1 x len = 1.6 units (a tenth of the 15 units
   RoPE spans over a segment), monotonic from 0.9 of the steps */
#define SEG_LEN_DEFAULT 16
#define SEG_MONO_FRAC_DEFAULT 0.9
double seg_eps_const_default(size_t len); /* 0.1 x len */

/* The class of one segment: z[i * stride], i < n (n >= 2). A step of exactly 0
   counts for neither sign. */
SegKind seg_classify(const real* z, size_t stride, size_t n, const SegParams* p);

/* Sums over the sequences added; divide by n_seq (or the segment total) to report */
typedef struct {
    double range, mean_abs_step, mean_step; /* Σ over sequences of each sequence's value */
    size_t n_seq;
    size_t seg[SEG_N_KINDS]; /* segments of each class */
} PosStats;

/* Add one sequence z[t * stride], t < T (T >= 2): its range, mean |z[t+1] - z[t]|,
   mean z[t+1] - z[t], and its floor(T / len) full segments (a shorter tail is left out) */
void pos_stats_add(PosStats* s, const real* z, size_t stride, size_t T, const SegParams* p);
void pos_stats_merge(PosStats* into, const PosStats* from);
size_t pos_stats_segments(const PosStats* s);
double pos_stats_share(const PosStats* s, SegKind k); /* 0 when there are no segments */

/* One RePo layer's z after a forward pass, z (rows,T,KVH): every (row, head)
   sequence added to heads[g] (KVH of them), or, with heads_merged, all into
   heads[0]. build/analyze (one item per forward, per head) and the trainer's
   train.log_positions (a batch, heads merged) both measure through this. */
void pos_stats_add_layer(PosStats* heads, bool heads_merged, const real* z, size_t rows, size_t T, size_t KVH,
                         const SegParams* p);

/* What is reported of a PosStats: means over its sequences, shares over its segments */
typedef struct {
    double range, mean_abs_step, mean_step;
    size_t segments;
    double share[SEG_N_KINDS];
} PosSummary;
PosSummary pos_stats_summary(const PosStats* s);

/* token ranges [begin, end) */
typedef struct {
    size_t begin, end;
} Span;

/* Where the parts of a synthetic prompt are: the query (its first QUERY through
   the SEP that ends the prompt) and every block whose key the query asks: the
   needles NEEDLE key SEP value (all n_values of a multivalue item, the true one
   of a distractor item, each asked one of a multiquery item) or, for a table,
   the asked row ROW key (COL_c cell_c)*. blocks: every block of the prompt, asked or not (needles,
   distractors, table rows), in order; the filler is what lies before the query outside them. */
typedef struct {
    Span query;
    Span needle[SYN_MAX_ITEMS];
    size_t n_needles;
    Span block[SYN_MAX_ITEMS];
    size_t n_blocks;
} ItemSpans;

/* x: the prompt, P tokens. Dies when the layout is not a synthetic item's. */
void item_spans(ItemSpans* s, const SyntheticConfig* syn, SynFamily f, const int32_t* x, size_t P);

/* The heads attention scores are recomputed over: H query heads in KVH groups of hd features each, the
   scores scaled by scale (the model's cfg_attn_scale) */
typedef struct {
    size_t H, KVH, hd;
    double scale;
} ScoreHeads;
/* c's heads and scale */
ScoreHeads attn_score_heads(const ModelConfig* c);

/* Row t of query head h of one sequence, recomputed:
     p[j] = exp(scale q_t · k_j - lse[t,h])   for first <= j <= t, 0 before first
   p (t+1)   q (T,H*hd)   k (T,KVH*hd)   lse (T,H); query head h reads kv head h / (H/KVH); first the first
   key a sliding layer's window shows (else 0). Scores in double; the row sums to 1 up to the rounding of lse. */
void attn_probs_row(double* p, const real* q, const real* k, const real* lse, size_t t, size_t h, ScoreHeads hs,
                    size_t first);

/* Attention mass of one or more rows (sums until divided by n) */
typedef struct {
    double needle, query, rest; /* Σ p over needle tokens, query tokens (up to the row), everything else */
    double uniform_needle;      /* what uniform attention over keys 0..t would put on the needles */
    size_t n;                   /* rows added */
} Mass;

/* add row t's probabilities p (t+1) */
void attn_mass_add_row(Mass* m, const double* p, size_t t, const ItemSpans* s);
void attn_mass_merge(Mass* into, const Mass* from);
/* the mean per row of each field (into the same struct, n = 1 after) */
Mass attn_mass_mean(const Mass* m);

/* After model_forward of one item (B = 1): for each layer layers[i], i < n_layers,
   rows[i] gets the query rows s->query (all H heads of each) and sep[i] the
   last prompt row (the SEP, whose output predicts the first answer token). */
void attn_mass_item(Mass* rows, Mass* sep, const Model* m, const ItemSpans* s, const size_t* layers, size_t n_layers);

#endif

/* Position statistics, item spans and recomputed attention mass for
   build/analyze (eval/analyze_stats.h, docs/analyze.md). */
#include "eval/analyze_stats.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "model/config.h"

static const char* const SEG_NAMES[SEG_N_KINDS] = {"constant", "monotonic", "hybrid"};

const char* seg_kind_name(SegKind k) { return (unsigned)k < SEG_N_KINDS ? SEG_NAMES[k] : "?"; }

SegKind seg_classify(const real* z, size_t stride, size_t n, const SegParams* p) {
    double lo = z[0], hi = z[0];
    size_t up = 0, down = 0;
    for (size_t i = 1; i < n; i++) {
        double a = z[(i - 1) * stride], b = z[i * stride];
        lo = fmin(lo, b);
        hi = fmax(hi, b);
        up += b > a;
        down += b < a;
    }
    if (hi - lo < p->eps_const) return SEG_CONSTANT;
    /* the steps of the dominant sign against mono_frac of all n - 1 steps; the
       small slack keeps 0.9 * 15 = 13.5 from failing on rounding */
    size_t most = up > down ? up : down;
    if ((double)most >= p->mono_frac * (double)(n - 1) - 1e-9) return SEG_MONOTONIC;
    return SEG_HYBRID;
}

void pos_stats_add(PosStats* s, const real* z, size_t stride, size_t T, const SegParams* p) {
    CHECK(T >= 2 && p->len >= 2, "position statistics need at least 2 tokens (T %zu) and segments of 2 (%zu)", T,
          p->len);
    double lo = z[0], hi = z[0], abs_sum = 0;
    for (size_t t = 1; t < T; t++) {
        double d = (double)z[t * stride] - (double)z[(t - 1) * stride];
        abs_sum += fabs(d);
        lo = fmin(lo, z[t * stride]);
        hi = fmax(hi, z[t * stride]);
    }
    s->range += hi - lo;
    s->mean_abs_step += abs_sum / (double)(T - 1);
    s->mean_step += ((double)z[(T - 1) * stride] - (double)z[0]) / (double)(T - 1); /* the steps telescope */
    s->n_seq++;
    for (size_t b = 0; b + p->len <= T; b += p->len) s->seg[seg_classify(z + b * stride, stride, p->len, p)]++;
}

void pos_stats_merge(PosStats* into, const PosStats* from) {
    into->range += from->range;
    into->mean_abs_step += from->mean_abs_step;
    into->mean_step += from->mean_step;
    into->n_seq += from->n_seq;
    for (int k = 0; k < SEG_N_KINDS; k++) into->seg[k] += from->seg[k];
}

size_t pos_stats_segments(const PosStats* s) {
    return s->seg[SEG_CONSTANT] + s->seg[SEG_MONOTONIC] + s->seg[SEG_HYBRID];
}

double pos_stats_share(const PosStats* s, SegKind k) {
    size_t n = pos_stats_segments(s);
    return n ? (double)s->seg[k] / (double)n : 0;
}

double seg_eps_const_default(size_t len) { return 0.1 * (double)len; }

void pos_stats_add_layer(PosStats* heads, bool heads_merged, const real* z, size_t rows, size_t T, size_t KVH,
                         const SegParams* p) {
    for (size_t b = 0; b < rows; b++)
        for (size_t g = 0; g < KVH; g++) pos_stats_add(&heads[heads_merged ? 0 : g], z + b * T * KVH + g, KVH, T, p);
}

PosSummary pos_stats_summary(const PosStats* s) {
    double n = s->n_seq ? (double)s->n_seq : 1;
    PosSummary r = {s->range / n, s->mean_abs_step / n, s->mean_step / n, pos_stats_segments(s), {0}};
    for (int k = 0; k < SEG_N_KINDS; k++) r.share[k] = pos_stats_share(s, (SegKind)k);
    return r;
}

/* the block that starts with mark at i: NEEDLE key SEP value, or one table row */
static size_t block_len(const SyntheticConfig* syn, SynFamily f) {
    if (f == SYN_TABLE) return 1 + syn->key_len + syn->n_cols * (1 + syn->value_len);
    return 2 + syn->key_len + syn->value_len;
}

void item_spans(ItemSpans* s, const SyntheticConfig* syn, SynFamily f, const int32_t* x, size_t P) {
    memset(s, 0, sizeof(*s));
    SynIds id = synthetic_ids(syn);
    size_t kl = syn->key_len, q0 = 0;
    while (q0 < P && x[q0] != id.query) q0++; /* QUERY appears nowhere else: marks are not symbols */
    CHECK(q0 < P && x[P - 1] == id.sep, "analyze: the prompt (%zu tokens) does not end with a query QUERY .. SEP", P);
    s->query = (Span){q0, P};
    int32_t mark = f == SYN_TABLE ? id.row : id.needle;
    size_t blen = block_len(syn, f);
    for (size_t i = 0; i + 1 + kl <= q0; i++) {
        if (x[i] != mark) continue;
        CHECK(s->n_blocks < SYN_MAX_ITEMS && i + blen <= q0,
              "analyze: block at %zu: more than %d blocks, or one running into the query", i, SYN_MAX_ITEMS);
        s->block[s->n_blocks++] = (Span){i, i + blen};
        for (size_t qi = q0; qi + 1 + kl <= P; qi++) { /* each QUERY key of the query */
            if (x[qi] != id.query || memcmp(x + i + 1, x + qi + 1, kl * sizeof(int32_t)) != 0) continue;
            s->needle[s->n_needles++] = (Span){i, i + blen};
            break;
        }
    }
    CHECK(s->n_needles > 0, "analyze: no needle in the prompt carries the key the query asks");
}

ScoreHeads attn_score_heads(const ModelConfig* c) {
    return (ScoreHeads){.H = c->H, .KVH = c->KVH, .hd = cfg_hd(c), .scale = cfg_attn_scale(c)};
}

void attn_probs_row(double* p, const real* q, const real* k, const real* lse, size_t t, size_t h, ScoreHeads hs,
                    size_t first) {
    size_t H = hs.H, KVH = hs.KVH, hd = hs.hd;
    double scale = hs.scale;
    size_t g = h / (H / KVH);
    const real* q_t = q + t * H * hd + h * hd;
    double l = lse[t * H + h];
    for (size_t j = 0; j < first && j <= t; j++) p[j] = 0; /* outside a sliding window */
    for (size_t j = first; j <= t; j++) {
        const real* k_j = k + j * KVH * hd + g * hd;
        double s = 0;
        for (size_t d = 0; d < hd; d++) s += (double)q_t[d] * (double)k_j[d];
        p[j] = exp(s * scale - l);
    }
}

static bool in_span(size_t j, Span s) { return j >= s.begin && j < s.end; }

void attn_mass_add_row(Mass* m, const double* p, size_t t, const ItemSpans* s) {
    double needle = 0, query = 0, rest = 0;
    size_t n_needle = 0; /* needle tokens among the keys 0..t */
    for (size_t j = 0; j <= t; j++) {
        bool is_needle = false;
        for (size_t b = 0; b < s->n_needles; b++) is_needle |= in_span(j, s->needle[b]);
        if (is_needle) {
            needle += p[j];
            n_needle++;
        } else if (in_span(j, s->query)) {
            query += p[j];
        } else {
            rest += p[j];
        }
    }
    m->needle += needle;
    m->query += query;
    m->rest += rest;
    m->uniform_needle += (double)n_needle / (double)(t + 1);
    m->n++;
}

void attn_mass_merge(Mass* into, const Mass* from) {
    into->needle += from->needle;
    into->query += from->query;
    into->rest += from->rest;
    into->uniform_needle += from->uniform_needle;
    into->n += from->n;
}

Mass attn_mass_mean(const Mass* m) {
    double n = m->n ? (double)m->n : 1;
    return (Mass){m->needle / n, m->query / n, m->rest / n, m->uniform_needle / n, 1};
}

void attn_mass_item(Mass* rows, Mass* sep, const Model* m, const ItemSpans* s, const size_t* layers, size_t n_layers) {
    const ModelConfig* c = &m->cfg;
    size_t last = s->query.end - 1;
    ScoreHeads hs = attn_score_heads(c);
    CHECK(m->B == 1 && s->query.end <= m->T, "attention mass: one sequence of at least %zu tokens (B %zu, T %zu)",
          s->query.end, m->B, m->T);
    double* p = mallocCheck(m->T * sizeof(double));
    for (size_t i = 0; i < n_layers; i++) {
        const LayerActs* a = &m->la[layers[i]];
        size_t window = cfg_sliding(c, layers[i]) ? c->sliding_window : 0;
        memset(&rows[i], 0, sizeof(Mass));
        memset(&sep[i], 0, sizeof(Mass));
        for (size_t h = 0; h < c->H; h++) {
            for (size_t t = s->query.begin; t < s->query.end; t++) {
                size_t first = window_first(t, window);
                attn_probs_row(p, a->q, a->k, a->lse, t, h, hs, first);
                attn_mass_add_row(&rows[i], p, t, s);
                if (t == last) attn_mass_add_row(&sep[i], p, t, s);
            }
        }
    }
    free(p);
}

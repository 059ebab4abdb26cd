/* build/analyze's measurements (eval/analyze_stats.h), float build:
   1. the segment classes on hand-made sequences: constant, monotonic up and
      down (with one step against the trend), hybrid (zigzag, and two steps
      against the trend at mono_frac 0.9), and the boundaries (range = eps is
      not constant; a step of 0 counts for neither sign);
   2. pos_stats_add on z = t and on a constant head interleaved with it
      (stride), with a tail shorter than a segment left out;
   3. attn_probs_row against a naive causal softmax(q k^T / sqrt(hd)) in
      double, with lse from attention_forward, GQA and partial query blocks;
   4. the mass of one hand-made row on needle / query / rest;
   5. item_spans on 50 items of every family: the needles start with NEEDLE
      (ROW) and carry a queried key, the query starts with QUERY and ends the
      prompt, and for single the needle is where synthetic_item put it;
   6. on the OLMo-2 fixture checkpoint: every recomputed row of every layer
      sums to 1 (|sum - 1| <= 1e-5) and the masses of an item add up to 1.
   Prints OK / NOT OK per check, exits non-zero on a failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/rng.h"
#include "common/threads.h"
#include "hf/hf_checkpoint.h"
#include "hf/hf_config.h"
#include "model/attention.h"
#include "eval/analyze_stats.h"
#include "eval/eval_tasks.h"
#include "tests/testutil.h"

#ifdef REPOC_F64
#error "test_analyze runs in the float build"
#endif

static const SegParams SEG = {16, 1.6, 0.9};

static SegKind classify(const double* v, size_t n) {
    real z[64];
    for (size_t i = 0; i < n; i++) z[i] = (real)v[i];
    return seg_classify(z, 1, n, &SEG);
}

static void check_segments(void) {
    printf("segment classes (len 16, eps_const 1.6, mono_frac 0.9)\n");
    double v[16];
    for (int i = 0; i < 16; i++) v[i] = 3.0 + 0.05 * sin(i); /* range 0.1 */
    EXPECT(classify(v, 16) == SEG_CONSTANT, "3 + 0.05 sin(t): constant");
    for (int i = 0; i < 16; i++) v[i] = 0.1 * i; /* range 1.5 < 1.6, monotonic steps */
    EXPECT(classify(v, 16) == SEG_CONSTANT, "0.1 t (range 1.5): constant before monotonic");
    for (int i = 0; i < 16; i++) v[i] = 1.6 / 15 * i; /* range 1.6: not below eps */
    EXPECT(classify(v, 16) == SEG_MONOTONIC, "range exactly eps_const: not constant (monotonic)");
    for (int i = 0; i < 16; i++) v[i] = i;
    EXPECT(classify(v, 16) == SEG_MONOTONIC, "t: monotonic");
    for (int i = 0; i < 16; i++) v[i] = -2.0 * i + (i == 7 ? 3.0 : 0); /* 14 of 15 steps down */
    EXPECT(classify(v, 16) == SEG_MONOTONIC, "-2t with one step up (14/15 >= 0.9): monotonic");
    for (int i = 0; i < 16; i++) v[i] = -2.0 * i + (i == 7 || i == 11 ? 3.0 : 0); /* 2 steps up: 13/15 */
    EXPECT(classify(v, 16) == SEG_HYBRID, "-2t with two steps up (13/15 < 0.9): hybrid");
    for (int i = 0; i < 16; i++) v[i] = i % 2 ? 5 : 0;
    EXPECT(classify(v, 16) == SEG_HYBRID, "zigzag 0,5,0,5: hybrid");
    for (int i = 0; i < 16; i++) v[i] = i < 8 ? 0 : 10; /* one jump: 1 step up, 14 of 0 */
    EXPECT(classify(v, 16) == SEG_HYBRID, "a step function (constant spans, one jump): hybrid");
    for (int i = 0; i < 16; i++) v[i] = i == 0 ? 0 : i - 1; /* one step of 0, 14 up: 14/15 */
    EXPECT(classify(v, 16) == SEG_MONOTONIC, "t with one repeated value: monotonic (0 counts for neither)");
}

static void check_pos_stats(void) {
    printf("pos_stats_add\n");
    size_t T = 40;
    real z[80];
    for (size_t t = 0; t < T; t++) { /* head 0: t; head 1: constant */
        z[2 * t] = (real)t;
        z[2 * t + 1] = 7;
    }
    PosStats a = {0}, b = {0};
    pos_stats_add(&a, z, 2, T, &SEG);
    pos_stats_add(&b, z + 1, 2, T, &SEG);
    EXPECT(a.n_seq == 1 && a.range == 39 && a.mean_abs_step == 1 && a.mean_step == 1 && a.seg[SEG_MONOTONIC] == 2 &&
               pos_stats_segments(&a) == 2,
           "z = t, T 40: range %g, mean|step| %g, mean step %g, %zu segments (2 full), %zu monotonic", a.range,
           a.mean_abs_step, a.mean_step, pos_stats_segments(&a), a.seg[SEG_MONOTONIC]);
    EXPECT(b.range == 0 && b.mean_abs_step == 0 && b.seg[SEG_CONSTANT] == 2, "z = 7 (stride 2): range %g, %zu constant",
           b.range, b.seg[SEG_CONSTANT]);
    pos_stats_merge(&a, &b);
    EXPECT(a.n_seq == 2 && pos_stats_share(&a, SEG_CONSTANT) == 0.5 && pos_stats_share(&a, SEG_HYBRID) == 0,
           "merged: 2 sequences, constant share %.2f", pos_stats_share(&a, SEG_CONSTANT));
}

/* naive causal softmax(q k^T / sqrt(hd)) row t, head h, in double */
static void naive_row(double* p, const float* q, const float* k, size_t t, size_t h, size_t H, size_t KVH, size_t hd) {
    size_t g = h / (H / KVH);
    double mx = -INFINITY, sum = 0;
    for (size_t j = 0; j <= t; j++) {
        double s = 0;
        for (size_t d = 0; d < hd; d++) s += (double)q[t * H * hd + h * hd + d] * k[j * KVH * hd + g * hd + d];
        p[j] = s / sqrt((double)hd);
        mx = fmax(mx, p[j]);
    }
    for (size_t j = 0; j <= t; j++) sum += p[j] = exp(p[j] - mx);
    for (size_t j = 0; j <= t; j++) p[j] /= sum;
}

static void check_probs(void) {
    printf("recomputed attention probabilities against a naive softmax\n");
    size_t T = 37, H = 4, KVH = 2, hd = 8; /* 37 rows: a full and a partial query block of 32 */
    float *q = malloc(T * H * hd * sizeof(float)), *k = malloc(T * KVH * hd * sizeof(float));
    float *v = malloc(T * KVH * hd * sizeof(float)), *out = malloc(T * H * hd * sizeof(float));
    float* lse = malloc(T * H * sizeof(float));
    Rng rng;
    rng_seed(&rng, 42);
    for (size_t i = 0; i < T * H * hd; i++) q[i] = (float)(2 * rng_normal(&rng)); /* peaked rows */
    for (size_t i = 0; i < T * KVH * hd; i++) {
        k[i] = (float)rng_normal(&rng);
        v[i] = (float)rng_normal(&rng);
    }
    attention_forward(out, lse, q, k, v, NULL, 1, T, H, KVH, hd, (real)(1 / sqrt((double)hd)));
    float got[4 * 37 * 37], ref[4 * 37 * 37];
    double p[37], r[37], worst_sum = 0;
    size_t n = 0;
    for (size_t h = 0; h < H; h++)
        for (size_t t = 0; t < T; t++) {
            attn_probs_row(p, q, k, lse, t, h, H, KVH, hd, 1 / sqrt((double)hd), 0);
            naive_row(r, q, k, t, h, H, KVH, hd);
            double sum = 0;
            for (size_t j = 0; j <= t; j++) {
                got[n] = (float)p[j];
                ref[n++] = (float)r[j];
                sum += p[j];
            }
            worst_sum = fmax(worst_sum, fabs(sum - 1));
        }
    /* lse is a float computed in float: a few ulps of |lse| shift every p of its row by that relative amount */
    double max_lse = 0;
    for (size_t i = 0; i < T * H; i++) max_lse = fmax(max_lse, fabs(lse[i]));
    char why[96];
    snprintf(why, sizeof(why), "8 float ulps of max|lse| = %.2f", max_lse);
    expect_close("p = exp(q.k/sqrt(hd) - lse), H 4, KVH 2, T 37", got, ref, n, 8 * ldexp(fmax(max_lse, 1), -24), 0,
                 why);
    EXPECT(worst_sum <= 1e-5, "every row sums to 1: worst |sum - 1| %.2e", worst_sum);
    free(q);
    free(k);
    free(v);
    free(out);
    free(lse);
}

static void check_mass_row(void) {
    printf("mass of one row\n");
    ItemSpans s = {.query = {6, 8}, .needle = {{2, 4}}, .n_needles = 1};
    double p[8] = {0.05, 0.05, 0.3, 0.2, 0.1, 0.1, 0.1, 0.1};
    Mass m = {0};
    attn_mass_add_row(&m, p, 7, &s);
    attn_mass_add_row(&m, p, 5, &s); /* row 5: keys 0..5, no query token yet */
    Mass a = attn_mass_mean(&m);
    EXPECT(m.n == 2 && fabs(m.needle - 1.0) < 1e-12 && fabs(m.query - 0.2) < 1e-12 && fabs(m.rest - 0.6) < 1e-12 &&
               fabs(a.uniform_needle - (2.0 / 8 + 2.0 / 6) / 2) < 1e-12,
           "rows 7 and 5: needle %.3f, query %.3f, rest %.3f (sums), uniform needle %.4f (mean)", m.needle, m.query,
           m.rest, a.uniform_needle);
}

static void check_spans(void) {
    printf("item_spans on 50 items per family, length 200\n");
    SyntheticConfig syn;
    synthetic_defaults(&syn);
    SynIds id = synthetic_ids(&syn);
    int32_t x[256], answer[SYN_MAX_ANSWER];
    size_t expect_n[SYN_N_FAMILIES] = {1, 1, syn.n_values, syn.n_queries, 1, 1};
    for (int f = 0; f < SYN_N_FAMILIES; f++) {
        size_t P = eval_prompt_len(&syn, (SynFamily)f, 200), bad = 0;
        for (size_t i = 0; i < 50; i++) {
            size_t at = synthetic_item(&syn, (SynFamily)f, 7, i, P, -1.0, x, answer);
            ItemSpans s;
            item_spans(&s, &syn, (SynFamily)f, x, P);
            bad += s.n_needles != expect_n[f] || x[s.query.begin] != id.query || s.query.end != P;
            bad += f == SYN_SINGLE && s.needle[0].begin != at;
            for (size_t b = 0; b < s.n_needles; b++) {
                bad += x[s.needle[b].begin] != (f == SYN_TABLE ? id.row : id.needle) || s.needle[b].end > s.query.begin;
                if (f != SYN_TABLE) bad += x[s.needle[b].begin + 1 + syn.key_len] != id.sep;
            }
        }
        EXPECT(bad == 0, "%-10s %zu needle span(s) per item, query span ends the prompt (%zu bad)",
               synthetic_family_name((SynFamily)f), expect_n[f], bad);
    }
}

static void check_model_rows(void) {
    printf("fixture checkpoint tests/fixtures/olmo2_mix/ckpt (rope, rope, repo, nope): rows sum to 1\n");
    ModelConfig cfg;
    hf_config_read("tests/fixtures/olmo2_mix/ckpt", &cfg);
    size_t T = 96;
    Model m;
    model_build(&m, &cfg, 1, T, (const char*[]){"*"}, 1, false);
    hf_load_weights(&m, "tests/fixtures/olmo2_mix/ckpt", 0, false);
    SyntheticConfig syn;
    synthetic_defaults(&syn);
    size_t P = eval_prompt_len(&syn, SYN_DISTRACTOR, T), layers[4] = {0, 1, 2, 3};
    int32_t x[96], answer[SYN_MAX_ANSWER];
    double worst_row = 0, worst_item = 0, p[96];
    for (size_t i = 0; i < 3; i++) {
        synthetic_item(&syn, SYN_DISTRACTOR, 1, i, P, -1.0, x, answer);
        memcpy(x + P, answer, (T - P) * sizeof(int32_t));
        model_forward(&m, &(Batch){.B = 1, .T = T, .tokens = x});
        ItemSpans s;
        item_spans(&s, &syn, SYN_DISTRACTOR, x, P);
        for (size_t l = 0; l < 4; l++)
            for (size_t h = 0; h < cfg.H; h++)
                for (size_t t = 0; t < T; t++) { /* every row, not only the query's */
                    attn_probs_row(p, m.la[l].q, m.la[l].k, m.la[l].lse, t, h, cfg.H, cfg.KVH, cfg_hd(&cfg),
                                   cfg_attn_scale(&cfg), 0);
                    double sum = 0;
                    for (size_t j = 0; j <= t; j++) sum += p[j];
                    worst_row = fmax(worst_row, fabs(sum - 1));
                }
        Mass rows[4], sep[4], all = {0};
        attn_mass_item(rows, sep, &m, &s, layers, 4);
        for (size_t l = 0; l < 4; l++) attn_mass_merge(&all, &rows[l]);
        Mass a = attn_mass_mean(&all);
        worst_item = fmax(worst_item, fabs(a.needle + a.query + a.rest - 1));
    }
    EXPECT(worst_row <= 1e-5, "4 layers x 4 heads x 96 rows x 3 items: worst |row sum - 1| %.2e", worst_row);
    EXPECT(worst_item <= 1e-5, "needle + query + rest of each item: worst |sum - 1| %.2e", worst_item);
    model_free(&m);
}

/* Gemma-3's sliding layers and query_pre_attn_scalar: the rows recomputed with the model's scale over each
   sliding layer's window sum to 1 against the kernel's lse (another scale or window would not) */
static void check_gemma_rows(void) {
    printf("fixture checkpoint tests/fixtures/gemma3_sw/ckpt (window 5, scalar 10): rows sum to 1\n");
    ModelConfig cfg;
    hf_config_read("tests/fixtures/gemma3_sw/ckpt", &cfg);
    size_t T = 16;
    Model m;
    model_build(&m, &cfg, 1, T, (const char*[]){"*"}, 1, false);
    hf_load_weights(&m, "tests/fixtures/gemma3_sw/ckpt", 0, false);
    int32_t x[16];
    for (size_t t = 0; t < T; t++) x[t] = (int32_t)((7 * t + 3) % cfg.V);
    model_forward(&m, &(Batch){.B = 1, .T = T, .tokens = x});
    double worst = 0, p[16];
    for (size_t l = 0; l < cfg.L; l++)
        for (size_t h = 0; h < cfg.H; h++)
            for (size_t t = 0; t < T; t++) {
                size_t first = window_first(t, cfg_sliding(&cfg, l) ? cfg.sliding_window : 0);
                attn_probs_row(p, m.la[l].q, m.la[l].k, m.la[l].lse, t, h, cfg.H, cfg.KVH, cfg_hd(&cfg),
                               cfg_attn_scale(&cfg), first);
                double sum = 0;
                for (size_t j = 0; j <= t; j++) sum += p[j];
                worst = fmax(worst, fabs(sum - 1));
            }
    EXPECT(worst <= 1e-5, "4 layers x 4 heads x 16 rows: worst |row sum - 1| %.2e", worst);
    model_free(&m);
}

int main(void) {
    threads_init(1);
    check_segments();
    check_pos_stats();
    check_probs();
    check_mass_row();
    check_spans();
    check_model_rows();
    check_gemma_rows();
    printf("test_analyze: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}

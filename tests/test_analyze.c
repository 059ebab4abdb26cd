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
      sums to 1 (|sum - 1| <= 1e-5) and the masses of an item add up to 1;
   7. the analyses of z (eval/analyze_z.h) on hand-made sequences whose
      answers are known exactly: the range and 5-95% span of 0..99 with and
      without an outlier, the boundary gaps of a hand-made item, the share of
      the large |dz| on them (and the top-k count and its tie rule), the
      needle and filler distances to the query;
   8. a positions figure with axes at Tukey's fences marks exactly the outliers.
   Prints OK / NOT OK per check, exits non-zero on a failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/rng.h"
#include "common/threads.h"
#include "hf/hf_checkpoint.h"
#include "hf/hf_config.h"
#include "model/attention.h"
#include "common/fileio.h"
#include "eval/analyze_stats.h"
#include "eval/analyze_svg.h"
#include "eval/analyze_z.h"
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
    attention_forward(out, lse, q, k, v,
                      &(AttnShape){1, T, H, KVH, hd, (real)(1 / sqrt((double)hd)), NULL, false, false, NULL});
    float got[4 * 37 * 37], ref[4 * 37 * 37];
    double p[37], r[37], worst_sum = 0;
    size_t n = 0;
    for (size_t h = 0; h < H; h++)
        for (size_t t = 0; t < T; t++) {
            attn_probs_row(p, q, k, lse, t, h, (ScoreHeads){H, KVH, hd, 1 / sqrt((double)hd)}, 0);
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
    size_t expect_blocks[SYN_N_FAMILIES] = {
        1, syn.n_needles, syn.n_values, syn.n_needles, syn.n_distractors + 1, syn.table_rows};
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
        size_t blocks = 0; /* every block: needles, distractors, table rows */
        for (size_t i = 0; i < 20; i++) {
            synthetic_item(&syn, (SynFamily)f, 7, i, P, -1.0, x, answer);
            ItemSpans s;
            item_spans(&s, &syn, (SynFamily)f, x, P);
            blocks += s.n_blocks != expect_blocks[f];
            for (size_t b = 0; b + 1 < s.n_blocks; b++) blocks += s.block[b].end > s.block[b + 1].begin;
        }
        EXPECT(blocks == 0, "%-10s %zu blocks per item, in order, not overlapping (%zu bad)",
               synthetic_family_name((SynFamily)f), expect_blocks[f], blocks);
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
                    attn_probs_row(p, m.la[l].q, m.la[l].k, m.la[l].lse, t, h, attn_score_heads(&cfg), 0);
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
                attn_probs_row(p, m.la[l].q, m.la[l].k, m.la[l].lse, t, h, attn_score_heads(&cfg), first);
                double sum = 0;
                for (size_t j = 0; j <= t; j++) sum += p[j];
                worst = fmax(worst, fabs(sum - 1));
            }
    EXPECT(worst <= 1e-5, "4 layers x 4 heads x 16 rows: worst |row sum - 1| %.2e", worst);
    model_free(&m);
}

static void check_z_range(void) {
    printf("z range: max - min and the 5-95%% span\n");
    real z[100];
    double work[100];
    for (int t = 0; t < 100; t++) z[t] = (real)t;
    ZRange a = z_range(z, 1, 100, work);
    z[50] = 1e6; /* one outlier moves max - min, and the span by one rank: 5.05 .. 95.05 -> 4.95 .. 95.05 */
    ZRange b = z_range(z, 1, 100, work);
    EXPECT(a.range == 99 && fabs(a.span - 89.1) < 1e-9, "0..99: range %g (99), span %g (94.05 - 4.95 = 89.1)", a.range,
           a.span);
    EXPECT(b.range == 1e6 && fabs(b.span - 90.1) < 1e-9, "0..99 with z[50] = 1e6: range %g, span %g (95.05 - 4.95)",
           b.range, b.span);
}

static void check_boundaries(void) {
    printf("boundary alignment on hand-made items\n");
    /* blocks [3, 9) and [12, 18), query [30, 34), answer from 34, T 36, x[20] the eos: tokens 3, 9, 12, 18, 30,
       34 and 21 begin a segment, so gaps 2, 8, 11, 17, 29, 33 and 20 are boundary gaps */
    ItemSpans s = {.query = {30, 34}, .needle = {{3, 9}}, .n_needles = 1, .block = {{3, 9}, {12, 18}}, .n_blocks = 2};
    int32_t x[36] = {0};
    x[20] = 7;
    uint8_t isb[35];
    size_t nb = item_boundary_gaps(isb, &s, x, 34, 36, 7);
    EXPECT(nb == 7 && isb[2] && isb[8] && isb[11] && isb[17] && isb[20] && isb[29] && isb[33] && !isb[3] && !isb[21],
           "7 boundary gaps: 2, 8, 11, 17, 20 (eos), 29 (query), 33 (answer); got %zu", nb);
    EXPECT(item_boundary_gaps(isb, &s, x, 34, 36, -1) == 6 && !isb[20], "without an eos: 6");

    /* T 21: 20 gaps, top 0.1 = 2 large ones: jumps of 5 at gaps 4 and 9, 0.1 elsewhere; boundaries at 4 and 15 */
    real z[21];
    uint8_t b20[20] = {0};
    b20[4] = b20[15] = 1;
    z[0] = 0;
    for (int t = 1; t < 21; t++) z[t] = z[t - 1] + (t - 1 == 4 || t - 1 == 9 ? 5.0f : 0.1f) * (t % 2 ? 1 : -1);
    BoundaryCount c = boundary_count(z, 1, 21, b20, 0.1);
    EXPECT(c.large == 2 && c.large_on == 1 && boundary_share(&c) == 0.5 && boundary_chance(&c) == 0.1 &&
               boundary_best(&c) == 1,
           "jumps at gaps 4 and 9, boundaries at 4 and 15: share %g (1/2), chance %g (2/20), at most %g (2/2)",
           boundary_share(&c), boundary_chance(&c), boundary_best(&c));
    for (int t = 0; t < 21; t++) z[t] = (real)t; /* every |step| 1: the tie goes to the earliest gaps, 0 and 1 */
    b20[1] = 1;
    c = boundary_count(z, 1, 21, b20, 0.1);
    EXPECT(c.large == 2 && c.large_on == 1, "equal steps: the earliest gaps are the large ones (%zu of 2 on)",
           c.large_on);
    real z91[91];
    uint8_t b90[90] = {0};
    for (int t = 0; t < 91; t++) z91[t] = (real)(t * t);
    b90[3] = 1;
    c = boundary_count(z91, 1, 91, b90, 0.1);
    EXPECT(c.large == 9 && boundary_best(&c) == 1.0 / 9,
           "top 0.1 of 90 gaps: %zu (9, not 10 from rounding); 1 boundary gap: at most %g (1/9)", c.large,
           boundary_best(&c));
}

static void check_query_distance(void) {
    printf("needle and filler distance to the query\n");
    /* needle [2, 4), another block [6, 7), query [8, 10); filler 0, 1, 4, 5, 7 */
    ItemSpans s = {.query = {8, 10}, .needle = {{2, 4}}, .n_needles = 1, .block = {{2, 4}, {6, 7}}, .n_blocks = 2};
    real z[10] = {0, 1, 9, 11, 2, 3, 100, 0, 10, 10};
    ZDist d = z_query_distance(z, 1, &s);
    /* needle: |9 - 10|, |11 - 10| -> 1; filler: |0-10|, |1-10|, |2-10|, |3-10|, |0-10| -> 44 / 5 = 8.8 */
    EXPECT(d.needle == 1 && d.filler == 8.8, "needle %g (1), filler %g (8.8; the other block is not filler)", d.needle,
           d.filler);
}

/* svg_positions of z (200) with the given fence into path; the outlier marks it drew */
static size_t outlier_marks(const char* path, const real* z, double fence) {
    size_t layer = 1, head = 0;
    const real* zs[1] = {z};
    PosPlot pp = {.title = "t",
                  .T = 200,
                  .KVH = 1,
                  .n_panels = 1,
                  .layer = &layer,
                  .z = zs,
                  .heads = &head,
                  .n_heads = 1,
                  .fence = fence};
    svg_positions(path, &pp);
    char* svg = file_read_all(path, NULL);
    size_t marks = 0;
    for (const char* p = svg; (p = strstr(p, "class=\"outlier\"")); p++) marks++;
    free(svg);
    return marks;
}

static void check_clipped_figure(void) {
    printf("positions figure with axes at Tukey's fences Q1 - 3 IQR, Q3 + 3 IQR\n");
    real z[200];
    for (size_t t = 0; t < 200; t++) z[t] = (real)sin((double)t / 10);
    z[50] = 1000; /* one above, one below: sin's IQR is about 1.4, its fences about +-4.9 */
    z[120] = -1000;
    char path[] = "/tmp/repoc_test_analyze_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    close(fd);
    size_t fenced = outlier_marks(path, z, 3), full = outlier_marks(path, z, 0);
    EXPECT(fenced == 2 && full == 0, "sin with two spikes: %zu marked on the edge (2), %zu on the full range (0)",
           fenced, full);
    for (size_t t = 0; t < 200; t++) z[t] = (real)t; /* wide, no outlier: the fences lie beyond the extremes */
    size_t wide = outlier_marks(path, z, 3);
    EXPECT(wide == 0, "z = t: %zu marked (0)", wide);
    unlink(path);
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
    check_z_range();
    check_boundaries();
    check_query_distance();
    check_clipped_figure();
    printf("test_analyze: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}

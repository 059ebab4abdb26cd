/* KV-cache generation against the full-sequence forward, float build.
   Two random models: OLMo-2 with layers [rope, repo, nope, repo] (QK-norm, MHA)
   and Llama with GQA (H=4, KVH=2), YaRN (factor 4, L0 16) and [repo, rope, nope].
   RePo weights are drawn N(0, 0.3²) so that z spreads over several units and a
   wrong position would show. For each model:
   1. a sequence fed token by token through the cache gives at every step the
      logits of model_forward on the full prefix (row t of m->logits), with the
      small chunks on one thread (the default) and on all threads;
   2. the cache holds the rotated keys, the values and the RePo positions that
      model_forward computed (la[l].k, la[l].v, la[l].z);
   3. prefill in chunks of 7 (the first through attention_forward, the others
      through the cache attention) ends at the same logits and cache;
   4. greedy generation picks the argmax of the full-recompute logits at each step;
   5. sampling: top_k = 1 is greedy, a seed repeats its tokens, top-k keeps to the
      k largest, frequencies follow softmax(logits / temperature);
   6. a token past the cache's end stops with a message.
   Tolerance for 1-4: |cache - full| <= 1e-5 · max|full| (+1e-6 absolute for z, k, v):
   the two paths run the same ops in another order (attention tiling, BLAS shapes);
   a RePo layer's keys add z's tolerance (compare_all_caches says why). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/rng.h"
#include "common/threads.h"
#include "model/generate.h"
#include "model/model.h"
#include "tests/testutil.h"

#ifdef REPOC_F64
#error "test_generate runs in the float build"
#endif

#define REL_TOL 1e-5

/* matrices N(0, 0.1²), norms 1, then every RePo tensor N(0, 0.3²) */
static void random_weights(Model* m, uint64_t seed) {
    model_init_weights(m, &(ModelInit){.seed = seed, .std = 0.1});
    Rng rng;
    rng_seed(&rng, seed + 99);
    for (size_t i = 0; i < m->tensors.n; i++) {
        const TensorInfo* t = &m->tensors.t[i];
        if (!t->is_repo) continue;
        for (size_t j = 0; j < t->numel; j++) m->params[t->offset + j] = (real)(0.3 * rng_normal(&rng));
    }
}

static void random_tokens(int32_t* tok, size_t n, size_t V, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) tok[i] = (int32_t)rng_below(&rng, V);
}

/* rows 0..T-1 of layer l's cache (row width w) against the model's activations */
static void compare_cache(const char* what, const real* cache, const real* ref, size_t T, size_t w, size_t l,
                          const char* name, double rtol, const char* why) {
    char label[128];
    snprintf(label, sizeof(label), "%s: layer %zu %s cache == model_forward's", name, l, what);
    expect_close(label, cache, ref, T * w, 1e-6, rtol, why);
}

/* A repo layer's key is turned by its z: an error dz (within z's tolerance,
   1e-6 + 1e-5 max|z|) turns pair i by dz inv_freq[i] <= dz (inv_freq[0] = 1),
   so its key tolerance is 1e-5 + that dz, relative to max|k|. */
static void compare_all_caches(const Generator* g, const Model* m, size_t T, const char* name) {
    const ModelConfig* c = &m->cfg;
    size_t kvd = c->KVH * cfg_hd(c);
    for (size_t l = 0; l < c->L; l++) {
        double ktol = REL_TOL;
        if (c->pos[l] == POS_REPO) {
            compare_cache("RePo z", g->z[l], m->la[l].z, T, c->KVH, l, name, REL_TOL, "same ops, another order");
            double zmax = 0;
            for (size_t i = 0; i < T * c->KVH; i++) zmax = fmax(zmax, fabs((double)m->la[l].z[i]));
            ktol += 1e-6 + REL_TOL * zmax;
        }
        /* the positions the layer holds, T - rows .. T - 1 of a sliding layer's ring (all T otherwise), in the
           model's order */
        size_t rows = g->rows[l], first = T > rows ? T - rows : 0;
        real* k = mallocCheck(2 * (T - first) * kvd * sizeof(real));
        real* v = k + (T - first) * kvd;
        for (size_t j = first; j < T; j++) {
            memcpy(k + (j - first) * kvd, g->k[l] + (j % rows) * kvd, kvd * sizeof(real));
            memcpy(v + (j - first) * kvd, g->v[l] + (j % rows) * kvd, kvd * sizeof(real));
        }
        if (cfg_sliding(c, l))
            EXPECT(rows == c->sliding_window + g->max_chunk - 1 || rows == g->max_T,
                   "%s: layer %zu (sliding) keeps %zu rows: window %zu + chunk %zu - 1, not the context %zu", name, l,
                   rows, c->sliding_window, g->max_chunk, g->max_T);
        compare_cache("rotated-key", k, m->la[l].k + first * kvd, T - first, kvd, l, name, ktol,
                      c->pos[l] == POS_REPO ? "1e-5 + z's tolerance" : "same ops, another order");
        compare_cache("value", v, m->la[l].v + first * kvd, T - first, kvd, l, name, REL_TOL,
                      "same ops, another order");
        free(k);
    }
}

static void print_z_spread(const Model* m, size_t T) {
    for (size_t l = 0; l < m->cfg.L; l++) {
        if (m->cfg.pos[l] != POS_REPO) continue;
        size_t n = T * m->cfg.KVH;
        double lo = 1e30, hi = -1e30, s = 0, s2 = 0;
        for (size_t i = 0; i < n; i++) {
            double z = m->la[l].z[i];
            lo = fmin(lo, z);
            hi = fmax(hi, z);
            s += z;
            s2 += z * z;
        }
        double mean = s / n;
        printf("  layer %zu RePo z: %.2f .. %.2f (std %.2f)\n", l, lo, hi, sqrt(fmax(s2 / n - mean * mean, 0)));
    }
}

static double max_abs(const real* a, size_t n) {
    double mx = 0;
    for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs((double)a[i]));
    return mx;
}

/* the cache and the full forward on the same sequence: steps, caches, chunked prefill */
static void check_steps_and_prefill(Model* m, int32_t* tokens, size_t T, const char* model_name, bool threaded) {
    size_t V = m->cfg.V;
    model_forward(m, &(Batch){.B = 1, .T = T, .tokens = tokens});
    if (!threaded) print_z_spread(m, T);
    Generator g;
    gen_build(&g, m, T, 7);
    char name[64]; /* small chunks run on one thread unless serial_below is 0 */
    snprintf(name, sizeof(name), "%s%s", model_name, threaded ? " (threaded)" : "");
    if (threaded) g.serial_below = 0;
    real* steps = mallocCheck(T * V * sizeof(real));
    for (size_t t = 0; t < T; t++) memcpy(steps + t * V, gen_step(&g, tokens[t]), V * sizeof(real));
    double ref_max = max_abs(m->logits, T * V), err = 0;
    for (size_t i = 0; i < T * V; i++) err = fmax(err, fabs((double)steps[i] - m->logits[i]));
    printf("  %s: token-by-token logits vs full recompute: max abs error %.3e, max|logit| %.3e, relative %.3e\n", name,
           err, ref_max, err / ref_max);
    char label[128];
    snprintf(label, sizeof(label), "%s: step logits (%zu steps) == model_forward rows", name, T);
    expect_close(label, steps, m->logits, T * V, 0, REL_TOL, "1e-5 of max|logit|");
    compare_all_caches(&g, m, T, name);

    /* a cache that starts at 3 tokens and doubles on demand (6, 12, 24, T): the same logits, bit for bit */
    Generator grown;
    gen_build(&grown, m, 3, 3);
    gen_allow_growth(&grown, T);
    if (threaded) grown.serial_below = 0;
    bool same = true;
    for (size_t t = 0; t < T; t++) same &= !memcmp(gen_step(&grown, tokens[t]), steps + t * V, V * sizeof(real));
    EXPECT(same && grown.max_T == T, "%s: a cache grown from 3 to %zu tokens by doubling: step logits bit-identical",
           name, grown.max_T);
    gen_free(&grown);

    /* chunked prefill: chunks 0..6 (attention_forward), 7..13, ... (cache attention) */
    gen_reset(&g);
    const real* last = gen_prefill(&g, tokens, T);
    snprintf(label, sizeof(label), "%s: prefill in chunks of 7: last logits == row %zu", name, T - 1);
    expect_close(label, last, m->logits + (T - 1) * V, V, 0, REL_TOL, "1e-5 of max|logit|");
    compare_all_caches(&g, m, T, name);
    EXPECT(g.len == T, "%s: cache length %zu after prefill of %zu", name, g.len, T);
    gen_free(&g);
    free(steps);
}

/* the logits of every row of seq (n tokens) run as one plain chunk from an empty cache: (n,V) into out */
static void plain_logits(real* out, const Model* m, const int32_t* seq, size_t n) {
    Generator g;
    gen_build(&g, m, n, n);
    gen_forward(&g, seq, n);
    real* normed = mallocCheck(n * m->cfg.D * sizeof(real));
    real rstd[64];
    gen_rows_logits(&g, out, normed, rstd, g.x, n);
    free(normed);
    gen_free(&g);
}

/* A tree chunk (gen_forward_tree) after a cached prefix of 10 tokens: branches a (6 tokens) and b (4) after
   the cache; a new sequence c (5 tokens) in the chunk, with branches d (3) and e (2) after it. Every row's
   logits equal those of its own sequence run plainly (checked against model_forward above); the cache's
   length is unchanged. Rows a and c exceed Gemma-3's window of 5, and the chunk of 32 keeps its sliding layers
   in a ring of 36 rows (< 40). */
static void check_tree(const Model* m, const int32_t* tokens, const char* name) {
    size_t V = m->cfg.V;
    enum { PRE = 10, NA = 6, NB = 4, NCX = 5, ND = 3, NE = 2, N = NA + NB + NCX + ND + NE };
    const int32_t *a = tokens + 10, *b = tokens + 20, *cx = tokens + 30, *d = tokens + 5, *e = tokens + 12;
    int32_t chunk[N];
    GenBranch tree[N];
    size_t at = 0, c0 = PRE + NA + NB; /* cache position of c's first row */
    struct {
        const int32_t* tok;
        size_t n, pre_lo, pre_hi;
    } part[] = {{a, NA, 0, PRE}, {b, NB, 0, PRE}, {cx, NCX, 0, 0}, {d, ND, c0, c0 + NCX}, {e, NE, c0, c0 + NCX}};
    for (size_t p = 0; p < 5; p++) {
        size_t seg = PRE + at;
        for (size_t j = 0; j < part[p].n; j++, at++) {
            chunk[at] = part[p].tok[j];
            tree[at] = (GenBranch){part[p].pre_lo, part[p].pre_hi, seg};
        }
    }
    Generator g;
    gen_build(&g, m, 40, 32);
    gen_prefill(&g, tokens, PRE);
    size_t most = m->cfg.sliding_window ? 26 : 30; /* 10 cached + 26 rows fill the rings, + 30 the cache */
    EXPECT(gen_tree_fits(&g, most) && !gen_tree_fits(&g, most + 1),
           "%s: gen_tree_fits: a tree of up to %zu rows after the 10 cached tokens, not %zu", name, most, most + 1);
    gen_forward_tree(&g, chunk, N, tree);
    EXPECT(g.len == PRE, "%s: the tree leaves the cache's length at %zu (got %zu)", name, (size_t)PRE, g.len);
    real* got = mallocCheck(N * V * sizeof(real));
    real* normed = mallocCheck(N * m->cfg.D * sizeof(real));
    real rstd[N];
    gen_rows_logits(&g, got, normed, rstd, g.x, N);
    /* each part's rows against its own sequence: the prefix (cache or c), then the part */
    int32_t seq[PRE + NA];
    real* ref = mallocCheck((PRE + NA) * V * sizeof(real));
    double err = 0, mx = 0;
    for (size_t p = 0, row = 0; p < 5; row += part[p].n, p++) {
        const int32_t* pre = part[p].pre_hi == PRE ? tokens : cx;
        size_t np = part[p].pre_hi - part[p].pre_lo;
        memcpy(seq, pre, np * sizeof(int32_t));
        memcpy(seq + np, part[p].tok, part[p].n * sizeof(int32_t));
        plain_logits(ref, m, seq, np + part[p].n);
        for (size_t i = 0; i < part[p].n * V; i++) {
            err = fmax(err, fabs((double)got[row * V + i] - ref[np * V + i]));
            mx = fmax(mx, fabs((double)ref[np * V + i]));
        }
    }
    printf("  %s: tree of 5 branches, 20 rows: max abs error %.3e, max|logit| %.3e\n", name, err, mx);
    EXPECT(err <= REL_TOL * mx, "%s: tree rows' logits == their own sequences' (1e-5 of max|logit|)", name);
    free(ref);
    free(normed);
    free(got);
    gen_free(&g);
}

/* greedy continuation == argmax of full-recompute logits at every step */
static void check_greedy(Model* m, const int32_t* tokens, size_t n_prompt, size_t n_new, const char* name) {
    size_t V = m->cfg.V, T = m->T;
    CHECK(n_prompt + n_new - 1 == T, "test setup: the model's T must be prompt + new - 1");
    Generator g;
    gen_build(&g, m, T, 4);
    int32_t out[16], seq[256];
    gen_generate(&g, tokens, n_prompt, n_new, 0.0, 0, NULL, out);
    memcpy(seq, tokens, n_prompt * sizeof(int32_t));
    memcpy(seq + n_prompt, out, (n_new - 1) * sizeof(int32_t));
    model_forward(
        m, &(Batch){.B = 1, .T = T, .tokens = seq}); /* causal: row n_prompt-1+i sees exactly prompt + out[0..i) */
    int same = 1;
    double margin = 1e30; /* smallest gap between the best and the second-best full logit */
    printf("  %s: greedy tokens", name);
    for (size_t i = 0; i < n_new; i++) {
        const real* row = m->logits + (n_prompt - 1 + i) * V;
        int32_t best = gen_argmax(row, V);
        double second = -1e30;
        for (size_t v = 0; v < V; v++)
            if ((int32_t)v != best) second = fmax(second, row[v]);
        margin = fmin(margin, row[best] - second);
        printf(" %d/%d", out[i], best);
        same &= out[i] == best;
    }
    printf("  (cache/full)\n");
    EXPECT(same, "%s: greedy generation of %zu tokens == argmax of full recompute (smallest top-2 gap %.2e)", name,
           n_new, margin);

    /* sampling through the same path: top_k 1 is greedy; a seed repeats itself */
    int32_t a[16], b[16], k1[16];
    Rng r1, r2, r3;
    rng_seed(&r1, 5);
    rng_seed(&r2, 5);
    rng_seed(&r3, 6);
    gen_reset(&g);
    gen_generate(&g, tokens, n_prompt, n_new, 1.0, 1, &r3, k1);
    gen_reset(&g);
    gen_generate(&g, tokens, n_prompt, n_new, 1.5, 8, &r1, a);
    gen_reset(&g);
    gen_generate(&g, tokens, n_prompt, n_new, 1.5, 8, &r2, b);
    EXPECT(!memcmp(k1, out, n_new * sizeof(int32_t)), "%s: temperature 1, top_k 1 == greedy", name);
    EXPECT(!memcmp(a, b, n_new * sizeof(int32_t)), "%s: temperature 1.5, top_k 8, same seed: same tokens", name);
    gen_free(&g);
}

/* --compute bf16 (train.compute_dtype): step-by-step logits with BF16 products equal the FP32 step logits up
   to BF16 rounding, (4L+1) 2^-8 of max|logit| (the bound test_parity derives), and so do the BF16 full
   forward's: the cache's attention sums in another order than the full one, and where an activation lies
   next to a BF16 rounding boundary that last-bit difference becomes a BF16 step at the next product */
static void check_bf16(const char* name, const ModelConfig* cfg, uint64_t seed) {
    char why[512];
    if (!products_bf16_available(why, sizeof(why))) {
        printf("SKIP %s bf16 generation: %s\n", name, why);
        return;
    }
    size_t T = 40, V = cfg->V;
    int32_t tokens[40];
    random_tokens(tokens, T, V, seed + 1);
    Model m, f;
    model_build_opts(&m, cfg, 1, T, NULL, 0, &(ModelOpts){.compute_bf16 = true}, false);
    model_build(&f, cfg, 1, T, NULL, 0, false);
    random_weights(&m, seed);
    random_weights(&f, seed);
    model_params_changed(&m);
    Generator g, gf;
    gen_build(&g, &m, T, 7);
    gen_build(&gf, &f, T, 7);
    real *steps = mallocCheck(T * V * sizeof(real)), *steps_f = mallocCheck(T * V * sizeof(real));
    for (size_t t = 0; t < T; t++) {
        memcpy(steps + t * V, gen_step(&g, tokens[t]), V * sizeof(real));
        memcpy(steps_f + t * V, gen_step(&gf, tokens[t]), V * sizeof(real));
    }
    model_forward(&m, &(Batch){.B = 1, .T = T, .tokens = tokens});
    char label[128], why_b[64];
    double tol = (4.0 * (double)cfg->L + 1) * 0x1p-8;
    snprintf(why_b, sizeof(why_b), "(4L+1) 2^-8 = %.3f of max|logit|", tol);
    snprintf(label, sizeof(label), "%s bf16: step logits == bf16 model_forward rows", name);
    expect_close(label, steps, m.logits, T * V, 0, tol, why_b);
    snprintf(label, sizeof(label), "%s bf16: step logits == f32 step logits to BF16 rounding", name);
    expect_close(label, steps, steps_f, T * V, 0, tol, why_b);
    EXPECT(m.products->prod.weight_rounded == 0, "%s bf16 generation: every weight read from the mirror", name);
    /* a model built for one row (as build/generate and build/eval build it), prefill in chunks of 7 */
    Model one;
    model_build_opts(&one, cfg, 1, 1, NULL, 0, &(ModelOpts){.compute_bf16 = true}, false);
    memcpy(one.params, m.params, m.tensors.n_params * sizeof(real));
    model_params_changed(&one);
    Generator g1;
    gen_build(&g1, &one, T, 7);
    const real* last = gen_prefill(&g1, tokens, T);
    snprintf(label, sizeof(label), "%s bf16, a one-row model: prefill's last logits == f32 steps' row %zu", name,
             T - 1);
    expect_close(label, last, steps_f + (T - 1) * V, V, 0, tol, why_b);
    gen_free(&g1);
    model_free(&one);
    gen_free(&g);
    gen_free(&gf);
    free(steps);
    free(steps_f);
    model_free(&m);
    model_free(&f);
}

static void run_model(const char* name, const ModelConfig* cfg, uint64_t seed) {
    printf("%s: %s D=%zu L=%zu H=%zu KVH=%zu V=%zu, layers", name, block_style_name(cfg->block), cfg->D, cfg->L, cfg->H,
           cfg->KVH, cfg->V);
    for (size_t l = 0; l < cfg->L; l++) printf(" %s", pos_mode_name(cfg->pos[l]));
    printf(cfg->yarn_factor > 1 ? ", YaRN factor %g L0 %g\n" : "\n", cfg->yarn_factor, cfg->yarn_orig_max);
    size_t T = 40, n_prompt = 36, n_new = 5;
    int32_t tokens[40];
    random_tokens(tokens, T, cfg->V, seed + 1);
    Model m;
    model_build(&m, cfg, 1, T, NULL, 0, false);
    random_weights(&m, seed);
    check_steps_and_prefill(&m, tokens, T, name, false);
    check_steps_and_prefill(&m, tokens, T, name, true);
    check_tree(&m, tokens, name);
    model_free(&m);

    model_build(&m, cfg, 1, n_prompt + n_new - 1, NULL, 0, false);
    random_weights(&m, seed);
    check_greedy(&m, tokens, n_prompt, n_new, name);
    model_free(&m);
    check_bf16(name, cfg, seed);
}

/* top-k keeps to the k largest; frequencies follow softmax(l / temperature) */
static void check_sampling(void) {
    printf("sampling from fixed logits\n");
    ModelConfig cfg;
    model_config_default(&cfg);
    test_model_sizes(&cfg, 16, 16, 1, 2, 2, 16);
    Model m;
    model_build(&m, &cfg, 1, 1, NULL, 0, false);
    Generator g;
    gen_build(&g, &m, 4, 1);
    real logits[16];
    for (size_t v = 0; v < 16; v++) logits[v] = (real)(0.5 * (double)((v * 7) % 16) / 4.0); /* a permutation */
    logits[3] = logits[gen_argmax(logits, 16)]; /* a tie for the top: both kept */
    double temp = 0.7, p[16], z = 0;
    size_t counts[16] = {0}, n = 200000, outside = 0, k = 4;
    real sorted[16];
    memcpy(sorted, logits, sizeof(sorted));
    for (size_t i = 0; i < 16; i++) /* threshold = the 4th largest, by a plain sort */
        for (size_t j = i + 1; j < 16; j++)
            if (sorted[j] > sorted[i]) {
                real t = sorted[i];
                sorted[i] = sorted[j];
                sorted[j] = t;
            }
    real thr = sorted[k - 1];
    for (size_t v = 0; v < 16; v++) z += p[v] = logits[v] >= thr ? exp(logits[v] / temp) : 0;
    Rng rng;
    rng_seed(&rng, 11);
    for (size_t i = 0; i < n; i++) {
        int32_t s = gen_sample(&g, logits, temp, k, &rng);
        counts[s]++;
        outside += logits[s] < thr;
    }
    double worst = 0;
    for (size_t v = 0; v < 16; v++) worst = fmax(worst, fabs((double)counts[v] / n - p[v] / z));
    EXPECT(outside == 0, "top_k 4: no sample outside the 4 largest logits (%zu outside)", outside);
    EXPECT(worst < 0.01, "frequencies of %zu samples match softmax(l/%.1f) over the top 4: max deviation %.4f", n, temp,
           worst);
    EXPECT(gen_sample(&g, logits, 0.0, 0, &rng) == 3 && gen_argmax(logits, 16) == 3,
           "temperature 0 is argmax, the first of a tie (%d)", gen_argmax(logits, 16));
    gen_free(&g);
    model_free(&m);
}

typedef struct {
    Model* m;
} OverflowArg;
static void overflow_child(void* p) {
    OverflowArg* a = p;
    Generator g;
    gen_build(&g, a->m, 2, 2);
    gen_step(&g, 1);
    gen_step(&g, 2);
    gen_step(&g, 3); /* the third token does not fit */
}

int main(void) {
    threads_init(0);
    threads_print(stdout);

    ModelConfig olmo;
    model_config_default(&olmo);
    test_model_sizes(&olmo, 61, 64, 4, 4, 4, 96);
    PosMode op[] = {POS_ROPE, POS_REPO, POS_NOPE, POS_REPO};
    for (size_t l = 0; l < olmo.L; l++) olmo.pos[l] = op[l];
    run_model("olmo2", &olmo, 21);

    ModelConfig llama;
    model_config_default(&llama);
    llama.block = BLOCK_LLAMA;
    test_model_sizes(&llama, 53, 64, 3, 4, 2, 80);
    llama.norm_eps = 1e-5;
    llama.rope_theta = 500000;
    llama.tie_embeddings = true;
    llama.yarn_factor = 4;
    llama.yarn_orig_max = 16;
    PosMode lp[] = {POS_REPO, POS_ROPE, POS_NOPE};
    for (size_t l = 0; l < llama.L; l++) llama.pos[l] = lp[l];
    run_model("llama-gqa-yarn", &llama, 33);

    ModelConfig qwen2 = llama; /* q, k, v biases */
    qwen2.block = BLOCK_QWEN2;
    qwen2.yarn_factor = 1;
    run_model("qwen2-gqa-biases", &qwen2, 35);
    ModelConfig qwen3 = qwen2; /* per-head QK-norm, head_dim 24 != 64 / 4, q, k, v, o biases */
    qwen3.block = BLOCK_QWEN3;
    qwen3.head_dim = 24;
    qwen3.attn_bias = true;
    qwen3.tie_embeddings = false;
    run_model("qwen3-hd24-attention-bias", &qwen3, 37);
    /* Gemma-3: layers 0 and 2 slide over 5 keys (a first prefill chunk of 7 and the cache both cut them), with
       their own RoPE base; layer 1 is global, RePo, linear scaling; the sqrt(D) embedding, scalar 10 */
    ModelConfig gemma = qwen3;
    gemma.block = BLOCK_GEMMA3;
    gemma.attn_bias = false;
    gemma.tie_embeddings = true;
    gemma.sliding_window = 5;
    gemma.sliding[0] = gemma.sliding[2] = true;
    gemma.rope_local_theta = 100;
    gemma.rope_linear_factor = 2;
    gemma.attn_scalar = 10;
    PosMode gp[] = {POS_ROPE, POS_REPO, POS_NOPE};
    for (size_t l = 0; l < gemma.L; l++) gemma.pos[l] = gp[l];
    run_model("gemma3-sliding-window-5", &gemma, 39);
    /* Mistral: every layer slides over 5 keys, rotated by the global table */
    ModelConfig mistral = llama;
    mistral.block = BLOCK_MISTRAL;
    mistral.yarn_factor = 1;
    mistral.sliding_window = 5;
    for (size_t l = 0; l < mistral.L; l++) mistral.sliding[l] = true;
    PosMode mp[] = {POS_ROPE, POS_NOPE, POS_ROPE};
    for (size_t l = 0; l < mistral.L; l++) mistral.pos[l] = mp[l];
    run_model("mistral-sliding-window-5", &mistral, 41);

    check_sampling();

    printf("errors\n");
    Model m;
    model_build(&m, &olmo, 1, 1, NULL, 0, false);
    random_weights(&m, 1);
    OverflowArg arg = {&m};
    const char* phrases[] = {"would exceed the cache of 2", NULL};
    expect_dies_with("a token past the cache's end", overflow_child, &arg, phrases);
    model_free(&m);

    printf("test_generate: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}

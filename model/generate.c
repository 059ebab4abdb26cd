/* KV-cache generation (see generate.h). One chunk of n new tokens at
   positions p0 .. p0+n-1 runs, per layer:
     block_qkv_forward on the n rows, with k, v (and RePo's z) written straight
       into the cache rows p0 .. p0+n-1, keys rotated once (a sliding layer's
       into g->k_chunk, v_chunk, then into their rows of its ring);
     att = causal softmax(scale q k^T) v over cache rows 0 .. t (a sliding layer's
       window of them), GQA;
     block_out_forward: Wo, the norms, the residuals and the SwiGLU MLP.
   A chunk into an empty cache uses the training attention (attention_forward
   reads the cache rows as its k, v); later chunks use cache_attention below.
   A tree chunk (gen_forward_tree) runs the same, each row at its own position and
   reading its own spans of the cache (key_spans), and is not appended. */
#include "model/generate.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/check.h"
#include "common/mathf.h"
#include "common/threads.h"
#include "model/attention.h"
#include "model/embedding.h"

/* chunks with fewer multiply-adds than this run single-threaded (gen_forward):
   about a millisecond of one core's work */
#define GEN_SERIAL_WORK 4e6

/* the rows of a sliding layer's ring for chunks of NC tokens: the oldest key a chunk's first query sees .. its
   last */
static size_t ring_rows(const ModelConfig* c, size_t NC) { return c->sliding_window + NC - 1; }

/* every view of the arena, in one list (counting when cur->base is NULL) */
static void gen_layout(Generator* g, const ModelConfig* c, Cursor* cur) {
    size_t T = g->max_T, NC = g->max_chunk, D = c->D, F = c->F, hd = cfg_hd(c);
    size_t qd = c->H * hd, kvd = c->KVH * hd;
    bool qkn = cfg_qk_norm(c);
    for (size_t l = 0; l < c->L; l++) {
        size_t ring = ring_rows(c, NC);
        g->rows[l] = cfg_sliding(c, l) && ring < T ? ring : T;
        g->k[l] = cursor_take(cur, g->rows[l] * kvd);
        g->v[l] = cursor_take(cur, g->rows[l] * kvd);
        g->z[l] = c->pos[l] == POS_REPO ? cursor_take(cur, T * c->KVH) : NULL; /* (never a sliding layer) */
    }
    g->k_chunk = c->sliding_window ? cursor_take(cur, NC * kvd) : NULL;
    g->v_chunk = c->sliding_window ? cursor_take(cur, NC * kvd) : NULL;
    g->x = cursor_take(cur, NC * D);
    g->pos = cursor_take(cur, NC * c->KVH);
    LayerActs* a = &g->a;
    memset(a, 0, sizeof(*a));
    a->x_mid = cursor_take(cur, NC * D);
    a->h = a->h2 = cursor_take(cur, NC * D); /* pre-norm blocks' input and post-attention norm outputs */
    a->o = cursor_take(cur, NC * D);
    a->d = cursor_take(cur, NC * D);
    a->q_pre = qkn ? cursor_take(cur, NC * qd) : NULL;
    a->q = cursor_take(cur, NC * qd);
    a->att = cursor_take(cur, NC * qd);
    a->k_pre = qkn ? cursor_take(cur, NC * kvd) : NULL;
    a->lse = cursor_take(cur, NC * c->H);
    /* read by backward only, so one buffer serves every norm; Qwen3's q norm has H rows per token */
    real* rstd = cursor_take(cur, NC * cfg_qk_norm_heads(c, c->H));
    a->h_rstd = a->q_rstd = a->k_rstd = a->attn_rstd = a->ff_rstd = a->mlp_rstd = rstd;
    a->gu = cursor_take(cur, NC * 2 * F);
    a->m = cursor_take(cur, NC * F);
    if (c->lora_rank) { /* x A^T is read by backward only: one buffer serves every projection */
        real* ax = cursor_take(cur, NC * c->lora_rank);
        for (int t = 0; t < LORA_N_TARGETS; t++) a->lora_ax[t] = ax;
    }
    if (cfg_has_repo(c)) {
        a->repo.gc = cursor_take(cur, NC * 2 * cfg_dp(c));
        a->repo.r = cursor_take(cur, NC * cfg_dp(c));
    }
    g->scores = cursor_take(cur, g->n_att_bufs * T);
    g->final_out = cursor_take(cur, D);
    g->final_rstd = cursor_take(cur, 1);
    g->logits = cursor_take(cur, c->V);
    g->work = cursor_take(cur, c->V);
}

static void check_sizes(size_t max_T, size_t max_chunk) {
    CHECK(max_T >= 1 && max_T <= ((size_t)1 << 31), "generate: context of %zu tokens (expected 1 .. 2^31)", max_T);
    CHECK(max_chunk >= 1 && max_chunk <= max_T, "generate: chunk of %zu tokens (expected 1 .. max_T = %zu)", max_chunk,
          max_T);
}

size_t gen_arena_reals(const ModelConfig* cfg, size_t max_T, size_t max_chunk) {
    check_sizes(max_T, max_chunk);
    Generator g = {.max_T = max_T, .max_chunk = max_chunk, .n_att_bufs = threads_max()};
    Cursor cur = {NULL, 0};
    gen_layout(&g, cfg, &cur);
    return cur.used;
}

/* the arena for g->max_T tokens, its views laid out */
static void gen_alloc(Generator* g) {
    Cursor cur = {NULL, 0};
    gen_layout(g, &g->m->cfg, &cur);
    g->n_arena = cur.used;
    size_t bytes = mulCheck(g->n_arena, sizeof(real), "generator arena (KV cache and work space)");
    g->arena = arena_try_alloc(bytes);
    CHECK(g->arena,
          "generate: out of memory allocating the KV cache and work space for a context of %zu tokens "
          "(%zu bytes, %.1f MiB)",
          g->max_T, bytes, (double)bytes / 1048576.0);
    cur = (Cursor){g->arena, 0};
    gen_layout(g, &g->m->cfg, &cur);
    CHECK(cur.used == g->n_arena, "generator layout disagrees with its count");
}

void gen_build(Generator* g, const Model* m, size_t max_T, size_t max_chunk) {
    memset(g, 0, sizeof(*g));
    check_sizes(max_T, max_chunk);
    g->m = m;
    g->max_T = g->limit_T = max_T;
    g->max_chunk = max_chunk;
    g->n_att_bufs = threads_max();
    g->serial_below = GEN_SERIAL_WORK;
    gen_alloc(g);
    if (m->cfg.sliding_window) g->win_start = mallocCheck(max_chunk * sizeof(int32_t));
}

void gen_allow_growth(Generator* g, size_t limit_T) {
    check_sizes(limit_T, g->max_chunk);
    g->limit_T = limit_T > g->max_T ? limit_T : g->max_T;
}

/* a cache of at least need (<= limit_T) tokens: doubled, the cached rows copied over */
static void gen_grow(Generator* g, size_t need) {
    const ModelConfig* c = &g->m->cfg;
    size_t T = 2 * g->max_T > need ? 2 * g->max_T : need, kvd = c->KVH * cfg_hd(c);
    Generator old = *g;
    g->max_T = T < g->limit_T ? T : g->limit_T;
    gen_alloc(g);
    for (size_t l = 0; l < c->L; l++) { /* the positions each layer holds, into their new rows */
        size_t first = old.len > old.rows[l] ? old.len - old.rows[l] : 0;
        for (size_t j = first; j < old.len; j++) {
            memcpy(g->k[l] + (j % g->rows[l]) * kvd, old.k[l] + (j % old.rows[l]) * kvd, kvd * sizeof(real));
            memcpy(g->v[l] + (j % g->rows[l]) * kvd, old.v[l] + (j % old.rows[l]) * kvd, kvd * sizeof(real));
        }
        if (g->z[l]) memcpy(g->z[l], old.z[l], old.len * c->KVH * sizeof(real));
    }
    free(old.arena);
}

void gen_free(Generator* g) {
    free(g->arena);
    free(g->win_start);
    memset(g, 0, sizeof(*g));
}

void gen_reset(Generator* g) { g->len = 0; }

bool gen_stopping(const Generator* g) { return g->stop && *g->stop; }

/* The keys query row i (cache position p) reads, as at most two spans of cache positions, and its
   position t. A plain chunk: positions 0 .. p, t = p. A tree row (GenBranch b): the prefix
   b.pre_lo .. b.pre_hi-1 holds positions 0 .. P-1 (P = pre_hi - pre_lo) and its segment b.seg .. p
   the positions P .. t = P + p - seg. A sliding layer keeps the last `window` positions of t's. */
typedef struct {
    size_t lo[2], hi[2]; /* cache positions [lo, hi) */
    size_t t;
} KeySpans;

static KeySpans key_spans(size_t p, const GenBranch* b, size_t window) {
    GenBranch plain = {0, 0, 0};
    if (!b) b = &plain;
    size_t P = b->pre_hi - b->pre_lo, t = P + (p - b->seg), j0 = window_first(t, window);
    KeySpans ks = {.t = t};
    ks.lo[0] = b->pre_lo + (j0 < P ? j0 : P); /* prefix positions j0 .. P-1 */
    ks.hi[0] = b->pre_hi;
    ks.lo[1] = b->seg + (j0 > P ? j0 - P : 0); /* segment positions max(j0, P) .. t */
    ks.hi[1] = p + 1;
    return ks;
}

/* att (n,H*hd) for the query rows at cache positions p0+i over the keys key_spans gives them (tree: NULL for a
   plain chunk), GQA. One task per (row, head); each thread keeps its scores in its own row of g->scores. */
static void cache_attention(Generator* g, size_t l, size_t n, size_t p0, const GenBranch* tree) {
    const ModelConfig* c = &g->m->cfg;
    size_t H = c->H, hd = cfg_hd(c), qd = H * hd, kvd = c->KVH * hd, group = H / c->KVH, T = g->max_T;
    size_t window = cfg_sliding(c, l) ? c->sliding_window : 0;
    real scale = (real)cfg_attn_scale(c);
    const real* kc = g->k[l];
    const real* vc = g->v[l];
    size_t rows = g->rows[l];                                                    /* position j is row j % rows */
    size_t team = threads_max() < g->n_att_bufs ? threads_max() : g->n_att_bufs; /* one score row each */
    (void)team; /* read only by the pragma: unused without OpenMP */
#pragma omp parallel for collapse(2) schedule(dynamic, 1) num_threads((int)team)
    for (size_t i = 0; i < n; i++) {
        for (size_t h = 0; h < H; h++) {
            if (gen_stopping(g)) continue; /* a row of a long context takes milliseconds: stop within one */
            KeySpans ks = key_spans(p0 + i, tree ? tree + i : NULL, window);
            size_t kvo = (h / group) * hd;
            real* s = g->scores + threads_id() * T; /* s[k]: the k-th key read, k < t + 1 <= T */
            const real* q = g->a.q + i * qd + h * hd;
            real mx = -INFINITY;
            size_t nk = 0;
            for (int sp = 0; sp < 2; sp++)
                for (size_t j = ks.lo[sp]; j < ks.hi[sp]; j++, nk++) { /* s_k = scale q·k_j */
                    const real* kj = kc + (j < rows ? j : j % rows) * kvd + kvo;
                    real dot = 0;
#pragma omp simd reduction(+ : dot)
                    for (size_t e = 0; e < hd; e++) dot += q[e] * kj[e];
                    s[nk] = dot * scale;
                    mx = s[nk] > mx ? s[nk] : mx;
                }
            real sum = 0;
#pragma omp simd reduction(+ : sum)
            for (size_t k = 0; k < nk; k++) {
                s[k] = exp_nonpos_r(s[k] - mx);
                sum += s[k];
            }
            real* out = g->a.att + i * qd + h * hd; /* out = Σ_k softmax_k v_j(k) */
            for (size_t e = 0; e < hd; e++) out[e] = 0;
            nk = 0;
            for (int sp = 0; sp < 2; sp++)
                for (size_t j = ks.lo[sp]; j < ks.hi[sp]; j++, nk++) {
                    const real* vj = vc + (j < rows ? j : j % rows) * kvd + kvo;
                    real p = s[nk];
#pragma omp simd
                    for (size_t e = 0; e < hd; e++) out[e] += p * vj[e];
                }
            real inv = 1 / sum;
            for (size_t e = 0; e < hd; e++) out[e] *= inv;
        }
    }
}

/* layer l on the n rows of g->x (cache positions p0 .., laid out by tree or plain), in place; fills the
   cache rows */
static void layer_forward(Generator* g, size_t l, size_t n, size_t p0, const GenBranch* tree, Bf16Products* bf) {
    const Model* m = g->m;
    const ModelConfig* c = &m->cfg;
    const LayerWeights* w = &m->w.layer[l];
    size_t KVH = c->KVH, kvd = KVH * cfg_hd(c);
    LayerActs* a = &g->a;
    bool ring = cfg_sliding(c, l); /* its keys and values go to the chunk buffers, then to their ring rows */
    a->k = ring ? g->k_chunk : g->k[l] + p0 * kvd; /* this chunk's cache rows */
    a->v = ring ? g->v_chunk : g->v[l] + p0 * kvd;
    a->z = g->z[l] ? g->z[l] + p0 * KVH : NULL;
    BlockCtx ctx =
        {.cfg = c, .prod = bf, .B = 1, .T = n, .rope = &m->rope, .rope_local = &m->rope_local, .pos_seq = g->pos};
    block_qkv_forward(a, g->x, w, l, &ctx); /* (no dropout) */
    for (size_t i = 0; ring && i < n; i++) {
        size_t row = (p0 + i) % g->rows[l];
        memcpy(g->k[l] + row * kvd, a->k + i * kvd, kvd * sizeof(real));
        memcpy(g->v[l] + row * kvd, a->v + i * kvd, kvd * sizeof(real));
    }
    if (p0 == 0 && !tree) { /* a first chunk: the training kernel on its own rows, over a sliding layer's window */
        DocSpans win = {g->win_start};
        if (ring) window_starts(g->win_start, NULL, 1, n, c->sliding_window);
        /* FP32 attention, as cache_attention runs for every later chunk and token */
        AttnShape as = {1, n, c->H, KVH, cfg_hd(c), (real)cfg_attn_scale(c), ring ? &win : NULL, false, false, NULL};
        attention_forward(a->att, a->lse, a->q, a->k, a->v, &as);
    } else {
        cache_attention(g, l, n, p0, tree);
    }
    block_out_forward(g->x, a, g->x, w, &ctx);
}

/* Multiply-adds of a chunk of n tokens after len cached ones: every weight once
   per token (the embedding is a lookup), and q·k plus p·v over the keys. */
static double chunk_work(const Generator* g, size_t n, size_t len) {
    const ModelConfig* c = &g->m->cfg;
    double per_token = (double)g->m->tensors.n_params - (c->tie_embeddings ? 0.0 : (double)(c->V * c->D));
    double keys = (double)len + 0.5 * (double)(n + 1);
    return (double)n * (per_token + 2.0 * keys * (double)(c->L * c->H * cfg_hd(c)));
}

/* n tokens (1 .. max_chunk) through every layer into cache positions len .. len+n-1, as tree lays them out
   (NULL: a plain chunk at positions len ..); the final residual rows in g->x. g->len is the caller's. */
static void run_chunk(Generator* g, const int32_t* tokens, size_t n, const GenBranch* tree) {
    const Model* m = g->m;
    const ModelConfig* c = &m->cfg;
    CHECK(n >= 1 && n <= g->max_chunk, "generate: %zu tokens in one call (expected 1 .. %zu)", n, g->max_chunk);
    CHECK(g->len + n <= g->limit_T, "generate: %zu tokens after %zu would exceed the cache of %zu", n, g->len,
          g->limit_T);
    if (g->len + n > g->max_T) gen_grow(g, g->len + n);
    for (size_t i = 0; i < n; i++)
        CHECK(tokens[i] >= 0 && (size_t)tokens[i] < c->V,
              "generate: token %" PRId32 " at position %zu is outside the vocabulary [0, %zu)", tokens[i], g->len + i,
              c->V);
    /* a small chunk (a one-token step of a small model) runs on one thread: its
       ops are microseconds, less than waking the OpenMP team for each of them,
       and far less than a team waiting on a core another process holds */
    int team = 0;
    if (chunk_work(g, n, g->len) < g->serial_below) {
        team = (int)threads_max();
        threads_init(1);
    }
    Bf16Products* bf = model_products(m); /* compute_bf16: the mirror may be rewritten */
    embedding_forward(g->x, tokens, m->w.embed, (real)cfg_embed_scale(c), n, c->D);
    for (size_t i = 0; i < n; i++) { /* rope layers rotate by the row's position */
        real t = (real)(tree ? key_spans(g->len + i, tree + i, 0).t : g->len + i);
        for (size_t gr = 0; gr < c->KVH; gr++) g->pos[i * c->KVH + gr] = t;
    }
    for (size_t l = 0; l < c->L && !gen_stopping(g); l++) layer_forward(g, l, n, g->len, tree, bf);
    if (team) threads_init(team);
}

const real* gen_forward(Generator* g, const int32_t* tokens, size_t n) {
    run_chunk(g, tokens, n, NULL);
    g->len += n;
    /* only the last row's next-token distribution is needed */
    model_head_forward(g->logits, g->final_out, g->final_rstd, g->x + (n - 1) * g->m->cfg.D, g->m, 1);
    return g->logits;
}

bool gen_tree_fits(const Generator* g, size_t n) {
    const ModelConfig* c = &g->m->cfg;
    return g->len + n <= g->limit_T && !(c->sliding_window && g->len + n > ring_rows(c, g->max_chunk));
}

void gen_forward_tree(Generator* g, const int32_t* tokens, size_t n, const GenBranch* tree) {
    CHECK(n >= 1 && n <= g->max_chunk && gen_tree_fits(g, n),
          "generate: a tree of %zu rows after %zu cached tokens does not fit the cache", n, g->len);
    for (size_t i = 0; i < n; i++) {
        const GenBranch* b = &tree[i];
        CHECK(b->pre_lo <= b->pre_hi && b->pre_hi <= b->seg && b->seg <= g->len + i,
              "generate: tree row %zu (cache position %zu) reads the prefix [%zu, %zu) and its segment from %zu", i,
              g->len + i, b->pre_lo, b->pre_hi, b->seg);
    }
    run_chunk(g, tokens, n, tree);
}

const real* gen_prefill(Generator* g, const int32_t* tokens, size_t n) {
    CHECK(n >= 1, "generate: empty prompt");
    const real* logits = NULL;
    for (size_t i = 0; i < n && !(i && gen_stopping(g)); i += g->max_chunk) {
        size_t k = n - i < g->max_chunk ? n - i : g->max_chunk;
        logits = gen_forward(g, tokens + i, k);
    }
    return logits;
}

void gen_rows_logits(Generator* g, real* logits, real* normed, real* rstd, const real* x, size_t n) {
    CHECK(n >= 1 && n <= g->max_chunk, "generate: logits of %zu rows (expected 1 .. %zu)", n, g->max_chunk);
    model_head_forward(logits, normed, rstd, x, g->m, n);
}

bool gen_rewind(Generator* g, size_t n) {
    CHECK(n <= g->len, "generate: rewind to %zu tokens, the cache holds %zu", n, g->len);
    for (size_t l = 0; l < g->m->cfg.L; l++)
        if (g->len > g->rows[l]) return false; /* a ring that wrapped: position j - rows is gone */
    g->len = n;
    return true;
}

const real* gen_step(Generator* g, int32_t token) { return gen_forward(g, &token, 1); }

int32_t gen_argmax(const real* logits, size_t V) {
    size_t best = 0;
    for (size_t i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    return (int32_t)best;
}

/* the k-th largest of a[0..n) (1 <= k <= n), by quickselect; reorders a */
static real kth_largest(real* a, size_t n, size_t k) {
    ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, want = (ptrdiff_t)k - 1;
    while (lo < hi) {
        real pivot = a[lo + (hi - lo) / 2];
        ptrdiff_t i = lo, j = hi;
        while (i <= j) { /* Hoare partition, descending: a[lo..j] >= pivot >= a[i..hi] */
            while (a[i] > pivot) i++;
            while (a[j] < pivot) j--;
            if (i <= j) {
                real t = a[i];
                a[i++] = a[j];
                a[j--] = t;
            }
        }
        if (want <= j) hi = j;
        else if (want >= i) lo = i;
        else return a[want]; /* between the parts: equal to the pivot */
    }
    return a[want];
}

double gen_softmax_weights(real* w, const real* logits, size_t V, double temperature, real thr) {
    for (size_t i = 0; i < V; i++) CHECK(isfinite(logits[i]), "sampling: logit %zu is %g", i, (double)logits[i]);
    real mx = logits[gen_argmax(logits, V)];
    double sum = 0;
    for (size_t i = 0; i < V; i++) {
        w[i] = logits[i] >= thr ? (real)exp(((double)logits[i] - mx) / temperature) : 0;
        sum += w[i];
    }
    return sum;
}

int32_t gen_sample(Generator* g, const real* logits, double temperature, size_t top_k, Rng* rng) {
    size_t V = g->m->cfg.V;
    if (temperature <= 0) return gen_argmax(logits, V);
    real thr = -INFINITY;         /* keep logits >= the k-th largest */
    if (top_k > 0 && top_k < V) { /* quickselect ends on any input: a NaN is named just below */
        memcpy(g->work, logits, V * sizeof(real));
        thr = kth_largest(g->work, V, top_k);
    }
    double sum = gen_softmax_weights(g->work, logits, V, temperature, thr);
    double u = rng_uniform(rng) * sum, acc = 0;
    size_t last = 0;
    for (size_t i = 0; i < V; i++) {
        if (g->work[i] == 0) continue;
        acc += g->work[i];
        last = i;
        if (u < acc) return (int32_t)i;
    }
    return (int32_t)last; /* u rounded up to the sum */
}

void gen_generate(Generator* g, const int32_t* prompt, size_t n_prompt, size_t n_new, double temperature, size_t top_k,
                  Rng* rng, int32_t* out) {
    CHECK(n_new == 0 || g->len + n_prompt + n_new - 1 <= g->limit_T,
          "generate: %zu cached + %zu prompt + %zu new tokens exceed the cache of %zu", g->len, n_prompt, n_new,
          g->limit_T);
    const real* logits = gen_prefill(g, prompt, n_prompt);
    for (size_t i = 0; i < n_new; i++) {
        out[i] = gen_sample(g, logits, temperature, top_k, rng);
        if (i + 1 < n_new) logits = gen_step(g, out[i]);
    }
}

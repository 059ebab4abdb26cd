/* Multiple choice, the model side (eval/mc.h): the harness's encoding of a (context, choice) pair
   and the log-likelihood of the continuation.
   Batched (mc_score_items): consecutive items laid out side by side in one chunk of the generator as a tree
   (gen_forward_tree): per item its context, then each choice's tokens but the last, reading the context as
   their prefix; one forward for the whole group, then the head and the log-probabilities on just the rows
   that predict a continuation token:
     rows   [ ctx_a .......... | a0 a0 | a1 | a2 a2 a2 | ctx_b ...... | b0 | b1 b1 ]
     reads    own rows           ctx_a + own rows            own rows     ctx_b + own rows
   The context's last row predicts every choice's first token; row j of choice k predicts its token j+1.
   Without prefix sharing each choice carries its own copy of the context. An item that needs its context
   cut to the window, or is longer than the chunk (or a sliding layer's ring), runs alone (score_one): the
   context through the cache, then each choice after it, the cache rewound. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "eval/mc_set.h"

#define MC_CHUNK 512 /* rows per forward call (tokens of several items) */

size_t mc_window(size_t window, size_t max_position_embeddings) {
    return window ? window : max_position_embeddings ? max_position_embeddings : MC_DEFAULT_WINDOW;
}

size_t mc_scorer_reals(const ModelConfig* cfg, size_t W) {
    size_t chunk = W < MC_CHUNK ? W : MC_CHUNK, rows = chunk < MC_HEAD_ROWS_MAX ? chunk : MC_HEAD_ROWS_MAX;
    /* the generator; logits, normed, gathered rows, rstd; first; the tree, its tokens and the rows to score */
    return gen_arena_reals(cfg, W, chunk) + rows * (cfg->V + 2 * cfg->D + 1) + cfg->V +
           chunk * (sizeof(GenBranch) + sizeof(int32_t) + sizeof(McRow)) / sizeof(real);
}

void mc_scorer_init(McScorer* s, const Model* m, const Tokenizer* tok, size_t W, const char* delimiter) {
    memset(s, 0, sizeof(*s));
    CHECK(W >= 2, "mc: a window of %zu tokens; at least 2", W);
    s->tok = tok;
    s->delimiter = delimiter;
    s->W = W;
    s->V = m->cfg.V;
    s->chunk = W < MC_CHUNK ? W : MC_CHUNK;
    s->head_rows = s->chunk < MC_HEAD_ROWS_MAX ? s->chunk : MC_HEAD_ROWS_MAX;
    gen_build(&s->g, m, W, s->chunk);
    tok_encoder_init(&s->enc, tok);
    s->logits = mallocCheck(mulCheck(s->head_rows, s->V * sizeof(real), "mc logits"));
    s->normed = mallocCheck(s->head_rows * m->cfg.D * sizeof(real));
    s->gathered = mallocCheck(s->head_rows * m->cfg.D * sizeof(real));
    s->rstd = mallocCheck(s->head_rows * sizeof(real));
    s->first = mallocCheck(s->V * sizeof(real));
    s->tree = mallocCheck(s->chunk * sizeof(GenBranch));
    s->tree_tokens = mallocCheck(s->chunk * sizeof(int32_t));
    s->score_rows = mallocCheck(s->chunk * sizeof(McRow));
}

void mc_scorer_free(McScorer* s) {
    gen_free(&s->g);
    tok_encoder_free(&s->enc);
    free(s->logits);
    free(s->normed);
    free(s->rstd);
    free(s->first);
    free(s->gathered);
    free(s->tree);
    free(s->tree_tokens);
    free(s->score_rows);
    free(s->ctx);
    for (size_t k = 0; k < MC_MAX_CHOICES; k++) free(s->cont[k]);
    free(s->text);
}

void mc_reserve(void** buf, size_t* cap, size_t n, size_t sz) {
    if (n <= *cap) return;
    size_t c = 2 * *cap > n ? 2 * *cap : n;
    void* p = realloc(*buf, mulCheck(c, sz, "mc buffer"));
    CHECK(p, "mc: out of memory (%zu x %zu bytes)", c, sz);
    *buf = p;
    *cap = c;
}

/* BOS (the post-processor's prefix) + encode(text[0..n)) into s->enc.ids */
static void encode(McScorer* s, const char* text, size_t n) {
    size_t np;
    const int32_t* prefix = tok_prefix(s->tok, &np);
    s->enc.n_ids = 0;
    tok_push_ids(&s->enc, prefix, np);
    tok_encode(&s->enc, (const uint8_t*)text, n);
}

/* context_enc and each choice's continuation tokens: whole[len(context_enc):] */
void mc_encode(McScorer* s, const McRecord* r, const char* file, size_t line) {
    size_t nc = strlen(r->context), nd = strlen(s->delimiter);
    encode(s, r->context, mc_rstrip_len(r->context, nc)); /* its trailing whitespace goes to the continuation */
    s->n_ctx = s->enc.n_ids;
    mc_reserve((void**)&s->ctx, &s->cap_ctx, s->n_ctx, sizeof(int32_t));
    memcpy(s->ctx, s->enc.ids, s->n_ctx * sizeof(int32_t));
    for (size_t k = 0; k < r->n_choices; k++) {
        size_t nk = strlen(r->choice[k]), n = nc + nd + nk; /* whole = context + delimiter + choice */
        mc_reserve((void**)&s->text, &s->cap_text, n, 1);
        memcpy(s->text, r->context, nc);
        memcpy(s->text + nc, s->delimiter, nd);
        memcpy(s->text + nc + nd, r->choice[k], nk);
        encode(s, s->text, n);
        CHECK(s->enc.n_ids > s->n_ctx,
              "%s:%zu: choice %zu: the encoding of context + choice (%zu tokens) is no longer than the context's "
              "(%zu): the continuation has no tokens",
              file, line, k, s->enc.n_ids, s->n_ctx);
        size_t m = s->enc.n_ids - s->n_ctx;
        CHECK(m <= s->W, "%s:%zu: choice %zu has %zu tokens, more than the window of %zu", file, line, k, m, s->W);
        mc_reserve((void**)&s->cont[k], &s->cap_cont[k], m, sizeof(int32_t));
        memcpy(s->cont[k], s->enc.ids + s->n_ctx, m * sizeof(int32_t));
        s->n_cont[k] = m;
    }
}

static McRowStats row_stats(const real* row, size_t V) {
    McRowStats r = {.best = gen_argmax(row, V)};
    r.mx = row[r.best];
    double sum = 1; /* exp(0) of the argmax itself */
    for (size_t v = 0; v < V; v++)
        if (v != (size_t)r.best) sum += exp((double)row[v] - r.mx);
    r.lse = log(sum);
    return r;
}

/* log p(target) under the row's softmax, in double; *greedy when target is the row's argmax */
static double row_logprob(const real* row, McRowStats st, int32_t target, bool* greedy) {
    *greedy &= st.best == target;
    return (double)row[target] - st.mx - st.lse;
}

/* the cache holds tokens p[0..n) and s->first the logits after them */
static void run_prefix(McScorer* s, const int32_t* p, size_t n) {
    gen_reset(&s->g);
    const real* logits = gen_prefill(&s->g, p, n);
    memcpy(s->first, logits, s->V * sizeof(real));
}

/* the choice c (m tokens) after the cache's prefix: its first token from s->first, the rest from the rows of its
   own tokens; its log-likelihood, *greedy when every token was its row's argmax */
static double score_continuation(McScorer* s, const int32_t* c, size_t m, bool* greedy) {
    *greedy = true;
    double ll = row_logprob(s->first, row_stats(s->first, s->V), c[0], greedy);
    for (size_t j = 0; j + 1 < m; j += s->head_rows) { /* rows of c[0..m-2] predict c[1..m-1] */
        size_t n = m - 1 - j < s->head_rows ? m - 1 - j : s->head_rows;
        gen_forward(&s->g, c + j, n);
        gen_rows_logits(&s->g, s->logits, s->normed, s->rstd, s->g.x, n);
        for (size_t r = 0; r < n; r++) {
            const real* row = s->logits + r * s->V;
            ll += row_logprob(row, row_stats(row, s->V), c[j + r + 1], greedy);
        }
    }
    return ll;
}

/* one item alone: its context through the cache (cut to the window where a choice needs it), each choice
   after it; it->ll, it->greedy and it->ctx_tokens */
static void score_one(McItem* it, McScorer* s, const int32_t* ctx, size_t n_ctx, const int32_t* const* cont,
                      const size_t* n_cont, size_t n) {
    it->ctx_tokens = n_ctx;
    bool cached = false; /* the cache starts with the whole context and s->first is the logits after it */
    for (size_t k = 0; k < n; k++) {
        size_t total = n_ctx + n_cont[k];
        /* the model reads (context + continuation)[-(W+1):][:-1]: the context from `start` on */
        size_t start = total - 1 > s->W ? total - 1 - s->W : 0;
        if (start == 0 && cached && !s->no_sharing && gen_rewind(&s->g, n_ctx)) {
            s->shared++;
        } else {
            run_prefix(s, ctx + start, n_ctx - start); /* n_cont[k] <= W: at least one context token */
            cached = start == 0;
            s->unshared++;
        }
        it->ll[k] = score_continuation(s, cont[k], n_cont[k], &it->greedy[k]);
    }
}

static void item_view(McItemView* v, McItem* it, const McSet* set, size_t i) {
    const McSetItem* e = &set->item[i];
    v->ctx = set->tokens + e->ctx_at;
    v->n_ctx = e->ctx_len;
    v->n = e->n_choices;
    for (size_t k = 0; k < v->n; k++) {
        const McSetChoice* c = &set->choice[e->first + k];
        v->cont[k] = set->tokens + c->at;
        v->n_cont[k] = c->len;
        it->chars[k] = c->chars;
    }
    it->ctx_tokens = v->n_ctx;
}

/* The rows an item takes in a tree: its context once and each choice but its last token; without sharing
   the context again with every choice. 0 when it cannot run in one: a choice needs the context cut to the
   window, or the rows exceed the chunk. */
static size_t tree_rows(const McScorer* s, const McItemView* v) {
    if (!v->n_ctx) return 0;
    size_t rows = s->no_sharing ? 0 : v->n_ctx;
    for (size_t k = 0; k < v->n; k++) {
        if (v->n_ctx + v->n_cont[k] - 1 > s->W) return 0;
        rows += v->n_cont[k] - 1 + (s->no_sharing ? v->n_ctx : 0);
    }
    return rows <= s->chunk ? rows : 0;
}

/* n tokens into the tree at row at, each reading the prefix rows [pre_lo, pre_hi) and its segment from seg */
static size_t lay(McScorer* s, size_t at, const int32_t* tok, size_t n, size_t pre_lo, size_t pre_hi, size_t seg) {
    for (size_t j = 0; j < n; j++) {
        s->tree_tokens[at + j] = tok[j];
        s->tree[at + j] = (GenBranch){pre_lo, pre_hi, seg};
    }
    return at + n;
}

/* row `row` predicts token `target` of choice k of group item gi (k = MC_EVERY_CHOICE: the first token of each) */
static void score_row(McScorer* s, size_t row, size_t gi, int k, int32_t target) {
    s->score_rows[s->n_score++] = (McRow){.row = (uint32_t)row, .item = (uint32_t)gi, .choice = k, .target = target};
}

/* item v (group item gi) into the tree from row at; returns the row after it */
static size_t lay_item(McScorer* s, size_t at, size_t gi, const McItemView* v) {
    size_t c0 = at;
    if (!s->no_sharing) { /* the context, then each choice reading it */
        at = lay(s, at, v->ctx, v->n_ctx, 0, 0, c0);
        score_row(s, at - 1, gi, MC_EVERY_CHOICE, 0);
    }
    for (size_t k = 0; k < v->n; k++) {
        size_t r0 = at, m = v->n_cont[k];
        if (s->no_sharing) {
            at = lay(s, at, v->ctx, v->n_ctx, 0, 0, r0);
            score_row(s, at - 1, gi, (int)k, v->cont[k][0]);
        }
        at = s->no_sharing ? lay(s, at, v->cont[k], m - 1, 0, 0, r0)
                           : lay(s, at, v->cont[k], m - 1, c0, c0 + v->n_ctx, r0);
        for (size_t j = 0; j + 1 < m; j++) score_row(s, at - (m - 1) + j, gi, (int)k, v->cont[k][j + 1]);
    }
    return at;
}

/* the laid-out rows scored into items[gi]: the head on the rows that predict a token, MC_HEAD_ROWS_MAX at a time,
   their softmax statistics in parallel, then the log-probabilities summed in row order */
static void score_tree_rows(McScorer* s, McItem* items, McItemView* views) {
    size_t D = s->g.m->cfg.D, V = s->V;
    for (size_t r0 = 0; r0 < s->n_score; r0 += s->head_rows) {
        size_t n = s->n_score - r0 < s->head_rows ? s->n_score - r0 : s->head_rows;
        for (size_t r = 0; r < n; r++)
            memcpy(s->gathered + r * D, s->g.x + (size_t)s->score_rows[r0 + r].row * D, D * sizeof(real));
        gen_rows_logits(&s->g, s->logits, s->normed, s->rstd, s->gathered, n);
#pragma omp parallel for schedule(static)
        for (size_t r = 0; r < n; r++) s->stats[r] = row_stats(s->logits + r * V, V);
        for (size_t r = 0; r < n; r++) {
            const McRow* w = &s->score_rows[r0 + r];
            McItem* it = &items[w->item];
            const real* row = s->logits + r * V;
            if (w->choice != MC_EVERY_CHOICE) {
                it->ll[w->choice] += row_logprob(row, s->stats[r], w->target, &it->greedy[w->choice]);
                continue;
            }
            const McItemView* v = &views[w->item];
            for (size_t k = 0; k < v->n; k++) it->ll[k] += row_logprob(row, s->stats[r], v->cont[k][0], &it->greedy[k]);
        }
    }
}

void mc_score_items(McItem* out, McScorer* s, const McSet* set, size_t i0, size_t n) {
    McItemView* views = s->views;
    CHECK(i0 + n <= set->n, "mc: items %zu .. %zu of a set of %zu", i0, i0 + n, set->n);
    for (size_t i = 0; i < n;) {
        item_view(&views[0], &out[i], set, i0 + i);
        size_t rows = s->no_batching ? 0 : tree_rows(s, &views[0]);
        gen_reset(&s->g);
        if (!rows || !gen_tree_fits(&s->g, rows)) { /* alone, through the cache */
            score_one(&out[i], s, views[0].ctx, views[0].n_ctx, views[0].cont, views[0].n_cont, views[0].n);
            i++;
            continue;
        }
        size_t g = 1, total = rows; /* the group: the items that follow while they fit */
        while (i + g < n && g < MC_GROUP_ITEMS) {
            item_view(&views[g], &out[i + g], set, i0 + i + g);
            size_t more = tree_rows(s, &views[g]);
            if (!more || total + more > s->chunk || !gen_tree_fits(&s->g, total + more)) break;
            total += more;
            g++;
        }
        s->n_score = 0;
        size_t at = 0;
        for (size_t j = 0; j < g; j++) {
            at = lay_item(s, at, j, &views[j]);
            McItem* it = &out[i + j];
            for (size_t k = 0; k < views[j].n; k++) {
                it->ll[k] = 0;
                it->greedy[k] = true;
            }
            s->unshared += s->no_sharing ? views[j].n : 1; /* contexts run, and choices that read one run before */
            s->shared += s->no_sharing ? 0 : views[j].n - 1;
        }
        gen_forward_tree(&s->g, s->tree_tokens, at, s->tree);
        score_tree_rows(s, &out[i], views);
        s->trees++;
        i += g;
    }
}

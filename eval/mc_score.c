/* Multiple choice, the model side (eval/mc.h): the harness's encoding of a (context, choice) pair
   and the log-likelihood of the continuation through the KV cache, the context run once per item. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "eval/mc.h"

#define MC_CHUNK 256 /* rows per forward call: (MC_CHUNK, V) logits */

size_t mc_window(size_t window, size_t max_position_embeddings) {
    return window ? window : max_position_embeddings ? max_position_embeddings : MC_DEFAULT_WINDOW;
}

size_t mc_scorer_reals(const ModelConfig* cfg, size_t W) {
    size_t chunk = W < MC_CHUNK ? W : MC_CHUNK;
    return gen_arena_reals(cfg, W, chunk) + chunk * (cfg->V + cfg->D + 1) + cfg->V; /* logits, normed, rstd, first */
}

void mc_scorer_init(McScorer* s, const Model* m, const Tokenizer* tok, size_t W, const char* delimiter) {
    memset(s, 0, sizeof(*s));
    CHECK(W >= 2, "mc: a window of %zu tokens; at least 2", W);
    s->tok = tok;
    s->delimiter = delimiter;
    s->W = W;
    s->V = m->cfg.V;
    s->chunk = W < MC_CHUNK ? W : MC_CHUNK;
    gen_build(&s->g, m, W, s->chunk);
    tok_encoder_init(&s->enc, tok);
    s->logits = mallocCheck(mulCheck(s->chunk, s->V * sizeof(real), "mc logits"));
    s->normed = mallocCheck(s->chunk * m->cfg.D * sizeof(real));
    s->rstd = mallocCheck(s->chunk * sizeof(real));
    s->first = mallocCheck(s->V * sizeof(real));
}

void mc_scorer_free(McScorer* s) {
    gen_free(&s->g);
    tok_encoder_free(&s->enc);
    free(s->logits);
    free(s->normed);
    free(s->rstd);
    free(s->first);
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

/* log p(target) under the row's softmax, in double; *greedy when target is the row's argmax */
static double row_logprob(const real* row, size_t V, int32_t target, bool* greedy) {
    int32_t best = gen_argmax(row, V);
    double mx = row[best], sum = 1; /* exp(0) of the argmax itself */
    for (size_t v = 0; v < V; v++)
        if (v != (size_t)best) sum += exp((double)row[v] - mx);
    *greedy &= best == target;
    return (double)row[target] - mx - log(sum);
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
    double ll = row_logprob(s->first, s->V, c[0], greedy);
    for (size_t j = 0; j + 1 < m; j += s->chunk) { /* rows of c[0..m-2] predict c[1..m-1] */
        size_t n = m - 1 - j < s->chunk ? m - 1 - j : s->chunk;
        gen_forward(&s->g, c + j, n);
        gen_chunk_logits(&s->g, s->logits, s->normed, s->rstd, n);
        for (size_t r = 0; r < n; r++) ll += row_logprob(s->logits + r * s->V, s->V, c[j + r + 1], greedy);
    }
    return ll;
}

void mc_score_encoded(McItem* it, McScorer* s, const int32_t* ctx, size_t n_ctx, const int32_t* const* cont,
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

void mc_score(McItem* it, McScorer* s, const McRecord* r, const char* file, size_t line) {
    mc_encode(s, r, file, line);
    for (size_t k = 0; k < r->n_choices; k++) it->chars[k] = (double)mc_code_points(r->choice[k], strlen(r->choice[k]));
    mc_score_encoded(it, s, s->ctx, s->n_ctx, (const int32_t* const*)s->cont, s->n_cont, r->n_choices);
}

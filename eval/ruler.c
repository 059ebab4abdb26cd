/* RULER items sized to a tokenizer, their scores, greedy generation through the KV cache, and
   the JSON and prompt files build/eval writes (ruler.h, docs/ruler.md).
   Sizing: an item's token count grows with its haystack size n, so the largest n whose prompt
   fits (prompt tokens + tokens_to_generate <= length) is found by search: two probes give the
   tokens per unit, the estimate is bracketed by steps that double, and the bracket is bisected.
   The result fits and n + 1 does not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "eval/ruler_internal.h"

/* tokens of the item: the tokenizer's prefix, then the text's ids, into it->tokens */
static size_t item_tokens(RulerItem* it, TokEncoder* enc, bool keep) {
    size_t n_prefix;
    const int32_t* prefix = tok_prefix(enc->t, &n_prefix);
    enc->n_ids = 0;
    tok_push_ids(enc, prefix, n_prefix);
    tok_encode(enc, (const uint8_t*)it->text, it->text_len);
    if (keep) {
        free(it->tokens);
        it->tokens = mallocCheck(enc->n_ids * sizeof(int32_t));
        memcpy(it->tokens, enc->ids, enc->n_ids * sizeof(int32_t));
        it->n_tokens = enc->n_ids;
    }
    return enc->n_ids;
}

/* What one search sizes: the item's text at n units (or vt's example alone) in tokens */
typedef struct {
    const RulerSources* s;
    TokEncoder* enc;
    RulerTask t;
    size_t length, id, n_icl;
    uint64_t seed;
    bool icl; /* size vt's one-shot example instead of the item */
    RulerItem* it;
    TextBuf buf;
} Sizing;

static size_t tokens_at(Sizing* z, size_t n) {
    if (z->icl) {
        textbuf_clear(&z->buf);
        ruler_vt_icl_text(&z->buf, z->seed, z->id, n);
        z->enc->n_ids = 0;
        tok_encode(z->enc, (const uint8_t*)z->buf.s, z->buf.len);
        return z->enc->n_ids;
    }
    ruler_task_text(z->it, z->s, z->t, z->length, z->seed, z->id, n, z->n_icl);
    return item_tokens(z->it, z->enc, false);
}

/* the largest n >= lo with tokens_at(n) <= budget, given tokens_at(lo) <= budget */
static size_t largest_fit(Sizing* z, size_t lo, size_t budget) {
    size_t t_lo = tokens_at(z, lo), probe = lo + 16;
    size_t t_probe = tokens_at(z, probe);
    if (t_probe <= t_lo) return lo; /* no growth: the text does not depend on n */
    double per_unit = (double)(t_probe - t_lo) / 16.0;
    size_t guess = lo + (size_t)((double)(budget - t_lo) / per_unit);
    size_t hi;
    if (tokens_at(z, guess) <= budget) { /* step up until past the budget */
        lo = guess;
        for (size_t step = guess / 64 + 1;; step *= 2) {
            hi = lo + step;
            if (tokens_at(z, hi) > budget) break;
            lo = hi;
        }
    } else { /* step down until it fits */
        hi = guess;
        size_t low = lo;
        for (size_t step = guess / 64 + 1;; step *= 2) {
            lo = hi > low + step ? hi - step : low;
            if (lo == low || tokens_at(z, lo) <= budget) break;
            hi = lo;
        }
    }
    while (hi - lo > 1) { /* tokens_at(lo) fits, tokens_at(hi) does not */
        size_t mid = lo + (hi - lo) / 2;
        if (tokens_at(z, mid) <= budget) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* vt's example size, then the smallest item's tokens; dies when it does not fit */
static void size_start(Sizing* z, const char* opt) {
    size_t ttg = ruler_tokens_to_generate(z->t);
    CHECK(z->length > ttg, "%s: length %zu is too short for task '%s', which generates %zu tokens", opt, z->length,
          ruler_task_name(z->t), ttg);
    if (z->t == RULER_VT) {
        z->icl = true;
        size_t lo = ruler_min_haystack(RULER_VT);
        CHECK(tokens_at(z, lo) <= RULER_VT_ICL_TOKENS, "vt: the one-shot example exceeds %d tokens at its smallest",
              RULER_VT_ICL_TOKENS);
        z->n_icl = largest_fit(z, lo, RULER_VT_ICL_TOKENS);
        z->icl = false;
    }
    size_t need = tokens_at(z, ruler_min_haystack(z->t));
    CHECK(need + ttg <= z->length,
          "%s: length %zu is too short for task '%s': its fixed text with the smallest haystack takes %zu tokens "
          "and it generates %zu (at least %zu)",
          opt, z->length, ruler_task_name(z->t), need, ttg, need + ttg);
}

void ruler_item_build(RulerItem* it, const RulerSources* s, TokEncoder* enc, RulerTask t, size_t length, uint64_t seed,
                      size_t id, const char* opt) {
    Sizing z =
        {.s = s, .enc = enc, .t = t, .length = length, .id = id, .seed = seed, .it = it, .buf.what = "RULER example"};
    size_start(&z, opt);
    size_t n = largest_fit(&z, ruler_min_haystack(t), length - ruler_tokens_to_generate(t));
    ruler_task_text(it, s, t, length, seed, id, n, z.n_icl);
    item_tokens(it, enc, true);
    textbuf_free(&z.buf);
}

void ruler_item_with_haystack(RulerItem* out, const RulerSources* s, TokEncoder* enc, const RulerItem* it,
                              size_t haystack) {
    ruler_task_text(out, s, it->task, it->length, it->seed, it->id, haystack, it->haystack_icl);
    item_tokens(out, enc, true);
}

size_t ruler_max_length(const ModelConfig* cfg) {
    if (cfg->yarn_factor > 1) return (size_t)(cfg->yarn_factor * cfg->yarn_orig_max);
    return cfg->max_position_embeddings ? cfg->max_position_embeddings : SIZE_MAX;
}

void ruler_check_lengths(const RulerSources* s, const Tokenizer* tok, const bool on[RULER_N_TASKS],
                         const size_t* lengths, size_t n_lengths, size_t max_len, uint64_t seed, const char* opt) {
    TokEncoder enc;
    tok_encoder_init(&enc, tok);
    RulerItem it = {0};
    for (size_t j = 0; j < n_lengths; j++) {
        CHECK(lengths[j] <= max_len,
              "%s: length %zu is above what the model can address: %zu positions (max_position_embeddings, or "
              "the YaRN factor times original_max_position_embeddings)",
              opt, lengths[j], max_len);
        for (int t = 0; t < RULER_N_TASKS; t++) {
            if (!on[t]) continue;
            Sizing z = {.s = s,
                        .enc = &enc,
                        .t = (RulerTask)t,
                        .length = lengths[j],
                        .seed = seed,
                        .it = &it,
                        .buf.what = "RULER example"};
            size_start(&z, opt);
            textbuf_free(&z.buf);
        }
    }
    ruler_item_free(&it);
    tok_encoder_free(&enc);
}

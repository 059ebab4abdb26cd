/* Perplexity and synthetic-retrieval accuracy (see eval_tasks.h, docs/eval.md). */
#include "eval/eval_tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/check.h"
#include "common/clock.h"

void eval_perplexity(PplResult* r, Model* m, const TokenData* td, size_t max_windows) {
    size_t T = m->T;
    CHECK(m->B == 1, "eval_perplexity: the model must be built with B = 1 (got %zu)", m->B);
    CHECK(td->n_tokens >= T + 1, "perplexity: %zu tokens, fewer than one window of seq_len + 1 = %zu", td->n_tokens,
          T + 1);
    size_t nw = (td->n_tokens - 1) / T;
    if (max_windows && nw > max_windows) nw = max_windows;
    int32_t* tokens = mallocCheck(T * sizeof(int32_t));
    int32_t* targets = mallocCheck(T * sizeof(int32_t));
    double sum = 0; /* Σ -log p(target) over every scored token */
    size_t count = 0;
    for (size_t w = 0; w < nw; w++) {
        /* sequential order, one row per step: row w starts at stream position w T */
        token_data_rows(td, &(RowRequest){.order = ORDER_SEQUENTIAL, .step = w, .rows_per_step = 1, .n = 1, .T = T},
                        tokens, targets);
        Loss l = model_forward(m, &(Batch){.B = 1, .T = T, .tokens = tokens, .targets = targets});
        sum += l.loss * (double)l.n_valid;
        count += l.n_valid;
    }
    free(tokens);
    free(targets);
    r->windows = nw;
    r->tokens = count;
    r->nll = sum / (double)count;
    r->ppl = exp(r->nll);
}

size_t eval_prompt_len(const SyntheticConfig* syn, SynFamily f, size_t length) {
    size_t A = synthetic_answer_len(syn, f), need = synthetic_min_len(syn, f);
    /* the window holds the prompt and all answer tokens but the last: prompt + A - 1 */
    CHECK(length + 1 >= need,
          "length %zu is too short for family '%s': its items need at least %zu tokens "
          "(prompt + answer - 1, without filler)",
          length, synthetic_family_name(f), need - 1);
    return length + 1 - A;
}

double eval_chance(const SyntheticConfig* syn, SynFamily f) {
    return pow((double)syn->alphabet, -(double)synthetic_answer_len(syn, f));
}

static int same(const int32_t* a, const int32_t* b, size_t n) { return memcmp(a, b, n * sizeof(int32_t)) == 0; }

double eval_key_blind(const SyntheticConfig* syn, SynFamily f, const int32_t* prompt, size_t prompt_len,
                      const int32_t* answer) {
    SynIds id = synthetic_ids(syn);
    size_t kl = syn->key_len, vl = syn->value_len;
    if (f == SYN_TABLE) {
        /* the prompt ends QUERY key COL_j SEP: the reader knows the column, not the row */
        size_t col = (size_t)(prompt[prompt_len - 2] - id.col0);
        size_t rows = 0, hits = 0;
        for (size_t i = 0; i < prompt_len; i++) {
            if (prompt[i] != id.row) continue;
            size_t cell = i + 1 + kl + col * (1 + vl) + 1; /* ROW key (COL_c cell_c)*: cell of the column */
            CHECK(cell + vl <= prompt_len, "key-blind: table row at %zu runs past the prompt", i);
            rows++;
            hits += same(prompt + cell, answer, vl);
        }
        CHECK(rows > 0, "key-blind: no table rows in a table item");
        return (double)hits / (double)rows;
    }
    /* needles NEEDLE key SEP value; the answer is q values: an ordered choice of q
       distinct needles out of n, P(n, q) = n!/(n-q)! choices; those that spell the
       answer: Π_j (needles whose value is part j), exact since values are distinct */
    size_t q = synthetic_answer_len(syn, f) / vl, n = 0;
    size_t match[SYN_MAX_ITEMS] = {0};
    for (size_t i = 0; i < prompt_len; i++) {
        if (prompt[i] != id.needle) continue;
        const int32_t* val = prompt + i + 1 + kl + 1;
        CHECK(i + 2 + kl + vl <= prompt_len, "key-blind: needle at %zu runs past the prompt", i);
        n++;
        for (size_t j = 0; j < q; j++) match[j] += same(val, answer + j * vl, vl);
    }
    if (n < q) return 0;
    double p = 1;
    for (size_t j = 0; j < q; j++) p *= (double)match[j] / (double)(n - j);
    return p;
}

void eval_task(TaskResult* r, Generator* g, const SyntheticConfig* syn, SynFamily f, size_t length, size_t items,
               uint64_t seed, double depth, uint8_t* item_correct) {
    double t0 = now_s();
    memset(r, 0, sizeof(*r));
    r->family = f;
    r->length = length;
    r->items = items;
    r->prompt_len = eval_prompt_len(syn, f, length);
    r->answer_len = synthetic_answer_len(syn, f);
    r->chance = eval_chance(syn, f);
    CHECK(g->max_T >= length, "eval: the cache holds %zu tokens, length %zu needs them all", g->max_T, length);
    size_t P = r->prompt_len, A = r->answer_len;
    int32_t* prompt = mallocCheck(P * sizeof(int32_t));
    int32_t answer[SYN_MAX_ANSWER];
    double kb = 0;
    for (size_t i = 0; i < items; i++) {
        synthetic_item(syn, f, seed, i, P, depth, prompt, answer);
        gen_reset(g);
        const real* logits = gen_prefill(g, prompt, P);
        size_t ok = 0;
        for (size_t a = 0; a < A && !gen_stopping(g); a++) { /* greedy, each token fed back (not teacher-forced) */
            int32_t tok = gen_argmax(logits, g->m->cfg.V);
            ok += tok == answer[a];
            if (a + 1 < A) logits = gen_step(g, tok);
        }
        if (gen_stopping(g)) {
            r->stopped = true;
            r->items = i;
            break;
        }
        kb += eval_key_blind(syn, f, prompt, P, answer);
        r->tokens_correct += ok;
        r->correct += ok == A;
        if (item_correct) item_correct[i] = ok == A;
    }
    free(prompt);
    r->key_blind = r->items ? kb / (double)r->items : 0;
    r->seconds = now_s() - t0;
}

int eval_plan_from_json(EvalPlan* p, const cJSON* obj, const char* key, const SyntheticConfig* syn, size_t default_len,
                        char* err, size_t err_len) {
    memset(p, 0, sizeof(*p));
    for (int f = 0; f < SYN_N_FAMILIES; f++) p->family_on[f] = syn->weight[f] > 0;
    p->lengths[0] = default_len;
    p->n_lengths = 1;
    p->items = 50;
    p->seed = 1;
    if (!cJSON_IsObject(obj)) return set_err(err, err_len, "%s: expected an object", key);
    const cJSON* it;
    bool families = false, mc_keys = false;
    cJSON_ArrayForEach(it, obj) {
        const char* k = it->string;
        int mc = mc_plan_key(&p->mc, it, key, err, err_len);
        if (mc > 0) return mc;
        if (mc == 0) {
            mc_keys = true;
            continue;
        }
        if (!strcmp(k, "families")) {
            families = true;
            if (!cJSON_IsArray(it) || !it->child)
                return set_err(err, err_len, "%s.families: expected a non-empty list of family names", key);
            memset(p->family_on, 0, sizeof(p->family_on));
            const cJSON* e;
            cJSON_ArrayForEach(e, it) {
                int f = cJSON_IsString(e) ? synthetic_family_parse(e->valuestring) : -1;
                if (cJSON_IsString(e) && !strcmp(e->valuestring, "all")) {
                    for (int g = 0; g < SYN_N_FAMILIES; g++) p->family_on[g] = true;
                    continue;
                }
                if (f < 0)
                    return set_err(err, err_len, "%s.families: unknown family '%s' (all, %s)", key,
                                   cJSON_IsString(e) ? e->valuestring : "(not a string)", synthetic_family_list());
                p->family_on[f] = true;
            }
        } else if (!strcmp(k, "lengths")) {
            size_t n = cJSON_IsArray(it) ? (size_t)cJSON_GetArraySize(it) : 0;
            if (n == 0 || n > EVAL_MAX_LENGTHS)
                return set_err(err, err_len, "%s.lengths: expected a list of 1 to %d lengths in tokens", key,
                               EVAL_MAX_LENGTHS);
            size_t i = 0;
            for (const cJSON* e = it->child; e; e = e->next, i++) {
                if (!cJSON_IsNumber(e) || e->valuedouble < 1 || e->valuedouble > 1e9 ||
                    e->valuedouble != floor(e->valuedouble))
                    return set_err(err, err_len, "%s.lengths[%zu]: expected a positive integer (tokens)", key, i);
                p->lengths[i] = (size_t)e->valuedouble;
            }
            p->n_lengths = n;
        } else if (!strcmp(k, "items") || !strcmp(k, "seed")) {
            if (!cJSON_IsNumber(it) || it->valuedouble < (k[0] == 'i') || it->valuedouble > 1e15 ||
                it->valuedouble != floor(it->valuedouble))
                return set_err(err, err_len, "%s.%s: expected a%s integer", key, k,
                               k[0] == 'i' ? " positive" : " non-negative");
            if (k[0] == 'i') p->items = (size_t)it->valuedouble;
            else p->seed = (uint64_t)it->valuedouble;
        } else {
            return set_err(err, err_len,
                           "%s.%s: unknown key (families, lengths, items, seed, mc, mc_fields, mc_delimiter, mc_limit, "
                           "mc_window)",
                           key, k);
        }
    }
    if (mc_keys && !p->mc.n_files)
        return set_err(err, err_len, "%s: mc_fields, mc_delimiter, mc_limit or mc_window given without mc (the files)",
                       key);
    if (p->mc.n_files && !families) memset(p->family_on, 0, sizeof(p->family_on)); /* mc alone: no retrieval */
    if (!eval_plan_has_families(p) && !p->mc.n_files)
        return set_err(err, err_len, "%s.families: no family to score", key);
    return 0;
}

bool eval_plan_has_families(const EvalPlan* p) {
    bool any = false;
    for (int f = 0; f < SYN_N_FAMILIES; f++) any |= p->family_on[f];
    return any;
}

size_t eval_plan_sizes(const EvalPlan* p, const SyntheticConfig* syn, size_t* chunk) {
    size_t max_len = 0, max_prompt = 0;
    for (size_t j = 0; j < p->n_lengths; j++) {
        max_len = p->lengths[j] > max_len ? p->lengths[j] : max_len;
        for (int f = 0; f < SYN_N_FAMILIES; f++) {
            if (!p->family_on[f]) continue;
            size_t P = eval_prompt_len(syn, (SynFamily)f, p->lengths[j]); /* dies when too short */
            max_prompt = P > max_prompt ? P : max_prompt;
        }
    }
    *chunk = max_prompt < EVAL_PREFILL_CHUNK ? max_prompt : EVAL_PREFILL_CHUNK;
    return max_len;
}

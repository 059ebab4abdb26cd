/* Scoring RULER items and running them on a model (ruler.h): RULER's string_match_all and
   string_match_part on a postprocessed prediction, greedy generation through the KV cache,
   the mean per task and length with a percentile bootstrap interval over items, the JSON of
   the output contract, and the prompt files of --dump-prompts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/clock.h"
#include "common/utf8.h"
#include "eval/ruler_internal.h"
#include "eval/stats.h"

/* s lowercased as Python's str.lower does for text whose lowercase matters to ASCII references:
   ASCII letters, and the two characters whose lowercase holds an ASCII letter, KELVIN SIGN
   U+212A -> "k" and LATIN CAPITAL I WITH DOT U+0130 -> "i" U+0307. Other bytes are kept
   (their lowercase holds no ASCII letter, so no reference can match there). malloc'd. */
static char* lower_copy(const char* s) {
    size_t n = strlen(s);
    char* out = mallocCheck(n + n / 2 + 1); /* U+0130 grows from 2 bytes to 3 */
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0xE2 && (unsigned char)s[i + 1] == 0x84 && (unsigned char)s[i + 2] == 0xAA) {
            out[o++] = 'k';
            i += 2;
        } else if (c == 0xC4 && (unsigned char)s[i + 1] == 0xB0) {
            memcpy(out + o, "i\xCC\x87", 3);
            o += 3;
            i += 1;
        } else {
            out[o++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        }
    }
    out[o] = 0;
    return out;
}

/* how many refs are substrings of pred, case-insensitively */
static size_t refs_found(const char* pred, const char* const* refs, size_t n_refs) {
    CHECK(n_refs > 0, "RULER scoring: an item without references");
    char* p = lower_copy(pred);
    size_t found = 0;
    for (size_t i = 0; i < n_refs; i++) {
        char* r = lower_copy(refs[i]);
        found += strstr(p, r) != NULL;
        free(r);
    }
    free(p);
    return found;
}

double ruler_score_all(const char* pred, const char* const* refs, size_t n_refs) {
    return (double)refs_found(pred, refs, n_refs) / (double)n_refs;
}

double ruler_score_part(const char* pred, const char* const* refs, size_t n_refs) {
    return refs_found(pred, refs, n_refs) > 0 ? 1.0 : 0.0;
}

/* RULER's postprocess_pred: strip, every control character (0x00..0x1F) a newline, strip */
static void postprocess(char* s) {
    for (char* p = s; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != ' ') *p = '\n';
    size_t n = strlen(s), a = 0;
    while (n > 0 && ((unsigned char)s[n - 1] <= 0x20)) n--;
    while (a < n && (unsigned char)s[a] <= 0x20) a++;
    memmove(s, s + a, n - a);
    s[n - a] = 0;
}

/* the 95% interval of the mean item score: eval/stats.h's percentile bootstrap, as every mean score of
   build/eval */
static void bootstrap_ci(const RulerItemResult* items, size_t n, double* lo, double* hi) {
    if (n == 0) {
        *lo = *hi = 0;
        return;
    }
    double* x = mallocCheck((n + STATS_RESAMPLES) * sizeof(double));
    for (size_t i = 0; i < n; i++) x[i] = items[i].score;
    Interval ci = stats_bootstrap_mean(x, n, x + n);
    *lo = ci.lo;
    *hi = ci.hi;
    free(x);
}

/* up to max_new greedy tokens after the prompt, each fed back, stopping after eos (not kept);
   returns the count, or SIZE_MAX when g was stopped */
static size_t generate_greedy(Generator* g, const RulerItem* it, int32_t eos, int32_t* out, size_t max_new) {
    gen_reset(g);
    const real* logits = gen_prefill(g, it->tokens, it->n_tokens);
    size_t n = 0;
    for (size_t a = 0; a < max_new && !gen_stopping(g); a++) {
        int32_t tok = gen_argmax(logits, g->m->cfg.V);
        if (tok == eos) break;
        out[n++] = tok;
        if (a + 1 < max_new) logits = gen_step(g, tok);
    }
    return gen_stopping(g) ? SIZE_MAX : n;
}

void ruler_eval_task(RulerResult* r, Generator* g, const Tokenizer* tok, const RulerSources* s, RulerTask t,
                     size_t length, size_t items, uint64_t seed, const char* dump_dir) {
    double t0 = now_s();
    memset(r, 0, sizeof(*r));
    r->task = t;
    r->length = length;
    r->items = callocCheck(items ? items : 1, sizeof(RulerItemResult));
    size_t ttg = ruler_tokens_to_generate(t);
    CHECK(g->limit_T >= length, "RULER: the cache holds %zu tokens, length %zu needs them all", g->limit_T, length);
    TokEncoder enc;
    tok_encoder_init(&enc, tok);
    int32_t* gen = mallocCheck(ttg * sizeof(int32_t));
    uint8_t* text = NULL;
    size_t text_len = 0, text_cap = 0;
    RulerItem it = {0};
    for (size_t i = 0; i < items; i++) {
        ruler_item_build(&it, s, &enc, t, length, seed, i, "--lengths");
        if (dump_dir) ruler_dump_prompt(dump_dir, &it);
        size_t n = generate_greedy(g, &it, tok_eos(tok), gen, ttg);
        if (n == SIZE_MAX) {
            r->stopped = true;
            break;
        }
        text_len = 0;
        tok_decode(tok, gen, n, &text, &text_len, &text_cap);
        RulerItemResult* ir = &r->items[r->n++];
        ir->id = i;
        ir->prompt_tokens = it.n_tokens;
        ir->prediction = mallocCheck(3 * text_len + 1); /* a cut multi-byte character becomes U+FFFD, as in Python */
        utf8_lossy(text, text_len, ir->prediction);
        postprocess(ir->prediction);
        ir->n_refs = it.n_refs;
        memcpy(ir->refs, it.refs, sizeof(it.refs));
        const char* refs[RULER_MAX_REFS];
        for (size_t k = 0; k < it.n_refs; k++) refs[k] = it.refs[k];
        ir->score = ruler_score_all(ir->prediction, refs, it.n_refs);
        r->score += ir->score;
    }
    if (r->n) r->score /= (double)r->n;
    bootstrap_ci(r->items, r->n, &r->ci_lo, &r->ci_hi);
    ruler_item_free(&it);
    free(text);
    free(gen);
    tok_encoder_free(&enc);
    r->seconds = now_s() - t0;
}

void ruler_result_free(RulerResult* r) {
    for (size_t i = 0; i < r->n; i++) free(r->items[i].prediction);
    free(r->items);
    memset(r, 0, sizeof(*r));
}

/* obj[key], created as an empty object when absent */
static cJSON* object_at(cJSON* obj, const char* key) {
    cJSON* o = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!o) o = cJSON_AddObjectToObject(obj, key);
    CHECK(cJSON_IsObject(o), "RULER JSON: '%s' exists and is not an object", key);
    return o;
}

void ruler_result_json(cJSON* root, const RulerResult* r) {
    if (!cJSON_GetObjectItemCaseSensitive(root, "ruler_note")) cJSON_AddStringToObject(root, "ruler_note", RULER_NOTE);
    cJSON* task = object_at(object_at(root, "ruler"), ruler_task_name(r->task));
    char len[32];
    snprintf(len, sizeof(len), "%zu", r->length);
    cJSON_DeleteItemFromObjectCaseSensitive(task, len);
    cJSON* cell = cJSON_AddObjectToObject(task, len);
    cJSON_AddNumberToObject(cell, "n", (double)r->n);
    cJSON_AddNumberToObject(cell, "score", r->score);
    cJSON* ci = cJSON_AddArrayToObject(cell, "ci");
    cJSON_AddItemToArray(ci, cJSON_CreateNumber(r->ci_lo));
    cJSON_AddItemToArray(ci, cJSON_CreateNumber(r->ci_hi));
    cJSON_AddNumberToObject(cell, "tokens_to_generate", (double)ruler_tokens_to_generate(r->task));
    cJSON_AddNumberToObject(cell, "seconds", r->seconds);
    if (r->stopped) cJSON_AddBoolToObject(cell, "stopped", true);
    cJSON* arr = cJSON_AddArrayToObject(cell, "items");
    for (size_t i = 0; i < r->n; i++) {
        const RulerItemResult* ir = &r->items[i];
        cJSON* o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", (double)ir->id);
        cJSON_AddNumberToObject(o, "prompt_tokens", (double)ir->prompt_tokens);
        cJSON_AddStringToObject(o, "prediction", ir->prediction);
        cJSON* refs = cJSON_AddArrayToObject(o, "references");
        for (size_t k = 0; k < ir->n_refs; k++) cJSON_AddItemToArray(refs, cJSON_CreateString(ir->refs[k]));
        cJSON_AddNumberToObject(o, "score", ir->score);
        cJSON_AddItemToArray(arr, o);
    }
}

void ruler_dump_prompt(const char* dir, const RulerItem* it) {
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/%s_%zu_%zu.txt", dir, ruler_task_name(it->task), it->length, it->id);
    CHECK(n > 0 && (size_t)n < sizeof(path), "--dump-prompts: the path under '%s' is too long", dir);
    FILE* fp = fopenCheck(path, "wb");
    fwriteCheck(it->text, 1, it->text_len, fp, path);
    fcloseCheck(fp, path);
}

/* the seconds of one item of t at length: item 0 built, prefilled, generated and scored once */
static double item_seconds(Generator* g, const Tokenizer* tok, const RulerSources* s, RulerTask t, size_t length,
                           uint64_t seed) {
    RulerResult probe;
    ruler_eval_task(&probe, g, tok, s, t, length, 1, seed, NULL);
    double sec = probe.seconds;
    ruler_result_free(&probe);
    return sec;
}

size_t ruler_run(RulerResult* res, const Model* m, const Tokenizer* tok, const RulerSources* s,
                 const bool on[RULER_N_TASKS], const size_t* lengths, size_t n_lengths, size_t items, uint64_t seed,
                 const char* dump_dir) {
    size_t max_len = 0, n_on = 0, n = 0;
    for (size_t j = 0; j < n_lengths; j++) max_len = lengths[j] > max_len ? lengths[j] : max_len;
    for (int t = 0; t < RULER_N_TASKS; t++) n_on += on[t];
    Generator g;
    gen_build(&g, m, max_len, max_len < RULER_PREFILL_CHUNK ? max_len : RULER_PREFILL_CHUNK);
    printf("RULER: %zu task(s) x %zu length(s) x %zu items (%s)\n", n_on, n_lengths, items, RULER_NOTE);
    double eta = 0;
    for (size_t j = 0; j < n_lengths; j++) { /* one item per length, timed: the ETA before the run */
        int first = 0;
        while (!on[first]) first++;
        double sec = item_seconds(&g, tok, s, (RulerTask)first, lengths[j], seed);
        printf("  L=%-6zu about %.2f s per item (one %s item timed)\n", lengths[j], sec,
               ruler_task_name((RulerTask)first));
        eta += sec * (double)(n_on * items);
    }
    printf("  ETA %.0f s (%.1f min)\n", eta, eta / 60);
    fflush(stdout);
    for (int t = 0; t < RULER_N_TASKS; t++) {
        if (!on[t]) continue;
        for (size_t j = 0; j < n_lengths; j++) {
            RulerResult* r = &res[n++];
            ruler_eval_task(r, &g, tok, s, (RulerTask)t, lengths[j], items, seed, dump_dir);
            printf("  %-16s L=%-6zu %.3f [%.3f, %.3f] over %zu items (%.1f s)\n", ruler_task_name(r->task), r->length,
                   r->score, r->ci_lo, r->ci_hi, r->n, r->seconds);
            fflush(stdout);
            if (r->stopped) break;
        }
    }
    gen_free(&g);
    return n;
}

void ruler_print_table(const RulerResult* res, size_t n, const size_t* lengths, size_t n_lengths) {
    printf("\nRULER: string_match_all per task and length, mean [95%% bootstrap interval] (%s)\n", RULER_NOTE);
    printf("%-16s", "task");
    for (size_t j = 0; j < n_lengths; j++) printf("  L=%-19zu", lengths[j]);
    printf("\n");
    for (size_t i = 0; i < n; i += n_lengths) {
        printf("%-16s", ruler_task_name(res[i].task));
        for (size_t j = 0; j < n_lengths && i + j < n; j++)
            printf("  %.3f [%.3f,%.3f]  ", res[i + j].score, res[i + j].ci_lo, res[i + j].ci_hi);
        printf("\n");
    }
}

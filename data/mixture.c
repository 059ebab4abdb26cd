/* Weighted mixtures of token sources: parsing, the closed-form dealing of
   rows to sources and the rows themselves; the formulas are in mixture.h. */
#include "data/mixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h" /* set_err, DIE, CHECK, mallocCheck */
#include "common/hash.h"  /* mix_triple: (seed, ...) -> Rng seed */
#include "common/rng.h"   /* the shuffle's per-row generator */

#define MIX_DOMAIN 0x4D4958545552ull     /* "MIXTUR": the per-step rotation */
#define MIX_ROW_DOMAIN 0x4D4958524F57ull /* "MIXROW": a shuffled source's windows */

bool mixture_given(const cJSON* v) { return cJSON_IsArray(v) && v->child && cJSON_IsObject(v->child); }

/* one entry {"name", "files", "weight", "exhausted"}; at = "data.train[i]" */
static int parse_source(MixSource* s, const cJSON* e, const char* at, char* err, size_t len) {
    if (!cJSON_IsObject(e)) return set_err(err, len, "%s: expected an object {\"name\", \"files\", \"weight\"}", at);
    const cJSON *name = NULL, *files = NULL, *weight = NULL, *it;
    s->exhausted = MIX_WRAP;
    cJSON_ArrayForEach(it, e) {
        const char* k = it->string;
        if (!strcmp(k, "name")) name = it;
        else if (!strcmp(k, "files")) files = it;
        else if (!strcmp(k, "weight")) weight = it;
        else if (!strcmp(k, "exhausted")) {
            if (!cJSON_IsString(it) || (strcmp(it->valuestring, "wrap") && strcmp(it->valuestring, "stop")))
                return set_err(err, len, "%s.exhausted: expected \"wrap\" or \"stop\"", at);
            s->exhausted = strcmp(it->valuestring, "stop") ? MIX_WRAP : MIX_STOP;
        } else {
            return set_err(err, len, "%s.%s: unknown key (name, files, weight, exhausted)", at, k);
        }
    }
    if (!cJSON_IsString(name) || !name->valuestring[0] || strlen(name->valuestring) >= MIX_NAME_LEN)
        return set_err(err, len, "%s.name: expected a non-empty string of at most %d bytes", at, MIX_NAME_LEN - 1);
    strcpy(s->name, name->valuestring);
    if (!weight) s->weight = 1; /* a validation source needs no weight */
    else if (!cJSON_IsNumber(weight) || !(weight->valuedouble > 0) || !isfinite(weight->valuedouble))
        return set_err(err, len, "%s.weight: expected a finite number > 0 (source '%s')", at, s->name);
    else s->weight = weight->valuedouble;
    bool one = cJSON_IsString(files); /* one string is a list of one */
    size_t n = one ? 1 : cJSON_IsArray(files) ? (size_t)cJSON_GetArraySize(files) : 0;
    if (n == 0)
        return set_err(err, len, "%s.files: source '%s' has no files: give a list of paths or globs", at, s->name);
    s->files = callocCheck(n, sizeof *s->files);
    size_t i = 0;
    for (const cJSON* f = one ? files : files->child; i < n; f = f->next, i++) {
        if (!cJSON_IsString(f) || !f->valuestring[0])
            return set_err(err, len, "%s.files[%zu]: expected a non-empty string (source '%s')", at, i, s->name);
        s->files[i] = mallocCheck(strlen(f->valuestring) + 1);
        strcpy(s->files[i], f->valuestring);
        s->n_files = i + 1;
    }
    return 0;
}

int mixture_parse(Mixture* mx, const cJSON* list, const char* key, char* err, size_t len) {
    memset(mx, 0, sizeof *mx);
    if (!cJSON_IsArray(list)) return set_err(err, len, "%s: expected a list of sources", key);
    size_t n = (size_t)cJSON_GetArraySize(list);
    if (n == 0 || n > MIX_MAX_SOURCES)
        return set_err(err, len, "%s: expected 1 to %d sources, got %zu", key, MIX_MAX_SOURCES, n);
    char at[160];
    double total = 0;
    const cJSON* e = list->child;
    for (size_t i = 0; i < n; i++, e = e->next) {
        snprintf(at, sizeof at, "%s[%zu]", key, i);
        mx->n = i + 1; /* so that mixture_close frees what this entry allocated */
        if (parse_source(&mx->src[i], e, at, err, len)) return -1;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(mx->src[j].name, mx->src[i].name))
                return set_err(err, len, "%s.name: source name '%s' given twice (%s[%zu] has it too)", at,
                               mx->src[i].name, key, j);
        total += mx->src[i].weight;
    }
    /* weights near DBL_MAX overflow the sum: then divide by the largest first (shares as exact as before) */
    double scale = 1;
    if (!isfinite(total)) {
        for (size_t i = 0; i < n; i++) scale = fmax(scale, mx->src[i].weight);
        total = 0;
        for (size_t i = 0; i < n; i++) total += mx->src[i].weight / scale;
    }
    for (size_t i = 0; i < n; i++) mx->src[i].share = mx->src[i].weight / scale / total;
    return 0;
}

void mixture_open(Mixture* mx, const char* key, const char* format, size_t vocab_size, size_t T) {
    for (size_t k = 0; k < mx->n; k++) {
        MixSource* s = &mx->src[k];
        token_data_open(&s->data, (const char* const*)s->files, s->n_files, format, vocab_size);
        char what[128];
        snprintf(what, sizeof(what), "source '%s'", s->name);
        token_data_check_row(&s->data, key, what, T);
    }
}

void mixture_close(Mixture* mx) {
    for (size_t k = 0; k < mx->n; k++) {
        MixSource* s = &mx->src[k];
        if (s->data.files) token_data_close(&s->data);
        for (size_t i = 0; i < s->n_files; i++) free(s->files[i]);
        free(s->files);
    }
    memset(mx, 0, sizeof *mx);
}

/* C_j(G) for j = 0..k (all n when k = n - 1): the hierarchical deal of mixture.h */
static void counts(const Mixture* mx, uint64_t G, size_t k, uint64_t* c) {
    uint64_t rest = G;
    long double mass = 1; /* share of the sources not dealt yet */
    for (size_t j = 0; j <= k; j++) {
        if (j + 1 == mx->n) {
            c[j] = rest;
            break;
        }
        long double q = mx->src[j].share / mass;
        uint64_t cj = (uint64_t)floorl((long double)rest * q + 0.5L);
        c[j] = cj < rest ? cj : rest;
        rest -= c[j];
        mass -= mx->src[j].share;
        if (mass <= 0) mass = 0x1p-60L; /* rounding: the last shares sum to (almost) 0 */
    }
}

uint64_t mixture_count(const Mixture* mx, size_t k, uint64_t G) {
    uint64_t c[MIX_MAX_SOURCES];
    counts(mx, G, k, c);
    return c[k];
}

size_t mixture_slot(const Mixture* mx, uint64_t g, uint64_t* index) {
    uint64_t a[MIX_MAX_SOURCES], b[MIX_MAX_SOURCES];
    counts(mx, g, mx->n - 1, a);
    counts(mx, g + 1, mx->n - 1, b);
    for (size_t k = 0; k < mx->n; k++)
        if (b[k] > a[k]) {
            *index = a[k];
            return k;
        }
    DIE("mixture: slot %llu dealt to no source", (unsigned long long)g);
}

uint64_t mixture_pass(const Mixture* mx, size_t k, uint64_t G, size_t T) {
    uint64_t c = mixture_count(mx, k, G);
    if (c == 0) return 0;
    unsigned __int128 last = (unsigned __int128)(c - 1) * T; /* the first token of its last row */
    return 1 + (uint64_t)(last / mx->src[k].data.n_tokens);
}

void mixture_rows(const Mixture* mx, const RowRequest* rq, int32_t* tokens, int32_t* targets, uint8_t* src_of) {
    size_t R = rq->rows_per_step, row0 = rq->row0, n = rq->n, T = rq->T, step = rq->step;
    uint64_t seed = rq->seed;
    CHECK(row0 <= R && n <= R - row0, "rows %zu..%zu out of range: %zu rows per step", row0, row0 + n, R);
    uint64_t offset = mix_triple(MIX_DOMAIN, seed, step, 0) % R;
    for (size_t b = 0; b < n; b++) {
        uint64_t g = (uint64_t)step * R + (row0 + b + offset) % R, i;
        size_t k = mixture_slot(mx, g, &i);
        const TokenData* td = &mx->src[k].data;
        size_t N = td->n_tokens, start;
        if (rq->order == ORDER_SEQUENTIAL) {
            start = (size_t)((unsigned __int128)i * T % N);
        } else {
            Rng rng;
            rng_seed(&rng, mix_triple(MIX_ROW_DOMAIN, seed, k, i));
            start = (size_t)rng_below(&rng, N - T); /* [0, N - T - 1]: the window never wraps */
        }
        token_data_window(td, start, T, tokens + b * T, targets + b * T);
        if (src_of) src_of[b] = (uint8_t)k;
    }
}

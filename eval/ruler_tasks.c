/* RULER's eleven synthetic tasks (scripts/synthetic.yaml of NVIDIA/RULER), each a text for a
   given haystack size: the task's template with the context, then its answer prefix, as RULER's
   prepare.py joins them with the "base" model template (no chat template).
     niah_*  needles "One of the special magic {numbers|uuids} for {key} is: {value}." in a
             noise, essay or needle haystack; the question asks the values of one or more keys;
     vt      a chain VAR A = 12345, VAR B = VAR A, ... (4 hops) in noise, after a one-shot
             example of 3-letter variables; the answer is every variable of the chain;
     cwe     a numbered list where 10 words repeat 30 times and the rest 3 (6 and 1 below 4096
             tokens), after a one-shot example; the answer is the 10 common words;
     fwe     coded 6-letter words drawn with counts n k^-2 / zeta(2) by rank k, rank 1 being
             "..."; the answer is ranks 2 to 4.
   Two random streams per item: one seeded by (seed, task, id) for everything the haystack size
   does not change, drawn first and in the same order for every size; one seeded by (seed, task,
   id, size) for what it does (noise positions, distractor needles, list order).
   Also the task table: each task's name and tokens to generate, and task lists parsed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/hash.h"
#include "eval/ruler_internal.h"

static const char* const NAMES[RULER_N_TASKS] = {"niah_single_1",
                                                 "niah_single_2",
                                                 "niah_single_3",
                                                 "niah_multikey_1",
                                                 "niah_multikey_2",
                                                 "niah_multikey_3",
                                                 "niah_multivalue",
                                                 "niah_multiquery",
                                                 "vt",
                                                 "cwe",
                                                 "fwe"};
/* RULER's constants.py: niah 128, variable_tracking 30, common_words_extraction 120, freq_words_extraction 50 */
static const size_t TOKENS_TO_GENERATE[RULER_N_TASKS] = {128, 128, 128, 128, 128, 128, 128, 128, 30, 120, 50};

const char* ruler_task_name(RulerTask t) { return NAMES[t]; }
size_t ruler_tokens_to_generate(RulerTask t) { return TOKENS_TO_GENERATE[t]; }

int ruler_task_parse(const char* name) {
    for (int t = 0; t < RULER_N_TASKS; t++)
        if (!strcmp(name, NAMES[t])) return t;
    return -1;
}

const char* ruler_task_list(void) {
    return "niah_single_1, niah_single_2, niah_single_3, niah_multikey_1, niah_multikey_2, niah_multikey_3, "
           "niah_multivalue, niah_multiquery, vt, cwe, fwe";
}

int ruler_parse_tasks(const char* list, bool on[RULER_N_TASKS], char* err, size_t err_len) {
    memset(on, 0, RULER_N_TASKS * sizeof(bool));
    char name[64];
    for (const char* p = list;; p++) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof(name)) return set_err(err, err_len, "empty or overlong task name in '%s'", list);
        memcpy(name, p, n);
        name[n] = 0;
        int t = ruler_task_parse(name);
        if (!strcmp(name, "all")) {
            for (int k = 0; k < RULER_N_TASKS; k++) on[k] = true;
        } else if (t < 0) {
            return set_err(err, err_len, "unknown RULER task '%s' (all, %s)", name, ruler_task_list());
        } else {
            on[t] = true;
        }
        p += n;
        if (!*p) return 0;
    }
}

#define RULER_DOMAIN 0x52554C4552ull /* "RULER" */
#define NOISE "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."

typedef enum { HAY_NOISE, HAY_ESSAY, HAY_NEEDLE } Haystack;
typedef enum { NEEDLE_WORDS, NEEDLE_NUMBERS, NEEDLE_UUIDS } NeedleType;
typedef struct {
    Haystack hay;
    NeedleType k, v;
    size_t num_k, num_v, num_q;
} NiahSpec;

/* synthetic.yaml's niah_* entries, in RulerTask order */
static const NiahSpec NIAH[] = {
    {HAY_NOISE, NEEDLE_WORDS, NEEDLE_NUMBERS, 1, 1, 1},  {HAY_ESSAY, NEEDLE_WORDS, NEEDLE_NUMBERS, 1, 1, 1},
    {HAY_ESSAY, NEEDLE_WORDS, NEEDLE_UUIDS, 1, 1, 1},    {HAY_ESSAY, NEEDLE_WORDS, NEEDLE_NUMBERS, 4, 1, 1},
    {HAY_NEEDLE, NEEDLE_WORDS, NEEDLE_NUMBERS, 1, 1, 1}, {HAY_NEEDLE, NEEDLE_UUIDS, NEEDLE_UUIDS, 1, 1, 1},
    {HAY_ESSAY, NEEDLE_WORDS, NEEDLE_NUMBERS, 1, 4, 1},  {HAY_ESSAY, NEEDLE_WORDS, NEEDLE_NUMBERS, 1, 1, 4},
};
static const char* const TYPE_PLURAL[] = {"words", "numbers", "uuids"};
static const char* const TYPE_SINGULAR[] = {"word", "number", "uuid"};

#define VT_HOPS 4
#define CWE_COMMON 10
#define FWE_ZETA2 1.6449340668482264 /* zeta(2) = pi^2 / 6 */
#define FWE_MIN_WORDS 100            /* below it ranks 2..5 need not have distinct counts */

size_t ruler_min_haystack(RulerTask t) {
    if (t <= RULER_NIAH_MULTIQUERY) return NIAH[t].hay == HAY_ESSAY ? 1 : NIAH[t].num_k * NIAH[t].num_v;
    if (t == RULER_VT) return VT_HOPS + 1;
    return t == RULER_CWE ? CWE_COMMON : FWE_MIN_WORDS;
}

static int cmp_size(const void* a, const void* b) {
    size_t x = *(const size_t*)a, y = *(const size_t*)b;
    return (x > y) - (x < y);
}

static void rand_needle(Rng* rng, const RulerSources* s, NeedleType type, char* out) {
    if (type == NEEDLE_WORDS) ruler_rand_key_word(rng, s, out);
    else if (type == NEEDLE_NUMBERS) ruler_rand_number(rng, out);
    else ruler_rand_uuid(rng, out);
}

static bool among(const char* x, char (*list)[RULER_REF_LEN], size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(x, list[i])) return true;
    return false;
}

/* Noise or distractor-needle sentences with the needles placed before distinct sentences
   (random.sample(range(n), k)), one per line. The needle at sentence index i has depth i / n. */
static void line_context(TextBuf* out, RulerItem* it, const RulerSources* s, const NiahSpec* sp, Rng* hay,
                         char (*keys)[RULER_REF_LEN], size_t n_keys, size_t n) {
    size_t k = it->n_needles, at[RULER_MAX_NEEDLES];
    ruler_sample(hay, n, k, at);
    for (size_t j = 0; j < k; j++) it->depth[j] = (double)at[j] / (double)n;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < k; j++)
            if (at[j] == i) {
                textbuf_puts(out, it->needles[j]);
                textbuf_put(out, "\n", 1);
            }
        if (sp->hay == HAY_NOISE) {
            textbuf_puts(out, NOISE);
        } else { /* a distractor needle: its key is none of the asked ones */
            char key[RULER_REF_LEN], value[RULER_REF_LEN];
            do rand_needle(hay, s, sp->k, key);
            while (among(key, keys, n_keys));
            rand_needle(hay, s, sp->v, value);
            textbuf_printf(out, "One of the special magic %s for %s is: %s.", TYPE_PLURAL[sp->v], key, value);
        }
        if (i + 1 < n) textbuf_put(out, "\n", 1);
    }
}

/* the question's keys: "a", or "a, b, c, and d" */
static void put_query(TextBuf* out, char (*queries)[RULER_REF_LEN], size_t q) {
    for (size_t i = 0; i < q; i++) {
        if (i > 0) textbuf_puts(out, q > 1 && i + 1 == q ? ", and " : ", ");
        textbuf_puts(out, queries[i]);
    }
}

static void niah_text(RulerItem* it, TextBuf* out, const RulerSources* s, RulerTask t, Rng* rng, Rng* hay, size_t n) {
    const NiahSpec* sp = &NIAH[t];
    size_t nk = sp->num_k > sp->num_q ? sp->num_k : sp->num_q;
    char keys[RULER_MAX_NEEDLES][RULER_REF_LEN], values[RULER_MAX_NEEDLES][RULER_REF_LEN];
    size_t key_of[RULER_MAX_NEEDLES] = {0};
    it->n_needles = nk * sp->num_v;
    for (size_t a = 0; a < nk; a++) {
        do rand_needle(rng, s, sp->k, keys[a]);
        while (among(keys[a], keys, a));
        for (size_t b = 0; b < sp->num_v; b++) {
            size_t j = a * sp->num_v + b;
            do rand_needle(rng, s, sp->v, values[j]);
            while (among(values[j], values, j));
            key_of[j] = a;
        }
    }
    size_t order[RULER_MAX_NEEDLES]; /* the needles shuffled */
    ruler_sample(rng, it->n_needles, it->n_needles, order);
    for (size_t j = 0; j < it->n_needles; j++)
        snprintf(it->needles[j], RULER_NEEDLE_LEN, "One of the special magic %s for %s is: %s.", TYPE_PLURAL[sp->v],
                 keys[key_of[order[j]]], values[order[j]]);
    size_t asked[RULER_MAX_NEEDLES];
    ruler_sample(rng, nk, sp->num_q, asked);
    char queries[RULER_MAX_NEEDLES][RULER_REF_LEN];
    it->n_refs = 0;
    for (size_t i = 0; i < sp->num_q; i++) {
        strcpy(queries[i], keys[asked[i]]);
        for (size_t b = 0; b < sp->num_v; b++) strcpy(it->refs[it->n_refs++], values[asked[i] * sp->num_v + b]);
    }
    int depth_pct[RULER_MAX_NEEDLES];
    if (sp->hay == HAY_ESSAY) { /* RULER's 40 depths: round(linspace(0, 100, 40)), k of them, ascending */
        size_t pick[RULER_MAX_NEEDLES];
        ruler_sample(rng, 40, it->n_needles, pick);
        qsort(pick, it->n_needles, sizeof(size_t), cmp_size);
        for (size_t j = 0; j < it->n_needles; j++) {
            depth_pct[j] = (int)lround(100.0 * (double)pick[j] / 39.0);
            it->depth[j] = depth_pct[j] / 100.0;
        }
    }
    bool one = sp->num_q * sp->num_v == 1; /* RULER's template in the singular */
    const char* tv = one ? TYPE_SINGULAR[sp->v] : TYPE_PLURAL[sp->v];
    textbuf_printf(out, "%s special magic %s %s hidden within the following text. ", one ? "A" : "Some", tv,
                   one ? "is" : "are");
    textbuf_printf(out, "Make sure to memorize it. I will quiz you about the %s afterwards.\n", tv);
    if (sp->hay == HAY_ESSAY) {
        const char* needles[RULER_MAX_NEEDLES];
        for (size_t j = 0; j < it->n_needles; j++) needles[j] = it->needles[j];
        ruler_essay_context(out, s, n, needles, depth_pct, it->n_needles);
    } else {
        line_context(out, it, s, sp, hay, keys, nk, n);
    }
    textbuf_printf(out, "\nWhat %s special magic %s for ", one ? "is the" : "are all the", tv);
    put_query(out, queries, sp->num_q);
    textbuf_printf(out, " mentioned in the provided text? The special magic %s for ", tv);
    put_query(out, queries, sp->num_q);
    textbuf_printf(out, " mentioned in the provided text %s", one ? "is" : "are");
}

/* RULER's variable tracking template with its answer prefix */
static void vt_template_open(TextBuf* out) {
    textbuf_puts(out, "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n");
}
static void vt_template_close(TextBuf* out, const char* value) {
    textbuf_printf(out, "\nQuestion: Find all variables that are assigned the value %s in the text above.", value);
    textbuf_printf(out,
                   " Answer: According to the chain(s) of variable assignment in the text above, %d variables are "
                   "assigned the value %s, they are: ",
                   VT_HOPS + 1, value);
}

/* one chain of VT_HOPS + 1 distinct variables of len letters: "VAR A = value", then
   "VAR B = VAR A " (RULER's trailing space kept) */
typedef struct {
    char vars[VT_HOPS + 1][8];
    char lines[VT_HOPS + 1][32];
    char value[16];
} VtChain;

static void vt_chain(VtChain* c, Rng* rng, size_t len, const char* avoid_value) {
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i <= VT_HOPS; i++) {
        bool dup = true;
        while (dup) {
            ruler_rand_letters(rng, c->vars[i], len, 'A');
            dup = false;
            for (size_t j = 0; j < i; j++) dup |= !strcmp(c->vars[i], c->vars[j]);
        }
    }
    do snprintf(c->value, sizeof(c->value), "%d", 10000 + (int)rng_below(rng, 89999)); /* randint(10000, 99999) */
    while (avoid_value && !strcmp(c->value, avoid_value));
    snprintf(c->lines[0], sizeof(c->lines[0]), "VAR %s = %s", c->vars[0], c->value);
    for (size_t i = 1; i <= VT_HOPS; i++)
        snprintf(c->lines[i], sizeof(c->lines[i]), "VAR %s = VAR %s ", c->vars[i], c->vars[i - 1]);
}

/* n noise sentences with the chain's lines before sentences at distinct positions, in chain
   order, one per line; depth[i] = that position / n */
static void vt_context(TextBuf* out, const VtChain* c, Rng* hay, size_t n, double* depth) {
    size_t at[VT_HOPS + 1];
    ruler_sample(hay, n, VT_HOPS + 1, at);
    qsort(at, VT_HOPS + 1, sizeof(size_t), cmp_size);
    size_t next = 0;
    for (size_t i = 0; i < n; i++) {
        while (next <= VT_HOPS && at[next] == i) {
            if (depth) depth[next] = (double)i / (double)n;
            textbuf_puts(out, c->lines[next++]);
            textbuf_put(out, "\n", 1);
        }
        textbuf_puts(out, NOISE);
        if (i + 1 < n) textbuf_put(out, "\n", 1);
    }
}

/* streams of item (seed, t, id): the fixed one, and the one of haystack size n */
static void item_streams(Rng* rng, Rng* hay, uint64_t seed, RulerTask t, size_t id, size_t n) {
    rng_seed(rng, mix_triple(RULER_DOMAIN, seed, (uint64_t)t, id));
    if (hay) rng_seed(hay, mix_triple(RULER_DOMAIN ^ mix64(n), seed, (uint64_t)t, id));
}

/* RULER's one-shot example: the same task on 3-letter variables, with its answer after it */
void ruler_vt_icl_text(TextBuf* out, uint64_t seed, size_t id, size_t n_icl) {
    Rng rng, hay, main_rng;
    item_streams(&main_rng, NULL, seed, RULER_VT, id, 0);
    VtChain main_chain, c;
    vt_chain(&main_chain, &main_rng, 5, NULL);
    item_streams(&rng, &hay, seed ^ 0x49434Cull /* "ICL" */, RULER_VT, id, n_icl);
    vt_chain(&c, &rng, 3, main_chain.value);
    vt_template_open(out);
    vt_context(out, &c, &hay, n_icl, NULL);
    vt_template_close(out, c.value);
    for (size_t i = 0; i <= VT_HOPS; i++) textbuf_printf(out, " %s", c.vars[i]);
    textbuf_put(out, "\n", 1);
}

static void vt_text(RulerItem* it, TextBuf* out, Rng* rng, Rng* hay, uint64_t seed, size_t id, size_t n, size_t n_icl) {
    VtChain c;
    vt_chain(&c, rng, 5, NULL);
    it->n_refs = VT_HOPS + 1;
    it->n_needles = VT_HOPS + 1;
    for (size_t i = 0; i <= VT_HOPS; i++) {
        strcpy(it->refs[i], c.vars[i]);
        strcpy(it->needles[i], c.lines[i]);
    }
    ruler_vt_icl_text(out, seed, id, n_icl);
    textbuf_put(out, "\n", 1);
    vt_template_open(out);
    vt_context(out, &c, hay, n, it->depth);
    vt_template_close(out, c.value);
}

/* cwe's template with its answer prefix around a numbered list "1. w 2. w ..." */
static void cwe_list(TextBuf* out, const char* const* list, size_t n) {
    textbuf_puts(out, "Below is a numbered list of words. In these words, some appear more often than others. "
                      "Memorize the ones that appear most often.\n");
    for (size_t i = 0; i < n; i++) textbuf_printf(out, "%s%zu. %s", i ? " " : "", i + 1, list[i]);
    textbuf_puts(out, "\nQuestion: What are the 10 most common words in the above list? Answer: The top 10 words "
                      "that appear most often in the list are:");
}

/* n distinct words drawn one by one (the first CWE_COMMON are the common ones), each repeated
   common or rare times, the list shuffled by `order`; the example's answer after it when
   answer is true */
static void cwe_example(TextBuf* out, const RulerSources* s, Rng* draw, Rng* order, size_t n, size_t common,
                        size_t rare, const char** picked) {
    unsigned char* used = callocCheck(s->n_words, 1);
    for (size_t i = 0; i < n; i++) {
        size_t w;
        do w = (size_t)rng_below(draw, s->n_words);
        while (used[w]);
        used[w] = 1;
        picked[i] = s->words[w];
    }
    free(used);
    size_t total = CWE_COMMON * common + (n - CWE_COMMON) * rare;
    const char** list = mallocCheck(total * sizeof(*list));
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t r = 0; r < (i < CWE_COMMON ? common : rare); r++) list[k++] = picked[i];
    ruler_shuffle(order, list, total, sizeof(*list));
    cwe_list(out, list, total);
    free(list);
}

static void cwe_text(RulerItem* it, TextBuf* out, const RulerSources* s, size_t length, Rng* rng, Rng* hay, size_t n) {
    CHECK(n <= s->n_words, "cwe: %zu distinct words asked, the word list has %zu", n, s->n_words);
    bool short_ctx = length < 4096; /* RULER's repeats below 4096 tokens: example 3/1, item 6/1 */
    const char* shot[40];
    size_t n_shot = short_ctx ? 20 : 40;
    cwe_example(out, s, rng, rng, n_shot, short_ctx ? 3 : 10, short_ctx ? 1 : 3, shot);
    textbuf_put(out, " ", 1);
    for (size_t i = 0; i < CWE_COMMON; i++) textbuf_printf(out, "%s%zu. %s", i ? " " : "", i + 1, shot[i]);
    textbuf_put(out, "\n", 1);
    const char** picked = mallocCheck(n * sizeof(*picked));
    cwe_example(out, s, rng, hay, n, short_ctx ? 6 : 30, short_ctx ? 1 : 3, picked);
    it->n_refs = CWE_COMMON;
    for (size_t i = 0; i < CWE_COMMON; i++) snprintf(it->refs[i], RULER_REF_LEN, "%s", picked[i]);
    free(picked);
}

/* fwe: a vocabulary of (length - tokens to generate) / 50 coded words, rank 0 being "...";
   rank k appears floor(n (k+1)^-2 / zeta(2)) times, in a shuffled text */
static void fwe_text(RulerItem* it, TextBuf* out, size_t length, Rng* rng, Rng* hay, size_t n) {
    size_t V = (length - ruler_tokens_to_generate(RULER_FWE)) / 50;
    CHECK(V >= 5, "fwe: length %zu gives a vocabulary of %zu coded words, fewer than 5", length, V);
    char(*vocab)[8] = mallocCheck(V * sizeof(*vocab));
    strcpy(vocab[0], "...");
    for (size_t i = 1; i < V; i++) {
        bool dup = true;
        while (dup) {
            ruler_rand_letters(rng, vocab[i], 6, 'a');
            dup = false;
            for (size_t j = 1; j < i; j++) dup |= !strcmp(vocab[i], vocab[j]);
        }
    }
    size_t total = 0;
    for (size_t k = 0; k < V; k++) total += (size_t)((double)n * pow((double)(k + 1), -2.0) / FWE_ZETA2);
    const char** words = mallocCheck((total ? total : 1) * sizeof(*words));
    size_t w = 0;
    for (size_t k = 0; k < V; k++)
        for (size_t c = (size_t)((double)n * pow((double)(k + 1), -2.0) / FWE_ZETA2); c > 0; c--) words[w++] = vocab[k];
    ruler_shuffle(hay, words, total, sizeof(*words));
    textbuf_puts(out, "Read the following coded text and track the frequency of each coded word. Find the three most "
                      "frequently appeared coded words. ");
    for (size_t i = 0; i < total; i++) textbuf_printf(out, "%s%s", i ? " " : "", words[i]);
    textbuf_puts(out, "\nQuestion: Do not provide any explanation. Please ignore the dots '....'. What are the three "
                      "most frequently appeared words in the above coded text? Answer: According to the coded text "
                      "above, the three most frequently appeared words are:");
    it->n_refs = 3;
    for (size_t i = 0; i < 3; i++) strcpy(it->refs[i], vocab[i + 1]);
    free(words);
    free(vocab);
}

void ruler_item_free(RulerItem* it) {
    free(it->text);
    free(it->tokens);
    memset(it, 0, sizeof(*it));
}

void ruler_task_text(RulerItem* it, const RulerSources* s, RulerTask t, size_t length, uint64_t seed, size_t id,
                     size_t n, size_t n_icl) {
    CHECK(n >= ruler_min_haystack(t), "%s: a haystack of %zu, fewer than the %zu it needs", ruler_task_name(t), n,
          ruler_min_haystack(t));
    TextBuf out = {.what = "RULER prompt"};
    Rng rng, hay;
    item_streams(&rng, &hay, seed, t, id, n);
    ruler_item_free(it);
    it->task = t;
    it->length = length;
    it->id = id;
    it->seed = seed;
    it->haystack = n;
    it->haystack_icl = t == RULER_VT ? n_icl : 0;
    if (t <= RULER_NIAH_MULTIQUERY) niah_text(it, &out, s, t, &rng, &hay, n);
    else if (t == RULER_VT) vt_text(it, &out, &rng, &hay, seed, id, n, n_icl);
    else if (t == RULER_CWE) cwe_text(it, &out, s, length, &rng, &hay, n);
    else fwe_text(it, &out, length, &rng, &hay, n);
    it->text = out.s;
    it->text_len = out.len;
}

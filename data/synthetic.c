/* Synthetic long-context rows and eval items (data/synthetic.h). An item is
   planned first (keys, values, which needle is asked), then laid out: filler
   from the Markov chain with the needles (or the table) inserted at drawn
   filler positions, then the query, then the answer. The plan is drawn before
   any length-dependent choice, so eval items with the same (seed, family,
   index) carry the same needles at every prompt length. */
#include "data/synthetic.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/check.h" /* DIE, CHECK */
#include "common/hash.h"  /* mix64, mix_triple */
#include "common/rng.h"   /* one Rng per row or item */
#include "data/tokens.h"  /* filler_file: token_data_at */

#define TRAIN_DOMAIN 0x53594E545241494Eull /* "SYNTRAIN" */
#define EVAL_DOMAIN 0x53594E4556414Cull    /* "SYNEVAL" */

static const char* const FAMILY_NAMES[SYN_N_FAMILIES] = {"single",     "multikey",   "multivalue",
                                                         "multiquery", "distractor", "table"};

/* The defaults (data/README.md): 64 ids in all, 2-token keys and values from
   32 symbols, 24 filler ids in an order-1 chain with 4 successors each */
void synthetic_defaults(SyntheticConfig* cfg) {
    memset(cfg, 0, sizeof *cfg);
    for (int f = 0; f < SYN_N_FAMILIES; f++) cfg->weight[f] = 1.0;
    cfg->first_id = 0;
    cfg->n_cols = 4;
    cfg->alphabet = 32;
    cfg->filler_vocab = 24;
    cfg->markov_order = 1;
    cfg->markov_branching = 4;
    cfg->filler_seed = 1234;
    cfg->key_len = 2;
    cfg->value_len = 2;
    cfg->n_needles = 4;
    cfg->n_queries = 2;
    cfg->n_values = 3;
    cfg->n_distractors = 3;
    cfg->table_rows = 4;
    cfg->answer_weight = 1.0;
}

/* marks NEEDLE SEP QUERY ROW, then columns, symbols, filler */
size_t synthetic_n_ids(const SyntheticConfig* cfg) { return 4 + cfg->n_cols + cfg->alphabet + cfg->filler_vocab; }

SynIds synthetic_ids(const SyntheticConfig* cfg) {
    int32_t b = (int32_t)cfg->first_id;
    SynIds id = {.needle = b, .sep = b + 1, .query = b + 2, .row = b + 3, .col0 = b + 4};
    id.alpha0 = id.col0 + (int32_t)cfg->n_cols;
    id.filler0 = id.alpha0 + (int32_t)cfg->alphabet;
    id.end = id.filler0 + (int32_t)cfg->filler_vocab;
    return id;
}

const char* synthetic_family_name(SynFamily f) { return (unsigned)f < SYN_N_FAMILIES ? FAMILY_NAMES[f] : "?"; }

const char* synthetic_family_list(void) {
    static char list[128];
    if (!list[0])
        for (int f = 0, n = 0; f < SYN_N_FAMILIES; f++)
            n += snprintf(list + n, sizeof(list) - (size_t)n, "%s%s", f ? ", " : "", FAMILY_NAMES[f]);
    return list;
}

int synthetic_family_parse(const char* name) {
    for (int f = 0; f < SYN_N_FAMILIES; f++)
        if (strcmp(name, FAMILY_NAMES[f]) == 0) return f;
    return -1;
}

/* alphabet^len, saturated at 2^32: how many distinct keys or values exist */
static size_t n_spellings(size_t alphabet, size_t len) {
    size_t n = 1;
    for (size_t i = 0; i < len && n < ((size_t)1 << 32); i++) n *= alphabet;
    return n;
}

#define CHECK_RANGE(field, lo, hi) \
    CHECK(cfg->field >= (size_t)(lo) && cfg->field <= (size_t)(hi), \
          "synthetic data: " #field " = %zu out of range [%zu, %zu]", cfg->field, (size_t)(lo), (size_t)(hi))

/* Every bound the generator relies on: the fixed-size arrays of Plan, enough
   distinct keys and values for rejection sampling to end fast, and the
   reserved range inside the vocab (and inside int32) */
void synthetic_validate(const SyntheticConfig* cfg, size_t vocab_size) {
    double total = 0;
    for (int f = 0; f < SYN_N_FAMILIES; f++) {
        CHECK(isfinite(cfg->weight[f]) && cfg->weight[f] >= 0,
              "synthetic data: weight of family "
              "'%s' is %g, expected >= 0",
              FAMILY_NAMES[f], cfg->weight[f]);
        total += cfg->weight[f];
    }
    CHECK(total > 0, "synthetic data: every family weight is 0; enable at least one family");
    CHECK(isfinite(cfg->answer_weight) && cfg->answer_weight > 0, "synthetic data: answer_weight is %g, expected > 0",
          cfg->answer_weight);
    CHECK_RANGE(key_len, 1, SYN_MAX_KEY);
    CHECK_RANGE(value_len, 1, SYN_MAX_KEY);
    CHECK_RANGE(n_cols, 1, SYN_MAX_COLS);
    CHECK_RANGE(alphabet, 2, 1u << 20);
    CHECK_RANGE(filler_vocab, 1, 1u << 20);
    CHECK_RANGE(markov_order, 1, 4);
    CHECK_RANGE(markov_branching, 1, cfg->filler_vocab);
    CHECK_RANGE(n_needles, 1, SYN_MAX_ITEMS);
    CHECK_RANGE(n_queries, 1, cfg->n_needles);
    CHECK_RANGE(n_values, 1, SYN_MAX_ITEMS);
    CHECK_RANGE(n_distractors, 1, SYN_MAX_ITEMS - 1);
    CHECK_RANGE(table_rows, 1, SYN_MAX_ITEMS);
    /* distinct keys and values are drawn by rejection: keep at least 2x headroom */
    size_t most = cfg->n_needles > cfg->table_rows ? cfg->n_needles : cfg->table_rows;
    if (cfg->n_values > most) most = cfg->n_values;
    if (cfg->n_distractors + 1 > most) most = cfg->n_distractors + 1;
    CHECK(n_spellings(cfg->alphabet, cfg->key_len) >= 2 * most &&
              n_spellings(cfg->alphabet, cfg->value_len) >= 2 * most,
          "synthetic data: alphabet^key_len and alphabet^value_len "
          "must be >= %zu (twice the most needles of one item); alphabet %zu, key_len %zu, "
          "value_len %zu",
          2 * most, cfg->alphabet, cfg->key_len, cfg->value_len);
    CHECK(cfg->key_len * (cfg->alphabet - 1) >= cfg->n_distractors,
          "synthetic data: only %zu keys "
          "differ from a key in one token, fewer than n_distractors %zu",
          cfg->key_len * (cfg->alphabet - 1), cfg->n_distractors);
    size_t n_ids = synthetic_n_ids(cfg);
    CHECK(cfg->first_id <= (size_t)INT32_MAX - n_ids && cfg->first_id + n_ids <= vocab_size,
          "synthetic data: the reserved ids [%zu, %zu) do not fit vocab_size %zu (the range holds "
          "4 marks + n_cols + alphabet + filler_vocab = %zu ids)",
          cfg->first_id, cfg->first_id + n_ids, vocab_size, n_ids);
}

static size_t block_len(const SyntheticConfig* cfg, SynFamily f) { /* one needle, or the whole table */
    if (f == SYN_TABLE) return cfg->table_rows * (1 + cfg->key_len + cfg->n_cols * (1 + cfg->value_len));
    return 2 + cfg->key_len + cfg->value_len; /* NEEDLE key SEP value */
}

/* blocks inserted into the haystack: needles, or the table as one block */
static size_t n_blocks(const SyntheticConfig* cfg, SynFamily f) {
    switch (f) {
    case SYN_MULTIKEY:
    case SYN_MULTIQUERY: return cfg->n_needles;
    case SYN_MULTIVALUE: return cfg->n_values;
    case SYN_DISTRACTOR: return cfg->n_distractors + 1;
    default: return 1;
    }
}

/* the query, from the first QUERY through the SEP the answer follows */
static size_t query_len(const SyntheticConfig* cfg, SynFamily f) {
    if (f == SYN_TABLE) return cfg->key_len + 3;                             /* QUERY key COL_j SEP */
    if (f == SYN_MULTIQUERY) return cfg->n_queries * (1 + cfg->key_len) + 1; /* (QUERY key)* SEP */
    return cfg->key_len + 2;                                                 /* QUERY key SEP */
}

size_t synthetic_answer_len(const SyntheticConfig* cfg, SynFamily f) {
    if (f == SYN_MULTIVALUE) return cfg->n_values * cfg->value_len;
    if (f == SYN_MULTIQUERY) return cfg->n_queries * cfg->value_len;
    return cfg->value_len;
}

size_t synthetic_min_len(const SyntheticConfig* cfg, SynFamily f) {
    return n_blocks(cfg, f) * block_len(cfg, f) + query_len(cfg, f) + synthetic_answer_len(cfg, f);
}

/* ---- planning an item: keys, values, what is asked ---- */

typedef struct {
    SynFamily family;
    size_t n;                                               /* blocks: needles, or 1 (the table) */
    int32_t key[SYN_MAX_ITEMS][SYN_MAX_KEY];                /* needle keys, or table row keys */
    int32_t val[SYN_MAX_ITEMS][SYN_MAX_KEY];                /* needle values */
    int32_t cell[SYN_MAX_ITEMS][SYN_MAX_COLS][SYN_MAX_KEY]; /* table cells */
    size_t asked[SYN_MAX_ITEMS], n_asked;                   /* queried needles (or table row), in query order */
    size_t col;                                             /* table: queried column */
} Plan;

/* len random symbols: a key, a value or a cell */
static void draw_word(Rng* rng, const SyntheticConfig* cfg, const SynIds* id, size_t len, int32_t* out) {
    for (size_t i = 0; i < len; i++) out[i] = id->alpha0 + (int32_t)rng_below(rng, cfg->alphabet);
}

/* is w (len tokens) equal to one of the first n rows of list? */
static int seen(int32_t list[][SYN_MAX_KEY], size_t n, const int32_t* w, size_t len) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(list[i], w, len * sizeof *w) == 0) return 1;
    return 0;
}

/* list[n] = a word not among list[0..n) (rejection; validate leaves 2x headroom) */
static void draw_distinct(Rng* rng, const SyntheticConfig* cfg, const SynIds* id, int32_t list[][SYN_MAX_KEY], size_t n,
                          size_t len) {
    do draw_word(rng, cfg, id, len, list[n]);
    while (seen(list, n, list[n], len));
}

/* Draw the content of an item of family f: keys, values (or cells) and what
   the query asks. Nothing here depends on the item's length. */
static void plan_item(Plan* p, const SyntheticConfig* cfg, const SynIds* id, SynFamily f, Rng* rng) {
    memset(p, 0, sizeof *p);
    p->family = f;
    p->n = n_blocks(cfg, f);
    size_t kl = cfg->key_len, vl = cfg->value_len;
    if (f == SYN_TABLE) {
        for (size_t r = 0; r < cfg->table_rows; r++) {
            draw_distinct(rng, cfg, id, p->key, r, kl);
            for (size_t c = 0; c < cfg->n_cols; c++) draw_word(rng, cfg, id, vl, p->cell[r][c]);
        }
        p->asked[0] = rng_below(rng, cfg->table_rows);
        p->n_asked = 1;
        p->col = rng_below(rng, cfg->n_cols);
        return;
    }
    /* needle i: its key by family, then a value unlike the item's other values */
    for (size_t i = 0; i < p->n; i++) {
        if (i == 0 || f == SYN_SINGLE || f == SYN_MULTIKEY || f == SYN_MULTIQUERY) {
            draw_distinct(rng, cfg, id, p->key, i, kl);
        } else if (f == SYN_MULTIVALUE) {
            memcpy(p->key[i], p->key[0], kl * sizeof(int32_t)); /* one key, many values */
        } else { /* distractor: the true key with one token changed, distinct from the others */
            do {
                memcpy(p->key[i], p->key[0], kl * sizeof(int32_t));
                size_t at = rng_below(rng, kl);
                int32_t other = (int32_t)rng_below(rng, cfg->alphabet - 1);
                int32_t was = p->key[0][at] - id->alpha0;
                p->key[i][at] = id->alpha0 + (other >= was ? other + 1 : other);
            } while (seen(p->key, i, p->key[i], kl));
        }
        draw_distinct(rng, cfg, id, p->val, i, vl); /* values distinct within the item */
    }
    /* multikey asks one needle, multiquery n_queries distinct ones, the rest needle 0 */
    size_t pool[SYN_MAX_ITEMS];
    for (size_t i = 0; i < p->n; i++) pool[i] = i;
    p->n_asked = f == SYN_MULTIQUERY ? cfg->n_queries : 1;
    for (size_t q = 0; q < p->n_asked; q++) {
        size_t j = (f == SYN_MULTIKEY || f == SYN_MULTIQUERY) ? q + rng_below(rng, p->n - q) : q;
        size_t t = pool[q];
        pool[q] = pool[j];
        pool[j] = t;
        p->asked[q] = pool[q];
    }
}

/* ---- laying it out ---- */

/* Item position pos goes to first[pos] (pos < first_len) and to
   second[pos - second_from] (pos >= second_from): training rows send x[t] to
   tokens[t] and targets[t-1]; eval items split into prompt and answer. */
typedef struct {
    int32_t* first;
    size_t first_len;
    int32_t* second;
    size_t second_from;
    size_t pos;
} Sink;

static void put(Sink* s, int32_t tok) {
    if (s->pos < s->first_len) s->first[s->pos] = tok;
    if (s->pos >= s->second_from) s->second[s->pos - s->second_from] = tok;
    s->pos++;
}

static void put_word(Sink* s, const int32_t* w, size_t len) {
    for (size_t i = 0; i < len; i++) put(s, w[i]);
}

/* Filler: a Markov chain of the given order over filler_vocab ids. State h
   (the last `order` ids) has `branching` successor slots, slot k holding
   mix64(hash(filler_seed, h) ^ k) mod filler_vocab; each step picks a slot
   uniformly. The table is the same for every row: only the walk is random. */
typedef struct {
    uint32_t hist[4]; /* the last `order` filler indices, oldest first */
} Chain;

static int32_t chain_next(Chain* c, const SyntheticConfig* cfg, const SynIds* id, Rng* rng) {
    uint64_t h = mix64(cfg->filler_seed);
    for (size_t i = 0; i < cfg->markov_order; i++) h = mix64(h ^ c->hist[i]);
    uint64_t slot = rng_below(rng, cfg->markov_branching);
    uint32_t next = (uint32_t)(mix64(h ^ (slot + 1) * 0xD1B54A32D192ED03ull) % cfg->filler_vocab);
    memmove(c->hist, c->hist + 1, (cfg->markov_order - 1) * sizeof *c->hist);
    c->hist[cfg->markov_order - 1] = next;
    return id->filler0 + (int32_t)next;
}

static void put_block(Sink* s, const Plan* p, const SyntheticConfig* cfg, const SynIds* id, size_t b) {
    if (p->family != SYN_TABLE) {
        put(s, id->needle);
        put_word(s, p->key[b], cfg->key_len);
        put(s, id->sep);
        put_word(s, p->val[b], cfg->value_len);
        return;
    }
    for (size_t r = 0; r < cfg->table_rows; r++) {
        put(s, id->row);
        put_word(s, p->key[r], cfg->key_len);
        for (size_t c = 0; c < cfg->n_cols; c++) {
            put(s, id->col0 + (int32_t)c);
            put_word(s, p->cell[r][c], cfg->value_len);
        }
    }
}

/* Write an item of `total` tokens into the sink; returns the start position
   of the asked block (the first asked needle, or the table). depth >= 0 pins
   that block at round(depth * n_filler) filler tokens into the haystack. */
static size_t lay_out(Sink* s, const Plan* p, const SyntheticConfig* cfg, const SynIds* id, Rng* rng, size_t total,
                      double depth) {
    /* depths: block b goes in after at[b] filler tokens; blocks that share a
       depth go in index order, one after the other */
    SynFamily f = p->family;
    size_t n_filler = total - synthetic_min_len(cfg, f);
    size_t at[SYN_MAX_ITEMS], order[SYN_MAX_ITEMS];
    for (size_t b = 0; b < p->n; b++) at[b] = rng_below(rng, n_filler + 1);
    size_t pinned = f == SYN_TABLE ? 0 : p->asked[0];
    if (depth >= 0) at[pinned] = (size_t)llround(fmin(depth, 1.0) * (double)n_filler);
    for (size_t b = 0; b < p->n; b++) { /* insertion sort by filler position, ties by index */
        size_t j = b;
        for (; j > 0 && at[order[j - 1]] > at[b]; j--) order[j] = order[j - 1];
        order[j] = b;
    }

    /* the haystack: filler tokens, with the blocks in place as their depth comes up; from the chain, or
       text positions text0 .. text0 + n_filler - 1 of filler_file */
    Chain chain;
    const TokenData* text = cfg->filler_text;
    size_t text0 = 0;
    if (text) {
        CHECK(text->n_tokens >= n_filler, "data.synthetic.filler_file '%s': %zu tokens, an item needs %zu of filler",
              cfg->filler_file, text->n_tokens, n_filler);
        text0 = rng_below(rng, text->n_tokens - n_filler + 1);
    } else {
        for (size_t i = 0; i < cfg->markov_order; i++) chain.hist[i] = (uint32_t)rng_below(rng, cfg->filler_vocab);
    }
    size_t next = 0, pinned_pos = 0;
    for (size_t i = 0; i <= n_filler; i++) {
        for (; next < p->n && at[order[next]] == i; next++) {
            if (order[next] == pinned) pinned_pos = s->pos;
            put_block(s, p, cfg, id, order[next]);
        }
        if (i < n_filler) put(s, text ? (int32_t)token_data_at(text, text0 + i) : chain_next(&chain, cfg, id, rng));
    }

    /* the query, then the answer */
    put(s, id->query);
    put_word(s, p->key[p->asked[0]], cfg->key_len);
    for (size_t q = 1; q < p->n_asked; q++) {
        put(s, id->query);
        put_word(s, p->key[p->asked[q]], cfg->key_len);
    }
    if (f == SYN_TABLE) put(s, id->col0 + (int32_t)p->col);
    put(s, id->sep);
    if (f == SYN_TABLE) put_word(s, p->cell[p->asked[0]][p->col], cfg->value_len);
    else if (f == SYN_MULTIVALUE)
        for (size_t b = 0; b < p->n; b++) put_word(s, p->val[order[b]], cfg->value_len);
    else
        for (size_t q = 0; q < p->n_asked; q++) put_word(s, p->val[p->asked[q]], cfg->value_len);
    CHECK(s->pos == total, "synthetic item: wrote %zu tokens, planned %zu", s->pos, total);
    return pinned_pos;
}

/* ---- the two entry points ---- */

/* synthetic_rows and synthetic_rows_weighted: the answer targets marked in answer_mask, in target_weights,
   or neither (both NULL) */
static void make_rows(const SyntheticConfig* cfg, const RowRequest* rq, int32_t* tokens, int32_t* targets,
                      uint8_t* answer_mask, real* target_weights) {
    size_t T = rq->T, row0 = rq->row0, n_rows = rq->n;
    CHECK(row0 <= rq->rows_per_step && n_rows <= rq->rows_per_step - row0,
          "rows %zu..%zu out of range: %zu rows per step", row0, row0 + n_rows, rq->rows_per_step);
    double total_w = 0;
    for (int f = 0; f < SYN_N_FAMILIES; f++) {
        total_w += cfg->weight[f];
        CHECK(cfg->weight[f] == 0 || T + 1 >= synthetic_min_len(cfg, (SynFamily)f),
              "synthetic family '%s' needs rows of at least %zu tokens, T + 1 = %zu (T = %zu)", FAMILY_NAMES[f],
              synthetic_min_len(cfg, (SynFamily)f), T + 1, T);
    }
    CHECK(total_w > 0, "synthetic data: every family weight is 0");
    SynIds id = synthetic_ids(cfg);

    /* rows are independent (one Rng each, from the global row index): parallel */

#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < n_rows; b++) {
        Rng rng;
        rng_seed(&rng, mix_triple(TRAIN_DOMAIN, rq->seed, rq->step, row0 + b));
        double u = rng_uniform(&rng) * total_w; /* the family, by weight */
        int f = 0;
        while (f < SYN_N_FAMILIES - 1 && (cfg->weight[f] == 0 || u >= cfg->weight[f])) u -= cfg->weight[f++];
        while (cfg->weight[f] == 0) f--; /* rounding left u past the last enabled family */
        Plan plan;
        plan_item(&plan, cfg, &id, (SynFamily)f, &rng);
        Sink s = {tokens + b * T, T, targets + b * T, 1, 0}; /* x[t] -> tokens[t], targets[t-1] */
        lay_out(&s, &plan, cfg, &id, &rng, T + 1, -1.0);
        size_t A = synthetic_answer_len(cfg, (SynFamily)f); /* the last A targets are the answer */
        if (answer_mask) {
            memset(answer_mask + b * T, 0, T - A);
            memset(answer_mask + b * T + T - A, 1, A);
        }
        if (target_weights)
            for (size_t t = 0; t < T; t++) target_weights[b * T + t] = t >= T - A ? (real)cfg->answer_weight : 1;
    }
}

void synthetic_rows(const SyntheticConfig* cfg, const RowRequest* rq, int32_t* tokens, int32_t* targets,
                    uint8_t* answer_mask) {
    make_rows(cfg, rq, tokens, targets, answer_mask, NULL);
}

void synthetic_rows_weighted(const SyntheticConfig* cfg, const RowRequest* rq, int32_t* tokens, int32_t* targets,
                             real* target_weights) {
    make_rows(cfg, rq, tokens, targets, NULL, target_weights);
}

size_t synthetic_item(const SyntheticConfig* cfg, SynFamily family, uint64_t seed, size_t index, size_t prompt_len,
                      double depth, int32_t* prompt, int32_t* answer) {
    CHECK((unsigned)family < SYN_N_FAMILIES, "unknown synthetic family %d", (int)family);
    size_t A = synthetic_answer_len(cfg, family);
    CHECK(prompt_len + A >= synthetic_min_len(cfg, family),
          "synthetic family '%s' needs a prompt "
          "of at least %zu tokens, asked for %zu",
          FAMILY_NAMES[family], synthetic_min_len(cfg, family) - A, prompt_len);
    SynIds id = synthetic_ids(cfg);
    Rng rng;
    rng_seed(&rng, mix_triple(EVAL_DOMAIN, seed, (uint64_t)family, index));
    Plan plan;
    plan_item(&plan, cfg, &id, family, &rng);
    Sink s = {prompt, prompt_len, answer, prompt_len, 0};
    return lay_out(&s, &plan, cfg, &id, &rng, prompt_len + A, depth);
}

void synthetic_print(const SyntheticConfig* cfg, FILE* out) {
    fprintf(out, "synthetic: weights");
    for (int f = 0; f < SYN_N_FAMILIES; f++) fprintf(out, " %s=%g", FAMILY_NAMES[f], cfg->weight[f]);
    fprintf(out,
            "; ids [%zu, %zu): 4 marks, %zu columns, alphabet %zu, filler %zu (order %zu, "
            "branching %zu, seed %llu); key_len %zu value_len %zu needles %zu queries %zu values %zu "
            "distractors %zu table_rows %zu\n",
            cfg->first_id, cfg->first_id + synthetic_n_ids(cfg), cfg->n_cols, cfg->alphabet, cfg->filler_vocab,
            cfg->markov_order, cfg->markov_branching, (unsigned long long)cfg->filler_seed, cfg->key_len,
            cfg->value_len, cfg->n_needles, cfg->n_queries, cfg->n_values, cfg->n_distractors, cfg->table_rows);
    if (cfg->filler_text)
        fprintf(out, "synthetic: the filler is text: windows of %s (%zu tokens, ids below %zu), not the chain\n",
                cfg->filler_file, cfg->filler_text->n_tokens, cfg->first_id);
}

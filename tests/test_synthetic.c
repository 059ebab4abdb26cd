/* Tests of the synthetic long-context generator (data/synthetic.c). An
   independent parser reads every row and eval item back (filler, needles,
   table rows, the query) and answers the query from the context alone; the
   answer must equal the generated answer and answer_mask must mark exactly
   those targets. Also: reproducibility, the data-parallel split invariant,
   ids inside the reserved range, the filler chain's branching, depth pinning,
   and the validation errors (in a re-executed child). Prints one OK / NOT OK
   line per check; exits non-zero on any failure. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h> /* waitpid */
#include <unistd.h>   /* fork, execv, pipe */

#include "common/check.h"
#include "tests/testutil.h"
#include "data/synthetic.h"

/* ---- the independent reader ---- */

typedef struct {
    size_t pos; /* where the block starts */
    int table;  /* 0: needle, 1: table row */
    const int32_t* key;
    const int32_t* val; /* needle value, or the first cell */
} Block;

typedef struct {
    Block blocks[64];
    size_t n_blocks, n_filler;
    const int32_t* qkey[16]; /* queried keys, in order */
    size_t n_q;
    int32_t qcol;        /* queried column id, or -1 */
    size_t query_at;     /* item position of the first QUERY */
    size_t answer_at;    /* item position of the first answer token */
    int32_t expect[256]; /* the answer read off the context */
    size_t n_expect;
    const char* err; /* NULL when the item parses */
} Parsed;

/* key/value symbols lie between the columns and the filler */
static int is_alpha(const SynIds* id, int32_t t) { return t >= id->alpha0 && t < id->filler0; }
static int is_word(const SynIds* id, const int32_t* w, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!is_alpha(id, w[i])) return 0;
    return 1;
}

/* Parse x[0..len) = context, query, answer; then answer the query from the context. */
static void parse(Parsed* p, const SyntheticConfig* cfg, const int32_t* x, size_t len) {
    SynIds id = synthetic_ids(cfg);
    size_t kl = cfg->key_len, vl = cfg->value_len, i = 0;
    memset(p, 0, sizeof *p);
    /* the context: filler, needles and table rows, until the first QUERY */
    p->qcol = -1;
    while (i < len && x[i] != id.query) {
        if (x[i] >= id.filler0 && x[i] < id.end) {
            p->n_filler++;
            i++;
            continue;
        }
        if (p->n_blocks == 64) {
            p->err = "too many blocks";
            return;
        }
        Block* b = &p->blocks[p->n_blocks++];
        b->pos = i;
        b->key = x + i + 1;
        if (x[i] == id.needle && i + 2 + kl + vl <= len && is_word(&id, x + i + 1, kl) && x[i + 1 + kl] == id.sep &&
            is_word(&id, x + i + 2 + kl, vl)) {
            b->val = x + i + 2 + kl;
            i += 2 + kl + vl;
        } else if (x[i] == id.row && i + 1 + kl + cfg->n_cols * (1 + vl) <= len && is_word(&id, x + i + 1, kl)) {
            b->table = 1;
            b->val = x + i + 2 + kl;
            for (size_t c = 0; c < cfg->n_cols; c++) {
                const int32_t* cell = x + i + 1 + kl + c * (1 + vl);
                if (cell[0] != id.col0 + (int32_t)c || !is_word(&id, cell + 1, vl)) {
                    p->err = "bad table row";
                    return;
                }
            }
            i += 1 + kl + cfg->n_cols * (1 + vl);
        } else {
            p->err = "unexpected token in the context";
            return;
        }
    }
    /* the query: (QUERY key)+, an optional column, SEP; the rest is the answer */
    p->query_at = i;
    while (i + 1 + kl <= len && x[i] == id.query && is_word(&id, x + i + 1, kl)) {
        p->qkey[p->n_q++] = x + i + 1;
        i += 1 + kl;
    }
    if (i < len && x[i] >= id.col0 && x[i] < id.col0 + (int32_t)cfg->n_cols) p->qcol = x[i++] - id.col0;
    if (p->n_q == 0 || i >= len || x[i] != id.sep) {
        p->err = "bad query";
        return;
    }
    p->answer_at = i + 1;
    /* the answer from the context: the cell, or the values of every exact key match */
    for (size_t q = 0; q < p->n_q; q++) {
        for (size_t b = 0; b < p->n_blocks; b++) {
            const Block* bl = &p->blocks[b];
            if (memcmp(bl->key, p->qkey[q], kl * sizeof(int32_t)) != 0 || bl->table != (p->qcol >= 0)) continue;
            const int32_t* v = bl->table ? bl->key + kl + (size_t)p->qcol * (1 + vl) + 1 : bl->val;
            memcpy(p->expect + p->n_expect, v, vl * sizeof(int32_t));
            p->n_expect += vl;
        }
    }
    if (p->n_expect != len - p->answer_at) {
        p->err = "the context does not determine an answer of the right length";
        return;
    }
    if (memcmp(p->expect, x + p->answer_at, p->n_expect * sizeof(int32_t)) != 0)
        p->err = "answer differs from the context's";
}

/* Which family does a parsed item look like? (the structural signature) */
static int family_of(const Parsed* p, const SyntheticConfig* cfg) {
    if (p->qcol >= 0) return SYN_TABLE;
    if (p->n_q > 1) return SYN_MULTIQUERY;
    size_t exact = 0, near = 0;
    for (size_t b = 0; b < p->n_blocks; b++) {
        size_t diff = 0;
        for (size_t k = 0; k < cfg->key_len; k++) diff += p->blocks[b].key[k] != p->qkey[0][k];
        exact += diff == 0;
        near += diff == 1;
    }
    if (exact > 1) return SYN_MULTIVALUE;
    if (near == p->n_blocks - 1 && p->n_blocks > 1) return SYN_DISTRACTOR;
    return p->n_blocks == 1 ? SYN_SINGLE : SYN_MULTIKEY;
}

/* ---- training rows ---- */

enum { R = 24, T = 256 };
static int32_t tok[R * T], tgt[R * T], tok2[R * T], tgt2[R * T], item[T + 1];
static uint8_t mask[R * T], mask2[R * T];

/* 20 steps of 24 rows: parse each row (x = the inputs plus the last target) */
static void test_rows(const SyntheticConfig* cfg) {
    size_t bad_parse = 0, bad_mask = 0, bad_range = 0, seen[SYN_N_FAMILIES] = {0};
    SynIds id = synthetic_ids(cfg);
    const char* first_err = "";
    for (size_t s = 0; s < 20; s++) {
        synthetic_rows(cfg, &(RowRequest){.seed = 9, .step = s, .rows_per_step = R, .n = R, .T = T}, tok, tgt, mask);
        for (size_t r = 0; r < R; r++) {
            memcpy(item, tok + r * T, T * sizeof *item);
            item[T] = tgt[r * T + T - 1];
            for (size_t t = 0; t < T; t++) {
                bad_mask += t + 1 < T && tgt[r * T + t] != tok[r * T + t + 1]; /* targets = next token */
                bad_range += tok[r * T + t] < id.needle || tok[r * T + t] >= id.end;
            }
            Parsed p;
            parse(&p, cfg, item, T + 1);
            if (p.err) {
                bad_parse++;
                first_err = p.err;
                continue;
            }
            seen[family_of(&p, cfg)]++;
            for (size_t t = 0; t < T; t++) bad_mask += mask[r * T + t] != (t + 1 >= p.answer_at);
        }
    }
    report(bad_parse == 0,
           "rows: 480 rows parse and every answer is read back from the context "
           "(%zu bad%s%s)",
           bad_parse, bad_parse ? ": " : "", first_err);
    report(bad_mask == 0, "rows: targets are the next tokens and answer_mask marks exactly the answer targets");
    report(bad_range == 0, "rows: every id inside the reserved range [%d, %d)", id.needle, id.end);
    int all = 1;
    for (int f = 0; f < SYN_N_FAMILIES; f++) all &= seen[f] > 0;
    report(all,
           "rows: every family appears (single %zu, multikey %zu, multivalue %zu, multiquery %zu, "
           "distractor %zu, table %zu)",
           seen[0], seen[1], seen[2], seen[3], seen[4], seen[5]);

    synthetic_rows(cfg, &(RowRequest){.seed = 9, .step = 3, .rows_per_step = R, .n = R, .T = T}, tok, tgt, mask);
    synthetic_rows(cfg, &(RowRequest){.seed = 9, .step = 3, .rows_per_step = R, .n = 10, .T = T}, tok2, tgt2, mask2);
    synthetic_rows(cfg, &(RowRequest){.seed = 9, .step = 3, .rows_per_step = R, .row0 = 10, .n = R - 10, .T = T},
                   tok2 + 10 * T, tgt2 + 10 * T, mask2 + 10 * T);
    report(!memcmp(tok, tok2, sizeof tok) && !memcmp(tgt, tgt2, sizeof tgt) && !memcmp(mask, mask2, sizeof mask),
           "rows: (seed, step) reproducible, and rows split over two calls = one call");
    synthetic_rows(cfg, &(RowRequest){.seed = 9, .step = 4, .rows_per_step = R, .n = R, .T = T}, tok2, tgt2, NULL);
    int step_differs = memcmp(tok, tok2, sizeof tok) != 0;
    synthetic_rows(cfg, &(RowRequest){.seed = 10, .step = 3, .rows_per_step = R, .n = R, .T = T}, tok2, tgt2, NULL);
    report(step_differs && memcmp(tok, tok2, sizeof tok) != 0, "rows: another step or seed gives other rows");
}

/* The filler chain has local structure: each filler id is followed by at most
   `branching` distinct filler ids, the same table in every row */
static void test_filler(const SyntheticConfig* cfg) {
    SynIds id = synthetic_ids(cfg);
    size_t F = cfg->filler_vocab, most = 0, pairs = 0;
    uint8_t* next = callocCheck(F * F, 1);
    for (size_t s = 0; s < 10; s++) {
        synthetic_rows(cfg, &(RowRequest){.seed = 1, .step = s, .rows_per_step = R, .n = R, .T = T}, tok, tgt, NULL);
        for (size_t i = 0; i + 1 < R * T; i++) {
            if (i % T == T - 1) continue;
            int32_t a = tok[i] - id.filler0, b = tok[i + 1] - id.filler0;
            if (a >= 0 && a < (int32_t)F && b >= 0 && b < (int32_t)F) {
                next[a * F + b] = 1;
                pairs++;
            }
        }
    }
    for (size_t a = 0; a < F; a++) {
        size_t n = 0;
        for (size_t b = 0; b < F; b++) n += next[a * F + b];
        if (n > most) most = n;
    }
    free(next);
    report(pairs > 10000 && most <= cfg->markov_branching && most >= 2,
           "filler: %zu filler pairs, "
           "at most %zu distinct successors per id (branching %zu)",
           pairs, most, cfg->markov_branching);
}

/* ---- eval items ---- */

/* a and b (n tokens each) hold the same chunks of len tokens, in any order */
static int same_chunks(const int32_t* a, const int32_t* b, size_t n, size_t len) {
    for (size_t i = 0; i < n; i += len) {
        int found = 0;
        for (size_t j = 0; j < n && !found; j += len) found = !memcmp(a + i, b + j, len * sizeof *a);
        if (!found) return 0;
    }
    return 1;
}

/* 50 items of each family at growing lengths and depth 0, 1 or drawn */
static void test_items(const SyntheticConfig* cfg) {
    static const size_t blocks[SYN_N_FAMILIES] = {1, 4, 3, 4, 4, 4}; /* with the defaults */
    SynIds id = synthetic_ids(cfg);
    int32_t prompt[1200], answer[SYN_MAX_ANSWER], x[1200 + SYN_MAX_ANSWER];
    for (int f = 0; f < SYN_N_FAMILIES; f++) {
        size_t A = synthetic_answer_len(cfg, (SynFamily)f), bad = 0, wrong_family = 0;
        const char* err = "";
        for (size_t idx = 0; idx < 50; idx++) {
            size_t L = 100 + 20 * idx;
            double depth = idx % 3 == 0 ? 0.0 : idx % 3 == 1 ? 1.0 : -1.0;
            size_t at = synthetic_item(cfg, (SynFamily)f, 5, idx, L, depth, prompt, answer);
            memcpy(x, prompt, L * sizeof *x);
            memcpy(x + L, answer, A * sizeof *x);
            Parsed p;
            parse(&p, cfg, x, L + A);
            if (p.err) {
                bad++;
                err = p.err;
                continue;
            }
            bad += p.answer_at != L;
            wrong_family += family_of(&p, cfg) != f || p.n_blocks != blocks[f];
            /* the returned position starts the asked block; depth 0: no filler before it;
               depth 1: no filler between it and the query */
            bad += x[at] != (f == SYN_TABLE ? id.row : id.needle);
            if (depth == 0.0)
                for (size_t i = 0; i < at; i++) bad += x[i] >= id.filler0;
            if (depth == 1.0)
                for (size_t i = at; i < L; i++) bad += x[i] >= id.filler0;
            /* the same index at another length: the same query and answer (multivalue:
               the same values, in the new context order) */
            int32_t prompt2[1400], answer2[SYN_MAX_ANSWER];
            synthetic_item(cfg, (SynFamily)f, 5, idx, L + 200, -1.0, prompt2, answer2);
            size_t q = L - p.query_at;
            bad += !same_chunks(answer, answer2, A, cfg->value_len) ||
                   (f != SYN_MULTIVALUE && memcmp(answer, answer2, A * sizeof *answer) != 0) ||
                   memcmp(prompt + p.query_at, prompt2 + L + 200 - q, q * sizeof *prompt) != 0;
        }
        report(bad == 0 && wrong_family == 0,
               "item %-10s: 50 items, prompts 100..1080 tokens, answer "
               "%zu tokens read back from the context, depth 0/1 pinned (%zu bad, %zu wrong shape%s%s)",
               synthetic_family_name((SynFamily)f), A, bad, wrong_family, *err ? ": " : "", err);
    }
    int32_t p1[300], a1[SYN_MAX_ANSWER], p2[300], a2[SYN_MAX_ANSWER];
    synthetic_item(cfg, SYN_SINGLE, 5, 7, 300, 0.5, p1, a1);
    synthetic_item(cfg, SYN_SINGLE, 5, 7, 300, 0.5, p2, a2);
    int same = !memcmp(p1, p2, sizeof p1) && !memcmp(a1, a2, 2 * sizeof *a1);
    synthetic_item(cfg, SYN_SINGLE, 5, 8, 300, 0.5, p2, a2);
    report(same && memcmp(p1, p2, sizeof p1) != 0, "item: (seed, index) reproducible, another index differs");
}

/* ---- validation errors, each in a re-executed child ---- */

/* run "--die ARG" in a fresh process (a forked child would inherit a dead
   OpenMP pool); OK when it exits 1 with `expect` in its first output line */
static void expect_death(const char* label, const char* arg, const char* expect) {
    char* argv[] = {"test_synthetic", "--die", (char*)arg, NULL};
    char err[2048];
    int code = run_self_captured(argv, err, sizeof err);
    char* nl = strchr(err, '\n');
    if (nl) *nl = '\0';
    report(code == 1 && strstr(err, expect), "%s: stderr \"%s\"", label, err);
}

/* the child: one bad call, chosen by name */
static void die_case(const char* which) {
    SyntheticConfig cfg;
    synthetic_defaults(&cfg);
    int32_t x[64], y[64];
    if (!strcmp(which, "vocab")) synthetic_validate(&cfg, 63);
    if (!strcmp(which, "offset")) {
        cfg.first_id = 1000;
        synthetic_validate(&cfg, 1063);
    }
    if (!strcmp(which, "key_len")) {
        cfg.key_len = 9;
        synthetic_validate(&cfg, 64);
    }
    if (!strcmp(which, "weights")) {
        memset(cfg.weight, 0, sizeof cfg.weight);
        synthetic_validate(&cfg, 64);
    }
    if (!strcmp(which, "alphabet")) {
        cfg.alphabet = 4;
        cfg.key_len = 1;
        synthetic_validate(&cfg, 64);
    }
    if (!strcmp(which, "short"))
        synthetic_rows(&cfg, &(RowRequest){.seed = 0, .step = 0, .rows_per_step = 1, .n = 1, .T = 63}, x, y, NULL);
}

int main(int argc, char** argv) {
    if (argc == 3 && strcmp(argv[1], "--die") == 0) {
        die_case(argv[2]);
        return 0;
    }
    SyntheticConfig cfg;
    synthetic_defaults(&cfg);
    synthetic_validate(&cfg, 64);
    report(synthetic_n_ids(&cfg) == 64, "defaults: 64 reserved ids, valid for vocab_size 64");
    synthetic_print(&cfg, stdout);
    test_rows(&cfg);
    test_filler(&cfg);
    test_items(&cfg);

    /* the same checks with the range moved up inside a GPT-2-sized vocab */
    SyntheticConfig moved = cfg;
    moved.first_id = 50000;
    synthetic_validate(&moved, 50304);
    test_rows(&moved);

    SyntheticConfig one = cfg; /* one family only */
    memset(one.weight, 0, sizeof one.weight);
    one.weight[SYN_DISTRACTOR] = 1;
    synthetic_rows(&one, &(RowRequest){.seed = 2, .step = 0, .rows_per_step = R, .n = R, .T = T}, tok, tgt, mask);
    size_t wrong = 0;
    for (size_t r = 0; r < R; r++) {
        memcpy(item, tok + r * T, T * sizeof *item);
        item[T] = tgt[r * T + T - 1];
        Parsed p;
        parse(&p, &one, item, T + 1);
        wrong += p.err != NULL || family_of(&p, &one) != SYN_DISTRACTOR;
    }
    report(wrong == 0, "weights: only distractor enabled gives only distractor rows (%zu wrong)", wrong);

    expect_death("vocab too small", "vocab", "do not fit vocab_size 63");
    expect_death("range past the vocab", "offset", "the reserved ids [1000, 1064) do not fit vocab_size 1063");
    expect_death("key_len too long", "key_len", "key_len = 9 out of range [1, 8]");
    expect_death("no family enabled", "weights", "every family weight is 0");
    expect_death("too few distinct keys", "alphabet", "alphabet^key_len and alphabet^value_len must be >= ");
    expect_death("rows too short for a family", "short", "synthetic family 'table' needs rows of at least");
    printf("test_synthetic: %d passed, %d failed\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}

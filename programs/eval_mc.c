/* build/eval --mc (programs/eval_mc.h). */
#include "programs/eval_mc.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"

void eval_mc_plan(EvalMc* p, const char* const* files, size_t n, const char* fields, const char* delimiter,
                  size_t window, size_t limit, const char* tokenizer, const CkptInfo* ci, const ModelConfig* cfg) {
    memset(p, 0, sizeof(*p));
    CHECK(n <= MC_MAX_FILES, "eval: --mc: %zu files, at most %d", n, MC_MAX_FILES);
    char err[256];
    if (mc_fields_parse(&p->fields, fields, err, sizeof err)) DIE("eval: %s", err);
    p->delimiter = delimiter;
    p->n_files = n;
    for (size_t i = 0; i < n; i++) {
        p->files[i] = files[i];
        mc_name(p->res[i].name, sizeof p->res[i].name, files[i]);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(p->res[i].name, p->res[j].name), "eval: --mc: '%s' and '%s' both have the name '%s'", files[j],
                  files[i], p->res[i].name);
        p->n_items[i] = mc_check_file(files[i], &p->fields, limit);
    }
    p->W = mc_window(window, cfg->max_position_embeddings);
    char buf[4200];
    p->tok = tok_load(cli_tokenizer(ci, tokenizer, true, buf, sizeof buf));
    CHECK(tok_vocab_size(p->tok) <= cfg->V, "eval: the tokenizer %s has ids up to %zu, the model's vocab_size is %zu",
          tok_name(p->tok), tok_vocab_size(p->tok) - 1, cfg->V);
    double bytes = (double)mc_scorer_reals(cfg, p->W) * sizeof(real);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    CHECK(pages <= 0 || bytes <= 0.8 * (double)pages * (double)page,
          "eval: --mc window of %zu tokens needs %.1f GiB for the KV cache and work space, more than 80%% of this "
          "machine's memory: give a smaller --mc-window",
          p->W, bytes / 1073741824.0);
}

void eval_mc_run(EvalMc* p, const Model* m, bool keep_items, bool no_sharing, bool no_batching) {
    McScorer s;
    mc_scorer_init(&s, m, p->tok, p->W, p->delimiter);
    s.no_sharing = no_sharing;
    s.no_batching = no_batching;
    printf("\nmultiple choice (lm-evaluation-harness rules): window %zu tokens, delimiter \"%s\", tokenizer %s\n", p->W,
           p->delimiter, tok_name(p->tok));
    printf("(acc and acc_norm with their stderr, as the harness reports it, and [95%% Wilson interval])\n");
    for (size_t i = 0; i < p->n_files; i++) {
        McResult* r = &p->res[i];
        size_t shared = s.shared, runs = s.unshared, trees = s.trees;
        mc_run_file(r, &s, p->files[i], &p->fields, p->n_items[i], keep_items, isatty(STDOUT_FILENO));
        printf("  mc %-20s %6zu items  acc %.4f ± %.4f [%.4f, %.4f]  acc_norm %.4f ± %.4f [%.4f, %.4f]  "
               "%.1f items/s (%zu context runs, %zu reused; %zu batched forwards)\n",
               r->name, r->n, r->acc, r->acc_stderr, r->acc_ci.lo, r->acc_ci.hi, r->acc_norm, r->acc_norm_stderr,
               r->acc_norm_ci.lo, r->acc_norm_ci.hi, (double)r->n / (r->seconds > 0 ? r->seconds : 1e-9),
               s.unshared - runs, s.shared - shared, s.trees - trees);
        fflush(stdout);
    }
    mc_scorer_free(&s);
}

static void add_interval(cJSON* o, const char* key, Interval ci) {
    cJSON_AddItemToObject(o, key, cJSON_CreateDoubleArray((double[]){ci.lo, ci.hi}, 2));
}

void eval_mc_json(cJSON* root, EvalMc* p) {
    cJSON* mc = cJSON_AddObjectToObject(root, "mc");
    for (size_t i = 0; i < p->n_files; i++) {
        McResult* r = &p->res[i];
        cJSON* t = cJSON_AddObjectToObject(mc, r->name);
        cJSON_AddStringToObject(t, "file", p->files[i]);
        cJSON_AddNumberToObject(t, "window", (double)p->W);
        cJSON_AddNumberToObject(t, "n", (double)r->n);
        cJSON_AddNumberToObject(t, "acc", r->acc);
        cJSON_AddNumberToObject(t, "acc_stderr", r->acc_stderr);
        add_interval(t, "acc_ci", r->acc_ci);
        cJSON_AddNumberToObject(t, "acc_norm", r->acc_norm);
        cJSON_AddNumberToObject(t, "acc_norm_stderr", r->acc_norm_stderr);
        add_interval(t, "acc_norm_ci", r->acc_norm_ci);
        cJSON_AddNumberToObject(t, "seconds", r->seconds);
        if (r->items) cJSON_AddItemToObject(t, "items", r->items);
        r->items = NULL;
    }
}

void eval_mc_free(EvalMc* p) {
    for (size_t i = 0; i < p->n_files; i++) cJSON_Delete(p->res[i].items);
    if (p->tok) tok_free(p->tok);
}

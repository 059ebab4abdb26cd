/* Multiple-choice scoring (eval/mc.h) against tools/mc_reference.py's PyTorch numbers on
   tests/fixtures/mc: every log-likelihood within relative 1e-4 (float32 against float64), and
   is_greedy, acc, acc_norm, context_tokens and the ids exactly; the same with the context run
   again for every choice (prefix sharing off); and the text rules the harness takes from Python
   (str.rstrip, len) on known strings. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "common/threads.h"
#include "programs/eval_mc.h"
#include "tests/testutil.h"

#define FIX "tests/fixtures/mc"

static void check_text_rules(void) {
    printf("Python's str.rstrip and len\n");
    struct {
        const char* s;
        size_t keep, points;
    } c[] = {
        {"abc  ", 3, 5},
        {"abc\n\t\r\v\f", 3, 8},
        {"abc\xc2\xa0", 3, 4},     /* U+00A0 no-break space */
        {"abc\xe3\x80\x80", 3, 4}, /* U+3000 ideographic space */
        {"ab\xe2\x80\x8b", 5, 3},  /* U+200B zero width space: not a space to Python */
        {"caf\xc3\xa9 ", 5, 5},    /* é is one code point of two bytes */
        {"   ", 0, 3},
        {"x\xff ", 2, 3},               /* an invalid byte counts one and is no space */
        {"\xf0\x9f\x99\x82\x1f", 4, 2}, /* U+1F642, then U+001F (unit separator: a space to Python) */
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        size_t n = strlen(c[i].s), keep = mc_rstrip_len(c[i].s, n), pts = mc_code_points(c[i].s, n);
        EXPECT(keep == c[i].keep && pts == c[i].points,
               "string %zu: rstrip keeps %zu bytes (Python %zu), len %zu (%zu)", i, keep, c[i].keep, pts, c[i].points);
    }
}

static const cJSON* get(const cJSON* o, const char* k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

/* the items build/eval would write against the reference's; returns the largest relative error */
static void compare_items(const cJSON* got, const cJSON* ref, const char* label) {
    size_t n = 0, same = 0, lls = 0;
    double* g = malloc(4096 * sizeof(double));
    double* r = malloc(4096 * sizeof(double));
    for (const cJSON *a = got->child, *b = ref->child; a && b; a = a->next, b = b->next, n++) {
        const cJSON *la = get(a, "loglikelihoods"), *lb = get(b, "loglikelihoods");
        for (const cJSON *x = la->child, *y = lb->child; x && y && lls < 4096; x = x->next, y = y->next, lls++) {
            g[lls] = x->valuedouble;
            r[lls] = y->valuedouble;
        }
        char* ga = cJSON_PrintUnformatted(get(a, "is_greedy"));
        char* gb = cJSON_PrintUnformatted(get(b, "is_greedy"));
        char* ia = cJSON_PrintUnformatted(get(a, "id"));
        char* ib = cJSON_PrintUnformatted(get(b, "id"));
        same += !strcmp(ga, gb) && !strcmp(ia, ib) && get(a, "acc")->valuedouble == get(b, "acc")->valuedouble &&
                get(a, "acc_norm")->valuedouble == get(b, "acc_norm")->valuedouble &&
                get(a, "context_tokens")->valuedouble == get(b, "context_tokens")->valuedouble &&
                get(a, "label")->valuedouble == get(b, "label")->valuedouble &&
                cJSON_GetArraySize(la) == cJSON_GetArraySize(lb);
        free(ga);
        free(gb);
        free(ia);
        free(ib);
    }
    EXPECT(n == (size_t)cJSON_GetArraySize(ref) && n == (size_t)cJSON_GetArraySize(got), "%s: %zu items, reference %d",
           label, n, cJSON_GetArraySize(ref));
    EXPECT(same == n, "%s: id, label, is_greedy, acc, acc_norm and context_tokens equal on %zu of %zu items", label,
           same, n);
    char what[160];
    snprintf(what, sizeof what, "%s: every choice's log-likelihood (float32 sums against float64)", label);
    expect_close_each(what, g, r, lls, 0, 1e-4);
    free(g);
    free(r);
}

static void check_reference(bool no_sharing, bool no_batching) {
    const char* label = no_batching ? "no batching" : no_sharing ? "no sharing" : "shared, batched";
    printf("build/eval --mc on %s/items.jsonl against tools/mc_reference.py: %s\n", FIX, label);
    CkptInfo ci;
    ModelConfig cfg;
    CliShared sh = {0};
    cli_checkpoint_config(&ci, &cfg, FIX "/ckpt", &sh);
    Model m;
    cli_load_model(&m, &cfg, &ci, 1, 1, false, NULL);
    EvalMc p;
    const char* files[] = {FIX "/items.jsonl"};
    eval_mc_plan(&p, files, 1, NULL, " ", 0, 0, NULL, &ci, &cfg);
    EXPECT(p.W == 40, "the window is max_position_embeddings: %zu", p.W);
    eval_mc_run(&p, &m, true, no_sharing, no_batching);
    char* text = file_read_all(FIX "/reference.json", NULL);
    cJSON* ref = cJSON_Parse(text);
    free(text);
    compare_items(p.res[0].items, get(ref, "items"), label);
    EXPECT(p.res[0].acc == get(ref, "acc")->valuedouble && p.res[0].acc_norm == get(ref, "acc_norm")->valuedouble,
           "acc %.4f acc_norm %.4f, reference %.4f %.4f", p.res[0].acc, p.res[0].acc_norm, get(ref, "acc")->valuedouble,
           get(ref, "acc_norm")->valuedouble);
    cJSON_Delete(ref);
    eval_mc_free(&p);
    model_free(&m);
    cli_ckpt_free(&ci);
}

int main(void) {
    cli_init("test_mc");
    threads_init(1);
    check_text_rules();
    check_reference(false, false);
    check_reference(true, false);
    check_reference(false, true);
    printf("%d passed, %d failed\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}

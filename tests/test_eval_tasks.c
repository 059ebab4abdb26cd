/* build/eval's measurements (eval/eval_tasks.h), float build:
   1. the key-blind reference: on the default generator its mean over items is
      1 (single), 1/4 (multikey), 1/3! (multivalue), 1/(4·3) (multiquery),
      1/4 (distractor) exactly, and about 1/4 for the table (cells may repeat);
      a table whose asked cell appears in two rows gives 1/2;
   2. eval_task's counts equal a recount through model_forward: each item's
      greedy answer recomputed on the full sequence (prompt + the answer so far).
      The LM head is restricted to the two alphabet symbols (rows ±w, the rest
      0), so about half the answer tokens are right and the counts are not 0;
   3. eval_perplexity equals exp of the mean loss of model_forward over the windows.
   Prints OK / NOT OK per check, exits non-zero on a failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/rng.h"
#include "common/threads.h"
#include "eval/eval_tasks.h"
#include "tests/testutil.h"

#ifdef REPOC_F64
#error "test_eval_tasks runs in the float build"
#endif

static void check_key_blind(void) {
    printf("key-blind reference on the default generator, 200 items per family\n");
    SyntheticConfig syn;
    synthetic_defaults(&syn);
    double expect[SYN_N_FAMILIES] = {1.0, 0.25, 1.0 / 6.0, 1.0 / 12.0, 0.25, 0.25};
    int32_t prompt[300], answer[SYN_MAX_ANSWER];
    for (int f = 0; f < SYN_N_FAMILIES; f++) {
        size_t P = eval_prompt_len(&syn, (SynFamily)f, 256);
        double sum = 0;
        for (size_t i = 0; i < 200; i++) {
            synthetic_item(&syn, (SynFamily)f, 3, i, P, -1.0, prompt, answer);
            sum += eval_key_blind(&syn, (SynFamily)f, prompt, P, answer);
        }
        double mean = sum / 200, e = expect[f];
        int ok = f == SYN_TABLE ? (mean >= e && mean < e + 0.01) : fabs(mean - e) < 1e-12;
        EXPECT(ok, "%-10s mean %.6f, expected %s%.6f", synthetic_family_name((SynFamily)f), mean,
               f == SYN_TABLE ? ">= " : "", e);
    }
    /* a table item, then the asked cell copied into another row: two rows answer */
    size_t P = eval_prompt_len(&syn, SYN_TABLE, 128);
    synthetic_item(&syn, SYN_TABLE, 3, 0, P, -1.0, prompt, answer);
    SynIds id = synthetic_ids(&syn);
    size_t col = (size_t)(prompt[P - 2] - id.col0), rows[SYN_MAX_ITEMS], n = 0;
    for (size_t i = 0; i < P; i++)
        if (prompt[i] == id.row) rows[n++] = i;
    size_t other = 0; /* a row whose asked cell is not the answer */
    for (size_t r = 0; r < n; r++) {
        const int32_t* cell = prompt + rows[r] + 1 + syn.key_len + col * (1 + syn.value_len) + 1;
        if (memcmp(cell, answer, syn.value_len * sizeof(int32_t))) other = rows[r];
    }
    double before = eval_key_blind(&syn, SYN_TABLE, prompt, P, answer);
    memcpy(prompt + other + 1 + syn.key_len + col * (1 + syn.value_len) + 1, answer, syn.value_len * sizeof(int32_t));
    double after = eval_key_blind(&syn, SYN_TABLE, prompt, P, answer);
    EXPECT(n == 4 && before == 0.25 && after == 0.5, "table: %zu rows, key-blind %.3f, with the cell in two rows %.3f",
           n, before, after);
}

/* greedy answer of one item through model_forward on the full window (m->T = length) */
static size_t recount_item(Model* m, const int32_t* prompt, size_t P, const int32_t* answer, size_t A, int32_t* seq) {
    size_t T = m->T, V = m->cfg.V, ok = 0;
    memcpy(seq, prompt, P * sizeof(int32_t));
    for (size_t t = P; t < T; t++) seq[t] = 0; /* causal: rows before t never read these */
    for (size_t a = 0; a < A; a++) {
        model_forward(m, &(Batch){.B = 1, .T = T, .tokens = seq});
        int32_t tok = gen_argmax(m->logits + (P - 1 + a) * V, V);
        ok += tok == answer[a];
        if (a + 1 < A) seq[P + a] = tok;
    }
    return ok;
}

static void check_task_counts(void) {
    printf("eval_task counts == a recount through model_forward\n");
    SyntheticConfig syn; /* two symbols: answers are guessable, so the counts are not 0 */
    synthetic_defaults(&syn);
    syn.alphabet = 2;
    syn.key_len = 3;
    syn.value_len = 3;
    ModelConfig cfg;
    model_config_default(&cfg);
    test_model_sizes(&cfg, 40, 32, 2, 4, 4, 48);
    cfg.pos[0] = POS_ROPE;
    cfg.pos[1] = POS_REPO;
    synthetic_validate(&syn, cfg.V);
    SynIds id = synthetic_ids(&syn);
    size_t length = 60, items = 30;
    Model m;
    model_build(&m, &cfg, 1, length, NULL, 0, false);
    model_init_weights(&m, &(ModelInit){.seed = 4, .std = 0.2});
    long head = tensor_table_find(&m.tensors, "lm_head.weight");
    CHECK(head >= 0, "no lm_head.weight");
    real* W = m.params + m.tensors.t[head].offset; /* rows alpha0 = w, alpha0+1 = -w, the rest 0 */
    for (size_t v = 0; v < cfg.V; v++)
        for (size_t d = 0; d < cfg.D; d++)
            W[v * cfg.D + d] = (int32_t)v == id.alpha0       ? W[v * cfg.D + d]
                               : (int32_t)v == id.alpha0 + 1 ? -W[id.alpha0 * cfg.D + d]
                                                             : 0;
    Generator g;
    gen_build(&g, &m, length, 16);
    SynFamily fams[] = {SYN_SINGLE, SYN_MULTIKEY, SYN_MULTIQUERY};
    int32_t prompt[64], answer[SYN_MAX_ANSWER], seq[64];
    uint8_t item_ok[64];
    CHECK(items <= 64, "items %zu > 64", items);
    for (size_t k = 0; k < 3; k++) {
        SynFamily f = fams[k];
        TaskResult r;
        eval_task(&r, &g, &syn, f, length, items, 9, -1.0, item_ok);
        size_t correct = 0, tokens = 0, per_item_same = 0;
        for (size_t i = 0; i < items; i++) {
            synthetic_item(&syn, f, 9, i, r.prompt_len, -1.0, prompt, answer);
            size_t ok = recount_item(&m, prompt, r.prompt_len, answer, r.answer_len, seq);
            tokens += ok;
            correct += ok == r.answer_len;
            per_item_same += item_ok[i] == (ok == r.answer_len);
        }
        EXPECT(per_item_same == items, "%-10s: item_correct agrees with the recount on %zu of %zu items",
               synthetic_family_name(f), per_item_same, items);
        EXPECT(r.correct == correct && r.tokens_correct == tokens && tokens > 0 &&
                   r.prompt_len + r.answer_len - 1 == length,
               "%-10s L=%zu: eval_task %zu exact, %zu tokens; recount %zu exact, %zu tokens (of %zu)",
               synthetic_family_name(f), length, r.correct, r.tokens_correct, correct, tokens, items * r.answer_len);
    }
    gen_free(&g);
    model_free(&m);
}

static void check_perplexity(void) {
    printf("eval_perplexity == exp(mean model_forward loss over the windows)\n");
    ModelConfig cfg;
    model_config_default(&cfg);
    test_model_sizes(&cfg, 50, 32, 2, 4, 4, 48);
    size_t T = 16, n = 16 * 7 + 5; /* 7 whole windows, 5 tokens left over */
    Model m;
    model_build(&m, &cfg, 1, T, NULL, 0, false);
    model_init_weights(&m, &(ModelInit){.seed = 5, .std = 0.3});
    char path[] = "/tmp/repoc_eval_ppl_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    uint16_t* ids = mallocCheck(n * sizeof(uint16_t));
    Rng rng;
    rng_seed(&rng, 2);
    for (size_t i = 0; i < n; i++) ids[i] = (uint16_t)rng_below(&rng, cfg.V);
    FILE* fp = fdopen(fd, "wb");
    fwriteCheck(ids, sizeof(uint16_t), n, fp, path);
    fcloseCheck(fp, path);
    TokenData td;
    const char* pat[] = {path};
    token_data_open(&td, pat, 1, "u16", cfg.V);
    PplResult r;
    eval_perplexity(&r, &m, &td, 0);
    double sum = 0; /* window w: inputs ids[wT .. wT+T-1], targets ids[wT+1 .. wT+T] */
    int32_t tok[16], tgt[16];
    for (size_t w = 0; w < 7; w++) {
        for (size_t t = 0; t < T; t++) {
            tok[t] = ids[w * T + t];
            tgt[t] = ids[w * T + t + 1];
        }
        sum += model_forward(&m, &(Batch){.B = 1, .T = T, .tokens = tok, .targets = tgt}).loss;
    }
    double ref = exp(sum / 7);
    EXPECT(r.windows == 7 && r.tokens == 7 * T && fabs(r.ppl - ref) <= 1e-9 * ref,
           "%zu windows, %zu tokens, ppl %.9f, recomputed %.9f (ln V = %.3f, nll %.4f)", r.windows, r.tokens, r.ppl,
           ref, log((double)cfg.V), r.nll);
    eval_perplexity(&r, &m, &td, 3);
    EXPECT(r.windows == 3 && r.tokens == 3 * T, "--max-windows 3: %zu windows", r.windows);
    token_data_close(&td);
    unlink(path);
    free(ids);
    model_free(&m);
}

int main(void) {
    threads_init(0);
    check_key_blind();
    check_task_counts();
    check_perplexity();
    printf("test_eval_tasks: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}

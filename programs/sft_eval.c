/* build/sft_eval CHECKPOINT FILE.jsonl: how well a checkpoint completes
   instruction records (data/jsonl.h: prompt/completion, text or pre-tokenized).
   Each record is one row of --seq-len tokens (padded; longer ones are left out
   and counted) read with teacher forcing: a target token is correct when it is
   the argmax of the logits before it, and a record is an exact match when all
   of its loss-carrying targets (the completion and EOS) are correct. Prints
   the mean loss over those targets, token accuracy and exact-match accuracy.
   A LoRA checkpoint (base + PEFT adapter) is read like any other. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "common/threads.h"
#include "data/jsonl.h"
#include "programs/cli.h"

static void usage(FILE* fp) {
    fprintf(fp,
            "usage: build/sft_eval CHECKPOINT FILE.jsonl [options]\n"
            "  CHECKPOINT         a Hugging Face checkpoint directory (a LoRA one has adapter_config.json), or a run\n"
            "                     directory (its newest checkpoint)\n"
            "  --tokenizer P      tokenizer.json or its directory (default: the checkpoint's, when it has one)\n"
            "  --seq-len T        row length (default: the training seq_len, else 256)\n"
            "  --threads N        OpenMP threads (default: all cores)\n");
}

int main(int argc, char** argv) {
    cli_init("sft_eval");
    const char *ckpt = NULL, *file = NULL, *tokenizer = NULL;
    size_t seq_len = 0;
    CliShared sh = {0}; /* --threads */
    static const char* const valued[] = {"--tokenizer", "--seq-len"};
    int seen[2] = {0};
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (a[0] != '-') {
            if (!ckpt) ckpt = a;
            else if (!file) file = a;
            else cli_bad_option("unexpected argument '%s'", a);
            continue;
        }
        const char* v = i + 1 < argc ? argv[i + 1] : NULL;
        i++;
        if (cli_shared_option(&sh, CLI_THREADS, a, v)) continue;
        if (CLI_VALUED_OPTION(a, v, valued, seen) == 0) tokenizer = v;
        else seq_len = cli_parse_size(a, v, 2, (size_t)1 << 20);
    }
    if (!ckpt || !file) cli_bad_option("expected CHECKPOINT and FILE.jsonl");
    CkptInfo ci;
    ModelConfig cfg;
    cli_checkpoint_config(&ci, &cfg, ckpt, &sh);
    size_t T = seq_len ? seq_len : ci.train_len ? ci.train_len : 256;
    char tok[4200];
    tokenizer = cli_tokenizer(&ci, tokenizer, false, tok, sizeof(tok)); /* id records need none */
    PackedRows p;
    packed_open(&p, &file, 1, tokenizer, cfg.V, T, true);

    threads_init(sh.threads);
    Model m;
    cli_load_model(&m, &cfg, &ci, 1, T, false, NULL);
    printf("%s\n", cli_products_line());
    size_t n_tok = 0, n_right = 0, n_exact = 0, n_docs = 0;
    double loss = 0;
    for (size_t r = 0; r < p.n_rows; r++) {
        int32_t* x = p.tokens + r * T;
        int32_t* y = p.targets + r * T;
        size_t n = 0;
        for (size_t t = 0; t < T; t++) n += y[t] != -1;
        if (!n) continue;
        Loss l = model_forward(&m, &(Batch){.B = 1, .T = T, .tokens = x, .targets = y});
        loss += l.loss * (double)l.n_valid;
        bool exact = true;
        for (size_t t = 0; t < T; t++) {
            if (y[t] == -1) continue;
            const real* z = m.logits + t * cfg.V;
            size_t best = 0;
            for (size_t v = 1; v < cfg.V; v++)
                if (z[v] > z[best]) best = v;
            bool ok = (int32_t)best == y[t];
            n_right += ok;
            exact &= ok;
        }
        n_tok += n;
        n_exact += exact;
        n_docs++;
    }
    CHECK(n_docs, "sft_eval: %s: no record with loss-carrying targets fits --seq-len %zu", file, T);
    printf("%s on %s: %zu records (%zu longer than seq_len %zu left out, %zu prompts skipped)\n", ci.dir, file, n_docs,
           p.n_too_long, T, p.n_skipped_prompt);
    printf("  completion loss %.4f  token accuracy %.4f (%zu/%zu)  exact match %.4f (%zu/%zu)\n", loss / (double)n_tok,
           (double)n_right / (double)n_tok, n_right, n_tok, (double)n_exact / (double)n_docs, n_exact, n_docs);
    model_free(&m);
    packed_close(&p);
    cli_ckpt_free(&ci);
    return 0;
}

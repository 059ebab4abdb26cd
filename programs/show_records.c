/* build/tokenize --show-records (show_records.h). Token i carries loss when the target of token i - 1 is not
   -1 (the target of a token is the label of the next one, data/jsonl.h); a run of such tokens is decoded as
   one piece and marked. */
#include "programs/show_records.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "data/jsonl.h"
#include "tokenizer/tokenizer.h"
#include "programs/cli.h"

/* row r of p: its document (doc id 0; the padding after it is the next id), the loss tokens marked */
static void show_row(const Tokenizer* t, const PackedRows* p, size_t r, size_t* totals, bool color) {
    size_t T = p->T;
    const int32_t* tok = p->tokens + r * T;
    const int32_t* tgt = p->targets + r * T;
    const int32_t* doc = p->doc_ids + r * T;
    size_t n = 0, n_loss = 0;
    while (n < T && doc[n] == 0) n++;
    for (size_t i = 1; i < n; i++) n_loss += tgt[i - 1] != -1;
    printf("== record %zu: %zu tokens, %zu carry loss\n", r + 1, n, n_loss);
    totals[0] += n;
    totals[1] += n_loss;
    uint8_t* buf = NULL;
    size_t len = 0, cap = 0;
    for (size_t i = 0; i < n;) {
        bool loss = i > 0 && tgt[i - 1] != -1;
        size_t j = i + 1;
        while (j < n && (tgt[j - 1] != -1) == loss) j++;
        len = 0;
        tok_decode_from(t, tok + i, j - i, i == 0, &buf, &len, &cap);
        if (loss) fputs(color ? "\033[4;32m" : "[[", stdout);
        fwrite(buf, 1, len, stdout);
        if (loss) fputs(color ? "\033[0m" : "]]", stdout);
        i = j;
    }
    printf("\n");
    free(buf);
}

void show_records(const char* tokenizer, const char* const* files, size_t n_files, size_t T) {
    Tokenizer* t = tok_load(tokenizer);
    PackedRows p;
    packed_open(&p, files, n_files, tokenizer, tok_vocab_size(t), T, true);
    bool color = isatty(1);
    size_t totals[2] = {0, 0}; /* tokens, loss tokens */
    for (size_t r = 0; r < p.n_rows; r++) show_row(t, &p, r, totals, color);
    cli_flush_stdout();
    fprintf(stderr,
            "show-records: %zu records (%zu prompt/completion, %zu text, %zu chat, %zu pre-tokenized): %zu tokens, "
            "%zu carry loss (%.1f%%)\n",
            p.n_records, p.n_prompt_completion, p.n_text, p.n_chat, p.n_pretokenized, totals[0], totals[1],
            totals[0] ? 100.0 * (double)totals[1] / (double)totals[0] : 0.0);
    if (p.n_too_long || p.n_skipped_prompt)
        fprintf(stderr,
                "show-records: %zu records longer than --seq-len %zu left out (the numbers count the records "
                "shown)\n",
                p.n_too_long + p.n_skipped_prompt, T);
    packed_close(&p);
    tok_free(t);
}

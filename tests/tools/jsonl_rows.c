/* build/tools/jsonl_rows TOKENIZER FILE.jsonl T: each record of FILE packed alone in a row of T (as
   evaluation packs them, data/jsonl.h), printed as one JSON line {"ids": [...], "loss": [...]}: the
   document's token ids and, per id, 1 when it carries loss (it is the target of the token before it).
   For comparing chat records with a reference tokenizer (tests/test_chat_reference.sh). */
#include <stdio.h>
#include <stdlib.h>

#include "common/check.h"
#include "data/jsonl.h"

int main(int argc, char** argv) {
    CHECK(argc == 4, "usage: jsonl_rows TOKENIZER FILE.jsonl T");
    const char* files[] = {argv[2]};
    size_t T = (size_t)strtoull(argv[3], NULL, 10);
    PackedRows p;
    packed_open(&p, files, 1, argv[1], (size_t)1 << 30, T, true);
    for (size_t r = 0; r < p.n_rows; r++) {
        const int32_t* tok = p.tokens + r * T;
        const int32_t* tgt = p.targets + r * T;
        const int32_t* doc = p.doc_ids + r * T;
        size_t n = 0;
        while (n < T && doc[n] == 0) n++; /* the document; padding is doc 1 */
        printf("{\"ids\": [");
        for (size_t i = 0; i < n; i++) printf("%s%d", i ? ", " : "", tok[i]);
        printf("], \"loss\": [");
        for (size_t i = 0; i < n; i++) printf("%s%d", i ? ", " : "", i > 0 && tgt[i - 1] != -1);
        printf("]}\n");
    }
    packed_close(&p);
    return 0;
}

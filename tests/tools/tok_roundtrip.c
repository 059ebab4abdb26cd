/* build/tools/tok_roundtrip TOKENIZER DOCS.jsonl: each document encoded alone (no
   BOS or EOS) and decoded through the tokenizer's decoder, compared byte for byte
   with its text. Prints the count of documents that come back exactly and the
   first that does not; exit status 1 when one does not. For the decode round
   trip of the real tokenizers (tests/test_tokenizer_node.sh). */
#include <stdio.h>

#include "tests/tok_docs.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    TokEncoder e;
    size_t docs, same, first_bad, bad_at;
    uint8_t* out;
    size_t cap;
} Trip;

static void trip(void* ctx, const uint8_t* s, size_t n) {
    Trip* r = ctx;
    r->e.n_ids = 0;
    tok_encode(&r->e, s, n);
    size_t len = 0;
    CHECK(tok_decode(r->e.t, r->e.ids, r->e.n_ids, &r->out, &len, &r->cap) == r->e.n_ids, "an id without a token");
    if (len == n && !memcmp(r->out, s, n)) r->same++;
    else if (r->first_bad == (size_t)-1) {
        size_t k = 0;
        while (k < n && k < len && r->out[k] == s[k]) k++;
        r->first_bad = r->docs, r->bad_at = k;
    }
    r->docs++;
}

int main(int argc, char** argv) {
    CHECK(argc == 3, "usage: tok_roundtrip TOKENIZER DOCS.jsonl");
    Tokenizer* t = tok_load(argv[1]);
    Trip r = {.first_bad = (size_t)-1};
    tok_encoder_init(&r.e, t);
    tok_docs_each(argv[2], trip, &r);
    printf("round trip: %zu/%zu documents decode to their text", r.same, r.docs);
    if (r.first_bad != (size_t)-1)
        printf("; the first that does not: document %zu, at byte %zu", r.first_bad, r.bad_at);
    printf("\n");
    tok_encoder_free(&r.e);
    free(r.out);
    tok_free(t);
    return r.same == r.docs ? 0 : 1;
}

/* Encoding and decoding (the order of the steps is in tokenizer/tokenizer.h). */
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "tokenizer/tok_internal.h"

void tok_encoder_init(TokEncoder* e, const Tokenizer* t) {
    memset(e, 0, sizeof *e);
    e->t = t;
}

void tok_encoder_free(TokEncoder* e) {
    free(e->ids);
    bpe_cache_free(e->cache);
    free(e->parts);
    free(e->ranks);
    memset(e, 0, sizeof *e);
}

/* the pre-token s[0..n) through steps k.. of the pre-tokenizer, then BPE */
static void run_steps(TokEncoder* e, const uint8_t* s, size_t n, size_t k) {
    const Tokenizer* t = e->t;
    if (k == t->n_steps) {
        bpe_encode_piece(e, s, n);
        return;
    }
    const PreStep* st = &t->steps[k];
    switch (st->kind) {
    case STEP_SPLIT_GPT2:
        for (size_t i = 0, j; i < n; i = j) {
            j = pretok_gpt2(s, n, i);
            run_steps(e, s + i, j - i, k + 1);
        }
        break;
    case STEP_SPLIT_CL100K:
        for (size_t i = 0, j; i < n; i = j) {
            j = pretok_cl100k(s, n, i, st->max_digits);
            run_steps(e, s + i, j - i, k + 1);
        }
        break;
    case STEP_DIGITS: /* runs of \p{N} and runs of the rest; with individual, each \p{N} alone */
        for (size_t i = 0, j; i < n; i = j) {
            uint32_t cp;
            size_t l;
            int digit = (uc_next(s + i, n - i, &cp, &l) & UC_NUMBER) != 0;
            j = i + l;
            if (!(digit && st->individual)) {
                while (j < n && ((uc_next(s + j, n - j, &cp, &l) & UC_NUMBER) != 0) == digit) j += l;
            }
            run_steps(e, s + i, j - i, k + 1);
        }
        break;
    case STEP_PREFIX_SPACE:
        if (s[0] == ' ') {
            run_steps(e, s, n, k + 1);
        } else { /* a fresh buffer: a later ByteLevel step may need its own */
            uint8_t local[512];
            uint8_t* buf = n + 1 <= sizeof local ? local : mallocCheck(n + 1);
            buf[0] = ' ';
            memcpy(buf + 1, s, n);
            run_steps(e, buf, n + 1, k + 1);
            if (buf != local) free(buf);
        }
        break;
    }
}

static void encode_segment(TokEncoder* e, const uint8_t* s, size_t n) {
    if (n) run_steps(e, s, n, 0);
}

void tok_encode(TokEncoder* e, const uint8_t* text, size_t len) {
    const Tokenizer* t = e->t;
    e->invalid_utf8 += tok_count_invalid_utf8(text, len);
    size_t seg = 0;
    if (t->n_added) {
        for (size_t i = 0; i < len;) {
            size_t n = 0;
            int32_t id = t->added_first[text[i]] ? added_longest(t, text + i, len - i, &n) : -1;
            if (id < 0) {
                i++;
                continue;
            }
            encode_segment(e, text + seg, i - seg);
            tok_push_ids(e, &id, 1);
            i += n;
            seg = i;
        }
    }
    encode_segment(e, text + seg, len - seg);
}

size_t tok_decode(const Tokenizer* t, const int32_t* ids, size_t n, uint8_t** out, size_t* len, size_t* cap) {
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (size_t)ids[i] >= t->V || !t->has[ids[i]]) return i;
        size_t l = t->off[ids[i] + 1] - t->off[ids[i]];
        if (*len + l > *cap) {
            size_t c = *cap ? *cap : 256;
            while (c < *len + l) c *= 2;
            uint8_t* p = realloc(*out, c);
            CHECK(p, "out of memory growing the decode buffer to %zu bytes", c);
            *out = p, *cap = c;
        }
        memcpy(*out + *len, t->bytes + t->off[ids[i]], l);
        *len += l;
    }
    return n;
}

size_t tok_vocab_size(const Tokenizer* t) { return t->V; }
const char* tok_name(const Tokenizer* t) { return t->name; }
int32_t tok_eos(const Tokenizer* t) { return t->eos; }

const int32_t* tok_prefix(const Tokenizer* t, size_t* n) {
    *n = t->n_prefix;
    return t->prefix;
}

const int32_t* tok_suffix(const Tokenizer* t, size_t* n) {
    *n = t->n_suffix;
    return t->suffix;
}

const uint8_t* tok_token_bytes(const Tokenizer* t, int32_t id, size_t* len) {
    if (id < 0 || (size_t)id >= t->V || !t->has[id]) return NULL;
    *len = t->off[id + 1] - t->off[id];
    return t->bytes + t->off[id];
}

bool tok_set_eos(Tokenizer* t, const char* content) {
    int32_t id = tok_lookup(t, (const uint8_t*)content, strlen(content));
    if (id < 0) return false;
    t->eos = id;
    return true;
}

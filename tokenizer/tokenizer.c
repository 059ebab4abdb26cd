/* Encoding (the order of the steps is in tokenizer/tokenizer.h): the two passes
   over added tokens, the normalizer between them, and the pre-tokenizer steps. */
#include <stdio.h>
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
    tok_regex_region_free(e->region);
    memset(e, 0, sizeof *e);
}

static void run_steps(TokEncoder* e, const uint8_t* s, size_t n, size_t k, int first);

/* A Split step's pieces as the library's NormalizedString::split makes them from
   the spans of the regex: the behavior folds each span into the piece before
   it or starts a new one; one piece is held back until the next span decides. */
typedef struct {
    TokEncoder* e;
    const uint8_t* s;
    size_t k;
    int first;
    const PreStep* st;
    size_t pa, pb; /* the piece held back, when has */
    int pm, has;   /* whether it is a match */
} SplitCtx;

static void split_emit(SplitCtx* c, size_t a, size_t b) {
    if (b > a) run_steps(c->e, c->s + a, b - a, c->k + 1, c->first && a == 0);
}

static void split_flush(SplitCtx* c) {
    if (c->has) split_emit(c, c->pa, c->pb);
    c->has = 0;
}

static void split_span(void* ctx, size_t a, size_t b, int m) {
    SplitCtx* c = ctx;
    if (m < 0) { /* an invalid UTF-8 byte: a piece of its own */
        split_flush(c);
        split_emit(c, a, b);
        return;
    }
    if (c->st->invert) m = !m;
    switch (c->st->behavior) {
    case SPLIT_ISOLATED: split_emit(c, a, b); return;
    case SPLIT_REMOVED:
        if (!m) split_emit(c, a, b);
        return;
    case SPLIT_CONTIGUOUS: /* runs of matches, and runs of the rest */
        if (c->has && m == c->pm) {
            c->pb = b;
            return;
        }
        break;
    case SPLIT_MERGED_PREVIOUS: /* a match joins the piece before it unless that was a match */
        if (c->has && m && !c->pm) {
            c->pb = b, c->pm = m;
            return;
        }
        break;
    case SPLIT_MERGED_NEXT: /* a match joins the piece after it unless that is a match */
        if (c->has && c->pm && !m) {
            split_emit(c, c->pa, b);
            c->has = 0;
            return;
        }
        break;
    }
    split_flush(c);
    c->pa = a, c->pb = b, c->pm = m, c->has = 1;
}

/* Metaspace: spaces to the replacement, the replacement before the text per
   prepend_scheme, then (split) a piece starting at each replacement */
static void metaspace(TokEncoder* e, const PreStep* st, const uint8_t* s, size_t n, size_t k, int first) {
    size_t spaces = 0;
    for (size_t i = 0; i < n; i++) spaces += s[i] == ' ';
    size_t cap = n + (spaces + 1) * st->rep_len;
    uint8_t local[1024];
    uint8_t* buf = cap <= sizeof local ? local : mallocCheck(cap);
    size_t m = 0;
    int starts = n >= st->rep_len && !memcmp(s, st->rep, st->rep_len);
    if (!(starts || s[0] == ' ') && (st->prepend == PREPEND_ALWAYS || (st->prepend == PREPEND_FIRST && first)))
        memcpy(buf, st->rep, st->rep_len), m = st->rep_len;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') memcpy(buf + m, st->rep, st->rep_len), m += st->rep_len;
        else buf[m++] = s[i];
    }
    size_t a = 0;
    if (st->split) {
        for (size_t i = 1; i + st->rep_len <= m; i++) {
            if (memcmp(buf + i, st->rep, st->rep_len)) continue;
            run_steps(e, buf + a, i - a, k + 1, first && a == 0);
            a = i;
            i += st->rep_len - 1;
        }
    }
    run_steps(e, buf + a, m - a, k + 1, first && a == 0);
    if (buf != local) free(buf);
}

/* the pre-token s[0..n) through steps k.. of the pre-tokenizer, then BPE; first: it starts the text */
static void run_steps(TokEncoder* e, const uint8_t* s, size_t n, size_t k, int first) {
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
            run_steps(e, s + i, j - i, k + 1, first && i == 0);
        }
        break;
    case STEP_SPLIT_CL100K:
        for (size_t i = 0, j; i < n; i = j) {
            j = pretok_cl100k(s, n, i, st);
            run_steps(e, s + i, j - i, k + 1, first && i == 0);
        }
        break;
    case STEP_SPLIT_O200K:
        for (size_t i = 0, j; i < n; i = j) {
            j = pretok_o200k(s, n, i, st);
            run_steps(e, s + i, j - i, k + 1, first && i == 0);
        }
        break;
    case STEP_SPLIT_REGEX: {
        SplitCtx c = {e, s, k, first, st, 0, 0, 0, 0};
        tok_regex_spans(st->re, &e->region, s, n, split_span, &c);
        split_flush(&c);
        break;
    }
    case STEP_METASPACE: metaspace(e, st, s, n, k, first); break;
    case STEP_DIGITS: /* runs of \p{N} and runs of the rest; with individual, each \p{N} alone */
        for (size_t i = 0, j; i < n; i = j) {
            uint32_t cp;
            size_t l;
            int digit = (uc_next(s + i, n - i, &cp, &l) & UC_NUMBER) != 0;
            j = i + l;
            if (!(digit && st->individual)) {
                while (j < n && ((uc_next(s + j, n - j, &cp, &l) & UC_NUMBER) != 0) == digit) j += l;
            }
            run_steps(e, s + i, j - i, k + 1, first && i == 0);
        }
        break;
    case STEP_PREFIX_SPACE:
        if (s[0] == ' ') {
            run_steps(e, s, n, k + 1, first);
        } else { /* a fresh buffer: a later ByteLevel step may need its own */
            uint8_t local[512];
            uint8_t* buf = n + 1 <= sizeof local ? local : mallocCheck(n + 1);
            buf[0] = ' ';
            memcpy(buf + 1, s, n);
            run_steps(e, buf, n + 1, k + 1, first);
            if (buf != local) free(buf);
        }
        break;
    }
}

/* s[0..n) split by the added tokens of trie `which`; the text between them goes on to
   normalization (pass 0) or to the pre-tokenizer (pass 1). first: s starts the text */
static void encode_pass(TokEncoder* e, int which, const uint8_t* s, size_t n, int first);

static void encode_piece(TokEncoder* e, int which, const uint8_t* s, size_t n, int first) {
    if (!n) return;
    if (which == 1) {
        run_steps(e, s, n, 0, first);
        return;
    }
    uint8_t* norm;
    size_t nn;
    if (tok_normalize(e->t, &e->region, s, n, &norm, &nn)) {
        encode_pass(e, 1, norm, nn, first);
        free(norm);
    } else {
        encode_pass(e, 1, s, n, first);
    }
}

static void encode_pass(TokEncoder* e, int which, const uint8_t* s, size_t n, int first) {
    size_t seg = 0, a, b;
    for (int32_t id; (id = added_next(e->t, which, s, n, seg, seg, &a, &b)) >= 0; seg = b) {
        encode_piece(e, which, s + seg, a - seg, first && seg == 0);
        tok_push_ids(e, &id, 1);
    }
    encode_piece(e, which, s + seg, n - seg, first && seg == 0);
}

void tok_encode(TokEncoder* e, const uint8_t* text, size_t len) {
    e->invalid_utf8 += tok_count_invalid_utf8(text, len);
    tok_regex_site(e->source, text, len);
    encode_pass(e, 0, text, len, 1);
    tok_regex_site(NULL, NULL, 0);
}

size_t tok_vocab_size(const Tokenizer* t) { return t->V; }
const char* tok_name(const Tokenizer* t) { return t->name; }
int32_t tok_eos(const Tokenizer* t) { return t->eos; }
bool tok_is_added(const Tokenizer* t, int32_t id) {
    return id >= 0 && (size_t)id < t->V && (t->added_flags[id] & ADDED);
}

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

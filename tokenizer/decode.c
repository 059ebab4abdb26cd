/* Decoding ids to bytes through tokenizer.json's "decoder", as the Hugging
   Face library's decode_chain does, over the list of the tokens' strings:
     ByteLevel     the bytes behind GPT-2's byte characters (the tokens of a
                   byte-level model are stored as those bytes: nothing to do);
     ByteFallback  a run of <0xHH> tokens becomes its bytes (kept as they are
                   when they are not valid UTF-8, where the library writes one
                   U+FFFD per byte, so that a round trip stays exact);
     Fuse          all tokens into one;
     Strip         at most `start` copies of a character off each token's
                   start and `stop` off its end;
     Replace       each occurrence of a string by another;
     Metaspace     the replacement character to a space, and off the first
                   token unless prepend_scheme is "never".
   An added token decodes to its content. Decoding a long id list in pieces
   (tok_decode_from with at_start false after the first) gives the same bytes
   as one call: Metaspace's first-token rule and Strip after Fuse apply only at
   the start. */
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "tokenizer/tok_internal.h"

typedef struct {
    uint8_t* p;
    size_t n, cap;
    size_t* end; /* token k is p[end[k-1] .. end[k]) (end[-1] = 0) */
    size_t n_tok, cap_tok;
} Toks;

static void toks_put(Toks* t, const void* s, size_t n) { tok_buf_put(&t->p, &t->n, &t->cap, s, n); }

static void toks_end(Toks* t) { /* the bytes put since the last end are a token */
    if (t->n_tok == t->cap_tok) {
        t->cap_tok = t->cap_tok ? 2 * t->cap_tok : 256;
        size_t* e = realloc(t->end, t->cap_tok * sizeof(size_t));
        CHECK(e, "out of memory growing the decode token list to %zu", t->cap_tok);
        t->end = e;
    }
    t->end[t->n_tok++] = t->n;
}

static inline size_t tok_start(const Toks* t, size_t k) { return k ? t->end[k - 1] : 0; }

static int hex_digit(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* the byte of a <0xHH> token, -1 for another token */
static int fallback_byte(const uint8_t* s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>') return -1;
    int hi = hex_digit(s[3]), lo = hex_digit(s[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/* one step from `in` to `out`; at_start: token 0 starts the text; fused: a Fuse came before */
static void dec_step(const DecStep* st, const Toks* in, Toks* out, int at_start, int fused) {
    for (size_t k = 0; k < in->n_tok; k++) {
        const uint8_t* s = in->p + tok_start(in, k);
        size_t n = in->end[k] - tok_start(in, k);
        switch (st->kind) {
        case DEC_BYTE_LEVEL: toks_put(out, s, n), toks_end(out); break;
        case DEC_BYTE_FALLBACK: {
            int b = fallback_byte(s, n);
            int more = k + 1 < in->n_tok &&
                       fallback_byte(in->p + in->end[k], in->end[k + 1] - in->end[k]) >= 0; /* the run goes on */
            if (b < 0) toks_put(out, s, n), toks_end(out);
            else {
                uint8_t c = (uint8_t)b;
                toks_put(out, &c, 1);
                if (!more) toks_end(out);
            }
            break;
        }
        case DEC_FUSE:
            toks_put(out, s, n);
            if (k + 1 == in->n_tok) toks_end(out);
            break;
        case DEC_STRIP: {
            size_t a = 0, b = n, l = st->ch_len;
            for (size_t i = 0; i < st->start && (k || at_start || !fused) && b - a >= l && !memcmp(s + a, st->ch, l);
                 i++)
                a += l;
            for (size_t i = 0; i < st->stop && b - a >= l && !memcmp(s + b - l, st->ch, l); i++) b -= l;
            toks_put(out, s + a, b - a), toks_end(out);
            break;
        }
        case DEC_REPLACE: {
            size_t pl = strlen(st->pat), i = 0;
            for (const uint8_t* m; i < n && (m = memmem(s + i, n - i, st->pat, pl)); i = (size_t)(m - s) + pl) {
                toks_put(out, s + i, (size_t)(m - s) - i);
                toks_put(out, st->content, strlen(st->content));
            }
            toks_put(out, s + i, n - i), toks_end(out);
            break;
        }
        case DEC_METASPACE: {
            int drop = k == 0 && at_start && st->prepend != PREPEND_NEVER;
            size_t i = 0, l = st->ch_len;
            for (const uint8_t* m; i < n && (m = memmem(s + i, n - i, st->ch, l)); i = (size_t)(m - s) + l) {
                toks_put(out, s + i, (size_t)(m - s) - i);
                if (!drop) toks_put(out, " ", 1);
            }
            toks_put(out, s + i, n - i), toks_end(out);
            break;
        }
        }
    }
}

size_t tok_decode_from(const Tokenizer* t, const int32_t* ids, size_t n, bool at_start, uint8_t** out, size_t* len,
                       size_t* cap) {
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= t->V || !t->has[ids[i]]) bad = i;
    if (t->byte_level) { /* ByteLevel alone: the stored bytes are the text */
        for (size_t i = 0; i < bad; i++)
            tok_buf_put(out, len, cap, t->bytes + t->off[ids[i]], t->off[ids[i] + 1] - t->off[ids[i]]);
        return bad;
    }
    Toks a = {0}, b = {0};
    for (size_t i = 0; i < bad; i++) {
        toks_put(&a, t->bytes + t->off[ids[i]], t->off[ids[i] + 1] - t->off[ids[i]]);
        toks_end(&a);
    }
    int fused = 0;
    for (size_t k = 0; k < t->n_dec; k++) {
        b.n = b.n_tok = 0;
        dec_step(&t->dec[k], &a, &b, at_start, fused);
        fused |= t->dec[k].kind == DEC_FUSE;
        Toks tmp = a;
        a = b, b = tmp;
    }
    tok_buf_put(out, len, cap, a.p, a.n);
    free(a.p), free(a.end), free(b.p), free(b.end);
    return bad;
}

size_t tok_decode(const Tokenizer* t, const int32_t* ids, size_t n, uint8_t** out, size_t* len, size_t* cap) {
    return tok_decode_from(t, ids, n, true, out, len, cap);
}

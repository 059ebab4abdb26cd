/* The normalizer: the steps of tokenizer.json's "normalizer" (a Sequence is
   flattened at load) applied in order to each segment of text between added
   tokens, as the Hugging Face library does:
     NFC, NFD, NFKC, NFKD  Unicode normalization by utf8proc (Unicode 15.0 in
                           Debian's libutf8proc 2.8);
     Lowercase             each character's full lowercase mapping (utf8proc's
                           simple mapping, and U+0130 to "i\u0307" as Rust's
                           char::to_lowercase does);
     Strip                 white space off the left and/or right end;
     Prepend               a string before a segment that is not empty;
     Replace               every match of a string or a regex by the content.
   A byte that is not valid UTF-8 passes through every step unchanged (the
   Unicode forms and Lowercase see each valid run alone). */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "common/check.h"
#include "tokenizer/tok_internal.h"

typedef struct {
    uint8_t* p;
    size_t n, cap;
} Buf;

static void buf_put(Buf* b, const void* s, size_t n) { tok_buf_put(&b->p, &b->n, &b->cap, s, n); }

/* the end of the run of valid UTF-8 from i, and whether it is all ASCII */
static size_t valid_run(const uint8_t* s, size_t n, size_t i, int* ascii) {
    *ascii = 1;
    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t l;
        uc_next(s + i, n - i, &cp, &l);
        if (cp == 0xFFFFFFFFu) break;
        *ascii = 0;
        i += l;
    }
    return i;
}

static void unicode_form(Buf* out, const uint8_t* s, size_t n, NormKind kind) {
    static const utf8proc_option_t opt[] = {
        [NORM_NFC] = UTF8PROC_STABLE | UTF8PROC_COMPOSE,
        [NORM_NFD] = UTF8PROC_STABLE | UTF8PROC_DECOMPOSE,
        [NORM_NFKC] = UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT,
        [NORM_NFKD] = UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT,
    };
    for (size_t i = 0; i < n;) {
        int ascii;
        size_t j = valid_run(s, n, i, &ascii);
        if (ascii) { /* ASCII is the same in every form */
            buf_put(out, s + i, j - i);
        } else {
            utf8proc_uint8_t* dst = NULL;
            utf8proc_ssize_t m = utf8proc_map(s + i, (utf8proc_ssize_t)(j - i), &dst, opt[kind]);
            CHECK(m >= 0, "utf8proc: %s", utf8proc_errmsg(m));
            buf_put(out, dst, (size_t)m);
            free(dst);
        }
        if (j < n) buf_put(out, s + j, 1), j++; /* an invalid byte */
        i = j;
    }
}

static void lowercase(Buf* out, const uint8_t* s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l;
        uc_next(s + i, n - i, &cp, &l);
        if (cp == 0xFFFFFFFFu) {
            buf_put(out, s + i, 1);
        } else if (cp == 0x130) {
            buf_put(out, "i\xCC\x87", 3);
        } else {
            utf8proc_uint8_t enc[4];
            buf_put(out, enc, (size_t)utf8proc_encode_char(utf8proc_tolower((utf8proc_int32_t)cp), enc));
        }
        i += l;
    }
}

static void strip(Buf* out, const uint8_t* s, size_t n, int left, int right) {
    size_t a = 0, b = n;
    while (left && a < b) {
        uint32_t cp;
        size_t l;
        if (!(uc_next(s + a, b - a, &cp, &l) & UC_SPACE)) break;
        a += l;
    }
    while (right && b > a) { /* the last character: back over continuation bytes */
        size_t i = b - 1, l;
        uint32_t cp;
        while (i > a && b - i < 4 && (s[i] & 0xC0) == 0x80) i--;
        if (!(uc_next(s + i, b - i, &cp, &l) & UC_SPACE) || i + l != b) break;
        b = i;
    }
    buf_put(out, s + a, b - a);
}

typedef struct {
    Buf* out;
    const uint8_t* s;
    const char* content;
} ReplaceCtx;

static void replace_span(void* ctx, size_t a, size_t b, int is_match) {
    ReplaceCtx* c = ctx;
    if (is_match == 1) buf_put(c->out, c->content, strlen(c->content));
    else buf_put(c->out, c->s + a, b - a);
}

static void replace(Buf* out, const NormStep* st, void** region, const uint8_t* s, size_t n) {
    if (st->re) {
        ReplaceCtx c = {out, s, st->str};
        tok_regex_spans(st->re, region, s, n, replace_span, &c);
        return;
    }
    size_t pl = strlen(st->pat), cl = strlen(st->str), i = 0;
    for (const uint8_t* m; i < n && (m = memmem(s + i, n - i, st->pat, pl)); i = (size_t)(m - s) + pl) {
        buf_put(out, s + i, (size_t)(m - s) - i);
        buf_put(out, st->str, cl);
    }
    buf_put(out, s + i, n - i);
}

bool tok_normalize(const Tokenizer* t, void** region, const uint8_t* s, size_t n, uint8_t** out, size_t* out_n) {
    if (!t->n_norm) return false;
    Buf cur = {0}, next = {0};
    buf_put(&cur, s, n);
    for (size_t k = 0; k < t->n_norm; k++) {
        const NormStep* st = &t->norm[k];
        next.n = 0;
        switch (st->kind) {
        case NORM_NFC:
        case NORM_NFD:
        case NORM_NFKC:
        case NORM_NFKD: unicode_form(&next, cur.p, cur.n, st->kind); break;
        case NORM_LOWERCASE: lowercase(&next, cur.p, cur.n); break;
        case NORM_STRIP: strip(&next, cur.p, cur.n, st->left, st->right); break;
        case NORM_PREPEND:
            if (cur.n) buf_put(&next, st->str, strlen(st->str));
            buf_put(&next, cur.p, cur.n);
            break;
        case NORM_REPLACE: replace(&next, st, region, cur.p, cur.n); break;
        }
        Buf tmp = cur;
        cur = next, next = tmp;
    }
    free(next.p);
    if (!cur.p) cur.p = mallocCheck(1);
    *out = cur.p, *out_n = cur.n;
    return true;
}

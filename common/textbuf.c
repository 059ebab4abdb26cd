/* The growable text buffer of textbuf.h. */
#include "common/textbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

static const char* name(const TextBuf* b) { return b->what ? b->what : "text buffer"; }

void textbuf_put(TextBuf* b, const char* s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap = mulCheck(cap, 2, name(b));
        char* grown = realloc(b->s, cap);
        CHECK(grown, "out of memory growing the %s to %zu bytes", name(b), cap);
        b->s = grown;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void textbuf_puts(TextBuf* b, const char* s) { textbuf_put(b, s, strlen(s)); }

void textbuf_printf(TextBuf* b, const char* fmt, ...) {
    char piece[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(piece, sizeof(piece), fmt, ap);
    va_end(ap);
    CHECK(n >= 0 && (size_t)n < sizeof(piece), "%s: a formatted piece of %d bytes, more than %zu", name(b), n,
          sizeof(piece) - 1);
    textbuf_put(b, piece, (size_t)n);
}

void textbuf_clear(TextBuf* b) {
    b->len = 0;
    if (b->s) b->s[0] = 0;
}

void textbuf_free(TextBuf* b) {
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

/* Strict UTF-8 decoding (RFC 3629, as Rust's str::from_utf8, which the
   safetensors reference reader uses): a lead byte announces 1-4 bytes, each
   continuation byte is 10xxxxxx, and the decoded code point must need that
   many bytes (no overlong form), must not be a UTF-16 surrogate and must be
   at most U+10FFFF. The one decoder of the safetensors header check
   (st_utf8_check) and the tokenizer's pre-tokenizer (uc_next). */
#ifndef REPOC_UTF8_H
#define REPOC_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The sequence at s[0..n) (n >= 1): its length (1-4) with its code point in
   *cp, or 0 when s does not start a valid sequence (a continuation byte, C0,
   C1 or F5..FF, a bad continuation, one cut off by n, an overlong form, a
   surrogate, a code point above U+10FFFF). */
static inline size_t utf8_decode(const uint8_t* s, size_t n, uint32_t* cp) {
    uint8_t b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    size_t len;
    uint32_t c, min;
    if (b >= 0xC2 && b <= 0xDF) {
        len = 2;
        c = b & 0x1F;
        min = 0x80;
    } else if (b >= 0xE0 && b <= 0xEF) {
        len = 3;
        c = b & 0x0F;
        min = 0x800;
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4;
        c = b & 0x07;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        c = (c << 6) | (s[k] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    *cp = c;
    return len;
}

/* s[0..n) as text a reader of UTF-8 accepts, as Python's bytes.decode(errors="replace") reads a cut or
   broken sequence: each byte that starts no valid sequence becomes U+FFFD (EF BF BD), the rest is copied.
   out holds at least 3 n + 1 bytes; returns its length, out NUL-terminated. */
static inline size_t utf8_lossy(const uint8_t* s, size_t n, char* out) {
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = utf8_decode(s + i, n - i, &cp);
        if (len) {
            for (size_t j = 0; j < len; j++) out[k++] = (char)s[i + j];
            i += len;
        } else {
            out[k++] = (char)0xEF, out[k++] = (char)0xBF, out[k++] = (char)0xBD;
            i++;
        }
    }
    out[k] = 0;
    return k;
}

/* How many bytes of s[0..len) a message may print ("%.*s") to show at most max of them without cutting a
   UTF-8 sequence in two: len when it is at most max, else max or fewer, when byte max continues a sequence. */
static inline int utf8_clip(const char* s, size_t len, size_t max) {
    if (len <= max) return (int)len;
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    return (int)n;
}

#endif

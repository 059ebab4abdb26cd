/* The text helpers of tokenizer/: Unicode classes (tokenizer/unicode.c) and the growable byte buffer
   (tokenizer/bytebuf.c). Not for use outside tokenizer/. */
#ifndef REPOC_TOK_TEXT_H
#define REPOC_TOK_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* ---- Unicode (tokenizer/unicode.c) ---- */
/* A code point's classes, as bits: letter, number, space (0: none of them) */
enum { UC_OTHER = 0, UC_LETTER = 1, UC_NUMBER = 2, UC_SPACE = 4 };
void uc_init(void); /* builds the BMP table; idempotent, call before threads */
/* the class of each code point below U+10000 (filled by uc_init) */
extern uint8_t uc_bmp_class[0x10000];
/* o200k's case classes, apart from the above: UC_UP [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], UC_LW
   [\p{Ll}\p{Lm}\p{Lo}\p{M}] (both for Lm, Lo and marks; neither for what is not a letter or mark) */
enum { UC_UP = 1, UC_LW = 2 };
extern uint8_t uc_bmp_case[0x10000];
int uc_case_multi(uint32_t cp); /* above the BMP */
static inline int uc_case(uint32_t cp) {
    return cp < 0x10000 ? uc_bmp_case[cp] : cp == 0xFFFFFFFFu ? 0 : uc_case_multi(cp);
}
/* uc_next for a character that is not ASCII (s[0] >= 0x80) */
int uc_next_multi(const uint8_t* s, size_t n, uint32_t* cp, size_t* len);
/* The character at s[0..n): its class and byte length (>= 1). A byte that does
   not start a valid UTF-8 sequence is a character of its own of class
   UC_OTHER (*cp = 0xFFFFFFFF). Inline for ASCII, which the pre-tokenizer's
   matchers ask about most: a call per character was about 13% of the
   instructions of encoding the gpt2 corpus of tools/tokenizer_compare.sh (callgrind). */
static inline int uc_next(const uint8_t* s, size_t n, uint32_t* cp, size_t* len) {
    if (s[0] < 0x80) {
        *cp = s[0];
        *len = 1;
        return uc_bmp_class[s[0]];
    }
    return uc_next_multi(s, n, cp, len);
}

/* ---- the byte buffer (tokenizer/bytebuf.c) ---- */
/* append s[0..n) to the buffer *p (*len bytes of *cap used; realloc'd) (tokenizer/bytebuf.c) */
void tok_buf_put(uint8_t** p, size_t* len, size_t* cap, const void* s, size_t n);

#endif

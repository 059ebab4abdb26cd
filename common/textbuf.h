/* A growable text buffer: bytes appended at the end, always NUL-terminated, the allocation
   doubled when full (so n appends cost O(total bytes)). `what` names the buffer in the
   out-of-memory message ("safetensors header", "RULER prompt"); NULL reads "text buffer". */
#ifndef REPOC_TEXTBUF_H
#define REPOC_TEXTBUF_H

#include <stddef.h>

typedef struct {
    char* s; /* malloc'd; NULL until the first append */
    size_t len, cap;
    const char* what;
} TextBuf;

void textbuf_put(TextBuf* b, const char* s, size_t n);
void textbuf_puts(TextBuf* b, const char* s);
/* printf-formatted text of fewer than 512 bytes (numbers, a word, a short sentence) */
void textbuf_printf(TextBuf* b, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void textbuf_clear(TextBuf* b); /* empty, keeping the allocation */
void textbuf_free(TextBuf* b);  /* the allocation released; `what` kept */

#endif

/* The growable byte buffer the normalizer, the decoder and the encoder append to
   (tok_buf_put, tokenizer/tok_internal.h): the allocation doubled when full. */
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "tokenizer/tok_text.h"

void tok_buf_put(uint8_t** p, size_t* len, size_t* cap, const void* s, size_t n) {
    if (*len + n > *cap) {
        size_t c = *cap ? *cap : 256;
        while (c < *len + n) c *= 2;
        uint8_t* q = realloc(*p, c);
        CHECK(q, "out of memory growing a text buffer to %zu bytes", c);
        *p = q;
        *cap = c;
    }
    if (n) memcpy(*p + *len, s, n);
    *len += n;
}

/* The starting parts of a pre-token for the general BPE model (a vocabulary of
   UTF-8 strings, as SentencePiece-converted models such as Llama-2 and Gemma
   have, or a byte-level one with a continuing_subword_prefix or
   end_of_word_suffix), as the Hugging Face library's BPE::merge_word builds
   them: each character is the vocab entry of its text, with the prefix before
   every character but the first and the suffix after the last; a character
   without one is its bytes' <0xHH> tokens (byte_fallback, when every byte has
   one; with the prefix and suffix, as the library does), else the unk token
   (fuse_unk: one for a run of them), else nothing.
   A byte that is not valid UTF-8 is a character of its own. For a byte-level
   model a "character" is one byte (its byte-level character). */
#include <string.h>

#include "tokenizer/tok_internal.h"

size_t bpe_word_parts(const Tokenizer* t, const uint8_t* s, size_t n, int32_t* parts) {
    size_t m = 0;
    int unk_open = 0; /* a fused unk token waits to be written */
    uint8_t buf[72];  /* prefix and suffix below 32 bytes each (load.c), a character below 5 */
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l = 1, k = 0;
        if (!t->byte_level) uc_next(s + i, n - i, &cp, &l);
        if (i > 0) memcpy(buf, t->prefix_str, t->prefix_len), k = t->prefix_len;
        memcpy(buf + k, s + i, l), k += l;
        if (i + l == n) memcpy(buf + k, t->suffix_str, t->suffix_len), k += t->suffix_len;
        i += l;
        int32_t id = tok_lookup(t, buf, k);
        if (id >= 0) {
            if (unk_open) parts[m++] = t->unk, unk_open = 0;
            parts[m++] = id;
            continue;
        }
        int all = t->byte_fallback; /* the bytes of the affixed character, as the library has it */
        for (size_t b = 0; b < k && all; b++) all = t->fallback_id[buf[b]] >= 0;
        if (all) { /* as in the library, a waiting unk token is written after these */
            for (size_t b = 0; b < k; b++) parts[m++] = t->fallback_id[buf[b]];
        } else if (t->unk >= 0) {
            if (unk_open && !t->fuse_unk) parts[m++] = t->unk;
            unk_open = 1;
        }
    }
    if (unk_open) parts[m++] = t->unk;
    return m;
}

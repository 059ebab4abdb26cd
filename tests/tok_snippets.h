/* Hand-made tokenizer.json snippets for the component tests
   (tests/test_tokenizer_parts.c, tests/test_tokenizer_model.c). A byte-level
   snippet names its vocab "@VOCAB": the 256 bytes (id = byte) plus extra
   strings (ids from 256), with ignore_merges, so that each pre-token that is
   one of the extra strings becomes its one id and any other its bytes.
   Header-only, like tests/testutil.h. */
#ifndef REPOC_TOK_SNIPPETS_H
#define REPOC_TOK_SNIPPETS_H

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/check.h"
#include "tests/testutil.h"
#include "tokenizer/tok_internal.h"

#define MAX_TOK 32

/* GPT-2's byte characters: the vocab string of a byte string */
static void byte_level_string(const char* s, char* out) {
    size_t k = 0;
    for (const uint8_t* p = (const uint8_t*)s; *p; p++) {
        int b = *p, printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
        uint32_t cp = (uint32_t)b;
        if (!printable) {
            int rank = 0; /* the position of b among the non-printable bytes */
            for (int c = 0; c < b; c++) rank += !((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174));
            cp = 256 + (uint32_t)rank;
        }
        if (cp < 0x80) out[k++] = (char)cp;
        else out[k++] = (char)(0xC0 | cp >> 6), out[k++] = (char)(0x80 | (cp & 0x3F));
    }
    out[k] = 0;
}

/* the tokenizer.json text with "@VOCAB" replaced by the byte-level vocab of the 256 bytes and extra[] */
static char* with_vocab(const char* json, const char* const* extra, size_t n_extra) {
    cJSON* v = cJSON_CreateObject();
    char buf[256];
    for (int b = 0; b < 256; b++) {
        char s[2] = {(char)b, 0};
        if (b == 0) strcpy(buf, "\xC4\x80"); /* U+0100 for byte 0 */
        else byte_level_string(s, buf);
        cJSON_AddNumberToObject(v, buf, b);
    }
    for (size_t k = 0; k < n_extra; k++) {
        byte_level_string(extra[k], buf);
        cJSON_AddNumberToObject(v, buf, 256 + (double)k);
    }
    char* vt = cJSON_PrintUnformatted(v);
    cJSON_Delete(v);
    const char* at = strstr(json, "@VOCAB");
    char* out = mallocCheck(strlen(json) + strlen(vt) + 1);
    if (at) sprintf(out, "%.*s%s%s", (int)(at - json), json, vt, at + 6);
    else strcpy(out, json);
    free(vt);
    return out;
}

/* the byte-level snippet with "@VOCAB" (and no extra strings) as a cJSON tree, to add to */
static __attribute__((unused)) cJSON* parse_with_vocab(const char* json) {
    char* text = with_vocab(json, NULL, 0);
    cJSON* root = cJSON_Parse(text);
    CHECK(root, "not valid JSON: %s", text);
    free(text);
    return root;
}

static __attribute__((unused)) Tokenizer* load(const char* json, const char* const* extra, size_t n_extra, char* err,
                                               size_t err_len) {
    char* text = with_vocab(json, extra, n_extra);
    Tokenizer* t = tok_load_json(text, strlen(text), "snippet", err, err_len);
    free(text);
    return t;
}

static __attribute__((unused)) size_t encode(const Tokenizer* t, const char* text, int32_t* ids) {
    TokEncoder e;
    tok_encoder_init(&e, t);
    tok_encode(&e, (const uint8_t*)text, strlen(text));
    size_t all = e.n_ids, n = all < MAX_TOK ? all : MAX_TOK;
    memcpy(ids, e.ids, n * sizeof(int32_t));
    tok_encoder_free(&e);
    return all;
}

static __attribute__((unused)) void expect_ids(const Tokenizer* t, const char* label, const char* text,
                                               const int32_t* want, size_t n_want) {
    int32_t got[MAX_TOK];
    size_t n = encode(t, text, got);
    int same = n == n_want && !memcmp(got, want, n * sizeof(int32_t));
    char line[512];
    size_t k = 0;
    for (size_t i = 0; i < n && i < MAX_TOK && k < 400; i++) k += (size_t)snprintf(line + k, 512 - k, " %d", got[i]);
    line[k] = 0;
    EXPECT(same, "%s: \"%s\" -> [%s ]", label, text, line);
}

/* pre-tokens as ids: piece k of extra[] is 256 + k, any other piece its bytes */
static __attribute__((unused)) void expect_pieces(const Tokenizer* t, const char* label, const char* text,
                                                  const char* const* pieces, size_t n_pieces, const char* const* extra,
                                                  size_t n_extra) {
    int32_t want[MAX_TOK];
    size_t n = 0;
    for (size_t p = 0; p < n_pieces; p++) {
        size_t k = 0;
        while (k < n_extra && strcmp(extra[k], pieces[p])) k++;
        if (k < n_extra) want[n++] = 256 + (int32_t)k;
        else
            for (const uint8_t* c = (const uint8_t*)pieces[p]; *c; c++) want[n++] = *c;
    }
    expect_ids(t, label, text, want, n);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define BYTE_LEVEL_JSON(pre) \
    "{\"model\":{\"type\":\"BPE\",\"vocab\":@VOCAB,\"merges\":[],\"ignore_merges\":true},\"pre_tokenizer\":{\"type\":" \
    "\"Sequence\",\"pretokenizers\":[" pre ",{\"type\":\"ByteLevel\",\"use_regex\":false}]},\"decoder\":{\"type\":" \
    "\"ByteLevel\"}}"

#endif

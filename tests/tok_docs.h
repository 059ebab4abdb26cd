/* The documents of a JSONL corpus (one {"text": ...} per line, as
   tools/node/make_corpus.mjs writes them), for the tokenizer checks that run
   over it (tests/test_tokenizer_regex.c, tests/tools/tok_roundtrip.c).
   Header-only. */
#ifndef REPOC_TOK_DOCS_H
#define REPOC_TOK_DOCS_H

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"

/* fn(ctx, text, len) for the "text" of each line of path; returns the number of documents */
static size_t tok_docs_each(const char* path, void (*fn)(void* ctx, const uint8_t* s, size_t n), void* ctx) {
    size_t len, n = 0;
    char* all = file_read_all_or_null(path, &len);
    CHECK(all, "cannot read '%s': %s", path, file_read_error(errno));
    for (char *line = all, *end; line < all + len; line = end + 1) {
        end = memchr(line, '\n', (size_t)(all + len - line));
        if (!end) end = all + len;
        if (end == line) continue;
        cJSON* j = cJSON_ParseWithLength(line, (size_t)(end - line));
        const cJSON* text = cJSON_GetObjectItemCaseSensitive(j, "text");
        CHECK(cJSON_IsString(text), "'%s' document %zu: expected a JSON object with a string \"text\"", path, n);
        fn(ctx, (const uint8_t*)text->valuestring, strlen(text->valuestring));
        cJSON_Delete(j);
        n++;
    }
    free(all);
    return n;
}

#endif

/* What the two halves of the tokenizer.json reader share (tokenizer/load.c reads
   the model and the top level, tokenizer/load_pipeline.c the normalizer,
   pre-tokenizer, decoder and post-processor). Each parse_* returns 0, or 1 with
   a message naming the JSON path in c->err. Not for use outside tokenizer/. */
#ifndef REPOC_LOAD_JSON_H
#define REPOC_LOAD_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "common/check.h"
#include "tokenizer/tok_internal.h"

typedef struct {
    Tokenizer* t;
    char* err;
    size_t err_len;
} Ctx;

#define FAIL(c, ...) return set_err((c)->err, (c)->err_len, __VA_ARGS__)
#define TRY(x) \
    do { \
        if (x) return 1; \
    } while (0)

const char* load_type_of(const cJSON* o); /* the "type" string, NULL when none */
/* key must be absent, null, false or "" (an option this code does not implement, left off) */
int load_require_off(Ctx* c, const cJSON* o, const char* key, const char* path);
/* o's boolean key into *out: dflt when absent or null, refused when neither true nor false (a string "true"
   is not read as false) */
int load_flag(Ctx* c, const cJSON* o, const char* key, const char* path, bool dflt, bool* out);
bool load_is_id(const cJSON* v); /* an integer id in [0, 2^31-1) */

int parse_normalizer(Ctx* c, const cJSON* p, const char* path);
int parse_pre(Ctx* c, const cJSON* p, const char* path); /* sets t->byte_level at a ByteLevel step */
int parse_decoder(Ctx* c, const cJSON* p, const char* path);
int parse_post(Ctx* c, const cJSON* p, const char* path);

#endif

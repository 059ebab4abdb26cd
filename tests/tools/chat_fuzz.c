/* build/asan/chat_fuzz SECONDS CONTEXT.json TEMPLATE...: the chat template engine fuzzed for SECONDS under
   ASan and UBSan (make test-asan builds it so, every report fatal): each round takes one of the templates
   (the seeds), mutates it a few times (a token of Jinja's inserted, a span deleted or repeated, a byte
   changed), parses it and renders it with CONTEXT.json. Any outcome is fine but a crash, a sanitizer report
   or a rendering that fails without a message: parse and render return text or an error, and nothing else.
   Prints the rounds, how many parsed and how many rendered. Seeded (CHAT_FUZZ_SEED in the environment, else a
   fixed seed), so a failure can be replayed. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/check.h"
#include "common/fileio.h"
#include "template/chat_template.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) { /* xorshift64* */
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1Dull;
}
static size_t below(size_t n) { return n ? (size_t)(next() % n) : 0; }

static const char* const TOKENS[] = {"{{",
                                     "}}",
                                     "{%",
                                     "%}",
                                     "{#",
                                     "#}",
                                     "{%-",
                                     "-%}",
                                     "{{-",
                                     "-}}",
                                     "{%+",
                                     " if ",
                                     " else ",
                                     " elif ",
                                     "endif",
                                     " for ",
                                     " in ",
                                     "endfor",
                                     " set ",
                                     "namespace(",
                                     "ns.x",
                                     "=",
                                     "(",
                                     ")",
                                     "[",
                                     "]",
                                     "{",
                                     "}",
                                     ",",
                                     ":",
                                     "'",
                                     "\"",
                                     "\\",
                                     "|",
                                     " is ",
                                     " not ",
                                     " and ",
                                     " or ",
                                     "~",
                                     "+",
                                     "-",
                                     "*",
                                     "/",
                                     "//",
                                     "%",
                                     "==",
                                     "!=",
                                     "<",
                                     ">=",
                                     ".",
                                     "loop.",
                                     "messages",
                                     "m",
                                     "0",
                                     "-1",
                                     "9223372036854775807",
                                     "1e308",
                                     "1_0",
                                     "0.5",
                                     "range(",
                                     "tojson",
                                     "trim",
                                     "join",
                                     "default",
                                     "replace",
                                     "int",
                                     "float",
                                     "items",
                                     "list",
                                     "reverse",
                                     "title",
                                     "length",
                                     "first",
                                     "last",
                                     "abs",
                                     "split",
                                     "strip",
                                     "get",
                                     "keys",
                                     "values",
                                     "startswith",
                                     "break",
                                     "continue",
                                     "defined",
                                     "none",
                                     "true",
                                     "raise_exception(",
                                     "é",
                                     "日本",
                                     "\n",
                                     "\r",
                                     " ",
                                     "\t",
                                     "\xff",
                                     "\xc3"};

/* one mutation of t (len bytes, room for cap) in place; returns the new length */
static size_t mutate(char* t, size_t len, size_t cap) {
    size_t at = below(len + 1), k = below(4);
    if (k == 0) { /* insert a token */
        const char* tok = TOKENS[below(sizeof(TOKENS) / sizeof(TOKENS[0]))];
        size_t n = strlen(tok);
        if (len + n >= cap) return len;
        memmove(t + at + n, t + at, len - at);
        memcpy(t + at, tok, n);
        return len + n;
    }
    if (k == 1 && at < len) { /* delete a span */
        size_t n = 1 + below(len - at < 16 ? len - at : 16);
        memmove(t + at, t + at + n, len - at - n);
        return len - n;
    }
    if (k == 2 && at < len) { /* repeat a span */
        size_t n = 1 + below(len - at < 32 ? len - at : 32);
        if (len + n >= cap) return len;
        memmove(t + at + n, t + at, len - at);
        return len + n;
    }
    if (at < len) t[at] = (char)(1 + below(255)); /* change a byte (never to NUL: the source is a C string) */
    return len;
}

int main(int argc, char** argv) {
    CHECK(argc >= 4, "usage: chat_fuzz SECONDS CONTEXT.json TEMPLATE...");
    double seconds = atof(argv[1]);
    const char* seed_env = getenv("CHAT_FUZZ_SEED");
    if (seed_env) rng ^= strtoull(seed_env, NULL, 10) * 0xD1B54A32D192ED03ull;
    size_t n;
    char* ctx_text = file_read_all(argv[2], &n);
    cJSON* ctx = cJSON_ParseWithLength(ctx_text, n);
    CHECK(cJSON_IsObject(ctx), "%s: not a JSON object", argv[2]);
    chat_json_keep_numbers(ctx, ctx_text);
    size_t n_seeds = (size_t)argc - 3;
    char** seeds = mallocCheck(n_seeds * sizeof(char*));
    for (size_t s = 0; s < n_seeds; s++) seeds[s] = file_read_all(argv[3 + s], &n);
    enum { CAP = 1 << 14 };
    char* t = mallocCheck(CAP);
    size_t rounds = 0, parsed = 0, rendered = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        for (int batch = 0; batch < 64; batch++, rounds++) {
            const char* seed = seeds[below(n_seeds)];
            size_t len = strlen(seed) < CAP - 1 ? strlen(seed) : CAP - 1;
            memcpy(t, seed, len);
            for (size_t m = 1 + below(4); m > 0; m--) len = mutate(t, len, CAP);
            t[len] = 0;
            char err[256] = "";
            ChatTemplate* tmpl = chat_template_parse(t, err, sizeof(err));
            CHECK(tmpl || err[0], "round %zu: the parser failed without a message", rounds);
            if (!tmpl) continue;
            parsed++;
            size_t out_len;
            err[0] = 0;
            char* out = chat_template_render(tmpl, ctx, &out_len, err, sizeof(err));
            CHECK(out || err[0], "round %zu: the renderer failed without a message", rounds);
            rendered += out != NULL;
            free(out);
            chat_template_free(tmpl);
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec) < seconds);
    printf("chat_fuzz: %zu mutated templates from %zu seeds in %.0f s: %zu parsed, %zu rendered, no crash or "
           "sanitizer report\n",
           rounds, n_seeds, seconds, parsed, rendered);
    for (size_t s = 0; s < n_seeds; s++) free(seeds[s]);
    free(seeds);
    free(t);
    cJSON_Delete(ctx);
    free(ctx_text);
    return 0;
}

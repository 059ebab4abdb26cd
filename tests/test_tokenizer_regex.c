/* The hand-written pre-tokenizer matchers (tokenizer/pretok.c) against
   Oniguruma (tokenizer/regex.c) on the same regexes: the GPT-2, cl100k/Llama-3,
   Qwen2 and o200k (GPT-4o) patterns, and cl100k's, Qwen2's and o200k's as js-tiktoken spells them (every ASCII case of each
   contraction written out), must cut every text into the same pre-tokens, the matcher chosen by
   pretok_recognise from the pattern's text; spellings that are not equivalent must not be recognised. Texts:
   tests/fixtures/tokenizer/sample.txt, every string of up to 4 characters over
   an alphabet of the characters the patterns treat apart (spaces and line
   breaks of several kinds, letters, digits of other scripts, apostrophes, the
   long s that (?i) folds to s, punctuation), 20000 longer random strings over
   it, and the documents of each JSONL file given on the command line
   (tests/test_tokenizer_node.sh passes its corpus). Only valid UTF-8: on an
   invalid byte the two paths differ by design (tokenizer/tok_internal.h). */
#include <stdio.h>
#include <stdlib.h>

#include "tests/testutil.h"
#include "tests/tok_docs.h"
#include "tokenizer/tok_internal.h"

typedef struct {
    const char* name;
    const char* pattern;
    PreStep step; /* the hand-written matcher pretok_recognise chose */
    TokRegex* re;
    size_t texts, pieces, bad; /* checked, and differing */
} Pattern;

/* js-tiktoken's spelling of the contraction group, and the rest of cl100k's and Qwen2's patterns */
#define JS_CONTRACTIONS "('s|'S|'t|'T|'re|'rE|'Re|'RE|'ve|'vE|'Ve|'VE|'m|'M|'ll|'lL|'Ll|'LL|'d|'D)"
#define REST_CL100K \
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define REST_QWEN "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

#define JS_UP "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]"
#define JS_LW "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]"
#define O200K_JS \
    "[^\\r\\n\\p{L}\\p{N}]?" JS_UP "*" JS_LW "+" JS_CONTRACTIONS "?|[^\\r\\n\\p{L}\\p{N}]?" JS_UP "+" JS_LW \
    "*" JS_CONTRACTIONS "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

static Pattern P[] = {
    {.name = "gpt2", .pattern = PRETOK_RE_GPT2},
    {.name = "cl100k", .pattern = PRETOK_RE_CL100K},
    {.name = "qwen2", .pattern = PRETOK_RE_QWEN},
    {.name = "cl100k as js-tiktoken spells it", .pattern = JS_CONTRACTIONS REST_CL100K},
    {.name = "qwen2, (?: and the contractions reordered",
     .pattern = "(?:'D|'d|'LL|'Ll|'lL|'ll|'M|'m|'VE|'Ve|'vE|'ve|'RE|'Re|'rE|'re|'T|'t|'S|'s)" REST_QWEN},
    {.name = "cl100k, (?i: and the contractions in upper case", .pattern = "(?i:'S|'T|'RE|'VE|'M|'LL|'D)" REST_CL100K},
    {.name = "o200k", .pattern = PRETOK_RE_O200K},
    {.name = "o200k as js-tiktoken spells it", .pattern = O200K_JS},
};
/* spellings that are not the same regex: each must go to Oniguruma */
static const char* const NOT_EQUIVALENT[] = {
    "('s|'S|'t|'T|'re|'rE|'Re|'RE|'ve|'vE|'Ve|'VE|'m|'M|'ll|'lL|'Ll|'LL|'d)" REST_CL100K, /* 'D missing */
    "('s|'t|'re|'ve|'m|'ll|'d)" REST_CL100K,                                              /* case-sensitive */
    "(?i:'s|'t|'re|'ve|'m|'ll|'d|'x)" REST_CL100K,                                        /* one more */
    "(?i:'s|'t|'re|'ve|'m|'ll|'d|'s)" REST_CL100K,                                        /* twice */
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)" REST_CL100K "|x",                                      /* another tail */
    "(?i:'s|'t|'re|'ve|'m|'ll|'d" REST_CL100K,                                            /* not closed */
};
#define N_PAT (sizeof P / sizeof P[0])

typedef struct {
    size_t* ends; /* (<= bytes of the text) where each pre-token ends */
    size_t n;
} Ends;

static void span_end(void* ctx, size_t a, size_t b, int m) {
    Ends* e = ctx;
    if (b > a) e->ends[e->n++] = b; /* Isolated: every span is a pre-token */
}

static void* region;

/* one text through both paths of every pattern */
static void check_text(void* ctx, const uint8_t* s, size_t n) {
    (void)ctx;
    if (tok_count_invalid_utf8(s, n)) return;
    Ends fast = {mallocCheck((n + 1) * sizeof(size_t)), 0}, onig = {mallocCheck((n + 1) * sizeof(size_t)), 0};
    for (size_t k = 0; k < N_PAT; k++) {
        Pattern* p = &P[k];
        fast.n = onig.n = 0;
        for (size_t i = 0; i < n;) {
            i = p->step.kind == STEP_SPLIT_CL100K  ? pretok_cl100k(s, n, i, &p->step)
                : p->step.kind == STEP_SPLIT_O200K ? pretok_o200k(s, n, i, &p->step)
                                                   : pretok_gpt2(s, n, i);
            fast.ends[fast.n++] = i;
        }
        tok_regex_spans(p->re, &region, s, n, span_end, &onig);
        int same = fast.n == onig.n && !memcmp(fast.ends, onig.ends, fast.n * sizeof(size_t));
        p->texts++, p->pieces += fast.n;
        if (!same && p->bad++ < 3) {
            size_t d = 0;
            while (d < fast.n && d < onig.n && fast.ends[d] == onig.ends[d]) d++;
            printf("  %s: \"%.*s\" (%zu bytes): pre-token %zu ends at %zu by hand, %zu by Oniguruma\n", p->name,
                   (int)(n < 60 ? n : 60), (const char*)s, n, d, d < fast.n ? fast.ends[d] : n,
                   d < onig.n ? onig.ends[d] : n);
        }
    }
    free(fast.ends), free(onig.ends);
}

/* o200k's case classes too: U+01C5 (Lt), U+02B0 (Lm), U+0301 (Mn), U+00C9 (Lu), "/" */
static const char* ALPHABET[] = {
    " ",        "  ", "\n",       "\r",       "\t",           "a",        "Z",        "1",        "'",
    "s",        "L",  ".",        "\xC3\xA9", "\xE4\xB8\xAD", "\xC2\xA0", "\xC5\xBF", "\xD9\xA3", "\xE2\x80\xA8",
    "\xC2\x85", "!",  "\xC7\x85", "\xCA\xB0", "\xCC\x81",     "\xC3\x89", "/"};
#define N_ALPHA (sizeof ALPHABET / sizeof ALPHABET[0])

/* every string of len characters over the alphabet, then random longer ones */
static void check_alphabet(void) {
    char buf[256];
    for (size_t len = 1; len <= 4; len++) {
        size_t total = 1;
        for (size_t k = 0; k < len; k++) total *= N_ALPHA;
        for (size_t code = 0; code < total; code++) {
            size_t n = 0, c = code;
            for (size_t k = 0; k < len; k++, c /= N_ALPHA) {
                size_t l = strlen(ALPHABET[c % N_ALPHA]);
                memcpy(buf + n, ALPHABET[c % N_ALPHA], l), n += l;
            }
            check_text(NULL, (const uint8_t*)buf, n);
        }
    }
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (int r = 0; r < 20000; r++) {
        size_t n = 0, len = 8 + (size_t)(r % 17);
        for (size_t k = 0; k < len; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            const char* a = ALPHABET[x % N_ALPHA];
            memcpy(buf + n, a, strlen(a)), n += strlen(a);
        }
        check_text(NULL, (const uint8_t*)buf, n);
    }
}

static void no_span(void* ctx, size_t a, size_t b, int m) {}

/* a search that backtracks past Oniguruma's limit: (a|a)*$ on 36 a's and a ! tries 2^36 ways */
static void backtracking_search(void* arg) {
    (void)arg;
    char err[256];
    TokRegex* re = tok_regex_new("(a|a)*$", 7, err, sizeof err);
    CHECK(re, "%s", err);
    const char* s = "xx aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!";
    void* reg = NULL;
    tok_regex_spans(re, &reg, (const uint8_t*)s, strlen(s), no_span, NULL);
    printf("the search ended without an error\n");
}

int main(int argc, char** argv) {
    uc_init();
    for (size_t k = 0; k < N_PAT; k++) {
        char err[256];
        P[k].re = tok_regex_new(P[k].pattern, strlen(P[k].pattern), err, sizeof err);
        CHECK(P[k].re, "%s: %s", P[k].name, err);
        CHECK(!pretok_recognise(P[k].pattern, &P[k].step), "%s: no hand-written matcher recognises it", P[k].name);
    }
    EXPECT(P[3].step.contraction_fold == CONTRACT_ASCII && P[1].step.contraction_fold == CONTRACT_UNICODE &&
               P[4].step.max_digits == 1 && P[3].step.max_digits == 3,
           "the spelled-out contractions fold ASCII cases only, (?i: folds U+017F too; Qwen2 keeps one digit");
    for (size_t k = 0; k < sizeof NOT_EQUIVALENT / sizeof NOT_EQUIVALENT[0]; k++) {
        PreStep st;
        EXPECT(pretok_recognise(NOT_EQUIVALENT[k], &st) == -1, "a regex that is not cl100k's goes to Oniguruma: %s",
               NOT_EQUIVALENT[k]);
    }
    size_t len;
    char* sample = file_read_all("tests/fixtures/tokenizer/sample.txt", &len);
    check_text(NULL, (const uint8_t*)sample, len);
    free(sample);
    check_alphabet();
    expect_dies_with(
        "a search past Oniguruma's backtracking limit is an error, not the end of the matches", backtracking_search,
        NULL, (const char* const[]){"the tokenizer's regex failed searching from byte offset 0", "retry-limit", NULL});
    for (int a = 1; a < argc; a++) printf("%s: %zu documents\n", argv[a], tok_docs_each(argv[a], check_text, NULL));
    for (size_t k = 0; k < N_PAT; k++) {
        EXPECT(P[k].bad == 0, "%s: the hand-written matcher and Oniguruma agree on %zu of %zu texts (%zu pre-tokens)",
               P[k].name, P[k].texts - P[k].bad, P[k].texts, P[k].pieces);
        tok_regex_free(P[k].re);
    }
    tok_regex_region_free(region);
    printf("test_tokenizer_regex: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}

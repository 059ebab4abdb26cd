/* Regular expressions of tokenizer.json through Oniguruma, the engine the
   Hugging Face tokenizers library uses (its SysRegex, utils/onig.rs): the
   pattern is compiled with the default syntax (ONIG_SYNTAX_DEFAULT), UTF-8 and
   no options, and matches are found as the onig crate's find_iter finds them:
   each search starts where the last match ended; an empty match right after
   the previous match is skipped and the search moves on by one character.
   Oniguruma needs valid UTF-8, so each run of valid UTF-8 is searched alone and
   every invalid byte is a span of its own. Searching is thread-safe: each
   caller brings its own region. An error of the search (Oniguruma gives up
   past its backtracking limit) stops the program naming the offset: the rest
   of the text is never left unsplit as if nothing more matched. */
#include <oniguruma.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/utf8.h"
#include "tokenizer/tok_regex.h"
#include "tokenizer/tok_text.h"

struct TokRegex {
    regex_t* reg;
};

static void onig_setup(void) {
    OnigEncoding enc[] = {ONIG_ENCODING_UTF8};
    onig_initialize(enc, 1);
}

TokRegex* tok_regex_new(const char* pattern, size_t len, char* err, size_t err_len) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, onig_setup);
    regex_t* reg;
    OnigErrorInfo info;
    const UChar* p = (const UChar*)pattern;
    int r = onig_new(&reg, p, p + len, ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &info);
    if (r != ONIG_NORMAL) {
        UChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(msg, r, &info);
        snprintf(err, err_len, "%s", (const char*)msg);
        return NULL;
    }
    TokRegex* re = mallocCheck(sizeof *re);
    re->reg = reg;
    return re;
}

void tok_regex_free(TokRegex* re) {
    if (!re) return;
    onig_free(re->reg);
    free(re);
}

void tok_regex_region_free(void* region) {
    if (region) onig_region_free(region, 1);
}

/* regex::escape's set: every ASCII character that is not a letter, digit or space */
char* tok_regex_escape(const char* s) {
    size_t n = strlen(s), k = 0;
    char* out = mallocCheck(2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int plain = c >= 0x80 || c == ' ' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
        if (!plain) out[k++] = '\\';
        out[k++] = s[i];
    }
    out[k] = 0;
    return out;
}

/* the text the calling thread's tok_encode works on, and what it is (TokEncoder.source): set around each
   tok_encode by tokenizer.c, for the message of a failed search */
static _Thread_local struct {
    const char* source;
    const uint8_t* text;
    size_t len;
} site;

void tok_regex_site(const char* source, const uint8_t* text, size_t len) {
    site.source = source;
    site.text = text;
    site.len = len;
}

/* where p, byte `at` of the text searched, lies: "byte offset N of SOURCE" when p is inside the text
   tok_encode was given, else at within the normalizer's rewrite of it, or within the text searched when no
   tok_encode runs */
static void site_of(const uint8_t* p, size_t at, char* out, size_t n) {
    const char* what = site.source ? site.source : "the text being encoded";
    if (!site.text) snprintf(out, n, "byte offset %zu of the text searched", at);
    else if (p >= site.text && p <= site.text + site.len)
        snprintf(out, n, "byte offset %zu of %s", (size_t)(p - site.text), what);
    else snprintf(out, n, "byte offset %zu of %s as the normalizer rewrote it", at, what);
}

/* the spans of one valid UTF-8 run s[0..n), shifted by base */
static void run_spans(const TokRegex* re, OnigRegion* region, const uint8_t* s, size_t n, size_t base, SpanFn fn,
                      void* ctx) {
    size_t from = 0, prev = 0, last_end = (size_t)-1;
    while (from <= n) {
        int r = onig_search(re->reg, s, s + n, s + from, s + n, region, ONIG_OPTION_NONE);
        if (r == ONIG_MISMATCH) break;
        if (r < 0) { /* an error, such as the backtracking limit: never read as "no more matches" */
            UChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
            onig_error_code_to_str(msg, r);
            char where[512];
            site_of(s + from, base + from, where, sizeof where);
            const char* at = (const char*)s + from;
            DIE("the tokenizer's regex failed searching from %s (\"%.*s...\"): Oniguruma: %s; the text is not split "
                "there as Hugging Face tokenizers would split it",
                where, utf8_clip(at, n - from, 24), at, (const char*)msg);
        }
        size_t a = (size_t)region->beg[0], b = (size_t)region->end[0];
        if (a == b && b == last_end) { /* no empty match right after a match: one character on */
            uint32_t cp;
            size_t l = 1;
            if (from < n) uc_next(s + from, n - from, &cp, &l);
            from += l;
            continue;
        }
        from = last_end = b;
        if (prev != a) fn(ctx, base + prev, base + a, 0);
        fn(ctx, base + a, base + b, 1);
        prev = b;
    }
    if (prev != n) fn(ctx, base + prev, base + n, 0);
}

void tok_regex_spans(const TokRegex* re, void** region, const uint8_t* s, size_t n, SpanFn fn, void* ctx) {
    if (!*region) *region = onig_region_new();
    CHECK(*region, "out of memory for an Oniguruma region");
    for (size_t i = 0; i < n;) { /* valid runs apart, each invalid byte alone */
        size_t j = i;
        uint32_t cp;
        size_t l;
        while (j < n) {
            uc_next(s + j, n - j, &cp, &l);
            if (cp == 0xFFFFFFFFu) break;
            j += l;
        }
        if (j > i) run_spans(re, *region, s + i, j - i, i, fn, ctx);
        if (j < n) fn(ctx, j, j + 1, -1), j++;
        i = j;
    }
}

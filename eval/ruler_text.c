/* The material RULER's generators draw from, with Debian's files in place of its downloads
   (docs/ruler.md, "Sources"): the word list, the essay cut into sentences, and the random
   needle formats. Sentences are cut by a rule in place of NLTK's punkt model: a word ending in
   '.', '!' or '?' (closing quotes and brackets after it allowed) ends a sentence when the next
   word starts with a capital, a digit or an opening quote, unless it is a title such as "Mr.". */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "eval/ruler_internal.h"

/* the file's bytes, or die naming it and the Debian package that ships the default */
static char* read_source(const char* path, const char* what, const char* deflt, const char* package, size_t* len) {
    char* text = file_read_all_or_null(path, len);
    if (!text)
        DIE("RULER: cannot read the %s %s (%s); Debian's package %s ships %s: apt-get install %s, or make deps", what,
            path, file_read_error(errno), package, deflt, package);
    return text;
}

/* a word of the list: 4 to 10 lowercase ASCII letters (no proper nouns, no possessives) */
static bool plain_word(const char* w, size_t n) {
    if (n < 4 || n > 10) return false;
    for (size_t i = 0; i < n; i++)
        if (w[i] < 'a' || w[i] > 'z') return false;
    return true;
}

static void load_words(RulerSources* s, const char* path) {
    size_t len;
    s->word_buf = read_source(path, "word list", RULER_WORDS_PATH, RULER_WORDS_PACKAGE, &len);
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += s->word_buf[i] == '\n';
    s->words = mallocCheck(lines * sizeof(*s->words));
    s->n_words = 0;
    char* p = s->word_buf;
    char* end = s->word_buf + len;
    while (p < end) {
        char* nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        *nl = 0;
        if (plain_word(p, (size_t)(nl - p))) s->words[s->n_words++] = p;
        p = nl + 1;
    }
    CHECK(s->n_words >= 1000, "%s: %zu words of 4 to 10 lowercase letters, RULER's generators need at least 1000", path,
          s->n_words);
}

/* The essay as RULER reads its own: every run of whitespace one space. The Project Gutenberg
   lines around the story (a "Produced by" paragraph first, the "End of the Project Gutenberg"
   line last) are dropped. */
static void load_essay(RulerSources* s, const char* path) {
    size_t len;
    char* raw = read_source(path, "essay", RULER_ESSAY_PATH, RULER_ESSAY_PACKAGE, &len);
    char* start = raw;
    if (!strncmp(start, "Produced by", 11)) {
        char* para = strstr(start, "\n\n");
        if (para) start = para;
    }
    char* stop = strstr(start, "End of the Project Gutenberg");
    size_t n = stop ? (size_t)(stop - start) : len - (size_t)(start - raw);
    s->essay = mallocCheck(n + 1);
    s->essay_words = mallocCheck((n / 2 + 1) * sizeof(size_t)); /* a word and its space: 2 bytes at least */
    size_t out = 0, words = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)start[i];
        if (isspace(c)) continue;
        if (i == 0 || isspace((unsigned char)start[i - 1])) {
            if (out) s->essay[out++] = ' ';
            s->essay_words[words++] = out;
        }
        s->essay[out++] = (char)c;
    }
    s->essay[out] = 0;
    s->essay_len = out;
    s->n_essay_words = words;
    free(raw);
    CHECK(words >= 1000, "%s: %zu words, the essay haystack needs at least 1000", path, words);
}

void ruler_sources_load(RulerSources* s, const char* words_path, const char* essay_path) {
    memset(s, 0, sizeof(*s));
    load_words(s, words_path ? words_path : RULER_WORDS_PATH);
    load_essay(s, essay_path ? essay_path : RULER_ESSAY_PATH);
}

void ruler_sources_free(RulerSources* s) {
    free(s->word_buf);
    free(s->words);
    free(s->essay);
    free(s->essay_words);
    memset(s, 0, sizeof(*s));
}

void ruler_rand_number(Rng* rng, char* out) {
    snprintf(out, RULER_REF_LEN, "%llu", 1000000ull + (unsigned long long)rng_below(rng, 9000000));
}

void ruler_rand_uuid(Rng* rng, char* out) {
    uint8_t b[16];
    uint64_t hi = rng_u64(rng), lo = rng_u64(rng);
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)(hi >> (56 - 8 * i));
        b[8 + i] = (uint8_t)(lo >> (56 - 8 * i));
    }
    b[6] = (uint8_t)((b[6] & 0x0F) | 0x40); /* version 4 */
    b[8] = (uint8_t)((b[8] & 0x3F) | 0x80); /* RFC 4122 variant */
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        o += (size_t)snprintf(out + o, RULER_REF_LEN - o, "%02x", b[i]);
    }
}

void ruler_rand_key_word(Rng* rng, const RulerSources* s, char* out) {
    const char* a = s->words[rng_below(rng, s->n_words)];
    const char* b = s->words[rng_below(rng, s->n_words)];
    snprintf(out, RULER_REF_LEN, "%s-%s", a, b);
}

void ruler_rand_letters(Rng* rng, char* out, size_t len, char first) {
    for (size_t i = 0; i < len; i++) out[i] = (char)(first + (int)rng_below(rng, 26));
    out[len] = 0;
}

void ruler_shuffle(Rng* rng, void* items, size_t n, size_t size) {
    char tmp[RULER_NEEDLE_LEN];
    CHECK(size <= sizeof(tmp), "ruler_shuffle: items of %zu bytes", size);
    char* a = items;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)rng_below(rng, i);
        memcpy(tmp, a + (i - 1) * size, size);
        memcpy(a + (i - 1) * size, a + j * size, size);
        memcpy(a + j * size, tmp, size);
    }
}

void ruler_sample(Rng* rng, size_t n, size_t k, size_t* out) {
    CHECK(k <= n, "ruler_sample: %zu of %zu", k, n);
    for (size_t i = 0; i < k; i++) {
        bool again = true;
        while (again) {
            out[i] = (size_t)rng_below(rng, n);
            again = false;
            for (size_t j = 0; j < i; j++) again |= out[j] == out[i];
        }
    }
}

/* the bytes of essay word w (cycled) */
static const char* essay_word(const RulerSources* s, size_t w, size_t* len) {
    size_t i = w % s->n_essay_words;
    size_t end = i + 1 < s->n_essay_words ? s->essay_words[i + 1] - 1 : s->essay_len;
    *len = end - s->essay_words[i];
    return s->essay + s->essay_words[i];
}

static bool is_title(const char* w, size_t n) {
    static const char* const titles[] = {"Mr.", "Mrs.", "Dr.", "St.", "Mt.", "Ms.", "Jr.", "Sr."};
    for (size_t i = 0; i < sizeof(titles) / sizeof(titles[0]); i++)
        if (n == strlen(titles[i]) && !memcmp(w, titles[i], n)) return true;
    return false;
}

static bool ends_sentence(const char* w, size_t n, const char* next) {
    size_t e = n;
    while (e > 0 && strchr("\"')]", w[e - 1])) e--;
    if (e == 0 || !strchr(".!?", w[e - 1]) || is_title(w, n)) return false;
    unsigned char c = (unsigned char)next[0];
    if (c == '"' || c == '\'' || c == '(') c = (unsigned char)next[1];
    return isupper(c) || isdigit(c);
}

size_t ruler_essay_sentence_ends(const RulerSources* s, size_t n_words, size_t* ends) {
    size_t k = 0;
    for (size_t w = 0; w < n_words; w++) {
        size_t n, n_next;
        const char* word = essay_word(s, w, &n);
        if (w + 1 == n_words || ends_sentence(word, n, essay_word(s, w + 1, &n_next))) ends[k++] = w + 1;
    }
    return k;
}

/* words [a, b) of the (cycled) essay joined by spaces */
static void put_words(TextBuf* out, const RulerSources* s, size_t a, size_t b) {
    for (size_t w = a; w < b; w++) {
        size_t n;
        const char* word = essay_word(s, w, &n);
        if (w > a) textbuf_put(out, " ", 1);
        textbuf_put(out, word, n);
    }
}

void ruler_essay_context(TextBuf* out, const RulerSources* s, size_t n_words, const char* const* needles,
                         const int* depth_pct, size_t k) {
    size_t* ends = mallocCheck((n_words + 1) * sizeof(size_t));
    size_t n_sents = ruler_essay_sentence_ends(s, n_words, ends);
    size_t prev = 0; /* sentences already written */
    for (size_t j = 0; j <= k; j++) {
        /* as RULER: int(len(sentences) * (depth / 100)) */
        size_t pos = j < k ? (size_t)((double)n_sents * ((double)depth_pct[j] / 100.0)) : n_sents;
        if (j > 0) textbuf_put(out, " ", 1);
        put_words(out, s, prev ? ends[prev - 1] : 0, pos ? ends[pos - 1] : 0);
        if (j < k) {
            textbuf_put(out, " ", 1);
            textbuf_puts(out, needles[j]);
        }
        prev = pos;
    }
    free(ends);
}

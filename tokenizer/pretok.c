/* Hand-written matchers for the pre-tokenizer regexes the supported models use.
   A regex alternation takes the FIRST alternative that matches at a position
   (not the longest), and a failed lookahead backtracks a greedy run by one
   character; each function below walks the alternatives in the regex's order
   and returns where the match that starts at i ends. A byte that is not valid
   UTF-8 is one character of class "other" (tokenizer/unicode.c). */
#include <stdbool.h>
#include <string.h>

#include "tokenizer/tok_steps.h"
#include "tokenizer/tok_text.h"

/* the GPT-2 pattern (ByteLevel's regex) */
const char PRETOK_RE_GPT2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
/* cl100k_base, Llama-3 and OLMo-2 (dolma2): at most three digits per pre-token */
const char PRETOK_RE_CL100K[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/* o200k_base (GPT-4o): letters split at case changes, contractions after them, "/" after punctuation */
#define O200K_UP "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]"
#define O200K_LW "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]"
#define O200K_CONTRACTION "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
const char PRETOK_RE_O200K[] =
    "[^\\r\\n\\p{L}\\p{N}]?" O200K_UP "*" O200K_LW "+" O200K_CONTRACTION "|[^\\r\\n\\p{L}\\p{N}]?" O200K_UP "+" O200K_LW
    "*" O200K_CONTRACTION "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/* Qwen2: the same with one digit per pre-token */
const char PRETOK_RE_QWEN[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* The contractions 's 't 're 've 'm 'll 'd, as one regex group spells them: "(?i:" with each once (in any
   case), or "(" / "(?:" with every ASCII case of each spelled out (js-tiktoken's spelling). The order does
   not matter: no alternative is a prefix of another. The group's length from g, 0 when it is not one;
   *fold: CONTRACT_UNICODE for (?i, which also folds U+017F into s, CONTRACT_ASCII for the spelled cases. */
static size_t contraction_group(const char* g, int* fold) {
    static const char* const WORDS[] = {"s", "t", "re", "ve", "m", "ll", "d"};
    const char* p = g;
    if (*p++ != '(') return 0;
    int icase = !strncmp(p, "?i:", 3);
    p += icase ? 3 : !strncmp(p, "?:", 2) ? 2 : 0;
    unsigned seen[7] = {0}; /* per word, a bit per case variant (bit k: letter k upper) */
    for (;;) {
        if (*p++ != '\'') return 0;
        char w[3] = {0};
        size_t len = 0;
        unsigned variant = 0;
        for (; len < 3 && ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z'); len++, p++) {
            variant |= (*p >= 'A' && *p <= 'Z') << len;
            w[len < 2 ? len : 0] = (char)(*p | 0x20);
        }
        size_t k = 0;
        while (k < 7 && !(len == strlen(WORDS[k]) && !strncmp(w, WORDS[k], len))) k++;
        if (k == 7 || (seen[k] >> variant & 1u)) return 0;
        seen[k] |= 1u << variant;
        if (*p == ')') break;
        if (*p++ != '|') return 0;
    }
    for (size_t k = 0; k < 7; k++) {
        unsigned all = (1u << (1u << strlen(WORDS[k]))) - 1u; /* every case variant */
        if (icase ? __builtin_popcount(seen[k]) != 1 : seen[k] != all) return 0;
    }
    *fold = icase ? CONTRACT_UNICODE : CONTRACT_ASCII;
    return (size_t)(p + 1 - g);
}

/* regex with every contraction group written as (?i:'s|'t|'re|'ve|'m|'ll|'d) into out (len bytes); *fold the
   groups' folding (-1: none; they must agree). 0, or -1 when it does not fit or the groups disagree. */
static int canonical_regex(const char* regex, char* out, size_t len, int* fold) {
    static const char CANON[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
    size_t o = 0;
    *fold = -1;
    for (const char* p = regex; *p;) {
        int f;
        size_t g = *p == '(' ? contraction_group(p, &f) : 0;
        const char* piece = g ? CANON : p;
        size_t n = g ? sizeof CANON - 1 : 1;
        if (g && *fold >= 0 && f != *fold) return -1;
        if (g) *fold = f;
        if (o + n >= len) return -1;
        memcpy(out + o, piece, n);
        o += n;
        p += g ? g : 1;
    }
    out[o] = 0;
    return 0;
}

int pretok_recognise(const char* regex, PreStep* step) {
    memset(step, 0, sizeof *step);
    if (!strcmp(regex, PRETOK_RE_GPT2)) {
        step->kind = STEP_SPLIT_GPT2;
        return 0;
    }
    /* cl100k, Qwen2 and o200k, their contraction groups in either spelling */
    char canon[512];
    int fold;
    if (canonical_regex(regex, canon, sizeof canon, &fold) || fold < 0) return -1;
    if (!strcmp(canon, PRETOK_RE_CL100K) || !strcmp(canon, PRETOK_RE_QWEN)) {
        step->kind = STEP_SPLIT_CL100K;
        step->max_digits = strcmp(canon, PRETOK_RE_CL100K) ? 1 : 3;
    } else if (!strcmp(canon, PRETOK_RE_O200K)) {
        step->kind = STEP_SPLIT_O200K;
    } else return -1;
    step->contraction_fold = fold;
    return 0;
}

/* class of the character at i (its length in *len); UC_OTHER past the end is never asked */
static inline int cls_at(const uint8_t* s, size_t n, size_t i, size_t* len) {
    uint32_t cp;
    return uc_next(s + i, n - i, &cp, len);
}

/* end of the run of characters from i whose class satisfies (cls & want) == want_val */
static size_t run_of(const uint8_t* s, size_t n, size_t i, int want) {
    while (i < n) {
        size_t l;
        int c = cls_at(s, n, i, &l);
        if (want == UC_OTHER ? c != 0 : !(c & want)) break;
        i += l;
    }
    return i;
}

/* \s+(?!\S) then \s+ from i (a space character): the whole run when it reaches
   the end or when it is one character; else the run without its last character */
static size_t space_run(const uint8_t* s, size_t n, size_t i, size_t* last_nl) {
    size_t j = i, last = i;
    if (last_nl) *last_nl = (size_t)-1;
    while (j < n) {
        size_t l;
        if (!(cls_at(s, n, j, &l) & UC_SPACE)) break;
        if (last_nl && (s[j] == '\r' || s[j] == '\n')) *last_nl = j;
        last = j;
        j += l;
    }
    if (j == n || last == i) return j;
    return last;
}

/* 's 't 're 've 'm 'll 'd after the apostrophe at i; 0 when none. fold: CONTRACT_EXACT (lower case
   only), CONTRACT_ASCII (any ASCII case) or CONTRACT_UNICODE (any ASCII case, and U+017F LATIN SMALL
   LETTER LONG S matches s, as Unicode simple case folding does under (?i)). */
static size_t contraction(const uint8_t* s, size_t n, size_t i, int fold) {
    if (i + 1 >= n) return 0;
    uint8_t a = s[i + 1], b = i + 2 < n ? s[i + 2] : 0;
    if (fold != CONTRACT_EXACT) {
        if (fold == CONTRACT_UNICODE && a == 0xC5 && b == 0xBF) return i + 3; /* 'ſ */
        a = (uint8_t)(a | ((a >= 'A' && a <= 'Z') ? 0x20 : 0));
        b = (uint8_t)(b | ((b >= 'A' && b <= 'Z') ? 0x20 : 0));
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    return 0;
}

size_t pretok_gpt2(const uint8_t* s, size_t n, size_t i) {
    size_t l, e;
    if (s[i] == '\'' && (e = contraction(s, n, i, CONTRACT_EXACT))) return e;
    int c = cls_at(s, n, i, &l);
    size_t j = i;
    if (s[i] == ' ' && i + 1 < n) { /* ' ?' before a letter, number or other run */
        size_t l2;
        int c2 = cls_at(s, n, i + 1, &l2);
        if (!(c2 & UC_SPACE)) {
            c = c2;
            j = i + 1;
        }
    }
    if (c & UC_LETTER) return run_of(s, n, j, UC_LETTER);
    if (c & UC_NUMBER) return run_of(s, n, j, UC_NUMBER);
    if (c == UC_OTHER) return run_of(s, n, j, UC_OTHER);
    return space_run(s, n, i, NULL);
}

/* The alternatives after the letters, shared by cl100k, Qwen2 and o200k, at i (a character no letter
   alternative matched): \p{N}{1,max_digits}, then ' ?[^\s\p{L}\p{N}]+[\r\n]*' ([\r\n/]* with slash, o200k's),
   then \s*[\r\n]+, \s+(?!\S), \s+ */
static size_t after_letters(const uint8_t* s, size_t n, size_t i, int max_digits, bool slash) {
    size_t l;
    int c = cls_at(s, n, i, &l);
    if (c & UC_NUMBER) {
        size_t j = i;
        for (int k = 0; k < max_digits && j < n; k++) {
            size_t l2;
            if (!(cls_at(s, n, j, &l2) & UC_NUMBER)) break;
            j += l2;
        }
        return j;
    }
    size_t j = i;
    if (s[i] == ' ' && i + 1 < n) {
        size_t l2;
        if (cls_at(s, n, i + 1, &l2) == UC_OTHER) {
            c = UC_OTHER;
            j = i + 1;
        }
    }
    if (c == UC_OTHER) {
        j = run_of(s, n, j, UC_OTHER);
        while (j < n && (s[j] == '\r' || s[j] == '\n' || (slash && s[j] == '/'))) j++;
        return j;
    }
    /* \s*[\r\n]+ ends after the last \r or \n of the space run; else \s+(?!\S), \s+ */
    size_t last_nl, end = space_run(s, n, i, &last_nl);
    return last_nl != (size_t)-1 ? last_nl + 1 : end;
}

size_t pretok_cl100k(const uint8_t* s, size_t n, size_t i, const PreStep* st) {
    size_t l, e;
    int max_digits = st->max_digits;
    if (s[i] == '\'' && (e = contraction(s, n, i, st->contraction_fold))) return e;
    int c = cls_at(s, n, i, &l);
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (c & UC_LETTER) return run_of(s, n, i, UC_LETTER);
    if (!(c & UC_NUMBER) && s[i] != '\r' && s[i] != '\n' && i + l < n) {
        size_t l2;
        if (cls_at(s, n, i + l, &l2) & UC_LETTER) return run_of(s, n, i + l, UC_LETTER);
    }
    return after_letters(s, n, i, max_digits, false);
}

/* ---- o200k ---- */

/* the classes of the character at i: its \p{L}\p{N}\s class in *cls, its length in *len; returns its case
   classes (UC_UP, UC_LW) */
static inline int case_at(const uint8_t* s, size_t n, size_t i, size_t* len, int* cls) {
    uint32_t cp;
    *cls = uc_next(s + i, n - i, &cp, len);
    return uc_case(cp);
}

/* end of the run from i of characters with case class `want`; *last_lw: where the last of them that is also
   UC_LW starts ((size_t)-1: none) */
static size_t case_run(const uint8_t* s, size_t n, size_t i, int want, size_t* last_lw) {
    if (last_lw) *last_lw = (size_t)-1;
    while (i < n) {
        size_t l;
        int c, k = case_at(s, n, i, &l, &c);
        if (!(k & want)) break;
        if (last_lw && (k & UC_LW)) *last_lw = i;
        i += l;
    }
    return i;
}

/* UP* LW+ from j (the first alternative without its prefix): the greedy UP* gives back characters until LW+
   can start; 0 when it cannot */
static size_t upper_then_lower(const uint8_t* s, size_t n, size_t j) {
    size_t last_lw, a = case_run(s, n, j, UC_UP, &last_lw), l;
    int c;
    if (a < n && (case_at(s, n, a, &l, &c) & UC_LW)) return case_run(s, n, a, UC_LW, NULL); /* LW+ after the run */
    if (last_lw == (size_t)-1) return 0;
    case_at(s, n, last_lw, &l, &c); /* the run's last LW character alone: what follows it is not LW */
    return last_lw + l;
}

size_t pretok_o200k(const uint8_t* s, size_t n, size_t i, const PreStep* st) {
    size_t l, e;
    int c;
    case_at(s, n, i, &l, &c);
    /* the starts of the two letter alternatives: after the optional [^\r\n\p{L}\p{N}], then at i */
    size_t starts[2], ns = 0;
    if (!(c & (UC_LETTER | UC_NUMBER)) && s[i] != '\r' && s[i] != '\n' && i + l < n) starts[ns++] = i + l;
    starts[ns++] = i;
    /* [^\r\n\p{L}\p{N}]? UP* LW+ C?, then [^\r\n\p{L}\p{N}]? UP+ LW* C? */
    for (int alt = 0; alt < 2; alt++)
        for (size_t t = 0; t < ns; t++) {
            size_t j = starts[t], end = 0;
            if (alt == 0) end = upper_then_lower(s, n, j);
            else if (case_at(s, n, j, &l, &c) & UC_UP)
                end = case_run(s, n, case_run(s, n, j, UC_UP, NULL), UC_LW, NULL);
            if (!end) continue;
            return end < n && s[end] == '\'' && (e = contraction(s, n, end, st->contraction_fold)) ? e : end;
        }
    return after_letters(s, n, i, 3, true);
}

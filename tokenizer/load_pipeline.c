/* Reading the pipeline around the model from tokenizer.json: the normalizer,
   the pre-tokenizer, the decoder and the post-processor (what each step does is
   in tokenizer/normalize.c, tokenizer/tokenizer.c, tokenizer/decode.c). A type
   or an option this code does not implement is refused with its JSON path; a
   regex Oniguruma cannot compile is refused with Oniguruma's message. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/load_json.h"

const char* load_type_of(const cJSON* o) {
    const cJSON* ty = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(ty) ? ty->valuestring : NULL;
}

int load_require_off(Ctx* c, const cJSON* o, const char* key, const char* path) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v) || (cJSON_IsString(v) && !v->valuestring[0])) return 0;
    char* txt = cJSON_PrintUnformatted(v);
    set_err(c->err, c->err_len, "tokenizer '%s': %s.%s = %.60s is not supported (only null)", c->t->name, path, key,
            txt ? txt : "?");
    free(txt);
    return 1;
}

int load_flag(Ctx* c, const cJSON* o, const char* key, const char* path, bool dflt, bool* out) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (v && !cJSON_IsNull(v) && !cJSON_IsBool(v))
        FAIL(c, "tokenizer '%s': %s.%s: expected true or false, not %s", c->t->name, path, key,
             cJSON_IsString(v) ? "a string" : "another type");
    *out = v && !cJSON_IsNull(v) ? cJSON_IsTrue(v) : dflt;
    return 0;
}

bool load_is_id(const cJSON* v) {
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= (double)INT32_MAX - 1 &&
           v->valuedouble == (double)(int64_t)v->valuedouble;
}

static const cJSON* get(const cJSON* o, const char* key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

/* o[key] as a string: 0 and *out, or 1 with the message */
static int get_string(Ctx* c, const cJSON* o, const char* key, const char* path, const char** out) {
    const cJSON* v = get(o, key);
    if (!cJSON_IsString(v)) FAIL(c, "tokenizer '%s': %s.%s: expected a string", c->t->name, path, key);
    *out = v->valuestring;
    return 0;
}

/* o[key] as one character (its UTF-8 bytes in ch[4], *len of them) */
static int get_char(Ctx* c, const cJSON* o, const char* key, const char* path, uint8_t ch[4], size_t* len) {
    const char* s = NULL;
    TRY(get_string(c, o, key, path, &s));
    uint32_t cp;
    size_t n = strlen(s);
    if (!n || uc_next((const uint8_t*)s, n, &cp, len) < 0 || *len != n || cp == 0xFFFFFFFFu)
        FAIL(c, "tokenizer '%s': %s.%s: expected one character, got \"%.40s\"", c->t->name, path, key, s);
    memcpy(ch, s, n);
    return 0;
}

/* a compiled regex, or 1 with the message naming path */
static int compile(Ctx* c, const char* pattern, const char* path, TokRegex** re) {
    char msg[256];
    *re = tok_regex_new(pattern, strlen(pattern), msg, sizeof msg);
    if (!*re) FAIL(c, "tokenizer '%s': %s: bad regex \"%.200s\": %s (Oniguruma)", c->t->name, path, pattern, msg);
    return 0;
}

/* {"String": s} (matched literally) or {"Regex": r}: the compiled regex; *literal = s when asked for and a String */
static int parse_pattern(Ctx* c, const cJSON* o, const char* path, TokRegex** re, const char** literal) {
    const cJSON* pat = get(o, "pattern");
    const cJSON* str = get(pat, "String");
    const cJSON* rx = get(pat, "Regex");
    char sub[300];
    *re = NULL;
    if (cJSON_IsString(str) && str->valuestring[0]) {
        if (literal) {
            *literal = str->valuestring;
            return 0;
        }
        char* esc = tok_regex_escape(str->valuestring);
        snprintf(sub, sizeof sub, "%s.pattern.String", path);
        int rc = compile(c, esc, sub, re);
        free(esc);
        return rc;
    }
    if (cJSON_IsString(rx) && !literal) {
        snprintf(sub, sizeof sub, "%s.pattern.Regex", path);
        return compile(c, rx->valuestring, sub, re);
    }
    FAIL(c, "tokenizer '%s': %s.pattern: expected {\"String\": a non-empty string}%s", c->t->name, path,
         literal ? "" : " or {\"Regex\": a string}");
}

/* prepend_scheme (always, first, never; add_prefix_space false is never), default always */
static int parse_prepend(Ctx* c, const cJSON* p, const char* path, int* out) {
    const cJSON* ps = get(p, "prepend_scheme");
    *out = cJSON_IsFalse(get(p, "add_prefix_space")) ? PREPEND_NEVER : PREPEND_ALWAYS;
    if (!ps || cJSON_IsNull(ps)) return 0;
    static const char* names[] = {"always", "first", "never"};
    for (int k = 0; k < 3; k++)
        if (cJSON_IsString(ps) && !strcmp(ps->valuestring, names[k])) {
            *out = k;
            return 0;
        }
    FAIL(c, "tokenizer '%s': %s.prepend_scheme: expected \"always\", \"first\" or \"never\"", c->t->name, path);
}

/* each item of p[key] (an array) through parse as path.key[i] */
static int parse_seq(Ctx* c, const cJSON* p, const char* key, const char* path,
                     int (*parse)(Ctx*, const cJSON*, const char*)) {
    const cJSON* arr = get(p, key);
    char sub[256];
    if (!cJSON_IsArray(arr)) FAIL(c, "tokenizer '%s': %s.%s: expected an array", c->t->name, path, key);
    int i = 0;
    for (const cJSON* it = arr->child; it; it = it->next, i++) {
        snprintf(sub, sizeof sub, "%s.%s[%d]", path, key, i);
        TRY(parse(c, it, sub));
    }
    return 0;
}

/* ---- normalizer ---- */
int parse_normalizer(Ctx* c, const cJSON* p, const char* path) {
    Tokenizer* t = c->t;
    if (!p || cJSON_IsNull(p)) return 0;
    const char* ty = load_type_of(p);
    if (!ty) FAIL(c, "tokenizer '%s': %s: expected an object with a \"type\"", t->name, path);
    if (!strcmp(ty, "Sequence")) return parse_seq(c, p, "normalizers", path, parse_normalizer);
    if (t->n_norm == MAX_NORM) FAIL(c, "tokenizer '%s': %s: more than %d normalizer steps", t->name, path, MAX_NORM);
    NormStep* st = &t->norm[t->n_norm];
    memset(st, 0, sizeof *st);
    static const char* forms[] = {"NFC", "NFD", "NFKC", "NFKD"};
    static const NormKind form_kind[] = {NORM_NFC, NORM_NFD, NORM_NFKC, NORM_NFKD};
    int form = -1;
    for (int k = 0; k < 4; k++)
        if (!strcmp(ty, forms[k])) form = k;
    if (form >= 0) {
        st->kind = form_kind[form];
    } else if (!strcmp(ty, "Lowercase")) {
        st->kind = NORM_LOWERCASE;
    } else if (!strcmp(ty, "Strip")) {
        st->kind = NORM_STRIP;
        bool left, right;
        TRY(load_flag(c, p, "strip_left", path, false, &left));
        TRY(load_flag(c, p, "strip_right", path, false, &right));
        st->left = left, st->right = right;
    } else if (!strcmp(ty, "Prepend")) {
        const char* s = NULL;
        TRY(get_string(c, p, "prepend", path, &s));
        st->kind = NORM_PREPEND;
        st->str = strdup(s);
    } else if (!strcmp(ty, "Replace")) {
        const char *content = NULL, *literal = NULL;
        TRY(get_string(c, p, "content", path, &content));
        const cJSON* pat = get(p, "pattern");
        int is_string = cJSON_IsString(get(pat, "String"));
        TRY(parse_pattern(c, p, path, &st->re, is_string ? &literal : NULL));
        st->kind = NORM_REPLACE;
        st->str = strdup(content);
        st->pat = literal ? strdup(literal) : NULL;
    } else {
        FAIL(c,
             "tokenizer '%s': %s.type: normalizer \"%s\" is not supported (NFC, NFD, NFKC, NFKD, Lowercase, Strip, "
             "Prepend, Replace, Sequence)",
             t->name, path, ty);
    }
    t->n_norm++;
    return 0;
}

/* ---- pre-tokenizer ---- */
static int add_step(Ctx* c, PreStep s, const char* path) {
    if (c->t->n_steps == MAX_STEPS)
        FAIL(c, "tokenizer '%s': %s: more than %d pre-tokenizer steps", c->t->name, path, MAX_STEPS);
    c->t->steps[c->t->n_steps++] = s;
    return 0;
}

static int parse_behavior(Ctx* c, const cJSON* p, const char* path, SplitBehavior* b) {
    static const char* names[] = {"Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
    const cJSON* v = get(p, "behavior");
    for (int k = 0; k < 5; k++)
        if (cJSON_IsString(v) && !strcmp(v->valuestring, names[k])) {
            *b = (SplitBehavior)k;
            return 0;
        }
    FAIL(c,
         "tokenizer '%s': %s.behavior: expected \"Isolated\", \"Removed\", \"MergedWithPrevious\", "
         "\"MergedWithNext\" or \"Contiguous\"",
         c->t->name, path);
}

/* Rust regex's Unicode \w, the class the library's Whitespace pre-tokenizer uses */
#define RUST_W "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}"

/* a Split step through Oniguruma on a built-in pattern (Punctuation, Whitespace, WhitespaceSplit) */
static int builtin_split(Ctx* c, const char* pattern, SplitBehavior b, int invert, const char* path) {
    PreStep s = {.kind = STEP_SPLIT_REGEX, .behavior = b, .invert = invert};
    TRY(compile(c, pattern, path, &s.re));
    if (add_step(c, s, path)) {
        tok_regex_free(s.re);
        return 1;
    }
    return 0;
}

static int parse_split(Ctx* c, const cJSON* p, const char* path) {
    PreStep s = {.kind = STEP_SPLIT_REGEX};
    TRY(parse_behavior(c, p, path, &s.behavior));
    bool invert;
    TRY(load_flag(c, p, "invert", path, false, &invert));
    s.invert = invert;
    const cJSON* rx = get(get(p, "pattern"), "Regex");
    /* a hand-written matcher: its regexes match every character of any text, so the matches are the pieces
       both when they are isolated and when, inverted, the (empty) text between them is removed (GPT-4o's
       tokenizer.json) */
    PreStep fast;
    bool pieces_are_matches = (s.behavior == SPLIT_ISOLATED && !s.invert) || (s.behavior == SPLIT_REMOVED && s.invert);
    if (cJSON_IsString(rx) && pieces_are_matches && !pretok_recognise(rx->valuestring, &fast))
        return add_step(c, fast, path);
    TRY(parse_pattern(c, p, path, &s.re, NULL));
    if (add_step(c, s, path)) {
        tok_regex_free(s.re);
        return 1;
    }
    return 0;
}

int parse_pre(Ctx* c, const cJSON* p, const char* path) {
    const char* ty = load_type_of(p);
    if (!p || cJSON_IsNull(p)) return 0;
    if (!ty) FAIL(c, "tokenizer '%s': %s: expected an object with a \"type\"", c->t->name, path);
    if (!strcmp(ty, "Sequence")) return parse_seq(c, p, "pretokenizers", path, parse_pre);
    if (!strcmp(ty, "ByteLevel")) {
        bool aps, re; /* absent: no prefix space, the GPT-2 regex */
        TRY(load_flag(c, p, "add_prefix_space", path, false, &aps));
        TRY(load_flag(c, p, "use_regex", path, true, &re));
        if (aps) TRY(add_step(c, (PreStep){.kind = STEP_PREFIX_SPACE}, path));
        if (re) TRY(add_step(c, (PreStep){.kind = STEP_SPLIT_GPT2}, path));
        c->t->byte_level = 1;
        return 0;
    }
    if (!strcmp(ty, "Digits")) {
        PreStep s = {.kind = STEP_DIGITS};
        bool individual;
        TRY(load_flag(c, p, "individual_digits", path, false, &individual));
        s.individual = individual;
        return add_step(c, s, path);
    }
    if (!strcmp(ty, "Split")) return parse_split(c, p, path);
    if (!strcmp(ty, "Metaspace")) {
        PreStep s = {.kind = STEP_METASPACE};
        TRY(get_char(c, p, "replacement", path, s.rep, &s.rep_len));
        TRY(parse_prepend(c, p, path, &s.prepend));
        const cJSON* split = get(p, "split");
        s.split = !cJSON_IsFalse(split);
        return add_step(c, s, path);
    }
    if (!strcmp(ty, "Punctuation")) { /* Unicode punctuation and every ASCII punctuation character */
        SplitBehavior b = SPLIT_ISOLATED;
        if (get(p, "behavior")) TRY(parse_behavior(c, p, path, &b));
        return builtin_split(c, "[\\p{P}\\x21-\\x2F\\x3A-\\x40\\x5B-\\x60\\x7B-\\x7E]", b, 0, path);
    }
    if (!strcmp(ty, "Whitespace")) /* \w+|[^\w\s]+ with Rust regex's \w, as the library has it */
        return builtin_split(c, "[" RUST_W "]+|[^" RUST_W "\\s]+", SPLIT_REMOVED, 1, path);
    if (!strcmp(ty, "WhitespaceSplit")) return builtin_split(c, "\\s+", SPLIT_REMOVED, 0, path);
    FAIL(c,
         "tokenizer '%s': %s.type: pre-tokenizer \"%s\" is not supported (ByteLevel, Split, Digits, Metaspace, "
         "Punctuation, Whitespace, WhitespaceSplit, Sequence)",
         c->t->name, path, ty);
}

/* ---- decoder ---- */
static int add_dec(Ctx* c, DecStep d, const char* path) {
    if (c->t->n_dec == MAX_DEC) FAIL(c, "tokenizer '%s': %s: more than %d decoder steps", c->t->name, path, MAX_DEC);
    c->t->dec[c->t->n_dec++] = d;
    return 0;
}

/* a count in [0, 2^20] */
static int get_count(Ctx* c, const cJSON* o, const char* key, const char* path, size_t* out) {
    const cJSON* v = get(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > (1 << 20) ||
        v->valuedouble != (double)(int64_t)v->valuedouble)
        FAIL(c, "tokenizer '%s': %s.%s: expected an integer count", c->t->name, path, key);
    *out = (size_t)v->valuedouble;
    return 0;
}

int parse_decoder(Ctx* c, const cJSON* p, const char* path) {
    Tokenizer* t = c->t;
    const char* ty = load_type_of(p);
    if (!ty) FAIL(c, "tokenizer '%s': %s.type: \"(none)\" is not supported (a decoder is needed)", t->name, path);
    if (!strcmp(ty, "Sequence")) return parse_seq(c, p, "decoders", path, parse_decoder);
    DecStep d = {0};
    if (t->byte_level != !strcmp(ty, "ByteLevel"))
        FAIL(c,
             "tokenizer '%s': %s.type: decoder \"%s\" is not supported with %s (a byte-level model decodes with "
             "ByteLevel alone, another model with ByteFallback, Fuse, Strip, Replace, Metaspace)",
             t->name, path, ty, t->byte_level ? "a ByteLevel pre-tokenizer" : "a model that is not byte-level");
    if (!strcmp(ty, "ByteLevel")) {
        d.kind = DEC_BYTE_LEVEL;
    } else if (!strcmp(ty, "ByteFallback")) {
        d.kind = DEC_BYTE_FALLBACK;
    } else if (!strcmp(ty, "Fuse")) {
        d.kind = DEC_FUSE;
    } else if (!strcmp(ty, "Strip")) {
        d.kind = DEC_STRIP;
        TRY(get_char(c, p, "content", path, d.ch, &d.ch_len));
        TRY(get_count(c, p, "start", path, &d.start));
        TRY(get_count(c, p, "stop", path, &d.stop));
    } else if (!strcmp(ty, "Replace")) {
        const char *content = NULL, *literal = NULL;
        TokRegex* unused;
        TRY(get_string(c, p, "content", path, &content));
        TRY(parse_pattern(c, p, path, &unused, &literal));
        d.kind = DEC_REPLACE;
        d.pat = strdup(literal);
        d.content = strdup(content);
    } else if (!strcmp(ty, "Metaspace")) {
        d.kind = DEC_METASPACE;
        TRY(get_char(c, p, "replacement", path, d.ch, &d.ch_len));
        TRY(parse_prepend(c, p, path, &d.prepend));
    } else {
        FAIL(c,
             "tokenizer '%s': %s.type: decoder \"%s\" is not supported (ByteLevel, ByteFallback, Fuse, Strip, "
             "Replace, Metaspace, Sequence)",
             t->name, path, ty);
    }
    return add_dec(c, d, path);
}

/* ---- post-processor ---- */
/* TemplateProcessing's single template: the special tokens before $A are the
   prefix (BOS), those after it the suffix (an EOS some templates append) */
static int parse_template(Ctx* c, const cJSON* p, const char* path) {
    Tokenizer* t = c->t;
    const cJSON* single = cJSON_GetObjectItemCaseSensitive(p, "single");
    const cJSON* specials = cJSON_GetObjectItemCaseSensitive(p, "special_tokens");
    if (!cJSON_IsArray(single)) FAIL(c, "tokenizer '%s': %s.single: expected an array", t->name, path);
    int seen_a = 0, i = 0;
    for (const cJSON* it = single->child; it; it = it->next, i++) {
        const cJSON* sp = cJSON_GetObjectItemCaseSensitive(it, "SpecialToken");
        if (cJSON_GetObjectItemCaseSensitive(it, "Sequence")) {
            if (seen_a) FAIL(c, "tokenizer '%s': %s.single[%d]: a second sequence", t->name, path, i);
            seen_a = 1;
            continue;
        }
        const cJSON* name = cJSON_GetObjectItemCaseSensitive(sp, "id");
        if (!cJSON_IsString(name))
            FAIL(c, "tokenizer '%s': %s.single[%d]: expected SpecialToken or Sequence", t->name, path, i);
        const cJSON* ids =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(specials, name->valuestring), "ids");
        if (!cJSON_IsArray(ids))
            FAIL(c, "tokenizer '%s': %s.special_tokens[\"%s\"].ids: expected an array", t->name, path,
                 name->valuestring);
        int32_t* list = seen_a ? t->suffix : t->prefix;
        size_t* n = seen_a ? &t->n_suffix : &t->n_prefix;
        for (const cJSON* id = ids->child; id; id = id->next) {
            if (!load_is_id(id) || id->valuedouble >= (double)t->V || !t->has[id->valueint]) {
                char* txt = cJSON_PrintUnformatted(id);
                set_err(c->err, c->err_len,
                        "tokenizer '%s': %s.special_tokens[\"%s\"].ids: %.40s is not a token id "
                        "(an integer id of the vocabulary)",
                        t->name, path, name->valuestring, txt ? txt : "?");
                free(txt);
                return 1;
            }
            if (*n == MAX_AROUND)
                FAIL(c, "tokenizer '%s': %s.single: more than %d special tokens on one side", t->name, path,
                     MAX_AROUND);
            list[(*n)++] = id->valueint;
        }
    }
    if (!seen_a) FAIL(c, "tokenizer '%s': %s.single: no sequence ($A)", t->name, path);
    return 0;
}

int parse_post(Ctx* c, const cJSON* p, const char* path) {
    if (!p || cJSON_IsNull(p)) return 0;
    const char* ty = load_type_of(p);
    if (!ty) FAIL(c, "tokenizer '%s': %s: expected an object with a \"type\"", c->t->name, path);
    if (!strcmp(ty, "ByteLevel")) return 0; /* offsets only */
    if (!strcmp(ty, "TemplateProcessing")) return parse_template(c, p, path);
    if (!strcmp(ty, "Sequence")) return parse_seq(c, p, "processors", path, parse_post);
    FAIL(c,
         "tokenizer '%s': %s.type: post-processor \"%s\" is not supported (ByteLevel, TemplateProcessing, "
         "Sequence)",
         c->t->name, path, ty);
}

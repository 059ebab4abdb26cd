/* Reading tokenizer.json (and tokenizer_config.json's eos_token) into a
   Tokenizer: the model, the added tokens and the top level here, the steps
   around the model in tokenizer/load_pipeline.c. Every key this code
   implements is checked; everything else that would change the ids (another
   model, dropout, truncation, ...) is refused with the JSON path of the key,
   never skipped. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "tokenizer/load_json.h"
#include "tokenizer/tok_vocab.h"

/* byte-level BPE writes byte b as the character byte_char[b] (GPT-2's
   bytes_to_unicode): printable Latin-1 bytes as themselves, the other 68 as
   U+0100.. in byte order. char_byte is the inverse over U+0000..U+01FF. */
static uint32_t byte_char[256];
static int16_t char_byte[512];

static void byte_map_init(void) {
    uint32_t next = 256;
    for (int c = 0; c < 512; c++) char_byte[c] = -1;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        byte_char[b] = printable ? (uint32_t)b : next++;
        char_byte[byte_char[b]] = (int16_t)b;
    }
}

/* a vocab string to bytes (byte-level characters through the map; for another model its
   UTF-8 text as it is); out holds at least strlen(s) bytes. Returns the byte count, or -1
   (*bad = the code point) for a character outside the byte-level alphabet. */
static long bytes_of_token(const Tokenizer* t, const char* s, uint8_t* out, uint32_t* bad) {
    size_t n = strlen(s), k = 0;
    if (!t->byte_level) {
        memcpy(out, s, n);
        return (long)n;
    }
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t l;
        uc_next((const uint8_t*)s + i, n - i, &cp, &l);
        if (cp >= 512 || char_byte[cp] < 0) {
            *bad = cp;
            return -1;
        }
        out[k++] = (uint8_t)char_byte[cp];
        i += l;
    }
    return (long)k;
}

static int id_of(Ctx* c, const cJSON* v, const char* what, const char* key) {
    if (!load_is_id(v)) {
        set_err(c->err, c->err_len, "tokenizer '%s': %s[\"%.80s\"]: expected a token id (an integer in [0, 2^31-1))",
                c->t->name, what, key);
        return -1;
    }
    return v->valueint;
}

/* a merge's two sides as ids: from "a b" or ["a", "b"] */
static int merge_sides(Ctx* c, const cJSON* m, size_t i, int32_t ids[3], uint8_t* buf, size_t buf_len) {
    const char* side[2];
    char* copy = NULL;
    if (cJSON_IsString(m)) {
        copy = strdup(m->valuestring);
        CHECK(copy, "out of memory");
        char* sp = strchr(copy, ' ');
        if (!sp || strchr(sp + 1, ' ')) {
            free(copy);
            FAIL(c, "tokenizer '%s': model.merges[%zu]: expected \"left right\" with one space, got \"%.80s\"",
                 c->t->name, i, m->valuestring);
        }
        *sp = 0;
        side[0] = copy, side[1] = sp + 1;
    } else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) &&
               cJSON_IsString(m->child->next)) {
        side[0] = m->child->valuestring, side[1] = m->child->next->valuestring;
    } else {
        FAIL(c, "tokenizer '%s': model.merges[%zu]: expected a string \"left right\" or a pair [left, right]",
             c->t->name, i);
    }
    size_t total = 0;
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++) {
        uint32_t bad;
        long n = strlen(side[k]) + total <= buf_len ? bytes_of_token(c->t, side[k], buf + total, &bad) : -1;
        ids[k] = n > 0 ? tok_lookup(c->t, buf + total, (size_t)n) : -1;
        if (ids[k] < 0)
            rc = set_err(c->err, c->err_len,
                         "tokenizer '%s': model.merges[%zu]: \"%.80s\" is not a token of model.vocab", c->t->name, i,
                         side[k]);
        size_t pl = c->t->prefix_len; /* the merged token has the right side without its continuing prefix */
        if (k == 1 && n >= (long)pl && pl && !memcmp(buf + total, c->t->prefix_str, pl)) {
            memmove(buf + total, buf + total + pl, (size_t)n - pl);
            n -= (long)pl;
        }
        total += n > 0 ? (size_t)n : 0;
    }
    if (!rc) {
        ids[2] = tok_lookup(c->t, buf, total);
        if (ids[2] < 0)
            rc = set_err(c->err, c->err_len,
                         "tokenizer '%s': model.merges[%zu]: the merged token \"%s%s\" is not in model.vocab",
                         c->t->name, i, side[0], side[1]);
    }
    free(copy);
    return rc;
}

/* a vocab string (byte-level characters, or the text itself) that means the added token's content */
static bool same_text(const Tokenizer* t, const char* vocab_string, const char* content) {
    if (!strcmp(vocab_string, content)) return true;
    size_t n = strlen(vocab_string);
    uint8_t* buf = mallocCheck(n + 1);
    uint32_t bad;
    long k = bytes_of_token(t, vocab_string, buf, &bad);
    bool same = k >= 0 && (size_t)k == strlen(content) && !memcmp(buf, content, (size_t)k);
    free(buf);
    return same;
}

/* continuing_subword_prefix and end_of_word_suffix: null, or a string below 32 bytes */
static int parse_affixes(Ctx* c, const cJSON* model) {
    Tokenizer* t = c->t;
    const char* keys[2] = {"continuing_subword_prefix", "end_of_word_suffix"};
    char* dst[2] = {t->prefix_str, t->suffix_str};
    size_t* len[2] = {&t->prefix_len, &t->suffix_len};
    for (int k = 0; k < 2; k++) {
        const cJSON* v = cJSON_GetObjectItemCaseSensitive(model, keys[k]);
        if (!v || cJSON_IsNull(v)) continue;
        uint32_t bad;
        if (!cJSON_IsString(v) || strlen(v->valuestring) >= 32)
            FAIL(c, "tokenizer '%s': model.%s: expected null or a string of less than 32 bytes", t->name, keys[k]);
        long n = bytes_of_token(t, v->valuestring, (uint8_t*)dst[k], &bad);
        if (n < 0) FAIL(c, "tokenizer '%s': model.%s: a character outside the byte-level alphabet", t->name, keys[k]);
        *len[k] = (size_t)n;
    }
    return 0;
}

/* unk_token's id and the <0xHH> tokens of byte_fallback */
static int parse_unk(Ctx* c, const cJSON* model) {
    Tokenizer* t = c->t;
    const cJSON* unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    t->unk = -1;
    if (unk && !cJSON_IsNull(unk)) {
        if (!cJSON_IsString(unk)) FAIL(c, "tokenizer '%s': model.unk_token: expected null or a string", t->name);
        size_t n = strlen(unk->valuestring);
        uint8_t* buf = mallocCheck(n + 1);
        uint32_t bad;
        long k = bytes_of_token(t, unk->valuestring, buf, &bad);
        t->unk = k > 0 ? tok_lookup(t, buf, (size_t)k) : -1;
        free(buf);
        if (t->unk < 0)
            FAIL(c, "tokenizer '%s': model.unk_token: \"%.80s\" is not a token of model.vocab", t->name,
                 unk->valuestring);
    }
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->fallback_id[b] = t->byte_fallback ? tok_lookup(t, (const uint8_t*)name, 6) : -1;
    }
    return 0;
}

static int parse_model(Ctx* c, const cJSON* root) {
    Tokenizer* t = c->t;
    const cJSON* model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const char* ty = load_type_of(model);
    if (!cJSON_IsObject(model)) FAIL(c, "tokenizer '%s': model: expected an object", t->name);
    if (!ty || strcmp(ty, "BPE"))
        FAIL(c, "tokenizer '%s': model.type: \"%s\" is not supported (only BPE)", t->name, ty ? ty : "(none)");
    TRY(load_require_off(c, model, "dropout", "model"));
    TRY(parse_affixes(c, model));
    bool flag[3];
    TRY(load_flag(c, model, "ignore_merges", "model", false, &flag[0]));
    TRY(load_flag(c, model, "byte_fallback", "model", false, &flag[1]));
    TRY(load_flag(c, model, "fuse_unk", "model", false, &flag[2]));
    t->ignore_merges = flag[0], t->byte_fallback = flag[1], t->fuse_unk = flag[2];
    const cJSON* vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON* merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON* added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (!cJSON_IsObject(vocab)) FAIL(c, "tokenizer '%s': model.vocab: expected an object", t->name);
    if (!cJSON_IsArray(merges)) FAIL(c, "tokenizer '%s': model.merges: expected an array", t->name);
    if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added))
        FAIL(c, "tokenizer '%s': added_tokens: expected an array", t->name);

    /* the id range, then every token's bytes: added tokens as their content, vocab entries through the byte map */
    size_t V = 0, total = 0, entries = 0;
    const char* top = NULL; /* the token of the largest id */
    for (const cJSON* v = vocab->child; v; v = v->next, entries++) {
        int id = id_of(c, v, "model.vocab", v->string);
        if (id < 0) return 1;
        if ((size_t)id + 1 > V) V = (size_t)id + 1, top = v->string;
        total += strlen(v->string);
    }
    int i = 0;
    for (const cJSON* a = added ? added->child : NULL; a; a = a->next, i++, entries++) {
        char path[64];
        snprintf(path, sizeof path, "added_tokens[%d]", i);
        const cJSON* content = cJSON_GetObjectItemCaseSensitive(a, "content");
        int id = id_of(c, cJSON_GetObjectItemCaseSensitive(a, "id"), "added_tokens", path);
        if (id < 0) return 1;
        if (!cJSON_IsString(content) || !content->valuestring[0])
            FAIL(c, "tokenizer '%s': %s.content: expected a non-empty string", t->name, path);
        if ((size_t)id + 1 > V) V = (size_t)id + 1, top = content->valuestring;
        total += strlen(content->valuestring);
    }
    if (V == 0) FAIL(c, "tokenizer '%s': model.vocab: empty", t->name);
    if (V > 2 * entries + TOK_ID_SLACK)
        FAIL(c,
             "tokenizer '%s': token \"%.80s\" has id %zu, far above the %zu entries of model.vocab and added_tokens "
             "(ids must be below 2 x entries + %d: memory goes to every id up to the largest)",
             t->name, top, V - 1, entries, TOK_ID_SLACK);
    t->V = V;
    t->bytes = mallocCheck(total + 1);
    t->off = callocCheck(V + 1, sizeof(size_t));
    t->has = callocCheck(V, 1);
    /* lengths first (a token's bytes are at most its string's), then the bytes in id order */
    char** src = callocCheck(V, sizeof(char*));
    uint8_t* is_added = t->added_flags = callocCheck(V, 1); /* ADDED_* of each id; freed with t */
    int rc = 0;
    i = 0;
    for (const cJSON* a = added ? added->child : NULL; a && !rc; a = a->next, i++) {
        int id = cJSON_GetObjectItemCaseSensitive(a, "id")->valueint;
        char* content = cJSON_GetObjectItemCaseSensitive(a, "content")->valuestring;
        if (src[id])
            rc = set_err(c->err, c->err_len,
                         "tokenizer '%s': added_tokens[%d] \"%.80s\": id %d is also the added "
                         "token \"%.80s\" (each added token needs an id of its own)",
                         t->name, i, content, id, src[id]);
        src[id] = content;
        static const char* keys[] = {"lstrip", "rstrip", "single_word", "normalized"};
        static const uint8_t bits[] = {ADDED_LSTRIP, ADDED_RSTRIP, ADDED_SINGLE_WORD, ADDED_NORMALIZED};
        is_added[id] = ADDED;
        for (int k = 0; k < 4; k++)
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, keys[k]))) is_added[id] |= bits[k];
    }
    for (const cJSON* v = vocab->child; v && !rc; v = v->next) {
        if (is_added[v->valueint]) {
            if (!same_text(t, v->string, src[v->valueint]))
                rc = set_err(c->err, c->err_len,
                             "tokenizer '%s': model.vocab[\"%.80s\"]: id %d is also the added "
                             "token \"%.80s\" (an added token may share its id only with a vocab entry of the same "
                             "text)",
                             t->name, v->string, v->valueint, src[v->valueint]);
            continue;
        }
        if (src[v->valueint])
            rc = set_err(c->err, c->err_len, "tokenizer '%s': model.vocab[\"%.80s\"]: id %d is also \"%.80s\"", t->name,
                         v->string, v->valueint, src[v->valueint]);
        src[v->valueint] = v->string;
    }
    size_t pos = 0;
    for (size_t id = 0; id < V && !rc; id++) {
        t->off[id] = pos;
        if (!src[id]) continue;
        t->has[id] = 1;
        if (is_added[id]) {
            size_t l = strlen(src[id]);
            memcpy(t->bytes + pos, src[id], l);
            pos += l;
            continue;
        }
        uint32_t bad;
        long n = bytes_of_token(t, src[id], t->bytes + pos, &bad);
        if (n <= 0)
            rc = set_err(c->err, c->err_len,
                         "tokenizer '%s': model.vocab[\"%.80s\"]: %s (byte-level BPE "
                         "vocab entries are made of the 256 byte characters)",
                         t->name, src[id], n == 0 ? "empty token" : "a character outside the byte-level alphabet");
        pos += n > 0 ? (size_t)n : 0;
    }
    t->off[V] = pos;
    free(src);
    if (rc) return 1;
    vocab_hash_build(t);
    added_build(t);
    TRY(parse_unk(c, model));

    /* byte-level: every byte has a single-byte token, so nothing is unknown */
    for (int b = 0; b < 256 && t->byte_level; b++) {
        uint8_t by = (uint8_t)b;
        t->byte_id[b] = tok_lookup(t, &by, 1);
        if (t->byte_id[b] < 0 || is_added[t->byte_id[b]])
            FAIL(c,
                 "tokenizer '%s': model.vocab: no token for byte 0x%02X (the character U+%04X): byte-level "
                 "BPE needs all 256",
                 t->name, b, byte_char[b]);
    }

    size_t n_merges = (size_t)cJSON_GetArraySize(merges);
    t->merge_cap = 16;
    while (t->merge_cap < 2 * n_merges + 1) t->merge_cap <<= 1;
    t->merges = mallocCheck(t->merge_cap * sizeof(MergeSlot));
    for (size_t k = 0; k < t->merge_cap; k++) t->merges[k].id = -1;
    size_t buf_len = 4096;
    uint8_t* buf = mallocCheck(buf_len);
    size_t k = 0;
    for (const cJSON* m = merges->child; m; m = m->next, k++) {
        int32_t ids[3];
        if (merge_sides(c, m, k, ids, buf, buf_len)) {
            free(buf);
            return 1;
        }
        merge_insert(t, ids[0], ids[1], (uint32_t)k, ids[2]);
    }
    free(buf);
    return 0;
}

static int parse_root(Ctx* c, const cJSON* root) {
    Tokenizer* t = c->t;
    if (!cJSON_IsObject(root)) FAIL(c, "tokenizer '%s': expected a JSON object at the top", t->name);
    TRY(load_require_off(c, root, "truncation", "(top)"));
    TRY(load_require_off(c, root, "padding", "(top)"));
    /* the normalizer first (the content of normalized added tokens goes through it), then the
       pre-tokenizer (a ByteLevel step makes the vocab byte-level) */
    TRY(parse_normalizer(c, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), "normalizer"));
    TRY(parse_pre(c, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), "pre_tokenizer"));
    TRY(parse_model(c, root));
    TRY(parse_decoder(c, cJSON_GetObjectItemCaseSensitive(root, "decoder"), "decoder"));
    TRY(parse_post(c, cJSON_GetObjectItemCaseSensitive(root, "post_processor"), "post_processor"));
    static const char* eos_names[] = {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"};
    for (size_t k = 0; k < sizeof eos_names / sizeof eos_names[0] && t->eos < 0; k++) {
        int32_t id = added_exact(t, (const uint8_t*)eos_names[k], strlen(eos_names[k]));
        if (id >= 0) t->eos = id;
    }
    return 0;
}

/* cJSON ends a string at a NUL, so "a\u0000b" would become "a": the offset of the first NUL character
   (a raw 0 byte or the escape \u0000), or len. A backslash only occurs in a string in valid JSON. */
static size_t first_nul(const char* json, size_t len) {
    const char* z = memchr(json, 0, len);
    size_t end = z ? (size_t)(z - json) : len;
    for (size_t i = 0; i + 1 < end; i++) {
        if (json[i] != '\\') continue;
        if (json[i + 1] == 'u' && i + 6 <= len && !memcmp(json + i + 2, "0000", 4)) return i;
        i++; /* the escaped character */
    }
    return end;
}

Tokenizer* tok_load_json(const char* json, size_t len, const char* name, char* err, size_t err_len) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, byte_map_init);
    uc_init();
    Tokenizer* t = callocCheck(1, sizeof(Tokenizer));
    snprintf(t->name, sizeof t->name, "%s", name);
    t->eos = -1;
    Ctx c = {t, err, err_len};
    const char* end = NULL;
    cJSON* root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    int rc;
    size_t nul = first_nul(json, len);
    if (nul < len)
        rc = set_err(err, err_len,
                     "tokenizer '%s': byte offset %zu: a NUL character (\\u0000) is not "
                     "supported in tokenizer.json",
                     name, nul);
    else if (!root)
        rc = set_err(err, err_len, "tokenizer '%s': not valid JSON at byte offset %zu", name,
                     end ? (size_t)(end - json) : 0);
    else rc = parse_root(&c, root);
    cJSON_Delete(root);
    if (rc) {
        tok_free(t);
        return NULL;
    }
    return t;
}

void tok_free(Tokenizer* t) {
    if (!t) return;
    free(t->bytes);
    free(t->off);
    free(t->has);
    free(t->vocab_hash);
    free(t->merges);
    added_free(t);
    for (size_t k = 0; k < t->n_steps; k++) tok_regex_free(t->steps[k].re);
    for (size_t k = 0; k < t->n_norm; k++) free(t->norm[k].str), free(t->norm[k].pat), tok_regex_free(t->norm[k].re);
    for (size_t k = 0; k < t->n_dec; k++) free(t->dec[k].pat), free(t->dec[k].content);
    free(t);
}

/* eos_token of tokenizer_config.json: a string or {"content": ...}; NULL when absent */
static const char* config_eos(const cJSON* cfg) {
    const cJSON* e = cJSON_GetObjectItemCaseSensitive(cfg, "eos_token");
    if (cJSON_IsObject(e)) e = cJSON_GetObjectItemCaseSensitive(e, "content");
    return cJSON_IsString(e) ? e->valuestring : NULL;
}

Tokenizer* tok_load(const char* path) {
    char file[4096], dir[4096], cfg_path[4096 + 32];
    if (is_dir(path)) {
        snprintf(file, sizeof file, "%s/tokenizer.json", path);
        snprintf(dir, sizeof dir, "%s", path);
    } else {
        snprintf(file, sizeof file, "%s", path);
        dir_of(path, dir, sizeof dir);
    }
    size_t len;
    char* json = file_read_all_or_null(file, &len);
    CHECK(json, "cannot read tokenizer '%s': %s", file, file_read_error(errno));
    char err[1024];
    Tokenizer* t = tok_load_json(json, len, file, err, sizeof err);
    free(json);
    CHECK(t, "%s", err);
    snprintf(cfg_path, sizeof cfg_path, "%s/tokenizer_config.json", dir);
    char* cfg_txt = file_read_all_or_null(cfg_path, &len);
    if (cfg_txt) {
        cJSON* cfg = cJSON_ParseWithLength(cfg_txt, len);
        CHECK(cfg, "'%s': not valid JSON", cfg_path);
        const char* eos = config_eos(cfg);
        CHECK(!eos || tok_set_eos(t, eos), "'%s': eos_token \"%s\" is not a token of '%s'", cfg_path, eos, file);
        cJSON_Delete(cfg);
        free(cfg_txt);
    }
    return t;
}

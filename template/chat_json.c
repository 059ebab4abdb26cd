/* JSON into and out of chat templates (template/chat_value.h): a record's numbers as Python's json.loads reads
   them, and the tojson filter as transformers defines it,
     tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
       = json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys),
   with json.dumps's layout: items joined by ", " (by "," when indented) and keys by ": " unless separators
   names both; with an indent, each item on a line of its own, indented per level, an empty list or dict
   kept as [] or {}; strings with " \ and the control characters escaped (and every character outside
   ' '..'~' as \uXXXX, a surrogate pair above U+FFFF, with ensure_ascii); floats as repr() writes them,
   NaN, Infinity, -Infinity. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "template/chat_value.h"

/* ---- JSON numbers with their literal ---- */

static const char* json_space(const char* p) { return p + strspn(p, " \t\r\n"); }
static const char* json_string_end(const char* p) { /* p at the opening quote */
    for (p++; *p != '"'; p++)
        if (*p == '\\') p++;
    return p + 1;
}
/* the value at p that cJSON parsed into item, walked in step with it; returns the end of its text */
static const char* keep_numbers(cJSON* item, const char* p) {
    p = json_space(p);
    if (cJSON_IsNumber(item)) {
        size_t n = strspn(p, "+-0123456789.eE"); /* the characters cJSON reads a number from */
        char* lit = cJSON_malloc(n + 1);
        CHECK(lit, "out of memory");
        memcpy(lit, p, n);
        lit[n] = 0;
        cJSON_free(item->valuestring);
        item->valuestring = lit;
        return p + n;
    }
    if (cJSON_IsString(item)) return json_string_end(p);
    if (!cJSON_IsArray(item) && !cJSON_IsObject(item)) return p + strspn(p, "truefalsn");
    p++; /* [ or { */
    for (cJSON* c = item->child; c; c = c->next) {
        p = json_space(p);
        if (*p == ',') p = json_space(p + 1);
        if (cJSON_IsObject(item)) p = json_space(json_string_end(p)) + 1; /* the key and its ':' */
        p = keep_numbers(c, p);
    }
    return json_space(p) + 1; /* ] or } */
}
void chat_json_keep_numbers(cJSON* root, const char* text) { keep_numbers(root, text); }

Value* value_number_literal(Render* R, const char* s) {
    if (strpbrk(s, ".eE")) return value_float(R, strtod(s, NULL));
    errno = 0;
    long long i = strtoll(s, NULL, 10);
    if (errno == ERANGE) render_fail(R, "the JSON number %s is beyond 64 bits (the template's ints are 64-bit)", s);
    return value_int(R, i);
}

Value* value_from_json(Render* R, const cJSON* j) {
    if (!j || cJSON_IsNull(j)) return &V_NONE_VALUE;
    if (cJSON_IsBool(j)) return value_bool(cJSON_IsTrue(j));
    if (cJSON_IsNumber(j) && j->valuestring) return value_number_literal(R, j->valuestring);
    if (cJSON_IsNumber(j)) { /* one built in C, without its literal */
        double d = j->valuedouble;
        if (d == floor(d) && fabs(d) < 9007199254740992.0) return value_int(R, (long long)d);
        return value_float(R, d);
    }
    if (cJSON_IsString(j)) return value_str(R, j->valuestring, strlen(j->valuestring));
    Value* v = cJSON_IsArray(j) ? value_list(R) : value_dict(R);
    const cJSON* it;
    cJSON_ArrayForEach(it, j) {
        if (v->k == V_LIST) list_push(R, v, value_from_json(R, it));
        else dict_set(R, v, it->string, value_from_json(R, it));
    }
    return v;
}

/* ---- tojson ---- */

typedef struct {
    bool ascii, sort;
    const Value* indent; /* a string, or NULL for none */
    const Value *item_sep, *key_sep;
} JsonStyle;

/* the code point of the UTF-8 sequence at s (n bytes left), its length in *len */
static unsigned utf8_at(Render* R, const char* s, size_t n, size_t* len) {
    unsigned char c = (unsigned char)s[0];
    size_t k = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (!k || k > n) render_fail(R, "tojson of a string that is not UTF-8");
    unsigned cp = k == 1 ? c : c & (0x7F >> k);
    for (size_t i = 1; i < k; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) render_fail(R, "tojson of a string that is not UTF-8");
        cp = cp << 6 | ((unsigned char)s[i] & 0x3F);
    }
    *len = k;
    return cp;
}

static void json_string(Render* R, const char* s, size_t n, bool ascii) {
    char buf[16];
    out_append(R, "\"", 1);
    for (size_t i = 0, len; i < n; i += len) {
        unsigned cp = utf8_at(R, s + i, n - i, &len);
        const char* e = cp == '"'    ? "\\\""
                        : cp == '\\' ? "\\\\"
                        : cp == '\n' ? "\\n"
                        : cp == '\r' ? "\\r"
                        : cp == '\t' ? "\\t"
                        : cp == '\b' ? "\\b"
                        : cp == '\f' ? "\\f"
                                     : NULL;
        if (e) out_append(R, e, 2);
        else if (cp < 0x20 || (ascii && cp > 0x7E && cp < 0x10000))
            out_append(R, buf, (size_t)sprintf(buf, "\\u%04x", cp));
        else if (ascii && cp >= 0x10000) /* a UTF-16 surrogate pair */
            out_append(R, buf,
                       (size_t)sprintf(buf, "\\u%04x\\u%04x", 0xD800 + ((cp - 0x10000) >> 10),
                                       0xDC00 + ((cp - 0x10000) & 0x3FF)));
        else out_append(R, s + i, len);
    }
    out_append(R, "\"", 1);
}

static void json_newline(Render* R, const JsonStyle* st, size_t depth) {
    out_append(R, "\n", 1);
    for (size_t d = 0; d < depth; d++) out_append(R, st->indent->s, st->indent->len);
}

/* Python's order of str keys: by code point, which is UTF-8's byte order */
static int key_order(const void* a, const void* b) {
    return strcmp(**(const char** const*)a, **(const char** const*)b);
}

static void json_put(Render* R, const Value* v, const JsonStyle* st, size_t depth);

static void json_container(Render* R, const Value* v, const JsonStyle* st, size_t depth) {
    if (v->is_namespace) render_fail(R, "tojson of a namespace (jinja2: not JSON serializable)");
    if (v->k == V_LIST && (v->seq == SEQ_RANGE || v->seq == SEQ_ITER))
        render_fail(R, "tojson of a range() or an iterator (jinja2: not JSON serializable)");
    if (!value_walk_enter(R, v)) render_fail(R, "tojson of a list that contains itself");
    const char*** by_key = NULL; /* sort_keys: pointers into v->keys, in the keys' order */
    if (v->k == V_DICT && st->sort) {
        by_key = pool_alloc(R->pool, (v->n + 1) * sizeof(*by_key));
        for (size_t k = 0; k < v->n; k++) by_key[k] = &v->keys[k];
        qsort(by_key, v->n, sizeof(*by_key), key_order);
    }
    out_append(R, v->k == V_LIST ? "[" : "{", 1);
    for (size_t j = 0; j < v->n; j++) {
        size_t k = by_key ? (size_t)(by_key[j] - v->keys) : j;
        if (j) out_append(R, st->item_sep->s, st->item_sep->len);
        if (st->indent) json_newline(R, st, depth + 1);
        if (v->k == V_DICT) {
            json_string(R, v->keys[k], strlen(v->keys[k]), st->ascii);
            out_append(R, st->key_sep->s, st->key_sep->len);
        }
        json_put(R, v->items[k], st, depth + 1);
    }
    if (st->indent && v->n) json_newline(R, st, depth);
    out_append(R, v->k == V_LIST ? "]" : "}", 1);
    R->n_walking--;
}

static void json_put(Render* R, const Value* v, const JsonStyle* st, size_t depth) {
    switch (v->k) {
    case V_UNDEF: render_fail(R, "tojson of an undefined value");
    case V_NONE: out_append(R, "null", 4); return;
    case V_BOOL: out_append(R, v->i ? "true" : "false", v->i ? 4 : 5); return;
    case V_INT: value_print(R, v); return;
    case V_FLOAT:
        if (isfinite(v->f)) value_print(R, v);
        else if (isnan(v->f)) out_append(R, "NaN", 3);
        else out_append(R, v->f > 0 ? "Infinity" : "-Infinity", v->f > 0 ? 8 : 9);
        return;
    case V_STR: json_string(R, v->s, v->len, st->ascii); return;
    case V_LIST:
    case V_DICT: json_container(R, v, st, depth); return;
    }
}

#define JSON_MAX_INDENT 1024 /* spaces per level: Python's would be any int */

Value* value_tojson(Render* R, const Value* v, const Value* ensure_ascii, const Value* indent, const Value* separators,
                    const Value* sort_keys) {
    JsonStyle st = {.ascii = ensure_ascii && value_truthy(ensure_ascii), .sort = sort_keys && value_truthy(sort_keys)};
    if (indent && indent->k != V_NONE) {
        if (indent->k == V_STR) st.indent = indent;
        else if (indent->k != V_INT && indent->k != V_BOOL)
            render_fail(R, "tojson's indent must be an int or a string");
        else if (indent->i > JSON_MAX_INDENT) render_fail(R, "tojson's indent of more than %d", JSON_MAX_INDENT);
        else {
            long long n = indent->i > 0 ? indent->i : 0; /* Python: ' ' * indent */
            char spaces[JSON_MAX_INDENT];
            memset(spaces, ' ', (size_t)n);
            st.indent = value_str(R, spaces, (size_t)n);
        }
    }
    st.item_sep = value_str(R, st.indent ? "," : ", ", st.indent ? 1 : 2);
    st.key_sep = value_str(R, ": ", 2);
    if (separators && separators->k != V_NONE) {
        if (separators->k != V_LIST || separators->n != 2 || separators->items[0]->k != V_STR ||
            separators->items[1]->k != V_STR)
            render_fail(R, "tojson's separators must be a list of two strings");
        st.item_sep = separators->items[0];
        st.key_sep = separators->items[1];
    }
    size_t mark = R->out_len;
    json_put(R, v, &st, 0);
    return out_take(R, mark);
}

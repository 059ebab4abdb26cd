/* Chat template values (template/chat_value.h): the output buffer, the failure of a rendering, and the
   values' construction. Python's == and the operators, iteration and slicing are in template/chat_ops.c,
   JSON in template/chat_json.c, printing in template/chat_print.c, the filters, tests and methods in
   template/chat_builtins.c. */
#include "template/chat_value.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

Value V_UNDEFINED = {.k = V_UNDEF}, V_NONE_VALUE = {.k = V_NONE};
static Value V_TRUE = {.k = V_BOOL, .i = 1}, V_FALSE = {.k = V_BOOL, .i = 0};

void render_fail(Render* R, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    chat_error(R->err, R->err_len, R->line, fmt, ap);
    va_end(ap);
    longjmp(R->fail, 1);
}

void out_append(Render* R, const char* s, size_t n) {
    if (R->out_len + n + 1 > R->out_cap) { /* the text's buffer and the pool share CHAT_RENDER_MAX_BYTES */
        size_t cap = R->out_cap ? R->out_cap : 256;
        while (cap < R->out_len + n + 1 && cap <= CHAT_RENDER_MAX_BYTES) cap *= 2;
        if (cap > CHAT_RENDER_MAX_BYTES || cap + R->pool->total > CHAT_RENDER_MAX_BYTES)
            render_fail(R, "the rendering holds more than %zu MiB of text and values", CHAT_RENDER_MAX_BYTES >> 20);
        R->pool->limit = CHAT_RENDER_MAX_BYTES - cap;
        char* p = realloc(R->out, cap);
        if (!p) render_fail(R, "out of memory");
        R->out = p;
        R->out_cap = cap;
    }
    if (n) memcpy(R->out + R->out_len, s, n);
    R->out_len += n;
    R->out[R->out_len] = 0;
}

Value* out_take(Render* R, size_t mark) {
    Value* s = value_str(R, R->out ? R->out + mark : "", R->out_len - mark);
    R->out_len = mark;
    if (R->out) R->out[mark] = 0;
    return s;
}

Value* value_new(Render* R, ValueKind k) {
    Value* v = pool_alloc(R->pool, sizeof(Value));
    v->k = k;
    return v;
}
static bool is_ascii(const char* s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return false;
    return true;
}

Value* value_str(Render* R, const char* s, size_t n) {
    Value* v = value_new(R, V_STR);
    v->s = pool_strndup(R->pool, s, n);
    v->len = n;
    v->ascii = is_ascii(s, n);
    return v;
}
Value* value_int(Render* R, long long i) {
    Value* v = value_new(R, V_INT);
    v->i = i;
    return v;
}
Value* value_float(Render* R, double f) {
    Value* v = value_new(R, V_FLOAT);
    v->f = f;
    return v;
}
Value* value_bool(bool b) { return b ? &V_TRUE : &V_FALSE; }
Value* value_list(Render* R) { return value_new(R, V_LIST); }
Value* value_dict(Render* R) { return value_new(R, V_DICT); }

void list_push(Render* R, Value* l, Value* x) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4;
        Value** items = pool_alloc(R->pool, cap * sizeof(Value*));
        const char** keys = l->k == V_DICT ? pool_alloc(R->pool, cap * sizeof(char*)) : NULL;
        if (l->n) memcpy(items, l->items, l->n * sizeof(Value*));
        if (keys && l->n) memcpy(keys, l->keys, l->n * sizeof(char*));
        l->items = items;
        l->cap = cap;
        if (keys) l->keys = keys;
    }
    l->items[l->n++] = x;
}

Value* dict_get(const Value* d, const char* key) {
    for (size_t k = 0; k < d->n; k++)
        if (!strcmp(d->keys[k], key)) return d->items[k];
    return NULL;
}

void dict_set(Render* R, Value* d, const char* key, Value* x) {
    for (size_t k = 0; k < d->n; k++)
        if (!strcmp(d->keys[k], key)) {
            d->items[k] = x;
            return;
        }
    list_push(R, d, x);
    d->keys[d->n - 1] = pool_strndup(R->pool, key, strlen(key));
}

const char* value_type_name(const Value* v) {
    static const char* const names[] = {"undefined value", "none", "bool", "int", "float", "str", "list", "dict"};
    return names[v->k];
}

bool value_truthy(const Value* v) {
    switch (v->k) {
    case V_UNDEF:
    case V_NONE: return false;
    case V_BOOL:
    case V_INT: return v->i != 0;
    case V_FLOAT: return v->f != 0;
    case V_STR: return v->len > 0;
    case V_LIST:
    case V_DICT: return v->n > 0;
    }
    return false;
}

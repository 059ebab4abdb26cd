/* Chat template values printed (template/chat_value.h) as Python prints them: str() for {{ v }}, which is repr()
   for the items of lists and dicts.
     repr(float)   the fewest significant digits that read back as the same double; positional from 1e-4 to
                   1e16 with at least one decimal (1.0), else with an exponent (1e+16)
     repr(str)     in single quotes unless it holds ' and no "; \\ the quote \n \r \t escaped, and every other
                   character str.isprintable() rejects (the categories Cc Cf Cs Co Cn Zl Zp Zs but the space)
                   as \xhh, \uhhhh or \Uhhhhhhhh
     list [a, b], tuple (a, b) and (a,), dict {'k': v}, range(start, stop[, step]), namespace
     <Namespace {...}>; a list, dict or namespace met again inside itself prints [...] or {...}
   An iterator or a dict view (reverse, |items, .items(), .keys(), .values()) jinja2 prints by its type and
   address: printing one is refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "template/chat_value.h"

static void put(Render* R, const char* s) { out_append(R, s, strlen(s)); }

static void put_float(Render* R, double f) {
    char buf[64];
    if (isnan(f)) {
        put(R, "nan");
        return;
    }
    if (isinf(f)) {
        put(R, f > 0 ? "inf" : "-inf");
        return;
    }
    int p = 1; /* the fewest significant digits that read back as f, as repr() */
    for (; p < 17; p++) {
        snprintf(buf, sizeof(buf), "%.*e", p - 1, f);
        if (strtod(buf, NULL) == f) break;
    }
    snprintf(buf, sizeof(buf), "%.*e", p - 1, f);
    int x = atoi(strchr(buf, 'e') + 1); /* the decimal exponent */
    if (x >= -4 && x < 16) {            /* positional, with at least one decimal: 1.0, 0.0001, 123.5 */
        snprintf(buf, sizeof(buf), "%.*f", p - 1 - x > 0 ? p - 1 - x : 0, f);
        if (!strchr(buf, '.')) strcat(buf, ".0");
    }
    put(R, buf);
}

static void put_repr(Render* R, const Value* v);

static void put_str(Render* R, const Value* v) {
    char buf[32];
    switch (v->k) {
    case V_UNDEF: return;
    case V_NONE: put(R, "None"); return;
    case V_BOOL: put(R, v->i ? "True" : "False"); return;
    case V_INT:
        snprintf(buf, sizeof(buf), "%lld", v->i);
        put(R, buf);
        return;
    case V_FLOAT: put_float(R, v->f); return;
    case V_STR: out_append(R, v->s, v->len); return;
    case V_LIST:
    case V_DICT: put_repr(R, v); return;
    }
}

bool value_walk_enter(Render* R, const Value* v) {
    for (size_t k = 0; k < R->n_walking; k++)
        if (R->walking[k] == v) return false;
    if (R->n_walking == VALUE_MAX_DEPTH) render_fail(R, "a value nested more than %d deep", VALUE_MAX_DEPTH);
    R->walking[R->n_walking++] = v;
    return true;
}

/* whether Python's str.isprintable() takes the code point cp (>= 0x80) */
static bool printable(utf8proc_int32_t cp) {
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS: return false;
    default: return true;
    }
}

static void put_str_repr(Render* R, const char* s, size_t n) {
    char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
    out_append(R, &q, 1);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        char esc[16];
        if (c >= 0x80) { /* a code point: as is when printable, else escaped */
            utf8proc_int32_t cp;
            utf8proc_ssize_t len = utf8proc_iterate((const utf8proc_uint8_t*)s + i, (utf8proc_ssize_t)(n - i), &cp);
            if (len < 1) render_fail(R, "printing a string that is not UTF-8");
            if (printable(cp)) out_append(R, s + i, (size_t)len);
            else {
                snprintf(esc, sizeof(esc), cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
                put(R, esc);
            }
            i += (size_t)len;
            continue;
        }
        if (c == '\\' || c == (unsigned char)q) snprintf(esc, sizeof(esc), "\\%c", c);
        else if (c == '\n') strcpy(esc, "\\n");
        else if (c == '\t') strcpy(esc, "\\t");
        else if (c == '\r') strcpy(esc, "\\r");
        else if (c < 0x20 || c == 0x7f) snprintf(esc, sizeof(esc), "\\x%02x", c);
        else {
            esc[0] = (char)c;
            esc[1] = 0;
        }
        put(R, esc);
        i++;
    }
    out_append(R, &q, 1);
}

static void put_container(Render* R, const Value* v) {
    bool tuple = v->k == V_LIST && v->seq == SEQ_TUPLE;
    if (v->k == V_LIST && v->seq == SEQ_ITER)
        render_fail(R, "printing an iterator or a dict view (jinja2 prints its type and address): apply | list first");
    if (v->is_namespace) put(R, "<Namespace ");
    if (!value_walk_enter(R, v)) {
        put(R, v->k == V_DICT ? (v->is_namespace ? "{...}>" : "{...}") : tuple ? "(...)" : "[...]");
        return;
    }
    put(R, v->k == V_DICT ? "{" : tuple ? "(" : "[");
    for (size_t k = 0; k < v->n; k++) {
        if (k) put(R, ", ");
        if (v->k == V_DICT) {
            put_str_repr(R, v->keys[k], strlen(v->keys[k]));
            put(R, ": ");
        }
        put_repr(R, v->items[k]);
    }
    put(R, v->k == V_DICT ? (v->is_namespace ? "}>" : "}") : !tuple ? "]" : v->n == 1 ? ",)" : ")");
    R->n_walking--;
}

static void put_repr(Render* R, const Value* v) {
    char buf[96];
    if (v->k == V_STR) put_str_repr(R, v->s, v->len);
    else if (v->k == V_LIST && v->seq == SEQ_RANGE) {
        snprintf(buf, sizeof(buf), v->range[2] == 1 ? "range(%lld, %lld)" : "range(%lld, %lld, %lld)", v->range[0],
                 v->range[1], v->range[2]);
        put(R, buf);
    } else if (v->k == V_LIST || v->k == V_DICT) put_container(R, v);
    else if (v->k == V_UNDEF) render_fail(R, "an undefined value inside a list or dict cannot be printed");
    else put_str(R, v);
}

void value_print(Render* R, const Value* v) { put_str(R, v); }

Value* value_to_str(Render* R, const Value* v) {
    if (v->k == V_STR) return (Value*)v;
    size_t mark = R->out_len;
    put_str(R, v);
    return out_take(R, mark);
}

/* Chat template filters, tests and methods (data/chat_value.h), with the semantics transformers' Jinja
   environment gives them: Jinja's filters, its tojson replaced by json.dumps(ensure_ascii=False), and
   Python's str and dict methods. Case mapping (upper, lower, title, capitalize) is done for ASCII text
   only and refuses other letters rather than map them differently from Python. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/chat_value.h"

static Value* arg(const Args* a, size_t pos, const char* kw) {
    for (size_t k = 0; k < a->n; k++)
        if (a->kw[k] && !strcmp(a->kw[k], kw)) return a->v[k];
    size_t seen = 0;
    for (size_t k = 0; k < a->n; k++)
        if (!a->kw[k] && seen++ == pos) return a->v[k];
    return NULL;
}

static const Value* need_str(Render* R, const Value* v, const char* what) {
    if (v->k != V_STR) render_fail(R, "%s needs a string, not a %s", what, value_type_name(v));
    return v;
}

/* Python's str.isspace() for the code point at s (len bytes left); its byte count in *n, 0 when not */
static size_t space_at(const char* s, size_t len) {
    unsigned char c = (unsigned char)s[0];
    if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) return 1;
    static const char* const wide[] = {"\xc2\x85",     "\xc2\xa0",     "\xe1\x9a\x80", "\xe2\x80\xa8",
                                       "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe2\x81\x9f", "\xe3\x80\x80"};
    for (size_t k = 0; k < sizeof(wide) / sizeof(wide[0]); k++) {
        size_t n = strlen(wide[k]);
        if (len >= n && !memcmp(s, wide[k], n)) return n;
    }
    if (len >= 3 && !memcmp(s, "\xe2\x80", 2) && (unsigned char)s[2] >= 0x80 && (unsigned char)s[2] <= 0x8a) return 3;
    return 0;
}

/* the start of the code point ending at s + end */
static size_t last_cp(const char* s, size_t end) {
    size_t i = end - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
    return i;
}

/* strip (which: 1 left, 2 right, 3 both) Python whitespace, or any byte of chars (ASCII) */
static Value* strip(Render* R, const Value* s, const Value* chars, int which) {
    need_str(R, s, "strip");
    size_t a = 0, b = s->len;
    if (chars && chars->k != V_NONE) {
        need_str(R, chars, "strip's argument");
        for (size_t k = 0; k < chars->len; k++)
            if ((unsigned char)chars->s[k] >= 0x80) render_fail(R, "strip() of non-ASCII characters is not supported");
        if (which & 1)
            while (a < b && memchr(chars->s, s->s[a], chars->len)) a++;
        if (which & 2)
            while (b > a && memchr(chars->s, s->s[b - 1], chars->len)) b--;
    } else {
        size_t n;
        if (which & 1)
            while (a < b && (n = space_at(s->s + a, b - a))) a += n;
        if (which & 2)
            while (b > a) {
                size_t i = last_cp(s->s, b);
                if (i < a || space_at(s->s + i, b - i) != b - i) break;
                b = i;
            }
    }
    return value_str(R, s->s + a, b - a);
}

static Value* map_case(Render* R, const Value* s, char mode) { /* 'u' upper, 'l' lower, 't' title, 'c' capitalize */
    need_str(R, s, "case mapping");
    Value* v = value_str(R, s->s, s->len);
    char* o = (char*)v->s;
    bool word_start = true;
    for (size_t i = 0; i < s->len; i++) {
        unsigned char c = (unsigned char)o[i];
        if (c >= 0x80) render_fail(R, "upper/lower/title/capitalize of non-ASCII text is not supported");
        bool up = mode == 'u' || (mode == 't' && word_start) || (mode == 'c' && i == 0);
        o[i] = (char)(up ? toupper(c) : tolower(c));
        word_start = !isalpha(c);
    }
    return v;
}

static Value* replace(Render* R, const Value* s, const Value* old, const Value* new_, const Value* count) {
    need_str(R, s, "replace"), need_str(R, old, "replace"), need_str(R, new_, "replace");
    if (old->len == 0) render_fail(R, "replace() of an empty string is not supported");
    long long left = count && count->k == V_INT ? count->i : -1;
    size_t i = 0, mark = R->out_len; /* built at the end of the output, then taken off it */
    while (i < s->len) {
        const char* hit = left ? memmem(s->s + i, s->len - i, old->s, old->len) : NULL;
        size_t j = hit ? (size_t)(hit - s->s) : s->len;
        out_append(R, s->s + i, j - i);
        if (!hit) break;
        out_append(R, new_->s, new_->len);
        i = j + old->len;
        if (left > 0) left--;
    }
    Value* out = value_str(R, R->out + mark, R->out_len - mark);
    R->out_len = mark;
    if (R->out) R->out[mark] = 0;
    return out;
}

static Value* split(Render* R, const Value* s, const Value* sep, const Value* maxsplit) {
    need_str(R, s, "split");
    long long left = maxsplit && maxsplit->k == V_INT ? maxsplit->i : -1;
    Value* l = value_list(R);
    if (!sep || sep->k == V_NONE) { /* runs of whitespace, no empty parts */
        size_t i = 0, n;
        for (;;) {
            while (i < s->len && (n = space_at(s->s + i, s->len - i))) i += n;
            if (i >= s->len) break;
            size_t j = i;
            if (left == 0) j = s->len;
            else
                while (j < s->len && !space_at(s->s + j, s->len - j)) j++;
            if (left == 0) { /* the rest, right-stripped */
                Value* rest = strip(R, value_str(R, s->s + i, s->len - i), NULL, 2);
                list_push(R, l, rest);
                break;
            }
            list_push(R, l, value_str(R, s->s + i, j - i));
            if (left > 0) left--;
            i = j;
        }
        return l;
    }
    need_str(R, sep, "split's separator");
    if (sep->len == 0) render_fail(R, "split() with an empty separator");
    size_t i = 0;
    for (;;) {
        const char* hit = left ? memmem(s->s + i, s->len - i, sep->s, sep->len) : NULL;
        size_t j = hit ? (size_t)(hit - s->s) : s->len;
        list_push(R, l, value_str(R, s->s + i, j - i));
        if (!hit) break;
        i = j + sep->len;
        if (left > 0) left--;
    }
    return l;
}

static bool affix(Render* R, const Value* s, const Value* x, bool at_end) {
    need_str(R, s, at_end ? "endswith" : "startswith");
    if (x->k == V_LIST) {
        for (size_t k = 0; k < x->n; k++)
            if (affix(R, s, x->items[k], at_end)) return true;
        return false;
    }
    need_str(R, x, at_end ? "endswith" : "startswith");
    return x->len <= s->len && !memcmp(s->s + (at_end ? s->len - x->len : 0), x->s, x->len);
}

/* ---- tojson: Python's json.dumps(v, ensure_ascii=False, indent=indent) ---- */

static void json_put(Render* R, const Value* v, long long indent, int depth) {
    char buf[48];
    switch (v->k) {
    case V_UNDEF: render_fail(R, "tojson of an undefined value");
    case V_NONE: out_append(R, "null", 4); return;
    case V_BOOL: out_append(R, v->i ? "true" : "false", v->i ? 4 : 5); return;
    case V_INT: snprintf(buf, sizeof(buf), "%lld", v->i), out_append(R, buf, strlen(buf)); return;
    case V_FLOAT:
        if (!isfinite(v->f)) {
            const char* t = isnan(v->f) ? "NaN" : v->f > 0 ? "Infinity" : "-Infinity";
            out_append(R, t, strlen(t));
            return;
        }
        value_print(R, v);
        return;
    case V_STR:
        out_append(R, "\"", 1);
        for (size_t i = 0; i < v->len; i++) {
            unsigned char c = (unsigned char)v->s[i];
            const char* e = c == '"'    ? "\\\""
                            : c == '\\' ? "\\\\"
                            : c == '\n' ? "\\n"
                            : c == '\r' ? "\\r"
                            : c == '\t' ? "\\t"
                            : c == '\b' ? "\\b"
                            : c == '\f' ? "\\f"
                                        : NULL;
            if (e) out_append(R, e, 2);
            else if (c < 0x20) snprintf(buf, sizeof(buf), "\\u%04x", c), out_append(R, buf, 6);
            else out_append(R, (const char*)&v->s[i], 1);
        }
        out_append(R, "\"", 1);
        return;
    case V_LIST:
    case V_DICT: {
        if (v->is_namespace) render_fail(R, "tojson of a namespace (jinja2: not JSON serializable)");
        if (!value_walk_enter(R, v)) render_fail(R, "tojson of a list that contains itself");
        out_append(R, v->k == V_LIST ? "[" : "{", 1);
        for (size_t k = 0; k < v->n; k++) {
            if (k) out_append(R, indent >= 0 ? "," : ", ", indent >= 0 ? 1 : 2);
            if (indent >= 0) {
                out_append(R, "\n", 1);
                for (long long s = 0; s < indent * (depth + 1); s++) out_append(R, " ", 1);
            }
            if (v->k == V_DICT) {
                Value key = {.k = V_STR, .s = v->keys[k], .len = strlen(v->keys[k])};
                json_put(R, &key, indent, depth + 1);
                out_append(R, ": ", 2);
            }
            json_put(R, v->items[k], indent, depth + 1);
        }
        if (indent >= 0 && v->n) {
            out_append(R, "\n", 1);
            for (long long s = 0; s < indent * depth; s++) out_append(R, " ", 1);
        }
        out_append(R, v->k == V_LIST ? "]" : "}", 1);
        R->n_walking--;
        return;
    }
    }
}

static Value* tojson(Render* R, const Value* v, const Value* indent) {
    long long ind = indent && indent->k == V_INT ? indent->i : -1;
    size_t mark = R->out_len;
    json_put(R, v, ind, 0);
    Value* s = value_str(R, R->out + mark, R->out_len - mark);
    R->out_len = mark;
    if (R->out) R->out[mark] = 0;
    return s;
}

static Value* items_of(Render* R, const Value* d) {
    if (d->k != V_DICT) render_fail(R, "items() of a %s", value_type_name(d));
    Value* l = value_list(R);
    for (size_t k = 0; k < d->n; k++) {
        Value* pair = value_list(R);
        list_push(R, pair, value_str(R, d->keys[k], strlen(d->keys[k])));
        list_push(R, pair, d->items[k]);
        list_push(R, l, pair);
    }
    return l;
}

Value* value_filter(Render* R, Value* v, const char* f, const Args* a) {
    if (!strcmp(f, "length") || !strcmp(f, "count")) return value_int(R, (long long)value_length(R, v));
    if (!strcmp(f, "trim")) return strip(R, value_to_str(R, v), arg(a, 0, "chars"), 3);
    if (!strcmp(f, "upper")) return map_case(R, value_to_str(R, v), 'u');
    if (!strcmp(f, "lower")) return map_case(R, value_to_str(R, v), 'l');
    if (!strcmp(f, "title")) return map_case(R, value_to_str(R, v), 't');
    if (!strcmp(f, "capitalize")) return map_case(R, value_to_str(R, v), 'c');
    if (!strcmp(f, "string")) return value_to_str(R, v);
    if (!strcmp(f, "safe")) return v;
    if (!strcmp(f, "tojson")) return tojson(R, v, arg(a, 0, "indent"));
    if (!strcmp(f, "items")) return items_of(R, v);
    if (!strcmp(f, "list")) return value_iterable(R, v);
    if (!strcmp(f, "first") || !strcmp(f, "last")) {
        Value* l = value_iterable(R, v);
        return l->n ? l->items[f[0] == 'f' ? 0 : l->n - 1] : &V_UNDEFINED;
    }
    if (!strcmp(f, "reverse")) {
        Value* minus1 = value_int(R, -1);
        return value_slice(R, v->k == V_STR ? v : value_iterable(R, v), NULL, NULL, minus1);
    }
    if (!strcmp(f, "join")) {
        Value* sep = arg(a, 0, "d");
        Value* l = value_iterable(R, v);
        Value* s = value_str(R, "", 0);
        for (size_t k = 0; k < l->n; k++) {
            if (k && sep) s = value_binary(R, "~", s, sep);
            s = value_binary(R, "~", s, l->items[k]);
        }
        return s;
    }
    if (!strcmp(f, "default") || !strcmp(f, "d")) {
        Value* dflt = arg(a, 0, "default_value");
        Value* boolean = arg(a, 1, "boolean");
        bool use = v->k == V_UNDEF || (boolean && value_truthy(boolean) && !value_truthy(v));
        return use ? (dflt ? dflt : value_str(R, "", 0)) : v;
    }
    if (!strcmp(f, "replace"))
        return replace(R, value_to_str(R, v), arg(a, 0, "old"), arg(a, 1, "new"), arg(a, 2, "count"));
    if (!strcmp(f, "abs"))
        return value_binary(R, "*", v, value_int(R, (v->k == V_FLOAT ? v->f : (double)v->i) < 0 ? -1 : 1));
    if (!strcmp(f, "int")) {
        if (v->k == V_INT || v->k == V_BOOL) return value_int(R, v->i);
        if (v->k == V_FLOAT && isnan(v->f)) return value_int(R, 0); /* int() fails, jinja2 returns its default */
        if (v->k == V_FLOAT && !(fabs(v->f) < 0x1p63))
            render_fail(R, "int of %g is beyond 64 bits (the template's ints are 64-bit)", v->f);
        if (v->k == V_FLOAT) return value_int(R, (long long)v->f);
        if (v->k == V_STR) return value_int(R, strtoll(v->s, NULL, 10));
        return value_int(R, 0);
    }
    if (!strcmp(f, "float")) {
        if (v->k == V_INT || v->k == V_BOOL) return value_float(R, (double)v->i);
        if (v->k == V_FLOAT) return v;
        if (v->k == V_STR) return value_float(R, strtod(v->s, NULL));
        return value_float(R, 0);
    }
    render_fail(R, "the filter '%s' is not supported", f);
}

bool value_test(Render* R, const Value* v, const char* t, const Args* a) {
    if (!strcmp(t, "defined")) return v->k != V_UNDEF;
    if (!strcmp(t, "undefined")) return v->k == V_UNDEF;
    if (!strcmp(t, "none")) return v->k == V_NONE;
    if (!strcmp(t, "string")) return v->k == V_STR;
    if (!strcmp(t, "number")) return v->k == V_INT || v->k == V_FLOAT || v->k == V_BOOL;
    if (!strcmp(t, "integer")) return v->k == V_INT;
    if (!strcmp(t, "float")) return v->k == V_FLOAT;
    if (!strcmp(t, "boolean")) return v->k == V_BOOL;
    if (!strcmp(t, "true")) return v->k == V_BOOL && v->i;
    if (!strcmp(t, "false")) return v->k == V_BOOL && !v->i;
    if (!strcmp(t, "mapping")) return v->k == V_DICT;
    if (!strcmp(t, "iterable")) return v->k == V_LIST || v->k == V_DICT || v->k == V_STR;
    if (!strcmp(t, "sequence")) return v->k == V_LIST || v->k == V_DICT || v->k == V_STR;
    if (!strcmp(t, "even") || !strcmp(t, "odd")) {
        if (v->k != V_INT) render_fail(R, "'is %s' of a %s", t, value_type_name(v));
        return (v->i % 2 == 0) == (t[0] == 'e');
    }
    Value* x = arg(a, 0, "other");
    if (!x) render_fail(R, "the test '%s' needs an argument", t);
    if (!strcmp(t, "eq") || !strcmp(t, "equalto") || !strcmp(t, "==")) return value_equal(R, v, x);
    if (!strcmp(t, "ne") || !strcmp(t, "!=")) return !value_equal(R, v, x);
    if (!strcmp(t, "in")) return value_truthy(value_binary(R, "in", (Value*)v, x));
    if (!strcmp(t, "divisibleby")) {
        if (v->k != V_INT || x->k != V_INT || x->i == 0) render_fail(R, "'divisibleby' needs non-zero integers");
        return v->i % x->i == 0;
    }
    render_fail(R, "the test '%s' is not supported", t);
}

Value* value_method(Render* R, Value* self, const char* m, const Args* a) {
    if (self->k == V_DICT) {
        if (!strcmp(m, "items")) return items_of(R, self);
        if (!strcmp(m, "keys")) return value_iterable(R, self);
        if (!strcmp(m, "values")) {
            Value* l = value_list(R);
            for (size_t k = 0; k < self->n; k++) list_push(R, l, self->items[k]);
            return l;
        }
        if (!strcmp(m, "get")) {
            Value* key = arg(a, 0, "key");
            if (!key || key->k != V_STR) render_fail(R, "get() needs a string key");
            Value* v = dict_get(self, key->s);
            Value* dflt = arg(a, 1, "default");
            return v ? v : dflt ? dflt : &V_NONE_VALUE;
        }
        render_fail(R, "the dict method '%s' is not supported", m);
    }
    if (self->k != V_STR) render_fail(R, "the method '%s' of a %s is not supported", m, value_type_name(self));
    if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) {
        Value* x = arg(a, 0, "prefix");
        if (!x || a->n != 1) render_fail(R, "%s() takes one argument here", m);
        return value_bool(affix(R, self, x, m[0] == 'e'));
    }
    if (!strcmp(m, "strip")) return strip(R, self, arg(a, 0, "chars"), 3);
    if (!strcmp(m, "lstrip")) return strip(R, self, arg(a, 0, "chars"), 1);
    if (!strcmp(m, "rstrip")) return strip(R, self, arg(a, 0, "chars"), 2);
    if (!strcmp(m, "split")) return split(R, self, arg(a, 0, "sep"), arg(a, 1, "maxsplit"));
    if (!strcmp(m, "upper")) return map_case(R, self, 'u');
    if (!strcmp(m, "lower")) return map_case(R, self, 'l');
    if (!strcmp(m, "title")) return map_case(R, self, 't');
    if (!strcmp(m, "capitalize")) return map_case(R, self, 'c');
    if (!strcmp(m, "replace")) return replace(R, self, arg(a, 0, "old"), arg(a, 1, "new"), arg(a, 2, "count"));
    render_fail(R, "the string method '%s' is not supported", m);
}

/* Chat template filters, tests and methods (template/chat_value.h), with the semantics transformers' Jinja
   environment gives them: Jinja's filters, its tojson replaced by json.dumps(ensure_ascii=False), and
   Python's str and dict methods. Case mapping (upper, lower, title, capitalize) is done for ASCII text
   only and refuses other letters rather than map them differently from Python. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "template/chat_value.h"

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

/* mode 'u' upper, 'l' lower, 'c' capitalize, 't' Python's str.title() (a word starts after any non-letter),
   'T' jinja2's title filter (a word starts after a run of whitespace, - ( { [ <, so "it's" is "It's") */
static Value* map_case(Render* R, const Value* s, char mode) {
    need_str(R, s, "case mapping");
    Value* v = value_str(R, s->s, s->len);
    char* o = (char*)v->s;
    bool word_start = true;
    for (size_t i = 0; i < s->len; i++) {
        unsigned char c = (unsigned char)o[i];
        if (c >= 0x80) render_fail(R, "upper/lower/title/capitalize of non-ASCII text is not supported");
        bool up = mode == 'u' || ((mode == 't' || mode == 'T') && word_start) || (mode == 'c' && i == 0);
        o[i] = (char)(up ? toupper(c) : tolower(c));
        word_start = mode == 'T' ? strchr("-({[<", c) || space_at(o + i, 1) : !isalpha(c);
    }
    return v;
}

static Value* replace(Render* R, const Value* s, const Value* old, const Value* new_, const Value* count) {
    need_str(R, s, "replace");
    need_str(R, old, "replace");
    need_str(R, new_, "replace");
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
    return out_take(R, mark);
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

/* the (key, value) tuples of d, as an iterator (|items) or a dict view (.items()) */
static Value* items_of(Render* R, const Value* d) {
    if (d->k != V_DICT) render_fail(R, "items() of a %s", value_type_name(d));
    Value* l = value_list(R);
    l->seq = SEQ_ITER;
    for (size_t k = 0; k < d->n; k++) {
        Value* pair = value_list(R);
        pair->seq = SEQ_TUPLE;
        list_push(R, pair, value_str(R, d->keys[k], strlen(d->keys[k])));
        list_push(R, pair, d->items[k]);
        list_push(R, l, pair);
    }
    return l;
}

/* ---- int and float of a string, as Python's int(s, base) and float(s) read it ---- */

/* s without Python's surrounding whitespace, refused when it holds a non-ASCII character (Python reads other
   scripts' digits too) */
static const Value* number_text(Render* R, const Value* s, const char* what) {
    const Value* t = strip(R, s, NULL, 3);
    for (size_t i = 0; i < t->len; i++)
        if ((unsigned char)t->s[i] >= 0x80) render_fail(R, "%s of a string with non-ASCII characters", what);
    return t;
}

static int digit_value(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'z' ? c - 'a' + 10
           : c >= 'A' && c <= 'Z' ? c - 'A' + 10
                                  : 99;
}

/* Python's int(s, base): true with *out, false where Python raises ValueError; refused beyond 64 bits */
static bool py_int(Render* R, const Value* str, long long base, long long* out) {
    const Value* t = number_text(R, str, "int");
    const char* s = t->s;
    size_t n = t->len, i = 0;
    bool neg = i < n && s[i] == '-';
    if (i < n && (s[i] == '-' || s[i] == '+')) i++;
    static const char prefixes[] = "xob";
    static const int prefix_base[] = {16, 8, 2};
    for (int k = 0; k < 3; k++)
        if (i + 1 < n && s[i] == '0' && (s[i + 1] | 0x20) == prefixes[k] && (base == 0 || base == prefix_base[k])) {
            base = prefix_base[k];
            i += 2 + (i + 2 < n && s[i + 2] == '_'); /* 0x_1f */
        }
    if (base == 0) { /* decimal without a prefix: no leading zero unless all are zeros */
        base = 10;
        for (size_t k = i; i < n && s[i] == '0' && k < n; k++)
            if (s[k] != '0' && s[k] != '_') return false;
    }
    if (base < 2 || base > 36 || i == n) return false;
    unsigned long long v = 0, limit = neg ? 0x8000000000000000ull : 0x7fffffffffffffffull;
    for (size_t start = i; i < n; i++) {
        if (s[i] == '_' && i > start && s[i - 1] != '_' && i + 1 < n && s[i + 1] != '_') continue; /* 1_000 */
        int d = digit_value(s[i]);
        if (d >= base) return false;
        if (v > (limit - (unsigned)d) / (unsigned long long)base)
            render_fail(R, "int of '%.40s' is beyond 64 bits (the template's ints are 64-bit)", t->s);
        v = v * (unsigned long long)base + (unsigned)d;
    }
    *out = neg ? (long long)(0 - v) : (long long)v;
    return true;
}

/* the end of Python's digitpart (digit ("_"? digit)*) from s[i], or i when none */
static size_t digit_part(const char* s, size_t n, size_t i) {
    size_t j = i;
    while (j < n &&
           (isdigit((unsigned char)s[j]) || (s[j] == '_' && j > i && j + 1 < n && isdigit((unsigned char)s[j + 1]))))
        j++;
    return j;
}

/* Python's float(s): true with *out, false where Python raises ValueError */
static bool py_float(Render* R, const Value* str, double* out) {
    const Value* t = number_text(R, str, "float");
    const char* s = t->s;
    size_t n = t->len, i = s[0] == '+' || s[0] == '-';
    static const char* const words[] = {"inf", "infinity", "nan"};
    for (int k = 0; k < 3; k++)
        if (n - i == strlen(words[k]) && !strncasecmp(s + i, words[k], n - i)) {
            *out = (k == 2 ? NAN : INFINITY) * (s[0] == '-' ? -1 : 1);
            return true;
        }
    size_t a = digit_part(s, n, i), b = a;
    if (a < n && s[a] == '.') b = digit_part(s, n, a + 1);
    if (a == i && b <= a + 1) return false; /* no digit before or after the point */
    if (b < n && (s[b] == 'e' || s[b] == 'E')) {
        size_t e = b + 1 + (b + 1 < n && (s[b + 1] == '+' || s[b + 1] == '-'));
        size_t f = digit_part(s, n, e);
        if (f == e) return false;
        b = f;
    }
    if (b != n) return false;
    char* clean = pool_alloc(R->pool, n + 1);
    for (size_t k = 0, o = 0; k < n; k++)
        if (s[k] != '_') clean[o++] = s[k];
    *out = strtod(clean, NULL);
    return true;
}

/* jinja2's int filter: int(v, base) of a string, int(v) of a number, else int(float(v)), else default */
static Value* to_int(Render* R, const Value* v, Value* dflt, const Value* base) {
    if (v->k == V_UNDEF) render_fail(R, "int of an undefined value");
    if (base && base->k != V_INT) render_fail(R, "int's base must be an int");
    long long i;
    if (v->k == V_STR && py_int(R, v, base ? base->i : 10, &i)) return value_int(R, i);
    if (v->k == V_INT || v->k == V_BOOL) return value_int(R, v->i);
    double f = v->k == V_FLOAT ? v->f : 0;
    bool is_float = v->k == V_FLOAT || (v->k == V_STR && py_float(R, v, &f));
    if (is_float && !isnan(f)) {
        if (!(fabs(f) < 0x1p63)) render_fail(R, "int of %g is beyond 64 bits (the template's ints are 64-bit)", f);
        return value_int(R, (long long)f);
    }
    return dflt ? dflt : value_int(R, 0);
}

static Value* to_float(Render* R, Value* v, Value* dflt) {
    if (v->k == V_UNDEF) render_fail(R, "float of an undefined value");
    double f;
    if (v->k == V_FLOAT) return v;
    if (v->k == V_INT || v->k == V_BOOL) return value_float(R, (double)v->i);
    if (v->k == V_STR && py_float(R, v, &f)) return value_float(R, f);
    return dflt ? dflt : value_float(R, 0);
}

/* ---- the arguments a filter or method takes ---- */

/* a callable's parameters in order (Jinja's filters, transformers' tojson, Python's methods), how many are
   required, and whether it takes them by keyword (Python's str and dict methods do not, but split) */
typedef struct {
    const char* name;
    int n_required;
    bool by_position;
    const char* params[4];
} Signature;

static const Signature FILTERS[] = {
    {"length", 0, false, {NULL}},
    {"count", 0, false, {NULL}},
    {"upper", 0, false, {NULL}},
    {"lower", 0, false, {NULL}},
    {"title", 0, false, {NULL}},
    {"capitalize", 0, false, {NULL}},
    {"string", 0, false, {NULL}},
    {"items", 0, false, {NULL}},
    {"list", 0, false, {NULL}},
    {"first", 0, false, {NULL}},
    {"last", 0, false, {NULL}},
    {"reverse", 0, false, {NULL}},
    {"abs", 0, false, {NULL}},
    {"trim", 0, false, {"chars"}},
    {"tojson", 0, false, {"ensure_ascii", "indent", "separators", "sort_keys"}},
    {"join", 0, false, {"d", "attribute"}},
    {"default", 0, false, {"default_value", "boolean"}},
    {"d", 0, false, {"default_value", "boolean"}},
    {"replace", 2, false, {"old", "new", "count"}},
    {"int", 0, false, {"default", "base"}},
    {"float", 0, false, {"default"}},
};
static const Signature METHODS[] = {
    /* str's, then dict's */
    {"startswith", 1, true, {"prefix"}},
    {"endswith", 1, true, {"suffix"}},
    {"strip", 0, true, {"chars"}},
    {"lstrip", 0, true, {"chars"}},
    {"rstrip", 0, true, {"chars"}},
    {"split", 0, false, {"sep", "maxsplit"}},
    {"upper", 0, false, {NULL}},
    {"lower", 0, false, {NULL}},
    {"title", 0, false, {NULL}},
    {"capitalize", 0, false, {NULL}},
    {"replace", 2, true, {"old", "new", "count"}},
    {"items", 0, false, {NULL}},
    {"keys", 0, false, {NULL}},
    {"values", 0, false, {NULL}},
    {"get", 1, true, {"key", "default"}},
};

/* a's values in the order of sig's parameters (NULL where not given), or refused as Python would refuse them */
static Value** bind(Render* R, const Signature* sig, const char* kind, const Args* a) {
    Value** p = pool_alloc(R->pool, 4 * sizeof(Value*));
    size_t n_params = 0, pos = 0;
    while (n_params < 4 && sig->params[n_params]) n_params++;
    for (size_t k = 0; k < a->n; k++) {
        size_t at = pos;
        if (a->kw[k]) {
            if (sig->by_position) render_fail(R, "the %s '%s' takes no keyword arguments", kind, sig->name);
            for (at = 0; at < n_params && strcmp(sig->params[at], a->kw[k]); at++) {}
            if (at == n_params) render_fail(R, "the %s '%s' has no argument '%s'", kind, sig->name, a->kw[k]);
        } else if (pos++ == n_params) {
            render_fail(R, "the %s '%s' takes %zu arguments, not more", kind, sig->name, n_params);
        }
        if (p[at]) render_fail(R, "the %s '%s' got its argument '%s' twice", kind, sig->name, sig->params[at]);
        p[at] = a->v[k];
    }
    for (int k = 0; k < sig->n_required; k++)
        if (!p[k]) render_fail(R, "the %s '%s' needs its argument '%s'", kind, sig->name, sig->params[k]);
    return p;
}

static const Signature* find(const Signature* table, size_t n, const char* name) {
    for (size_t k = 0; k < n; k++)
        if (!strcmp(table[k].name, name)) return &table[k];
    return NULL;
}

/* item's attribute of join(attribute=...): a dotted path of dict keys and list indexes, undefined if absent */
static Value* attribute_path(Render* R, Value* item, const Value* path) {
    if (path->k != V_STR) render_fail(R, "join's attribute must be a string");
    Value* parts = split(R, path, value_str(R, ".", 1), NULL);
    for (size_t k = 0; k < parts->n && item->k != V_UNDEF; k++) {
        const Value* part = parts->items[k];
        long long i;
        if (item->k == V_DICT) item = dict_get(item, part->s);
        else if (item->k == V_LIST && py_int(R, part, 10, &i) && i >= 0 && (size_t)i < item->n) item = item->items[i];
        else item = NULL;
        if (!item) item = &V_UNDEFINED;
    }
    return item;
}

static Value* join(Render* R, Value* v, Value* sep, const Value* attribute) {
    Value* l = value_iterable(R, v);
    Value* s = value_str(R, "", 0);
    for (size_t k = 0; k < l->n; k++) {
        if (k && sep) s = value_binary(R, "~", s, sep);
        s = value_binary(R, "~", s, attribute ? attribute_path(R, l->items[k], attribute) : l->items[k]);
    }
    return s;
}

Value* value_filter(Render* R, Value* v, const char* f, const Args* a) {
    const Signature* sig = find(FILTERS, sizeof(FILTERS) / sizeof(FILTERS[0]), f);
    if (!sig && !strcmp(f, "safe")) /* jinja2's Markup escapes a string added to it: '<a>'|safe + '<' is <a>&lt; */
        render_fail(R, "the filter 'safe' is not supported: jinja2's Markup escapes what is added to it");
    if (!sig) render_fail(R, "the filter '%s' is not supported", f);
    Value** p = bind(R, sig, "filter", a);
    if (!strcmp(f, "length") || !strcmp(f, "count")) return value_int(R, (long long)value_length(R, v));
    if (!strcmp(f, "trim")) return strip(R, value_to_str(R, v), p[0], 3);
    if (!strcmp(f, "upper")) return map_case(R, value_to_str(R, v), 'u');
    if (!strcmp(f, "lower")) return map_case(R, value_to_str(R, v), 'l');
    if (!strcmp(f, "title")) return map_case(R, value_to_str(R, v), 'T');
    if (!strcmp(f, "capitalize")) return map_case(R, value_to_str(R, v), 'c');
    if (!strcmp(f, "string")) return value_to_str(R, v);
    if (!strcmp(f, "tojson")) return value_tojson(R, v, p[0], p[1], p[2], p[3]);
    if (!strcmp(f, "items")) return items_of(R, v);
    if (!strcmp(f, "list")) return value_seq(R, value_iterable(R, v), SEQ_LIST);
    if (!strcmp(f, "first") || !strcmp(f, "last")) {
        Value* l = value_iterable(R, v);
        return l->n ? l->items[f[0] == 'f' ? 0 : l->n - 1] : &V_UNDEFINED;
    }
    if (!strcmp(f, "reverse") && v->k == V_STR) return value_slice(R, v, NULL, NULL, value_int(R, -1));
    if (!strcmp(f, "reverse")) /* jinja2: reversed(v), an iterator */
        return value_seq(R, value_slice(R, value_seq(R, value_iterable(R, v), SEQ_LIST), NULL, NULL, value_int(R, -1)),
                         SEQ_ITER);
    if (!strcmp(f, "join")) return join(R, v, p[0], p[1]);
    if (!strcmp(f, "default") || !strcmp(f, "d")) {
        bool use = v->k == V_UNDEF || (p[1] && value_truthy(p[1]) && !value_truthy(v));
        return use ? (p[0] ? p[0] : value_str(R, "", 0)) : v;
    }
    if (!strcmp(f, "replace")) return replace(R, value_to_str(R, v), p[0], p[1], p[2]);
    if (!strcmp(f, "abs")) {
        if (v->k != V_INT && v->k != V_FLOAT && v->k != V_BOOL) render_fail(R, "abs of a %s", value_type_name(v));
        bool neg = v->k == V_FLOAT ? v->f < 0 : v->i < 0;
        return value_binary(R, "*", v->k == V_BOOL ? value_int(R, v->i) : v, value_int(R, neg ? -1 : 1));
    }
    if (!strcmp(f, "int")) return to_int(R, v, p[0], p[1]);
    return to_float(R, v, p[0]); /* float */
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
    /* jinja2's undefined iterates as empty and has a length; a namespace is none of these; an iterator or a
       dict view has no index, so it is no sequence */
    bool container = (v->k == V_LIST || v->k == V_DICT) && !v->is_namespace;
    if (!strcmp(t, "mapping")) return v->k == V_DICT && !v->is_namespace;
    if (!strcmp(t, "iterable")) return container || v->k == V_STR || v->k == V_UNDEF;
    if (!strcmp(t, "sequence"))
        return (container && !(v->k == V_LIST && v->seq == SEQ_ITER)) || v->k == V_STR || v->k == V_UNDEF;
    if (!strcmp(t, "even") || !strcmp(t, "odd")) { /* value % 2 == 0, value % 2 == 1 */
        Value* r = value_binary(R, "%", (Value*)v, value_int(R, 2));
        return value_equal(R, r, value_int(R, t[0] == 'e' ? 0 : 1));
    }
    Value* x = arg(a, 0, "other");
    if (!x) render_fail(R, "the test '%s' needs an argument", t);
    if (!strcmp(t, "eq") || !strcmp(t, "equalto") || !strcmp(t, "==")) return value_equal(R, v, x);
    if (!strcmp(t, "ne") || !strcmp(t, "!=")) return !value_equal(R, v, x);
    if (!strcmp(t, "in")) return value_truthy(value_binary(R, "in", (Value*)v, x));
    if (!strcmp(t, "divisibleby")) return value_equal(R, value_binary(R, "%", (Value*)v, x), value_int(R, 0));
    render_fail(R, "the test '%s' is not supported", t);
}

Value* value_method(Render* R, Value* self, const char* m, const Args* a) {
    if (self->k != V_STR && self->k != V_DICT)
        render_fail(R, "the method '%s' of a %s is not supported", m, value_type_name(self));
    size_t n = sizeof(METHODS) / sizeof(METHODS[0]);
    const Signature* sig = find(METHODS, n, m);
    if (!sig || (self->k == V_DICT) != (sig >= find(METHODS, n, "items")))
        render_fail(R, "the %s method '%s' is not supported", self->k == V_DICT ? "dict" : "string", m);
    Value** p = bind(R, sig, "method", a);
    if (!strcmp(m, "items")) return items_of(R, self);
    if (!strcmp(m, "keys")) return value_seq(R, value_iterable(R, self), SEQ_ITER);
    if (!strcmp(m, "values")) return value_seq(R, self, SEQ_ITER);
    if (!strcmp(m, "get")) {
        if (p[0]->k != V_STR) render_fail(R, "get() needs a string key");
        Value* v = dict_get(self, p[0]->s);
        return v ? v : p[1] ? p[1] : &V_NONE_VALUE;
    }
    if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) return value_bool(affix(R, self, p[0], m[0] == 'e'));
    if (!strcmp(m, "strip")) return strip(R, self, p[0], 3);
    if (!strcmp(m, "lstrip")) return strip(R, self, p[0], 1);
    if (!strcmp(m, "rstrip")) return strip(R, self, p[0], 2);
    if (!strcmp(m, "split")) return split(R, self, p[0], p[1]);
    if (!strcmp(m, "upper")) return map_case(R, self, 'u');
    if (!strcmp(m, "lower")) return map_case(R, self, 'l');
    if (!strcmp(m, "title")) return map_case(R, self, 't');
    if (!strcmp(m, "capitalize")) return map_case(R, self, 'c');
    return replace(R, self, p[0], p[1], p[2]);
}

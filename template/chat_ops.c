/* Chat template values (template/chat_value.h): Python's ==, the comparison and arithmetic operators, and the
   iteration and slicing rules. A string's length, index and slice count code points, as Python's do. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "template/chat_value.h"

/* ---- comparison and arithmetic ---- */

static bool is_num(const Value* v) { return v->k == V_INT || v->k == V_FLOAT || v->k == V_BOOL; }
static double num(const Value* v) { return v->k == V_FLOAT ? v->f : (double)v->i; }

/* Python's ==: a namespace or an iterator equals itself only, a list never a tuple or a range; the items of
   lists and dicts are compared as Python's PyObject_RichCompareBool compares them, the same object equal to
   itself without a look inside */
static bool equal(Render* R, const Value* a, const Value* b, size_t depth) {
    if (is_num(a) && is_num(b)) return a->k == V_FLOAT || b->k == V_FLOAT ? num(a) == num(b) : a->i == b->i;
    if (a->k != b->k) return false;
    if (a->is_namespace || b->is_namespace || (a->k == V_LIST && a->seq == SEQ_ITER)) return a == b;
    if (a->k == V_LIST && a->seq != b->seq) return false;
    switch (a->k) {
    case V_UNDEF:
    case V_NONE: return true;
    case V_STR: return a->len == b->len && !memcmp(a->s, b->s, a->len);
    case V_LIST:
    case V_DICT:
        if (a->n != b->n) return false;
        if (depth == VALUE_MAX_DEPTH) render_fail(R, "a value nested more than %d deep", VALUE_MAX_DEPTH);
        for (size_t k = 0; k < a->n; k++) {
            if (a->k == V_DICT && strcmp(a->keys[k], b->keys[k])) return false;
            if (a->items[k] != b->items[k] && !equal(R, a->items[k], b->items[k], depth + 1)) return false;
        }
        return true;
    default: return false;
    }
}

static int compare(Render* R, const char* op, const Value* a, const Value* b) {
    if (is_num(a) && is_num(b)) return num(a) < num(b) ? -1 : num(a) > num(b);
    if (a->k == V_STR && b->k == V_STR) {
        size_t n = a->len < b->len ? a->len : b->len;
        int c = memcmp(a->s, b->s, n);
        return c ? c : (a->len > b->len) - (a->len < b->len);
    }
    render_fail(R, "'%s' between a %s and a %s", op, value_type_name(a), value_type_name(b));
}

static bool contains(Render* R, const Value* item, const Value* in) {
    if (in->k == V_STR) {
        if (item->k != V_STR)
            render_fail(R, "'in <string>' needs a string on its left, not a %s", value_type_name(item));
        return item->len == 0 || memmem(in->s, in->len, item->s, item->len) != NULL;
    }
    if (in->k == V_LIST) {
        for (size_t k = 0; k < in->n; k++)
            if (in->items[k] == item || equal(R, item, in->items[k], 0)) return true;
        return false;
    }
    if (in->k == V_DICT) return item->k == V_STR && dict_get(in, item->s) != NULL;
    render_fail(R, "'in' a %s", value_type_name(in));
}

static Value* concat(Render* R, const Value* a, const Value* b) {
    Value* v = value_new(R, V_STR);
    char* s = pool_alloc(R->pool, a->len + b->len + 1);
    memcpy(s, a->s, a->len);
    memcpy(s + a->len, b->s, b->len);
    v->s = s;
    v->len = a->len + b->len;
    v->ascii = a->ascii && b->ascii;
    return v;
}

/* s repeated n times (Python's s * n: empty for n <= 0), built in one piece */
static Value* repeat(Render* R, const Value* s, long long n) {
    size_t total;
    if (n > 0 && __builtin_mul_overflow(s->len, (size_t)n, &total))
        render_fail(R, "a string repeated %lld times is more than the rendering may hold", n);
    Value* v = value_new(R, V_STR);
    char* t = pool_alloc(R->pool, n > 0 ? total + 1 : 1);
    for (long long k = 0; k < n; k++) memcpy(t + (size_t)k * s->len, s->s, s->len);
    v->s = t;
    v->len = n > 0 ? total : 0;
    v->ascii = s->ascii;
    return v;
}

static long long floor_div(long long a, long long b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

/* Python's int arithmetic within 64 bits: a result beyond them (Python's ints have no bound) is refused, never
   wrapped */
static Value* int_op(Render* R, char op, long long a, long long b) {
    long long r = 0;
    bool over = false;
    switch (op) {
    case '+': over = __builtin_add_overflow(a, b, &r); break;
    case '-': over = __builtin_sub_overflow(a, b, &r); break;
    case '*': over = __builtin_mul_overflow(a, b, &r); break;
    case '/': /* floor division; b != 0 */
        over = b == -1 && a == LLONG_MIN;
        if (!over) r = floor_div(a, b);
        break;
    case '%': r = b == -1 ? 0 : a - b * floor_div(a, b); break; /* the sign of b, as Python's */
    }
    if (over)
        render_fail(R, "%lld %s %lld is beyond 64 bits (the template's ints are 64-bit)", a,
                    op == '/' ? "//" : (char[]){op, 0}, b);
    return value_int(R, r);
}

Value* value_binary(Render* R, const char* op, Value* a, Value* b) {
    if (!strcmp(op, "==")) return value_bool(equal(R, a, b, 0));
    if (!strcmp(op, "!=")) return value_bool(!equal(R, a, b, 0));
    if (!strcmp(op, "<")) return value_bool(compare(R, op, a, b) < 0);
    if (!strcmp(op, "<=")) return value_bool(compare(R, op, a, b) <= 0);
    if (!strcmp(op, ">")) return value_bool(compare(R, op, a, b) > 0);
    if (!strcmp(op, ">=")) return value_bool(compare(R, op, a, b) >= 0);
    if (!strcmp(op, "in")) return value_bool(contains(R, a, b));
    if (!strcmp(op, "not in")) return value_bool(!contains(R, a, b));
    if (!strcmp(op, "~")) return concat(R, value_to_str(R, a), value_to_str(R, b));
    if (!strcmp(op, "+") && a->k == V_STR && b->k == V_STR) return concat(R, a, b);
    if (!strcmp(op, "+") && a->k == V_LIST && b->k == V_LIST) {
        if (a->seq != b->seq || a->seq == SEQ_RANGE || a->seq == SEQ_ITER)
            render_fail(R, "'+' of these two sequences (Python adds lists to lists and tuples to tuples only)");
        Value* l = value_list(R);
        l->seq = a->seq;
        for (size_t k = 0; k < a->n; k++) list_push(R, l, a->items[k]);
        for (size_t k = 0; k < b->n; k++) list_push(R, l, b->items[k]);
        return l;
    }
    if (!strcmp(op, "*") && a->k == V_STR && (b->k == V_INT || b->k == V_BOOL)) return repeat(R, a, b->i);
    if (!is_num(a) || !is_num(b))
        render_fail(R, "'%s' between a %s and a %s", op, value_type_name(a), value_type_name(b));
    bool ints = a->k != V_FLOAT && b->k != V_FLOAT;
    double x = num(a), y = num(b);
    switch (op[0]) {
    case '+': return ints ? int_op(R, '+', a->i, b->i) : value_float(R, x + y);
    case '-': return ints ? int_op(R, '-', a->i, b->i) : value_float(R, x - y);
    case '*': return ints ? int_op(R, '*', a->i, b->i) : value_float(R, x * y);
    case '/':
        if (y == 0) render_fail(R, "division by zero");
        if (op[1] == '/') return ints ? int_op(R, '/', a->i, b->i) : value_float(R, floor(x / y));
        return value_float(R, x / y);
    case '%':
        if (y == 0) render_fail(R, "modulo by zero");
        if (ints) return int_op(R, '%', a->i, b->i);
        return value_float(R, x - y * floor(x / y));
    }
    render_fail(R, "the operator '%s' is not supported", op);
}

/* ---- code points, slices, iteration ---- */

static size_t count_points(const Value* s) {
    if (s->ascii) return s->len;
    size_t n = 0;
    for (size_t i = 0; i < s->len; i++) n += ((unsigned char)s->s[i] & 0xC0) != 0x80;
    return n;
}

/* byte offsets of s's code points into *off (n + 1 entries, pooled; NULL for an ASCII string, whose code
   point i is byte i); returns n */
static size_t code_points(Render* R, const Value* s, size_t** off) {
    size_t n = count_points(s);
    *off = NULL;
    if (s->ascii) return n;
    *off = pool_alloc(R->pool, (n + 1) * sizeof(size_t));
    size_t k = 0;
    for (size_t i = 0; i < s->len; i++)
        if (((unsigned char)s->s[i] & 0xC0) != 0x80) (*off)[k++] = i;
    (*off)[n] = s->len;
    return n;
}

size_t value_length(Render* R, const Value* v) {
    if (v->k == V_STR) return count_points(v);
    if (v->k == V_LIST || v->k == V_DICT) return v->n;
    if (v->k == V_UNDEF) return 0;
    render_fail(R, "the length of a %s", value_type_name(v));
}

/* whether i + step reaches or passes end, i before end in the step's direction (i + step itself could wrap) */
static bool step_passes(long long i, long long end, long long step) {
    unsigned long long gap =
        step > 0 ? (unsigned long long)end - (unsigned long long)i : (unsigned long long)i - (unsigned long long)end;
    return gap <= (step > 0 ? (unsigned long long)step : 0ull - (unsigned long long)step);
}

static long long slice_bound(Render* R, const Value* v, long long dflt, long long n, bool neg_step) {
    if (!v || v->k == V_NONE) return dflt;
    if (v->k != V_INT && v->k != V_BOOL) render_fail(R, "a slice bound must be an integer");
    long long i = v->i;
    if (i < 0) i += n;
    long long lo = neg_step ? -1 : 0, hi = neg_step ? n - 1 : n;
    return i < lo ? lo : i > hi ? hi : i;
}

/* Python's range(start, stop, step)[a:b:st], a and b normalized as slice.indices() does: range(start + a *
   step, start + b * step, step * st) */
static void range_slice(Render* R, Value* out, const Value* r, long long a, long long b, long long st) {
    long long* g = out->range = pool_alloc(R->pool, 3 * sizeof(long long));
    if (__builtin_mul_overflow(a, r->range[2], &g[0]) || __builtin_add_overflow(g[0], r->range[0], &g[0]) ||
        __builtin_mul_overflow(b, r->range[2], &g[1]) || __builtin_add_overflow(g[1], r->range[0], &g[1]) ||
        __builtin_mul_overflow(st, r->range[2], &g[2]))
        render_fail(R, "a slice of a range() beyond 64 bits (the template's ints are 64-bit)");
}

Value* value_slice(Render* R, Value* obj, const Value* start, const Value* stop, const Value* step) {
    if (obj->k != V_LIST && obj->k != V_STR) render_fail(R, "a slice of a %s", value_type_name(obj));
    long long st = 1;
    if (step && step->k != V_NONE) {
        if (step->k != V_INT) render_fail(R, "a slice step must be an integer");
        st = step->i;
        if (st == 0) render_fail(R, "a slice step of 0");
    }
    size_t* off = NULL;
    long long n = obj->k == V_LIST ? (long long)obj->n : (long long)code_points(R, obj, &off);
    long long a = slice_bound(R, start, st > 0 ? 0 : n - 1, n, st < 0);
    long long b = slice_bound(R, stop, st > 0 ? n : -1, n, st < 0);
    if (obj->k == V_LIST && obj->seq == SEQ_ITER) render_fail(R, "a slice of an iterator or a dict view");
    Value* out = obj->k == V_LIST ? value_list(R) : NULL;
    if (out) out->seq = obj->seq;
    if (obj->seq == SEQ_RANGE) range_slice(R, out, obj, a, b, st);
    size_t mark = R->out_len; /* a string's slice is built at the end of the output, then taken off it */
    for (long long i = a; st > 0 ? i < b : i > b; i += st) {
        if (obj->k == V_LIST) list_push(R, out, obj->items[i]);
        else if (off) out_append(R, obj->s + off[i], off[i + 1] - off[i]);
        else out_append(R, obj->s + i, 1);
        if (step_passes(i, b, st)) break;
    }
    if (obj->k == V_LIST) return out;
    return out_take(R, mark);
}

Value* value_seq(Render* R, const Value* v, SeqKind seq) {
    Value* l = value_list(R);
    l->seq = seq;
    for (size_t k = 0; k < v->n; k++) list_push(R, l, v->items[k]);
    return l;
}

Value* value_index(Render* R, Value* obj, long long i) {
    if (obj->k == V_LIST && obj->seq == SEQ_ITER) render_fail(R, "an index into an iterator or a dict view");
    long long n = obj->k == V_LIST ? (long long)obj->n : (long long)count_points(obj);
    if (i < 0) i += n;
    if (i < 0 || i >= n) return &V_UNDEFINED; /* Jinja: an undefined value, an error only when used */
    if (obj->k == V_LIST) return obj->items[i];
    if (obj->ascii) return value_str(R, obj->s + i, 1);
    size_t at = 0; /* the byte where code point i starts */
    for (long long k = 0; k < i; k++)
        for (at++; ((unsigned char)obj->s[at] & 0xC0) == 0x80; at++) {}
    size_t end = at + 1;
    while (end < obj->len && ((unsigned char)obj->s[end] & 0xC0) == 0x80) end++;
    return value_str(R, obj->s + at, end - at);
}

Value* value_iterable(Render* R, Value* v) {
    if (v->k == V_LIST) return v;
    if (v->k == V_UNDEF) return value_list(R);
    Value* l = value_list(R);
    if (v->k == V_DICT) {
        for (size_t k = 0; k < v->n; k++) list_push(R, l, value_str(R, v->keys[k], strlen(v->keys[k])));
        return l;
    }
    if (v->k == V_STR) {
        size_t* off;
        size_t n = code_points(R, v, &off);
        for (size_t k = 0; k < n; k++)
            list_push(R, l, off ? value_str(R, v->s + off[k], off[k + 1] - off[k]) : value_str(R, v->s + k, 1));
        return l;
    }
    render_fail(R, "a %s is not iterable", value_type_name(v));
}

#define RANGE_MAX 100000 /* jinja2's sandbox refuses a longer range() */
Value* value_range(Render* R, const Args* a) {
    long long lim[3] = {0, 0, 1};
    if (a->n < 1 || a->n > 3) render_fail(R, "range() takes 1 to 3 arguments");
    for (size_t k = 0; k < a->n; k++) {
        if (a->v[k]->k != V_INT) render_fail(R, "range() takes integers");
        lim[a->n == 1 ? 1 : k] = a->v[k]->i;
    }
    if (lim[2] == 0) render_fail(R, "range() with a step of 0");
    Value* l = value_list(R);
    l->seq = SEQ_RANGE;
    l->range = pool_alloc(R->pool, sizeof(lim));
    memcpy(l->range, lim, sizeof(lim));
    for (long long i = lim[0]; lim[2] > 0 ? i < lim[1] : i > lim[1]; i += lim[2]) {
        if (l->n == RANGE_MAX) render_fail(R, "range() of more than %d items (jinja2's sandbox limit)", RANGE_MAX);
        list_push(R, l, value_int(R, i));
        if (step_passes(i, lim[1], lim[2])) break;
    }
    return l;
}

bool value_equal(Render* R, const Value* a, const Value* b) { return equal(R, a, b, 0); }

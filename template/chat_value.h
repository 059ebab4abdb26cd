/* The values a chat template computes with (template/chat_value.c), as Jinja has them from Python: undefined,
   none, bool, int, float, str, list and dict (a namespace() is a dict that `set ns.x` may change), and
   the rendering's state: its output, its pool and where a failure jumps to. */
#ifndef REPOC_TEMPLATE_CHAT_VALUE_H
#define REPOC_TEMPLATE_CHAT_VALUE_H

#include <cjson/cJSON.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>

#include "template/chat_template_ast.h"

/* What a value is: undefined, None, or one of Python's bool, int, float, str, list and dict */
typedef enum { V_UNDEF, V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_LIST, V_DICT } ValueKind;

/* what a V_LIST is in Python: a list, a tuple (the pairs of items()), a range() (range[3] its arguments), or
   an iterator or dict view (reverse, |items, .items(), .keys(), .values()), which jinja2 prints by address */
typedef enum { SEQ_LIST, SEQ_TUPLE, SEQ_RANGE, SEQ_ITER } SeqKind;

typedef struct Value Value;
struct Value {
    ValueKind k;
    long long i;   /* V_INT, V_BOOL (0 or 1) */
    double f;      /* V_FLOAT */
    const char* s; /* V_STR: len bytes, NUL-terminated */
    size_t len;
    bool ascii;        /* V_STR: known to be ASCII only, so a code point is a byte (false: not known) */
    Value** items;     /* V_LIST: n items; V_DICT: n values in insertion order */
    SeqKind seq;       /* V_LIST */
    long long* range;  /* SEQ_RANGE: start, stop, step */
    const char** keys; /* V_DICT: n keys */
    size_t n, cap;
    bool is_namespace;
};

extern Value V_UNDEFINED, V_NONE_VALUE;

/* the most a rendering may hold in values and text together: a string grown in a loop keeps every step (the
   pool frees nothing until the rendering ends), so it is refused past this */
#define CHAT_RENDER_MAX_BYTES ((size_t)256 << 20)

/* the deepest a value's printer (repr, tojson) and == walk into lists and dicts: Python's own recursion limit
   is 1000 */
#define VALUE_MAX_DEPTH 500

typedef struct {
    Pool* pool;
    const Value* walking[VALUE_MAX_DEPTH]; /* the lists and dicts being printed, outermost first */
    size_t n_walking;
    char* out; /* the text so far (malloc'd) */
    size_t out_len, out_cap;
    int line; /* of the statement or expression being evaluated, for messages */
    jmp_buf fail;
    char* err;
    size_t err_len;
} Render;

typedef struct {
    Value** v;
    const char** kw; /* per argument: its keyword or NULL */
    size_t n;
} Args;

_Noreturn void render_fail(Render* R, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void out_append(Render* R, const char* s, size_t n);
/* the text appended since the output's length was mark, as a string value, taken off the output again: how a
   value's text (str(), tojson, a slice) is built */
Value* out_take(Render* R, size_t mark);

/* a new value of kind k from the rendering's pool */
Value* value_new(Render* R, ValueKind k);
Value* value_str(Render* R, const char* s, size_t n);
Value* value_int(Render* R, long long i);
Value* value_float(Render* R, double f);
Value* value_bool(bool b);
Value* value_list(Render* R);
Value* value_dict(Render* R);
void list_push(Render* R, Value* list, Value* v);
Value* dict_get(const Value* dict, const char* key); /* NULL when absent */
void dict_set(Render* R, Value* dict, const char* key, Value* v);
/* a record's JSON as values, numbers as json.loads reads them (template/chat_json.c) */
Value* value_from_json(Render* R, const cJSON* j);
/* a JSON number literal as Python's json.loads reads it: with a fraction or an exponent a float, else an int
   (refused beyond 64 bits) (template/chat_json.c) */
Value* value_number_literal(Render* R, const char* s);
/* transformers' tojson filter: json.dumps(v, ensure_ascii, indent, separators, sort_keys), each NULL for its
   default (template/chat_json.c) */
Value* value_tojson(Render* R, const Value* v, const Value* ensure_ascii, const Value* indent, const Value* separators,
                    const Value* sort_keys);
const char* value_type_name(const Value* v);

bool value_truthy(const Value* v);
/* Python's == (template/chat_ops.c, as the operators, length, slices and iteration below) */
bool value_equal(Render* R, const Value* a, const Value* b);
/* the printers' walk one level into v (a list or dict): false when v is being printed already (a namespace
   that holds itself); refused past VALUE_MAX_DEPTH */
bool value_walk_enter(Render* R, const Value* v);
/* len(): code points of a string, items of a list or dict, 0 for undefined */
size_t value_length(Render* R, const Value* v);
/* a new list (kind seq) of v's items */
Value* value_seq(Render* R, const Value* v, SeqKind seq);
/* str(v) as a string value (template/chat_print.c) */
Value* value_to_str(Render* R, const Value* v);
/* the text {{ v }} writes (Python's str(), undefined as "") appended to the output (template/chat_print.c) */
void value_print(Render* R, const Value* v);
/* a b with op one of + - * / // % ~ == != < <= > >= in "not in" */
Value* value_binary(Render* R, const char* op, Value* a, Value* b);
Value* value_slice(Render* R, Value* obj, const Value* start, const Value* stop, const Value* step);
/* obj[i] of a list or a string (its i-th code point), i < 0 counted from the end; undefined outside */
Value* value_index(Render* R, Value* obj, long long i);
/* what `for x in v` walks: a list's items, a dict's keys, a string's characters (undefined: none) */
Value* value_iterable(Render* R, Value* v);
Value* value_range(Render* R, const Args* a);
Value* value_filter(Render* R, Value* v, const char* name, const Args* a);
bool value_test(Render* R, const Value* v, const char* name, const Args* a);
Value* value_method(Render* R, Value* self, const char* name, const Args* a);

#endif

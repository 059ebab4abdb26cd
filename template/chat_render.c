/* Chat templates, rendering (template/chat_template.h): the parsed statements walked over a scope chain, values
   as Jinja (Python) has them. Everything a rendering allocates comes from one pool freed at its end. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "template/chat_template_ast.h"
#include "template/chat_value.h"

/* ---- scopes: a for loop's body gets a fresh one each iteration; set writes the innermost ---- */

typedef struct Scope Scope;
struct Scope {
    Scope* up;
    Value* vars; /* a dict */
};

static Value* lookup(Scope* s, const char* name) {
    for (; s; s = s->up) {
        Value* v = dict_get(s->vars, name);
        if (v) return v;
    }
    return &V_UNDEFINED;
}

/* ---- expressions ---- */

static Value* eval(Render* R, Scope* s, const Expr* e);

static void eval_args(Render* R, Scope* s, const Expr* e, Args* a) {
    a->n = e->n_args;
    a->v = pool_alloc(R->pool, (a->n + 1) * sizeof(Value*));
    a->kw = e->kw;
    for (size_t k = 0; k < a->n; k++) a->v[k] = eval(R, s, e->args[k]);
}

static Value* call(Render* R, Scope* s, const Expr* e) {
    Args a;
    eval_args(R, s, e, &a);
    if (e->a->k == E_ATTR) { /* a method: obj.name(args) */
        Value* self = eval(R, s, e->a->a);
        return value_method(R, self, e->a->s, &a);
    }
    if (e->a->k == E_NAME) {
        const char* f = e->a->s;
        Value* v = lookup(s, f);
        if (v->k != V_UNDEF) render_fail(R, "calling the variable '%s' is not supported", f);
        if (!strcmp(f, "raise_exception")) {
            const Value* m = a.n ? a.v[0] : &V_NONE_VALUE;
            render_fail(R, "the template refused the input: %s", m->k == V_STR ? m->s : "(no message)");
        }
        if (!strcmp(f, "namespace")) {
            Value* ns = value_dict(R);
            ns->is_namespace = true;
            for (size_t k = 0; k < a.n; k++) {
                if (!a.kw[k]) render_fail(R, "namespace() takes keyword arguments only");
                dict_set(R, ns, a.kw[k], a.v[k]);
            }
            return ns;
        }
        if (!strcmp(f, "range")) return value_range(R, &a);
        render_fail(R, "the function '%s' is %s", f,
                    !strcmp(f, "strftime_now") ? "left undefined (a rendering "
                                                 "must not depend on the day)"
                                               : "not supported");
    }
    render_fail(R, "this call is not supported");
}

static Value* subscript(Render* R, Value* obj, Value* idx) {
    if (obj->k == V_UNDEF) render_fail(R, "subscript of an undefined value");
    if (obj->k == V_DICT) {
        if (idx->k != V_STR) render_fail(R, "a dict key must be a string");
        Value* v = dict_get(obj, idx->s);
        return v ? v : &V_UNDEFINED;
    }
    if (obj->k != V_LIST && obj->k != V_STR) render_fail(R, "subscript of a %s", value_type_name(obj));
    if (idx->k != V_INT && idx->k != V_BOOL) render_fail(R, "an index must be an integer");
    return value_index(R, obj, idx->i);
}

static Value* attribute(Render* R, Value* obj, const char* name) {
    if (obj->k == V_UNDEF) render_fail(R, "'.%s' of an undefined value", name);
    Value* v = obj->k == V_DICT ? dict_get(obj, name) : NULL; /* Jinja: obj.name falls back to obj['name'] */
    return v ? v : &V_UNDEFINED;
}

static Value* eval(Render* R, Scope* s, const Expr* e) {
    R->line = e->line;
    switch (e->k) {
    case E_STR: return value_str(R, e->s, e->len);
    case E_INT: return value_int(R, e->i);
    case E_FLOAT: return value_float(R, e->f);
    case E_BOOL: return value_bool(e->i != 0);
    case E_NONE: return &V_NONE_VALUE;
    case E_NAME: return lookup(s, e->s);
    case E_ATTR: return attribute(R, eval(R, s, e->a), e->s);
    case E_ITEM: {
        Value* obj = eval(R, s, e->a);
        return subscript(R, obj, eval(R, s, e->b));
    }
    case E_SLICE: {
        Value* obj = eval(R, s, e->a);
        Value* a = e->b ? eval(R, s, e->b) : NULL;
        Value* b = e->c ? eval(R, s, e->c) : NULL;
        Value* st = e->args[0] ? eval(R, s, e->args[0]) : NULL;
        return value_slice(R, obj, a, b, st);
    }
    case E_CALL: return call(R, s, e);
    case E_FILTER: {
        Value* v = eval(R, s, e->a);
        Args a;
        eval_args(R, s, e, &a);
        return value_filter(R, v, e->s, &a);
    }
    case E_TEST: {
        Value* v = eval(R, s, e->a);
        Args a;
        eval_args(R, s, e, &a);
        return value_bool(value_test(R, v, e->s, &a) != e->negated);
    }
    case E_NOT: return value_bool(!value_truthy(eval(R, s, e->a)));
    case E_NEG: {
        Value* x = eval(R, s, e->a);
        return x->k == V_FLOAT ? value_float(R, -x->f) : value_binary(R, "-", value_int(R, 0), x); /* -0.0 kept */
    }
    case E_BIN: {
        Value* a = eval(R, s, e->a);
        Value* b = eval(R, s, e->b);
        R->line = e->line;
        return value_binary(R, e->s, a, b);
    }
    case E_AND: {
        Value* a = eval(R, s, e->a);
        return value_truthy(a) ? eval(R, s, e->b) : a;
    }
    case E_OR: {
        Value* a = eval(R, s, e->a);
        return value_truthy(a) ? a : eval(R, s, e->b);
    }
    case E_COND:
        if (value_truthy(eval(R, s, e->b))) return eval(R, s, e->a);
        return e->c ? eval(R, s, e->c) : &V_UNDEFINED;
    case E_LIST: {
        Value* l = value_list(R);
        for (size_t k = 0; k < e->n_args; k++) list_push(R, l, eval(R, s, e->args[k]));
        return l;
    }
    case E_DICT: {
        Value* d = value_dict(R);
        for (size_t k = 0; k + 1 < e->n_args; k += 2) {
            Value* key = eval(R, s, e->args[k]);
            if (key->k != V_STR) render_fail(R, "a dict literal's key must be a string");
            dict_set(R, d, key->s, eval(R, s, e->args[k + 1]));
        }
        return d;
    }
    }
    render_fail(R, "an unknown expression");
}

/* ---- statements ---- */

typedef enum { FLOW_NEXT, FLOW_BREAK, FLOW_CONTINUE } Flow;

static Flow exec_list(Render* R, Scope* s, const StmtList* l);

static Value* loop_info(Render* R, Value* items, size_t i) {
    Value* loop = value_dict(R);
    size_t n = items->n;
    dict_set(R, loop, "index", value_int(R, (long long)i + 1));
    dict_set(R, loop, "index0", value_int(R, (long long)i));
    dict_set(R, loop, "revindex", value_int(R, (long long)(n - i)));
    dict_set(R, loop, "revindex0", value_int(R, (long long)(n - i - 1)));
    dict_set(R, loop, "first", value_bool(i == 0));
    dict_set(R, loop, "last", value_bool(i + 1 == n));
    dict_set(R, loop, "length", value_int(R, (long long)n));
    dict_set(R, loop, "depth", value_int(R, 1)); /* loops are never recursive here */
    dict_set(R, loop, "depth0", value_int(R, 0));
    dict_set(R, loop, "previtem", i ? items->items[i - 1] : &V_UNDEFINED);
    dict_set(R, loop, "nextitem", i + 1 < n ? items->items[i + 1] : &V_UNDEFINED);
    return loop;
}

static void bind_targets(Render* R, Scope* body, const Stmt* st, Value* item) {
    if (st->n_names == 1) {
        dict_set(R, body->vars, st->names[0], item);
        return;
    }
    if (item->k != V_LIST || item->n != st->n_names)
        render_fail(R, "cannot unpack a %s into %zu loop targets", value_type_name(item), st->n_names);
    for (size_t k = 0; k < st->n_names; k++) dict_set(R, body->vars, st->names[k], item->items[k]);
}

static void exec_for(Render* R, Scope* s, const Stmt* st) {
    Value* all = value_iterable(R, eval(R, s, st->e));
    Value* items = all;
    if (st->cond) { /* the filter sees each item with the loop's targets bound */
        items = value_list(R);
        for (size_t i = 0; i < all->n; i++) {
            Scope f = {s, value_dict(R)};
            bind_targets(R, &f, st, all->items[i]);
            if (value_truthy(eval(R, &f, st->cond))) list_push(R, items, all->items[i]);
        }
    }
    for (size_t i = 0; i < items->n; i++) {
        Scope body = {s, value_dict(R)};
        bind_targets(R, &body, st, items->items[i]);
        dict_set(R, body.vars, "loop", loop_info(R, items, i));
        if (exec_list(R, &body, &st->body) == FLOW_BREAK) break;
    }
    if (items->n == 0) exec_list(R, s, &st->orelse);
}

static Flow exec_list(Render* R, Scope* s, const StmtList* l) {
    for (size_t k = 0; k < l->n; k++) {
        const Stmt* st = l->v[k];
        R->line = st->line;
        switch (st->k) {
        case S_TEXT: out_append(R, st->text, st->len); break;
        case S_OUT: value_print(R, eval(R, s, st->e)); break;
        case S_IF: {
            Flow f = exec_list(R, s, value_truthy(eval(R, s, st->e)) ? &st->body : &st->orelse);
            if (f != FLOW_NEXT) return f;
            break;
        }
        case S_FOR: exec_for(R, s, st); break;
        case S_SET: {
            Value* v = eval(R, s, st->e);
            if (st->attr) {
                Value* ns = lookup(s, st->names[0]);
                if (ns->k != V_DICT || !ns->is_namespace)
                    render_fail(R, "set %s.%s: '%s' is not a namespace()", st->names[0], st->attr, st->names[0]);
                dict_set(R, ns, st->attr, v);
            } else {
                dict_set(R, s->vars, st->names[0], v);
            }
            break;
        }
        case S_BREAK: return FLOW_BREAK;
        case S_CONTINUE: return FLOW_CONTINUE;
        }
    }
    return FLOW_NEXT;
}

static void pool_over(void* R) {
    render_fail(R,
                "the rendering holds more than %zu MiB of text and values (a string grown in a loop keeps every step)",
                CHAT_RENDER_MAX_BYTES >> 20);
}

char* chat_template_render(const ChatTemplate* t, const cJSON* context, size_t* len, char* err, size_t err_len) {
    Pool pool = {.limit = CHAT_RENDER_MAX_BYTES, .over = pool_over};
    Render R = {.pool = &pool, .err = err, .err_len = err_len};
    pool.ctx = &R;
    if (setjmp(R.fail)) {
        free(R.out);
        pool_free(&pool);
        return NULL;
    }
    Value* globals = value_from_json(&R, context);
    if (globals->k != V_DICT) render_fail(&R, "the context must be a JSON object");
    Scope top = {NULL, globals};
    exec_list(&R, &top, &t->body);
    out_append(&R, "", 0);
    pool_free(&pool);
    *len = R.out_len;
    if (!R.out) R.out = calloc(1, 1);
    return R.out;
}

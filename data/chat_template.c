/* Chat templates, parsing (data/chat_template.h): the source split into text and tags with Jinja's
   whitespace rules (trim_blocks, lstrip_blocks, the - and + controls), each tag's expression tokenized and
   parsed by recursive descent with Jinja's precedence, from loosest to tightest:
     a if c else b  <  or  <  and  <  not  <  == != < <= > >= in, not in  <  + -  <  ~  <  * / // %
     <  unary -  <  primary with .attr [item] (call) | filter, is test */
#include "data/chat_template_ast.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

/* ---- tokens of one tag ---- */

typedef enum { T_END, T_NAME, T_STR, T_INT, T_FLOAT, T_OP } TokKind;
typedef struct {
    TokKind k;
    const char* s; /* name, operator or the string's decoded bytes (pool) */
    size_t len;
    long long i;
    double f;
} Tok;

typedef struct {
    Pool* pool;
    Tok* tok;
    size_t n, pos;
    int line;
    jmp_buf fail;
    char* err;
    size_t err_len;
} Parser;

static _Noreturn void fail(Parser* P, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(Parser* P, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    chat_error(P->err, P->err_len, P->line, fmt, ap);
    va_end(ap);
    longjmp(P->fail, 1);
}

static bool is_name_char(char c, bool first) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

/* a quoted literal from s (at the quote) into pool bytes, with Python's escapes; returns the length eaten */
static size_t lex_string(Parser* P, const char* s, size_t n, Tok* t) {
    char q = s[0];
    char* out = pool_alloc(P->pool, n + 1);
    size_t o = 0, i = 1;
    for (; i < n && s[i] != q; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < n) {
            char e = s[++i];
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
            if (e != 'n' && e != 't' && e != 'r' && e != '\\' && e != '\'' && e != '"')
                fail(P, "the escape \\%c in a string literal is not supported", e);
        }
        out[o++] = c;
    }
    if (i >= n) fail(P, "a string literal has no closing %c", q);
    t->k = T_STR, t->s = out, t->len = o;
    return i + 1;
}

static void lex(Parser* P, const char* s, size_t n) {
    size_t cap = 16;
    P->tok = pool_alloc(P->pool, cap * sizeof(Tok));
    P->n = P->pos = 0;
    static const char* const ops2[] = {"==", "!=", "<=", ">=", "//", "**"};
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            i++;
            continue;
        }
        if (P->n + 1 >= cap) {
            Tok* t = pool_alloc(P->pool, 2 * cap * sizeof(Tok));
            memcpy(t, P->tok, cap * sizeof(Tok));
            P->tok = t, cap *= 2;
        }
        Tok* t = &P->tok[P->n++];
        if (c == '\'' || c == '"') {
            i += lex_string(P, s + i, n - i, t);
            continue;
        }
        if (c >= '0' && c <= '9') {
            size_t j = i;
            while (j < n && s[j] >= '0' && s[j] <= '9') j++;
            bool is_float = j + 1 < n && s[j] == '.' && s[j + 1] >= '0' && s[j + 1] <= '9';
            if (is_float)
                for (j++; j < n && s[j] >= '0' && s[j] <= '9'; j++) {}
            char* lit = pool_strndup(P->pool, s + i, j - i);
            if (is_float) t->k = T_FLOAT, t->f = strtod(lit, NULL);
            else t->k = T_INT, t->i = strtoll(lit, NULL, 10);
            i = j;
            continue;
        }
        if (is_name_char(c, true)) {
            size_t j = i;
            while (j < n && is_name_char(s[j], false)) j++;
            t->k = T_NAME, t->s = pool_strndup(P->pool, s + i, j - i), t->len = j - i;
            i = j;
            continue;
        }
        size_t len = strchr("+-*/%~<>=()[]{}.,:|", c) ? 1 : 0;
        for (size_t k = 0; k < sizeof(ops2) / sizeof(ops2[0]); k++)
            if (i + 1 < n && s[i] == ops2[k][0] && s[i + 1] == ops2[k][1]) len = 2;
        if (!len) fail(P, "unexpected character '%c' in an expression", c);
        if (len == 2 && s[i] == '*') fail(P, "the operator ** is not supported");
        t->k = T_OP, t->s = pool_strndup(P->pool, s + i, len), t->len = len;
        i += len;
    }
    P->tok[P->n].k = T_END;
}

static const Tok* peek(Parser* P) { return &P->tok[P->pos]; }
static bool is_op(Parser* P, const char* op) { return peek(P)->k == T_OP && !strcmp(peek(P)->s, op); }
static bool is_word(Parser* P, const char* w) { return peek(P)->k == T_NAME && !strcmp(peek(P)->s, w); }
static bool accept_op(Parser* P, const char* op) { return is_op(P, op) ? (P->pos++, true) : false; }
static bool accept_word(Parser* P, const char* w) { return is_word(P, w) ? (P->pos++, true) : false; }
static void expect_op(Parser* P, const char* op) {
    if (!accept_op(P, op)) fail(P, "expected '%s'", op);
}
static const char* expect_name(Parser* P) {
    if (peek(P)->k != T_NAME) fail(P, "expected a name");
    return P->tok[P->pos++].s;
}

static Expr* node(Parser* P, ExprKind k) {
    Expr* e = pool_alloc(P->pool, sizeof(Expr));
    e->k = k, e->line = P->line;
    return e;
}

static Expr* parse_expr(Parser* P);

/* (args) after a call or filter name: positional and keyword arguments up to ')' */
static void parse_args(Parser* P, Expr* e, const char* close) {
    Expr* args[64];
    const char* kw[64];
    size_t n = 0;
    while (!accept_op(P, close)) {
        if (n && !accept_op(P, ",")) fail(P, "expected ',' or '%s'", close);
        if (accept_op(P, close)) break; /* a trailing comma */
        if (n == 64) fail(P, "more than 64 arguments");
        kw[n] = NULL;
        if (peek(P)->k == T_NAME && P->tok[P->pos + 1].k == T_OP && !strcmp(P->tok[P->pos + 1].s, "=")) {
            kw[n] = expect_name(P);
            P->pos++;
        }
        args[n++] = parse_expr(P);
    }
    e->args = pool_alloc(P->pool, (n + 1) * sizeof(Expr*));
    e->kw = pool_alloc(P->pool, (n + 1) * sizeof(char*));
    memcpy(e->args, args, n * sizeof(Expr*));
    memcpy(e->kw, kw, n * sizeof(char*));
    e->n_args = n;
}

static Expr* parse_primary(Parser* P) {
    const Tok* t = peek(P);
    Expr* e;
    if (t->k == T_STR) {
        e = node(P, E_STR), e->s = t->s, e->len = t->len, P->pos++;
        while (peek(P)->k == T_STR) { /* adjacent literals join, as in Python */
            const Tok* u = &P->tok[P->pos++];
            char* s = pool_alloc(P->pool, e->len + u->len + 1);
            memcpy(s, e->s, e->len), memcpy(s + e->len, u->s, u->len);
            e->s = s, e->len += u->len;
        }
        return e;
    }
    if (t->k == T_INT) {
        e = node(P, E_INT), e->i = t->i, P->pos++;
        return e;
    }
    if (t->k == T_FLOAT) {
        e = node(P, E_FLOAT), e->f = t->f, P->pos++;
        return e;
    }
    if (t->k == T_NAME) {
        const char* s = t->s;
        P->pos++;
        if (!strcmp(s, "true") || !strcmp(s, "True")) {
            e = node(P, E_BOOL), e->i = 1;
            return e;
        }
        if (!strcmp(s, "false") || !strcmp(s, "False")) return node(P, E_BOOL);
        if (!strcmp(s, "none") || !strcmp(s, "None")) return node(P, E_NONE);
        e = node(P, E_NAME), e->s = s;
        return e;
    }
    if (accept_op(P, "(")) {
        e = parse_expr(P);
        if (is_op(P, ",")) fail(P, "tuples are not supported");
        expect_op(P, ")");
        return e;
    }
    if (accept_op(P, "[")) {
        e = node(P, E_LIST), parse_args(P, e, "]");
        return e;
    }
    if (accept_op(P, "{")) {
        e = node(P, E_DICT);
        Expr* kv[128];
        size_t n = 0;
        while (!accept_op(P, "}")) {
            if (n && !accept_op(P, ",")) fail(P, "expected ',' or '}' in a dict");
            if (accept_op(P, "}")) break;
            if (n == 128) fail(P, "a dict literal of more than 64 entries");
            kv[n++] = parse_expr(P);
            expect_op(P, ":");
            kv[n++] = parse_expr(P);
        }
        e->args = pool_alloc(P->pool, (n + 1) * sizeof(Expr*));
        memcpy(e->args, kv, n * sizeof(Expr*));
        e->n_args = n;
        return e;
    }
    fail(P, t->k == T_END ? "an expression ends too early" : "unexpected '%s'", t->k == T_END ? "" : t->s);
}

/* primary, then .attr, [item or slice], (call), | filter and `is test`, left to right */
static Expr* parse_postfix(Parser* P) {
    Expr* e = parse_primary(P);
    for (;;) {
        if (accept_op(P, ".")) {
            Expr* a = node(P, E_ATTR);
            a->a = e, a->s = expect_name(P), e = a;
        } else if (accept_op(P, "[")) {
            Expr* idx[3] = {NULL, NULL, NULL};
            size_t colons = 0;
            while (!accept_op(P, "]")) {
                if (accept_op(P, ":")) {
                    if (++colons > 2) fail(P, "a slice with more than two ':'");
                    continue;
                }
                if (idx[colons]) fail(P, "expected ']'");
                idx[colons] = parse_expr(P);
            }
            Expr* a = node(P, colons ? E_SLICE : E_ITEM);
            if (!colons && !idx[0]) fail(P, "an empty subscript");
            a->a = e, a->b = idx[0], a->c = idx[1];
            if (colons) a->args = pool_alloc(P->pool, sizeof(Expr*)), a->args[0] = idx[2];
            e = a;
        } else if (accept_op(P, "(")) {
            Expr* a = node(P, E_CALL);
            a->a = e, parse_args(P, a, ")"), e = a;
        } else if (accept_op(P, "|")) {
            Expr* a = node(P, E_FILTER);
            a->a = e, a->s = expect_name(P);
            if (accept_op(P, "(")) parse_args(P, a, ")");
            e = a;
        } else if (accept_word(P, "is")) {
            Expr* a = node(P, E_TEST);
            a->a = e, a->negated = accept_word(P, "not");
            a->s = expect_name(P);
            if (!strcmp(a->s, "none") || !strcmp(a->s, "None")) a->s = "none";
            if (!strcmp(a->s, "true") || !strcmp(a->s, "True")) a->s = "true";
            if (!strcmp(a->s, "false") || !strcmp(a->s, "False")) a->s = "false";
            if (accept_op(P, "(")) parse_args(P, a, ")");
            else if (peek(P)->k == T_STR || peek(P)->k == T_INT || peek(P)->k == T_NAME) {
                if (!is_word(P, "and") && !is_word(P, "or") && !is_word(P, "else") && !is_word(P, "if")) {
                    a->args = pool_alloc(P->pool, sizeof(Expr*)); /* `x is divisibleby 3`, `x is eq "a"` */
                    a->kw = pool_alloc(P->pool, sizeof(char*));
                    a->args[0] = parse_primary(P), a->n_args = 1;
                }
            }
            e = a;
        } else {
            return e;
        }
    }
}

static Expr* binary(Parser* P, const char* op, Expr* a, Expr* b) {
    Expr* e = node(P, E_BIN);
    e->s = op, e->a = a, e->b = b;
    return e;
}

static Expr* parse_unary(Parser* P) {
    if (accept_op(P, "-")) {
        Expr* e = node(P, E_NEG);
        e->a = parse_unary(P);
        return e;
    }
    if (accept_op(P, "+")) return parse_unary(P);
    return parse_postfix(P);
}

static Expr* parse_mul(Parser* P) {
    Expr* e = parse_unary(P);
    for (;;) {
        const char* op = is_op(P, "*") ? "*" : is_op(P, "/") ? "/" : is_op(P, "//") ? "//" : is_op(P, "%") ? "%" : NULL;
        if (!op) return e;
        P->pos++;
        e = binary(P, op, e, parse_unary(P));
    }
}

static Expr* parse_concat(Parser* P) {
    Expr* e = parse_mul(P);
    while (accept_op(P, "~")) e = binary(P, "~", e, parse_mul(P));
    return e;
}

static Expr* parse_add(Parser* P) {
    Expr* e = parse_concat(P);
    for (;;) {
        const char* op = is_op(P, "+") ? "+" : is_op(P, "-") ? "-" : NULL;
        if (!op) return e;
        P->pos++;
        e = binary(P, op, e, parse_concat(P));
    }
}

static Expr* parse_compare(Parser* P) {
    Expr* e = parse_add(P);
    static const char* const ops[] = {"==", "!=", "<", "<=", ">", ">="};
    for (;;) {
        const char* op = NULL;
        for (size_t k = 0; k < 6; k++)
            if (is_op(P, ops[k])) op = ops[k];
        if (op) P->pos++;
        else if (accept_word(P, "in")) op = "in";
        else if (is_word(P, "not") && P->tok[P->pos + 1].k == T_NAME && !strcmp(P->tok[P->pos + 1].s, "in"))
            P->pos += 2, op = "not in";
        else return e;
        e = binary(P, op, e, parse_add(P));
    }
}

static Expr* parse_not(Parser* P) {
    if (accept_word(P, "not")) {
        Expr* e = node(P, E_NOT);
        e->a = parse_not(P);
        return e;
    }
    return parse_compare(P);
}

static Expr* parse_and(Parser* P) {
    Expr* e = parse_not(P);
    while (accept_word(P, "and")) {
        Expr* a = node(P, E_AND);
        a->a = e, a->b = parse_not(P), e = a;
    }
    return e;
}

static Expr* parse_or(Parser* P) {
    Expr* e = parse_and(P);
    while (accept_word(P, "or")) {
        Expr* a = node(P, E_OR);
        a->a = e, a->b = parse_and(P), e = a;
    }
    return e;
}

static Expr* parse_expr(Parser* P) {
    Expr* e = parse_or(P);
    while (accept_word(P, "if")) {
        Expr* c = node(P, E_COND);
        c->a = e, c->b = parse_or(P);
        if (accept_word(P, "else")) c->c = parse_expr(P);
        e = c;
    }
    return e;
}

static void expect_end(Parser* P, const char* what) {
    if (peek(P)->k != T_END) fail(P, "unexpected '%s' after %s", peek(P)->s ? peek(P)->s : "?", what);
}

/* ---- the template: text and tags, nested by a stack of open blocks ---- */

static void push(Pool* pool, StmtList* l, Stmt* s) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        Stmt** v = pool_alloc(pool, cap * sizeof(Stmt*));
        if (l->n) memcpy(v, l->v, l->n * sizeof(Stmt*));
        l->v = v, l->cap = cap;
    }
    l->v[l->n++] = s;
}

typedef struct {
    Stmt* s;        /* the open if or for */
    StmtList* into; /* where its statements go now (then, else) */
    bool in_else;
    const char* opened; /* "if" or "for" */
} Open;

static Stmt* stmt(Parser* P, StmtKind k) {
    Stmt* s = pool_alloc(P->pool, sizeof(Stmt));
    s->k = k, s->line = P->line;
    return s;
}

/* one {% ... %} tag: opens, continues or closes a block, or is a statement of its own */
static void parse_tag(Parser* P, Open* stack, size_t* depth, StmtList* top) {
    StmtList* into = *depth ? stack[*depth - 1].into : top;
    const char* w = expect_name(P);
    Open* cur = *depth ? &stack[*depth - 1] : NULL;
    if (!strcmp(w, "if") || !strcmp(w, "for")) {
        if (*depth == 64) fail(P, "blocks nested more than 64 deep");
        Stmt* s = stmt(P, !strcmp(w, "if") ? S_IF : S_FOR);
        if (s->k == S_FOR) {
            do {
                if (s->n_names == 4) fail(P, "more than 4 loop targets");
                s->names[s->n_names++] = expect_name(P);
            } while (accept_op(P, ","));
            if (!accept_word(P, "in")) fail(P, "expected 'in' in a for tag");
            s->e = parse_or(P); /* `if` after it filters the loop */
            if (accept_word(P, "if")) s->cond = parse_expr(P);
            if (accept_word(P, "recursive")) fail(P, "recursive loops are not supported");
        } else {
            s->e = parse_expr(P);
        }
        expect_end(P, w);
        push(P->pool, into, s);
        stack[(*depth)++] = (Open){s, &s->body, false, s->k == S_IF ? "if" : "for"};
    } else if (!strcmp(w, "elif")) {
        if (!cur || cur->s->k != S_IF || cur->in_else) fail(P, "elif outside an if");
        Stmt* s = stmt(P, S_IF);
        s->e = parse_expr(P);
        expect_end(P, "elif");
        push(P->pool, &cur->s->orelse, s);
        cur->s = s, cur->into = &s->body; /* endif closes the whole chain */
    } else if (!strcmp(w, "else")) {
        if (!cur || cur->in_else) fail(P, "else outside an if or for");
        expect_end(P, "else");
        cur->into = &cur->s->orelse, cur->in_else = true;
    } else if (!strcmp(w, "endif") || !strcmp(w, "endfor")) {
        if (!cur || strcmp(cur->opened, w + 3)) fail(P, "%s without an open %s", w, w + 3);
        expect_end(P, w);
        (*depth)--;
    } else if (!strcmp(w, "set")) {
        Stmt* s = stmt(P, S_SET);
        s->names[0] = expect_name(P), s->n_names = 1;
        if (accept_op(P, ".")) s->attr = expect_name(P);
        if (is_op(P, ",")) fail(P, "set with several targets is not supported");
        if (!accept_op(P, "=")) fail(P, "a block set ({%% set %s %%}...{%% endset %%}) is not supported", s->names[0]);
        s->e = parse_expr(P);
        expect_end(P, "set");
        push(P->pool, into, s);
    } else if (!strcmp(w, "break") || !strcmp(w, "continue")) {
        bool in_loop = false;
        for (size_t d = 0; d < *depth; d++) in_loop |= stack[d].s->k == S_FOR && !stack[d].in_else;
        if (!in_loop) fail(P, "%s outside a for loop", w);
        expect_end(P, w);
        push(P->pool, into, stmt(P, w[0] == 'b' ? S_BREAK : S_CONTINUE));
    } else if (!strcmp(w, "generation") || !strcmp(w, "endgeneration")) {
        expect_end(P, w); /* transformers' assistant-mask marker: no output of its own */
    } else {
        fail(P, "the tag '%s' is not supported", w);
    }
}

/* end of the tag starting at s[i] (just after its opener) whose closer is c ('}', '%' or '#'), honouring
   string literals; returns the index of the closer's first character */
static size_t tag_end(Parser* P, const char* s, size_t n, size_t i, char c) {
    char quote = 0;
    for (; i + 1 < n; i++) {
        if (quote) {
            if (s[i] == '\\') i++;
            else if (s[i] == quote) quote = 0;
            continue;
        }
        if (c != '#' && (s[i] == '\'' || s[i] == '"')) {
            quote = s[i];
            continue;
        }
        if (s[i] == c && s[i + 1] == '}') return i;
    }
    fail(P, "a %s is not closed", c == '#' ? "comment" : c == '%' ? "tag" : "{{ expression");
}

static int line_at(const char* s, size_t i) {
    int line = 1;
    for (size_t k = 0; k < i; k++) line += s[k] == '\n';
    return line;
}

ChatTemplate* chat_template_parse(const char* src, char* err, size_t err_len) {
    ChatTemplate* volatile t = calloc(1, sizeof(ChatTemplate)); /* volatile: read after longjmp */
    CHECK(t, "out of memory");
    Parser P = {.pool = &t->pool, .err = err, .err_len = err_len, .line = 1};
    Open stack[64];
    size_t depth = 0;
    if (setjmp(P.fail)) {
        chat_template_free(t);
        return NULL;
    }
    size_t n = strlen(src), i = 0;
    src = pool_strndup(P.pool, src, n); /* the text statements point into it: the template owns its copy */
    bool strip_next = false; /* the tag before ended with '-': the next text loses its leading whitespace */
    bool trim_nl = false;    /* ... or was a block tag (trim_blocks): the next text loses one newline */
    while (i <= n) {
        size_t j = i;
        while (j + 1 < n && !(src[j] == '{' && (src[j + 1] == '{' || src[j + 1] == '%' || src[j + 1] == '#'))) j++;
        if (j + 1 >= n) j = n;
        size_t a = i, b = j; /* the text before the tag: [a, b) */
        if (strip_next)
            while (a < b && strchr(" \t\r\n", src[a])) a++;
        else if (trim_nl && a < b && src[a] == '\n') a++;
        else if (trim_nl && a + 1 < b && src[a] == '\r' && src[a + 1] == '\n') a += 2;
        if (j < n) {
            char kind = src[j + 1];
            char mod = j + 2 < n ? src[j + 2] : 0;
            if (mod == '-')
                while (b > a && strchr(" \t\r\n", src[b - 1])) b--;
            else if (kind != '{' && mod != '+') { /* lstrip_blocks: spaces and tabs back to the line start */
                size_t k = b;
                while (k > a && (src[k - 1] == ' ' || src[k - 1] == '\t')) k--;
                if (k == 0 || src[k - 1] == '\n' || (k == a && a > 0 && src[a - 1] == '\n')) b = k;
            }
        }
        StmtList* into = depth ? stack[depth - 1].into : &t->body;
        if (b > a) {
            P.line = line_at(src, a);
            Stmt* s = stmt(&P, S_TEXT);
            s->text = src + a, s->len = b - a;
            push(P.pool, into, s);
        }
        if (j >= n) break;
        char kind = src[j + 1];
        P.line = line_at(src, j);
        size_t body = j + 2 + (j + 2 < n && (src[j + 2] == '-' || src[j + 2] == '+'));
        size_t close = tag_end(&P, src, n, body, kind == '{' ? '}' : kind);
        size_t inner_end = close > body && src[close - 1] == '-' ? close - 1 : close;
        strip_next = close > body && src[close - 1] == '-';
        trim_nl = kind != '{';
        if (kind == '{') {
            lex(&P, src + body, inner_end - body);
            Stmt* s = stmt(&P, S_OUT);
            s->e = parse_expr(&P);
            expect_end(&P, "an expression");
            push(P.pool, into, s);
        } else if (kind == '%') {
            lex(&P, src + body, inner_end - body);
            parse_tag(&P, stack, &depth, &t->body);
        }
        i = close + 2;
    }
    if (depth) {
        P.line = stack[depth - 1].s->line;
        fail(&P, "this %s is never closed", stack[depth - 1].opened);
    }
    return t;
}

void chat_template_free(ChatTemplate* t) {
    if (!t) return;
    pool_free(&t->pool);
    free(t);
}

/* Chat templates, the expressions of a tag (template/chat_parse.h): its text split into tokens (names, string and
   number literals as Jinja's lexer reads them, operators), then parsed by recursive descent with Jinja's
   precedence, from loosest to tightest:
     a if c else b  <  or  <  and  <  not  <  == != < <= > >= in, not in  <  + -  <  ~  <  * / // %
     <  | filter, is test  <  unary - +  <  primary with .attr [item] (call) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "template/chat_parse.h"

/* ---- tokens of one tag ---- */

void expr_fail(Parser* P, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    chat_error(P->err, P->err_len, P->line, fmt, ap);
    va_end(ap);
    longjmp(P->fail, 1);
}

static bool is_name_char(char c, bool first) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

/* the character at s[0..n) (n >= 1) for a message: the whole UTF-8 sequence, never half of one; a byte
   that starts no valid sequence as \xNN */
static const char* char_shown(const char* s, size_t n, char out[8]) {
    uint32_t cp;
    size_t len = utf8_decode((const uint8_t*)s, n, &cp);
    if (len) memcpy(out, s, len), out[len] = 0;
    else snprintf(out, 8, "\\x%02X", (unsigned char)s[0]);
    return out;
}

/* a quoted literal from s (at the quote) into pool bytes, with Python's escapes; returns the length eaten */
static size_t lex_string(Parser* P, const char* s, size_t n, Tok* t) {
    char q = s[0];
    size_t end = 1; /* the closing quote: the literal is at most end - 1 bytes */
    while (end < n && s[end] != q) end += s[end] == '\\' ? 2 : 1;
    char* out = pool_alloc(P->pool, end < n ? end : n);
    size_t o = 0, i = 1;
    for (; i < n && s[i] != q; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < n) {
            char e = s[++i], shown[8];
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
            if (e != 'n' && e != 't' && e != 'r' && e != '\\' && e != '\'' && e != '"')
                expr_fail(P, "the escape \\%s in a string literal is not supported", char_shown(s + i, n - i, shown));
        }
        out[o++] = c;
    }
    if (i >= n) expr_fail(P, "a string literal has no closing %c", q);
    t->k = T_STR;
    t->s = out;
    t->len = o;
    return i + 1;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
/* the end of the digits \d(_?\d)* from s[i], a digit */
static size_t digit_run(const char* s, size_t n, size_t i) {
    for (i++; i < n && (is_digit(s[i]) || (s[i] == '_' && i + 1 < n && is_digit(s[i + 1]))); i++) {}
    return i;
}

/* a number literal as Jinja's lexer reads it (digits grouped by _, a fraction, an exponent); returns the
   length eaten */
static size_t lex_number(Parser* P, const char* s, size_t n, Tok* t) {
    if (s[0] == '0' && n > 1 && strchr("xXoObB", s[1]))
        expr_fail(P, "hex, octal and binary literals are not supported");
    size_t j = digit_run(s, n, 0);
    bool is_float = false;
    if (j + 1 < n && s[j] == '.' && is_digit(s[j + 1])) {
        j = digit_run(s, n, j + 1);
        is_float = true;
    }
    if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1 + (j + 1 < n && (s[j + 1] == '+' || s[j + 1] == '-'));
        if (k < n && is_digit(s[k])) {
            j = digit_run(s, n, k);
            is_float = true;
        }
    }
    char* lit = pool_alloc(P->pool, j + 1);
    for (size_t k = 0, o = 0; k < j; k++)
        if (s[k] != '_') lit[o++] = s[k];
    if (is_float) {
        t->k = T_FLOAT;
        t->f = strtod(lit, NULL);
        return j;
    }
    if (lit[0] == '0' && lit[strspn(lit, "0")]) expr_fail(P, "the integer %s has a leading zero", lit);
    errno = 0;
    t->k = T_INT;
    t->i = strtoll(lit, NULL, 10);
    if (errno == ERANGE) expr_fail(P, "the integer %s is beyond 64 bits (the template's ints are 64-bit)", lit);
    return j;
}

void expr_lex(Parser* P, const char* s, size_t n) {
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
            P->tok = t;
            cap *= 2;
        }
        Tok* t = &P->tok[P->n++];
        if (c == '\'' || c == '"') {
            i += lex_string(P, s + i, n - i, t);
            continue;
        }
        if (c >= '0' && c <= '9') {
            i += lex_number(P, s + i, n - i, t);
            continue;
        }
        if (is_name_char(c, true)) {
            size_t j = i;
            while (j < n && is_name_char(s[j], false)) j++;
            t->k = T_NAME;
            t->s = pool_strndup(P->pool, s + i, j - i);
            t->len = j - i;
            i = j;
            continue;
        }
        size_t len = c && strchr("+-*/%~<>=()[]{}.,:|", c) ? 1 : 0;
        for (size_t k = 0; k < sizeof(ops2) / sizeof(ops2[0]); k++)
            if (i + 1 < n && s[i] == ops2[k][0] && s[i + 1] == ops2[k][1]) len = 2;
        char shown[8];
        if (!len) expr_fail(P, "unexpected character '%s' in an expression", char_shown(s + i, n - i, shown));
        if (len == 2 && s[i] == '*') expr_fail(P, "the operator ** is not supported");
        t->k = T_OP;
        t->s = pool_strndup(P->pool, s + i, len);
        t->len = len;
        i += len;
    }
    P->tok[P->n].k = T_END;
}

static const Tok* peek(Parser* P) { return &P->tok[P->pos]; }
bool expr_is_op(Parser* P, const char* op) { return peek(P)->k == T_OP && !strcmp(peek(P)->s, op); }
static bool is_word(Parser* P, const char* w) { return peek(P)->k == T_NAME && !strcmp(peek(P)->s, w); }
bool expr_accept_op(Parser* P, const char* op) {
    if (!expr_is_op(P, op)) return false;
    P->pos++;
    return true;
}

bool expr_accept_word(Parser* P, const char* w) {
    if (!is_word(P, w)) return false;
    P->pos++;
    return true;
}
static void expect_op(Parser* P, const char* op) {
    if (!expr_accept_op(P, op)) expr_fail(P, "expected '%s'", op);
}
const char* expr_expect_name(Parser* P) {
    if (peek(P)->k != T_NAME) expr_fail(P, "expected a name");
    return P->tok[P->pos++].s;
}

static Expr* node(Parser* P, ExprKind k) {
    Expr* e = pool_alloc(P->pool, sizeof(Expr));
    e->k = k;
    e->line = P->line;
    return e;
}

/* Bounds on an expression's nesting, so that neither this parser nor the renderer, which both recurse over
   it, can run out of stack: jinja2 itself fails near 70 nested parentheses and near 400 chained + (Python's
   recursion limit), repoc refuses past 64 and past a tree 256 deep. */
#define EXPR_MAX_NEST 64
#define EXPR_MAX_DEPTH 256
static void grow(Parser* P, int* n) { /* the tree one deeper: n counts the levels the caller takes back */
    (*n)++;
    if (++P->depth > EXPR_MAX_DEPTH) expr_fail(P, "an expression more than %d operations deep", EXPR_MAX_DEPTH);
}
static void enter(Parser* P) {
    if (++P->nest > EXPR_MAX_NEST) expr_fail(P, "an expression nested more than %d deep", EXPR_MAX_NEST);
    int n = 0;
    grow(P, &n);
}
static void leave(Parser* P) { P->nest--, P->depth--; }

/* (args) after a call or filter name: positional and keyword arguments up to ')' */
static void parse_args(Parser* P, Expr* e, const char* close) {
    Expr* args[64];
    const char* kw[64];
    size_t n = 0;
    while (!expr_accept_op(P, close)) {
        if (n && !expr_accept_op(P, ",")) expr_fail(P, "expected ',' or '%s'", close);
        if (expr_accept_op(P, close)) break; /* a trailing comma */
        if (n == 64) expr_fail(P, "more than 64 arguments");
        kw[n] = NULL;
        if (peek(P)->k == T_NAME && P->tok[P->pos + 1].k == T_OP && !strcmp(P->tok[P->pos + 1].s, "=")) {
            kw[n] = expr_expect_name(P);
            P->pos++;
        }
        args[n++] = expr_parse(P);
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
        e = node(P, E_STR);
        e->s = t->s;
        e->len = t->len;
        P->pos++;
        while (peek(P)->k == T_STR) { /* adjacent literals join, as in Python */
            const Tok* u = &P->tok[P->pos++];
            char* s = pool_alloc(P->pool, e->len + u->len + 1);
            memcpy(s, e->s, e->len);
            memcpy(s + e->len, u->s, u->len);
            e->s = s;
            e->len += u->len;
        }
        return e;
    }
    if (t->k == T_INT) {
        e = node(P, E_INT);
        e->i = t->i;
        P->pos++;
        return e;
    }
    if (t->k == T_FLOAT) {
        e = node(P, E_FLOAT);
        e->f = t->f;
        P->pos++;
        return e;
    }
    if (t->k == T_NAME) {
        const char* s = t->s;
        P->pos++;
        if (!strcmp(s, "true") || !strcmp(s, "True")) {
            e = node(P, E_BOOL);
            e->i = 1;
            return e;
        }
        if (!strcmp(s, "false") || !strcmp(s, "False")) return node(P, E_BOOL);
        if (!strcmp(s, "none") || !strcmp(s, "None")) return node(P, E_NONE);
        e = node(P, E_NAME);
        e->s = s;
        return e;
    }
    if (expr_accept_op(P, "(")) {
        e = expr_parse(P);
        if (expr_is_op(P, ",")) expr_fail(P, "tuples are not supported");
        expect_op(P, ")");
        return e;
    }
    if (expr_accept_op(P, "[")) {
        e = node(P, E_LIST);
        parse_args(P, e, "]");
        return e;
    }
    if (expr_accept_op(P, "{")) {
        e = node(P, E_DICT);
        Expr* kv[128];
        size_t n = 0;
        while (!expr_accept_op(P, "}")) {
            if (n && !expr_accept_op(P, ",")) expr_fail(P, "expected ',' or '}' in a dict");
            if (expr_accept_op(P, "}")) break;
            if (n == 128) expr_fail(P, "a dict literal of more than 64 entries");
            kv[n++] = expr_parse(P);
            expect_op(P, ":");
            kv[n++] = expr_parse(P);
        }
        e->args = pool_alloc(P->pool, (n + 1) * sizeof(Expr*));
        memcpy(e->args, kv, n * sizeof(Expr*));
        e->n_args = n;
        return e;
    }
    expr_fail(P, t->k == T_END ? "an expression ends too early" : "unexpected '%s'", t->k == T_END ? "" : t->s);
}

/* [item] or [start:stop:step] after e, the '[' taken */
static Expr* parse_subscript(Parser* P, Expr* e) {
    Expr* idx[3] = {NULL, NULL, NULL};
    size_t colons = 0;
    while (!expr_accept_op(P, "]")) {
        if (expr_accept_op(P, ":")) {
            if (++colons > 2) expr_fail(P, "a slice with more than two ':'");
            continue;
        }
        if (idx[colons]) expr_fail(P, "expected ']'");
        idx[colons] = expr_parse(P);
    }
    Expr* a = node(P, colons ? E_SLICE : E_ITEM);
    if (!colons && !idx[0]) expr_fail(P, "an empty subscript");
    a->a = e;
    a->b = idx[0];
    a->c = idx[1];
    if (colons) {
        a->args = pool_alloc(P->pool, sizeof(Expr*));
        a->args[0] = idx[2];
    }
    return a;
}

/* (arguments) after e, the '(' taken */
static Expr* parse_call(Parser* P, Expr* e) {
    Expr* a = node(P, E_CALL);
    a->a = e;
    parse_args(P, a, ")");
    return a;
}

/* .attr, [item] and (call) after e, left to right */
static Expr* parse_postfix(Parser* P, Expr* e) {
    int n = 0;
    for (;;) {
        if (expr_is_op(P, ".") || expr_is_op(P, "[") || expr_is_op(P, "(")) grow(P, &n);
        if (expr_accept_op(P, ".")) {
            Expr* a = node(P, E_ATTR);
            a->a = e;
            a->s = expr_expect_name(P);
            e = a;
        } else if (expr_accept_op(P, "[")) {
            e = parse_subscript(P, e);
        } else if (expr_accept_op(P, "(")) {
            e = parse_call(P, e);
        } else {
            P->depth -= n;
            return e;
        }
    }
}

/* `is [not] name` after e, the 'is' taken: arguments in parentheses, or one bare (`x is divisibleby 3`) */
static Expr* parse_test(Parser* P, Expr* e) {
    Expr* a = node(P, E_TEST);
    a->a = e;
    a->negated = expr_accept_word(P, "not");
    a->s = expr_expect_name(P);
    if (!strcmp(a->s, "none") || !strcmp(a->s, "None")) a->s = "none";
    if (!strcmp(a->s, "true") || !strcmp(a->s, "True")) a->s = "true";
    if (!strcmp(a->s, "false") || !strcmp(a->s, "False")) a->s = "false";
    TokKind k = peek(P)->k;
    if (expr_accept_op(P, "(")) {
        parse_args(P, a, ")");
    } else if ((k == T_STR || k == T_INT || k == T_FLOAT || k == T_NAME || expr_is_op(P, "[") || expr_is_op(P, "{")) &&
               !is_word(P, "and") && !is_word(P, "or") && !is_word(P, "else") && !is_word(P, "if")) {
        if (is_word(P, "is")) expr_fail(P, "tests cannot be chained with 'is'");
        a->args = pool_alloc(P->pool, sizeof(Expr*));
        a->kw = pool_alloc(P->pool, sizeof(char*));
        a->args[0] = parse_postfix(P, parse_primary(P));
        a->n_args = 1;
    }
    return a;
}

/* | filter, is test and (call) after e, left to right; as in jinja2, no .attr or [item] follows a filter */
static Expr* parse_filters(Parser* P, Expr* e) {
    int n = 0;
    for (;;) {
        if (expr_is_op(P, "|") || is_word(P, "is") || expr_is_op(P, "(")) grow(P, &n);
        if (expr_accept_op(P, "|")) {
            Expr* a = node(P, E_FILTER);
            a->a = e;
            a->s = expr_expect_name(P);
            if (expr_accept_op(P, "(")) parse_args(P, a, ")");
            e = a;
        } else if (expr_accept_word(P, "is")) {
            e = parse_test(P, e);
        } else if (expr_accept_op(P, "(")) {
            e = parse_call(P, e);
        } else {
            P->depth -= n;
            return e;
        }
    }
}

static Expr* binary(Parser* P, const char* op, Expr* a, Expr* b) {
    Expr* e = node(P, E_BIN);
    e->s = op;
    e->a = a;
    e->b = b;
    return e;
}

/* unary - and + bind tighter than filters and looser than .attr, as in jinja2: -x.y | abs is (-(x.y)) | abs */
static Expr* parse_unary(Parser* P, bool filters) {
    Expr* e;
    if (expr_accept_op(P, "-") || expr_accept_op(P, "+")) {
        bool neg = P->tok[P->pos - 1].s[0] == '-';
        enter(P);
        Expr* operand = parse_unary(P, false);
        leave(P);
        e = operand;
        if (neg) {
            e = node(P, E_NEG);
            e->a = operand;
        }
    } else {
        e = parse_primary(P);
    }
    e = parse_postfix(P, e);
    return filters ? parse_filters(P, e) : e;
}

static Expr* parse_mul(Parser* P) {
    Expr* e = parse_unary(P, true);
    int n = 0;
    for (;;) {
        const char* op = expr_is_op(P, "*")    ? "*"
                         : expr_is_op(P, "/")  ? "/"
                         : expr_is_op(P, "//") ? "//"
                         : expr_is_op(P, "%")  ? "%"
                                               : NULL;
        if (!op) {
            P->depth -= n;
            return e;
        }
        grow(P, &n);
        P->pos++;
        e = binary(P, op, e, parse_unary(P, true));
    }
}

static Expr* parse_concat(Parser* P) {
    Expr* e = parse_mul(P);
    int n = 0;
    while (expr_accept_op(P, "~")) {
        grow(P, &n);
        e = binary(P, "~", e, parse_mul(P));
    }
    P->depth -= n;
    return e;
}

static Expr* parse_add(Parser* P) {
    Expr* e = parse_concat(P);
    int n = 0;
    for (;;) {
        const char* op = expr_is_op(P, "+") ? "+" : expr_is_op(P, "-") ? "-" : NULL;
        if (!op) {
            P->depth -= n;
            return e;
        }
        grow(P, &n);
        P->pos++;
        e = binary(P, op, e, parse_concat(P));
    }
}

static Expr* parse_compare(Parser* P) {
    Expr* e = parse_add(P);
    static const char* const ops[] = {"==", "!=", "<", "<=", ">", ">="};
    int n = 0;
    for (;;) {
        const char* op = NULL;
        for (size_t k = 0; k < 6; k++)
            if (expr_is_op(P, ops[k])) op = ops[k];
        if (op) P->pos++;
        else if (expr_accept_word(P, "in")) op = "in";
        else if (is_word(P, "not") && P->tok[P->pos + 1].k == T_NAME && !strcmp(P->tok[P->pos + 1].s, "in")) {
            P->pos += 2;
            op = "not in";
        } else {
            P->depth -= n;
            return e;
        }
        grow(P, &n);
        e = binary(P, op, e, parse_add(P));
    }
}

static Expr* parse_not(Parser* P) {
    if (expr_accept_word(P, "not")) {
        enter(P);
        Expr* e = node(P, E_NOT);
        e->a = parse_not(P);
        leave(P);
        return e;
    }
    return parse_compare(P);
}

/* operand (word operand)*, left to right: the and / or chains */
static Expr* parse_chain(Parser* P, const char* word, ExprKind k, Expr* (*operand)(Parser*)) {
    Expr* e = operand(P);
    int n = 0;
    while (expr_accept_word(P, word)) {
        grow(P, &n);
        Expr* a = node(P, k);
        a->a = e;
        a->b = operand(P);
        e = a;
    }
    P->depth -= n;
    return e;
}

static Expr* parse_and(Parser* P) { return parse_chain(P, "and", E_AND, parse_not); }
Expr* expr_parse_or(Parser* P) { return parse_chain(P, "or", E_OR, parse_and); }

Expr* expr_parse(Parser* P) {
    enter(P);
    Expr* e = expr_parse_or(P);
    int n = 0;
    while (expr_accept_word(P, "if")) {
        grow(P, &n);
        Expr* c = node(P, E_COND);
        c->a = e;
        c->b = expr_parse_or(P);
        if (expr_accept_word(P, "else")) c->c = expr_parse(P);
        e = c;
    }
    P->depth -= n;
    leave(P);
    return e;
}

void expr_expect_end(Parser* P, const char* what) {
    if (peek(P)->k != T_END) expr_fail(P, "unexpected '%s' after %s", peek(P)->s ? peek(P)->s : "?", what);
}

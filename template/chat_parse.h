/* The parser of chat templates, shared by its two files: template/chat_expr.c (a tag's tokens and the expressions
   in it) and template/chat_template.c (text and tags, nested into statements). A failure longjmps to P->fail with
   "line L: message" in P->err. */
#ifndef REPOC_TEMPLATE_CHAT_PARSE_H
#define REPOC_TEMPLATE_CHAT_PARSE_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>

#include "template/chat_template_ast.h"

/* What a token inside a tag is: the end, a name, a string, an integer or float literal, or an operator */
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
    int nest;  /* expressions open around the one being parsed: parentheses, items, arguments, not, - */
    int depth; /* the depth of the tree so far on the way to it, operator and postfix chains counted */
    jmp_buf fail;
    char* err;
    size_t err_len;
} Parser;

_Noreturn void expr_fail(Parser* P, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
/* the tokens of a tag's inside, s (n bytes), into P->tok */
void expr_lex(Parser* P, const char* s, size_t n);
bool expr_is_op(Parser* P, const char* op);
bool expr_accept_op(Parser* P, const char* op);    /* the next token is op: take it */
bool expr_accept_word(Parser* P, const char* w);   /* the next token is the name w: take it */
const char* expr_expect_name(Parser* P);           /* a name, or fail */
void expr_expect_end(Parser* P, const char* what); /* no more tokens, or fail naming what came before */
/* an expression, a if c else b included; expr_parse_or one without the conditional (a for loop's iterable,
   whose `if` filters the loop) */
Expr* expr_parse(Parser* P);
Expr* expr_parse_or(Parser* P);

#endif

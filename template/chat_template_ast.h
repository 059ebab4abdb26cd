/* The parsed form of a chat template (template/chat_template.c builds it, template/chat_render.c walks it), and the
   pool both allocate from: one block list freed at once, so neither frees piece by piece. */
#ifndef REPOC_TEMPLATE_CHAT_TEMPLATE_AST_H
#define REPOC_TEMPLATE_CHAT_TEMPLATE_AST_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "template/chat_template.h"

typedef struct PoolBlock PoolBlock;
typedef struct {
    PoolBlock* head;
    size_t total; /* bytes taken so far */
    size_t limit; /* 0: none; past it, over(ctx), which does not return (it longjmps) */
    void (*over)(void* ctx);
    void* ctx;
} Pool;
void* pool_alloc(Pool* p, size_t n); /* zeroed, 16-byte aligned; dies when memory runs out */
char* pool_strndup(Pool* p, const char* s, size_t n);
void pool_free(Pool* p);

/* "line L: " and the message into err (both the parser's and the renderer's failures); the message alone for
   line 0 (the context, read before any line of the template) */
void chat_error(char* err, size_t err_len, int line, const char* fmt, va_list ap);

/* What an expression node is; each kind reads the fields of Expr its comment names */
typedef enum {
    /* literals and variables */
    E_STR,
    E_INT,
    E_FLOAT,
    E_BOOL,
    E_NONE,
    E_NAME,
    /* postfix forms */
    E_ATTR,   /* a.s */
    E_ITEM,   /* a[b] */
    E_SLICE,  /* a[b:c:args[0]], any of them NULL */
    E_CALL,   /* a(args) */
    E_FILTER, /* a | s(args) */
    E_TEST,   /* a is [not] s(args) */
    /* operators */
    E_NOT,
    E_NEG,
    E_BIN, /* a s b: + - * / // % ~ == != < <= > >= in "not in" */
    E_AND,
    E_OR,
    E_COND, /* a if b else c (c NULL: undefined) */
    /* displays */
    E_LIST, /* [args] */
    E_DICT  /* {args[0]: args[1], ...} */
} ExprKind;

typedef struct Expr Expr;
struct Expr {
    ExprKind k;
    int line;
    const char* s; /* string literal, name, attribute, filter, test or operator */
    size_t len;    /* of a string literal */
    long long i;
    double f;
    bool negated; /* E_TEST: is not */
    Expr *a, *b, *c;
    Expr** args;     /* arguments, list items, dict keys and values in turn */
    const char** kw; /* per argument: its keyword, NULL for a positional one */
    size_t n_args;
};

/* What a statement is: template text, an {{ output }}, or a {% tag %} */
typedef enum { S_TEXT, S_OUT, S_IF, S_FOR, S_SET, S_BREAK, S_CONTINUE } StmtKind;

typedef struct Stmt Stmt;
typedef struct {
    Stmt** v;
    size_t n, cap;
} StmtList;
struct Stmt {
    StmtKind k;
    int line;
    const char* text; /* S_TEXT */
    size_t len;
    Expr* e;              /* S_OUT: the value; S_IF: the condition; S_FOR: the iterable; S_SET: the value */
    Expr* cond;           /* S_FOR: `for x in xs if cond` */
    StmtList body;        /* S_IF: then; S_FOR: the loop body */
    StmtList orelse;      /* S_IF: else (an elif is an S_IF inside it); S_FOR: for-else */
    const char* names[4]; /* S_FOR: its targets; S_SET: the variable (names[0]) */
    size_t n_names;
    const char* attr; /* S_SET ns.attr: the attribute */
};

struct ChatTemplate {
    Pool pool;
    StmtList body;
};

#endif

/* Chat templates, parsing (template/chat_template.h): the source split into text and tags with Jinja's
   whitespace rules (trim_blocks, lstrip_blocks, the - and + controls), each tag's expression parsed by
   template/chat_expr.c, and the tags nested into statements by a stack of open blocks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "template/chat_parse.h"

/* ---- the template: text and tags, nested by a stack of open blocks ---- */

static void push(Pool* pool, StmtList* l, Stmt* s) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        Stmt** v = pool_alloc(pool, cap * sizeof(Stmt*));
        if (l->n) memcpy(v, l->v, l->n * sizeof(Stmt*));
        l->v = v;
        l->cap = cap;
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
    s->k = k;
    s->line = P->line;
    return s;
}

/* one {% ... %} tag: opens, continues or closes a block, or is a statement of its own */
static void parse_tag(Parser* P, Open* stack, size_t* depth, StmtList* top) {
    StmtList* into = *depth ? stack[*depth - 1].into : top;
    const char* w = expr_expect_name(P);
    Open* cur = *depth ? &stack[*depth - 1] : NULL;
    if (!strcmp(w, "if") || !strcmp(w, "for")) {
        if (*depth == 64) expr_fail(P, "blocks nested more than 64 deep");
        Stmt* s = stmt(P, !strcmp(w, "if") ? S_IF : S_FOR);
        if (s->k == S_FOR) {
            do {
                if (s->n_names == 4) expr_fail(P, "more than 4 loop targets");
                s->names[s->n_names++] = expr_expect_name(P);
            } while (expr_accept_op(P, ","));
            if (!expr_accept_word(P, "in")) expr_fail(P, "expected 'in' in a for tag");
            s->e = expr_parse_or(P); /* `if` after it filters the loop */
            if (expr_accept_word(P, "if")) s->cond = expr_parse(P);
            if (expr_accept_word(P, "recursive")) expr_fail(P, "recursive loops are not supported");
        } else {
            s->e = expr_parse(P);
        }
        expr_expect_end(P, w);
        push(P->pool, into, s);
        stack[(*depth)++] = (Open){s, &s->body, false, s->k == S_IF ? "if" : "for"};
    } else if (!strcmp(w, "elif")) {
        if (!cur || cur->s->k != S_IF || cur->in_else) expr_fail(P, "elif outside an if");
        Stmt* s = stmt(P, S_IF);
        s->e = expr_parse(P);
        expr_expect_end(P, "elif");
        push(P->pool, &cur->s->orelse, s);
        cur->s = s, cur->into = &s->body; /* endif closes the whole chain */
    } else if (!strcmp(w, "else")) {
        if (!cur || cur->in_else) expr_fail(P, "else outside an if or for");
        expr_expect_end(P, "else");
        cur->into = &cur->s->orelse;
        cur->in_else = true;
    } else if (!strcmp(w, "endif") || !strcmp(w, "endfor")) {
        if (!cur || strcmp(cur->opened, w + 3)) expr_fail(P, "%s without an open %s", w, w + 3);
        expr_expect_end(P, w);
        (*depth)--;
    } else if (!strcmp(w, "set")) {
        Stmt* s = stmt(P, S_SET);
        s->names[0] = expr_expect_name(P);
        s->n_names = 1;
        if (expr_accept_op(P, ".")) s->attr = expr_expect_name(P);
        if (expr_is_op(P, ",")) expr_fail(P, "set with several targets is not supported");
        if (!expr_accept_op(P, "="))
            expr_fail(P, "a block set ({%% set %s %%}...{%% endset %%}) is not supported", s->names[0]);
        s->e = expr_parse(P);
        expr_expect_end(P, "set");
        push(P->pool, into, s);
    } else if (!strcmp(w, "break") || !strcmp(w, "continue")) {
        bool in_loop = false;
        for (size_t d = 0; d < *depth; d++) in_loop |= stack[d].s->k == S_FOR && !stack[d].in_else;
        if (!in_loop) expr_fail(P, "%s outside a for loop", w);
        expr_expect_end(P, w);
        push(P->pool, into, stmt(P, w[0] == 'b' ? S_BREAK : S_CONTINUE));
    } else if (!strcmp(w, "generation") || !strcmp(w, "endgeneration")) {
        expr_expect_end(P, w); /* transformers' assistant-mask marker: no output of its own */
    } else {
        expr_fail(P, "the tag '%s' is not supported", w);
    }
}

/* end of the tag starting at s[i] (just after its opener) whose closer is c ('}', '%' or '#'), honouring
   string literals and, as Jinja's lexer, brackets: {{ {'a': {'b': 1}} }} ends at the last }}; returns the
   index of the closer's first character */
static size_t tag_end(Parser* P, const char* s, size_t n, size_t i, char c) {
    char quote = 0;
    size_t open = 0; /* brackets ( [ { open */
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
        if (c != '#' && strchr("([{", s[i])) open++;
        else if (c != '#' && strchr(")]}", s[i]) && open) open--;
        else if (s[i] == c && s[i + 1] == '}' && !open) return i;
    }
    expr_fail(P, "a %s is not closed", c == '#' ? "comment" : c == '%' ? "tag" : "{{ expression");
}

/* the line of s[i], counted on from where the last call stopped (*at, *line): positions only grow, so the
   whole source is read once */
static int line_at(const char* s, size_t i, size_t* at, int* line) {
    for (; *at < i; (*at)++) *line += s[*at] == '\n';
    return *line;
}

/* src (n bytes) as Jinja's lexer reads it, into the pool: every \r\n and \r a \n, and one newline at the end
   dropped (keep_trailing_newline is off); *n its new length */
static char* normalize_newlines(Pool* pool, const char* src, size_t* n) {
    char* t = pool_alloc(pool, *n + 1);
    size_t o = 0;
    for (size_t i = 0; i < *n; i++) {
        t[o++] = src[i] == '\r' ? '\n' : src[i];
        if (src[i] == '\r' && i + 1 < *n && src[i + 1] == '\n') i++;
    }
    if (o && t[o - 1] == '\n') o--;
    t[o] = 0;
    *n = o;
    return t;
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
    src = normalize_newlines(P.pool, src, &n); /* the text statements point into it: the template owns its copy */
    bool strip_next = false; /* the tag before ended with '-': the next text loses its leading whitespace */
    bool trim_nl = false;    /* ... or was a block tag (trim_blocks): the next text loses one newline */
    size_t line_pos = 0;     /* line_at's count has read src up to here */
    int line = 1;
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
            P.line = line_at(src, a, &line_pos, &line);
            Stmt* s = stmt(&P, S_TEXT);
            s->text = src + a;
            s->len = b - a;
            push(P.pool, into, s);
        }
        if (j >= n) break;
        char kind = src[j + 1];
        P.line = line_at(src, j, &line_pos, &line);
        size_t body = j + 2 + (j + 2 < n && (src[j + 2] == '-' || src[j + 2] == '+'));
        size_t close = tag_end(&P, src, n, body, kind == '{' ? '}' : kind);
        size_t inner_end = close > body && src[close - 1] == '-' ? close - 1 : close;
        strip_next = close > body && src[close - 1] == '-';
        trim_nl = kind != '{';
        if (kind == '{') {
            expr_lex(&P, src + body, inner_end - body);
            Stmt* s = stmt(&P, S_OUT);
            s->e = expr_parse(&P);
            expr_expect_end(&P, "an expression");
            push(P.pool, into, s);
        } else if (kind == '%') {
            expr_lex(&P, src + body, inner_end - body);
            parse_tag(&P, stack, &depth, &t->body);
        }
        i = close + 2;
    }
    if (depth) {
        P.line = stack[depth - 1].s->line;
        expr_fail(&P, "this %s is never closed", stack[depth - 1].opened);
    }
    return t;
}

void chat_template_free(ChatTemplate* t) {
    if (!t) return;
    pool_free(&t->pool);
    free(t);
}

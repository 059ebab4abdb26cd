/* The pool chat templates allocate from, and their messages (template/chat_template_ast.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "template/chat_template_ast.h"

struct PoolBlock {
    PoolBlock* next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void* pool_alloc(Pool* p, size_t n) {
    if (p->limit && (n > p->limit || p->total + n > p->limit - 16)) {
        p->over(p->ctx);
        DIE("the chat template pool's limit handler returned");
    }
    n = (n + 15) & ~(size_t)15;
    p->total += n;
    if (!p->head || p->head->used + n > p->head->cap) {
        size_t cap = n > 65536 ? n : 65536;
        PoolBlock* b = mallocCheck(sizeof(PoolBlock) + cap);
        b->next = p->head;
        b->used = 0;
        b->cap = cap;
        p->head = b;
    }
    void* r = p->head->data + p->head->used;
    p->head->used += n;
    memset(r, 0, n);
    return r;
}

char* pool_strndup(Pool* p, const char* s, size_t n) {
    char* r = pool_alloc(p, n + 1);
    memcpy(r, s, n);
    return r;
}

void pool_free(Pool* p) {
    while (p->head) {
        PoolBlock* b = p->head;
        p->head = b->next;
        free(b);
    }
}

void chat_error(char* err, size_t err_len, int line, const char* fmt, va_list ap) {
    int n = line ? snprintf(err, err_len, "line %d: ", line) : 0; /* line 0: the context, before any template line */
    if (n >= 0 && (size_t)n < err_len) vsnprintf(err + n, err_len - (size_t)n, fmt, ap);
}

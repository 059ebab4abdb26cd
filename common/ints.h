/* A growable array of int32 (token ids and the like): append with ints_push, free v when done. */
#ifndef REPOC_INTS_H
#define REPOC_INTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

typedef struct {
    int32_t* v;
    size_t n, cap;
} Ints;

/* x appended to a; the capacity doubles when full (from 1024) */
static inline void ints_push(Ints* a, int32_t x) {
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 1024;
        int32_t* g = mallocCheck(a->cap * sizeof(int32_t));
        if (a->n) memcpy(g, a->v, a->n * sizeof(int32_t));
        free(a->v);
        a->v = g;
    }
    a->v[a->n++] = x;
}

#endif

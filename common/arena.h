/* Laying out named views in one arena (docs/contributing.md, "No allocation in a step"). A layout function takes
   every view it needs from a Cursor. Run it first with base NULL to count the
   reals, allocate once, then run it again with the real base: the list of
   views is written once, so counting and assigning cannot disagree. */
#ifndef REPOC_ARENA_H
#define REPOC_ARENA_H

#include <stddef.h>

#include "common/real.h"

typedef struct {
    real* base;  /* NULL while counting */
    size_t used; /* reals taken so far */
} Cursor;

/* n reals, 64-byte aligned within the arena; NULL while counting */
static inline real* cursor_take(Cursor* c, size_t n) {
    size_t align = 64 / sizeof(real);
    c->used = (c->used + align - 1) / align * align;
    real* p = c->base ? c->base + c->used : NULL;
    c->used += n;
    return p;
}

#endif

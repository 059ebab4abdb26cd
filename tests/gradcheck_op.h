/* The single-op problems' shared context (tests/gradcheck_layers.c, tests/gradcheck_attention.c). */
#ifndef REPOC_GRADCHECK_OP_H
#define REPOC_GRADCHECK_OP_H

#include <stdint.h>

#include "model/rope.h"
#include "tests/gradcheck.h"

/* One op's buffers: up to 8 inputs (checked), one output, its projection, scratch. */
typedef struct {
    real* in[8];
    real* out;
    real* out2;
    real* proj;
    real* proj2;
    real* work[4];
    int32_t* ints;
    size_t dims[8];
    RopeTable rope;
    double z_loss;
} OpCtx;

/* a problem named name with a zeroed OpCtx that its free_ctx releases */
OpCtx* new_problem(Problem* p, const char* name);
/* every dx of p set to 0 */
void zero_grads(Problem* p);

#endif

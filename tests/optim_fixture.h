/* The tiny model of the optimizer tests (test_optim.c, test_optim_bf16.c):
   V=4 D=8 L=1 H=2 KVH=2 F=8, OLMo-2, one RePo layer; `frozen` (NULL = none)
   names one tensor that gets no gradient. Header-only. */
#ifndef REPOC_OPTIM_FIXTURE_H
#define REPOC_OPTIM_FIXTURE_H

#include "model/tensors.h"
#include "tests/testutil.h"

static inline void optim_tiny_table(TensorTable* tt, const char* frozen) {
    ModelConfig mc;
    model_config_default(&mc);
    test_model_sizes(&mc, 4, 8, 1, 2, 2, 8);
    mc.pos[0] = POS_REPO;
    model_config_validate(&mc);
    tensor_table_build(tt, &mc, frozen ? &frozen : NULL, frozen ? 1 : 0);
}

#endif

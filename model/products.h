/* Every matmul of the model goes through product() (docs/design.md, "Products and their precision"):
   FP32 through the process's FP32 engine (OpenBLAS's cblas_gemm, or oneDNN's FP32 matmul where OpenBLAS has
   no kernel for the CPU or measures slower: model/engine.h chooses), or, given a BF16 context
   (train.compute_dtype "bf16"), with BF16 operands through gemm_bf16 (oneDNN) and FP32 accumulation into the
   FP32 result. The context is an argument of every product and of every op that runs one (NULL: FP32), so a
   product's result depends on its arguments and the process's FP32 engine only.

   In BF16 each operand is one of two kinds. A weight has a BF16 copy kept next to it (a region: the model's
   parameter arena and its BF16 mirror, written once per optimizer step; a frozen BF16 base), found by its
   address; an activation is rounded to BF16 into the context's work space at each product, in chunks of
   rows when it is larger than that space. A weight without a copy is rounded like an activation and
   counted (weight_rounded: a model's step has none, tests/test_bf16.c). */
#ifndef REPOC_PRODUCTS_H
#define REPOC_PRODUCTS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/real.h"
#include "model/gemm_onednn.h"

/* A product's operand: an activation (rounded to BF16 at the product); an activation that the caller knows
   unchanged since the previous product rounded it whole in the same place (A or B), whose BF16 copy is then
   read again (and rounded anew when that product's operand there was another: `held` tells); or a weight (its
   BF16 copy read) */
typedef enum { OPERAND_ACT, OPERAND_ACT_KEPT, OPERAND_WEIGHT } OperandKind;

/* What runs the FP32 products: one choice per process, made once at start (model/engine.h), like the thread
   count. Results are deterministic for a given engine and thread count, and differ in the last bits
   between engines; a resumed run reuses its checkpoint's engine (train/trainer_products.c). */
typedef enum { F32_OPENBLAS, F32_ONEDNN } F32Engine;
/* "openblas", "onednn": the names train.f32_engine and trainer_state.json use */
const char* f32_engine_name(F32Engine e);
/* a name as f32_engine_name writes it into *e; false for any other text */
bool f32_engine_parse(const char* name, F32Engine* e);
/* From now on the FP32 products run on e (F32_ONEDNN needs a build with oneDNN). Not inside an OpenMP
   parallel region. The double build (PRECISION=64) keeps OpenBLAS's dgemm whatever e is. */
void products_set_f32_engine(F32Engine e);
F32Engine products_f32_engine(void);

/* n reals from f32 have their BF16 copies at b16 (b16[i] = bf16_round_nearest(f32[i])) */
typedef struct {
    const real* f32;
    size_t n;
    const bf16* b16;
} Bf16Region;

#define PRODUCTS_REGIONS 4
typedef struct {
    Bf16Region region[PRODUCTS_REGIONS];
    bf16* act[2]; /* work space for the activation operands A and B, act_cap elements each */
    struct {
        const real* p;
        size_t rows, cols, ld;
    } held[2];             /* what act[0], act[1] hold: the operand last rounded into each (rows x cols, stride ld) */
    size_t act_cap;        /* at least the largest activation operand of one product's chunk of 16 rows */
    size_t weight_rounded; /* weight operands found in no region, rounded at their product */
} Bf16Products;

/* One operand of a product: p with row stride ld, stored transposed when t, and what it is */
typedef struct {
    const real* p;
    size_t ld;
    bool t;
    OperandKind kind;
} Operand;
/* an activation operand x (row stride ld, transposed when t), and a weight operand w */
static inline Operand op_act(const real* x, size_t ld, bool t) { return (Operand){x, ld, t, OPERAND_ACT}; }
static inline Operand op_weight(const real* w, size_t ld, bool t) { return (Operand){w, ld, t, OPERAND_WEIGHT}; }
/* x as op_act, known unchanged since the previous product rounded it (OPERAND_ACT_KEPT) when kept */
static inline Operand op_act_kept(const real* x, size_t ld, bool t, bool kept) {
    return (Operand){x, ld, t, kept ? OPERAND_ACT_KEPT : OPERAND_ACT};
}

/* The work space's record cleared (bf may be NULL): no BF16 copy is read again before a product rounds one anew.
   The record knows which operand a copy is of, not whether its values changed since; so the code that passes
   OPERAND_ACT_KEPT calls this where its knowledge starts (model/block.c: the q, k, v projections' forward and
   backward), and a record from an earlier layer, whose buffers may be the same ones, is never trusted. */
void products_forget(Bf16Products* bf);

/* For a pass that writes activation x (rows x cols, row stride ld) and its BF16 copy at once: the work space
   `slot` (0: a product's A, 1: its B), to be filled with bf16_round_nearest of x's values, rows x cols with
   stride cols, and recorded as holding x, so that the next product taking x there as OPERAND_ACT_KEPT reads the
   copy instead of rounding x. NULL (nothing recorded; the product rounds x) without a context or when x is
   larger than the space. */
bf16* products_hold(Bf16Products* bf, int slot, const real* x, size_t rows, size_t cols, size_t ld);

/* C (M,N; row stride ldc) = alpha op(A) op(B) + beta C, row-major, as cblas_gemm (model/gemm_onednn.h's
   layout: A.t, A stored (K,M); B.t, B stored (N,K)), with BF16 operands when bf is a context (NULL: FP32).
   Not inside an OpenMP parallel region when products_onednn(bf). */
void product(Bf16Products* bf, size_t M, size_t N, size_t K, real alpha, Operand A, Operand B, real beta, real* C,
             size_t ldc);
/* Products with context bf (NULL: FP32) run on oneDNN (a BF16 context, or the FP32 engine F32_ONEDNN): it
   threads each product itself and is not to be called from inside a parallel region (model/linear.c splits
   none) */
bool products_onednn(const Bf16Products* bf);

/* "bf16 operands, FP32 accumulation: oneDNN 2.6.3, ISA avx512_core_bf16", "f32: OpenBLAS, core Cooperlake" or
   "f32: oneDNN 2.6.3, ISA avx512_core_bf16":
   what runs the products in that mode (the start-up line and the benches print it) */
const char* products_name(bool bf16);
/* Whether this build and CPU can run train.compute_dtype "bf16"; else false with the reason in why */
bool products_bf16_available(char* why, size_t n);

#endif

/* Which engine runs the products fastest on this CPU (docs/cpus.md, "Engines per CPU").

   FP32: OpenBLAS picks its kernels by the CPU's model number; a CPU newer than its table gets a generic
   kernel (Debian's 0.3.21 runs an Intel Xeon 6 on its SSE3 "Prescott" kernels, 4-5x below the chip), and
   OPENBLAS_CORETYPE may name a narrower family on purpose. oneDNN's FP32 matmul picks kernels by the
   instruction sets the CPU reports. The rule:
     1. no oneDNN in the build: OpenBLAS;
     2. OpenBLAS runs SSE-only kernels on a CPU with AVX2: oneDNN, without timing anything;
     3. else both are timed on the run's own product shapes (forward, input and weight gradient of the
        model's widest block product, each dimension within [64, 1024]) and oneDNN runs only when it
        measures at least ENGINE_SWITCH times OpenBLAS's rate: OpenBLAS stays on a tie.
   BF16 ("auto" compute dtype): BF16 products run when the CPU has BF16 instructions and they measure at
   least ENGINE_BF16_PAYS times the FP32 engine's rate on the same shapes.

   The timing (about 0.3-0.6 s at the largest shapes) is cached per CPU, thread count, library kernels and
   shape in the file engine_cache_path() names, so a run made twice on one machine chooses the same engine
   twice (results differ in the last bits between engines); a run that needs a rate the cache lacks (BF16's,
   after runs that needed the FP32 ones only) times that one alone and keeps the others. The float build only. */
#ifndef REPOC_ENGINE_H
#define REPOC_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "model/config.h"
#include "model/products.h"

/* oneDNN's rate over OpenBLAS's at which oneDNN takes the FP32 products (a margin over the timing's noise) */
#define ENGINE_SWITCH 1.05
/* BF16's rate over the FP32 engine's at which "auto" takes BF16: the products are about 3/4 of a step, so
   1.1x products make about 1.07x a step, and below that the step gains too little for BF16's rounding */
#define ENGINE_BF16_PAYS 1.10

/* The products whose rates the choice compares: OpenBLAS FP32, oneDNN FP32, BF16 */
typedef enum { RATE_OPENBLAS, RATE_ONEDNN_F32, RATE_BF16, RATE_N } RateKind;

typedef struct {
    size_t rows, in, out;  /* the probed shape: (rows, in) x (in, out) and its two gradients */
    double gflops[RATE_N]; /* measured or cached rates; 0: not measured (unavailable, or rule 1 or 2) */
    bool bf16_available;   /* the CPU and build run BF16 products */
    F32Engine f32;         /* the FP32 engine the rule chose */
    bool bf16_pays;        /* bf16_available and BF16 measured >= ENGINE_BF16_PAYS x the FP32 engine */
    bool cached;           /* the rates came from the cache */
    char why[320];         /* why f32: "OpenBLAS's core Prescott has SSE3 kernels only; this CPU has AVX-512" */
    char bf16_why[512];    /* why bf16_pays is what it is (without BF16 products: the reason) */
} EngineChoice;

/* Choose for a model of cfg over `rows` rows (B*T) with the threads in use: its widest block product,
   (rows, D) x (D, F), each dimension clamped by engine_clamp_dim; want_bf16: time BF16 too (else bf16_pays is
   false and gflops[RATE_BF16] 0). Leaves the products' engine as it found it. */
void engine_choose(EngineChoice* c, const ModelConfig* cfg, size_t rows, bool want_bf16);
/* a dimension of the probed shape: x within [64, 1024] (the time estimate's probe takes the same) */
size_t engine_clamp_dim(size_t x);
/* One line: "f32 products: oneDNN 2.6.3, ISA avx512_core (measured 180 GFLOP/s against OpenBLAS 98 at ...)" */
void engine_print(const EngineChoice* c, FILE* fp);
/* The cache file: $REPOC_CACHE_DIR/engine.tsv, else $XDG_CACHE_HOME/repoc/engine.tsv, else
   $HOME/.cache/repoc/engine.tsv; NULL when REPOC_CACHE_DIR is set empty (no cache) or no home is known */
const char* engine_cache_path(void);

/* OpenBLAS's kernel family name's widest vector instructions: 1 SSE, 2 AVX, 3 AVX2, 4 AVX-512, 0 unknown */
int engine_blas_core_tier(const char* core);

#endif

/* How long a run will take, estimated before it starts (build/train --plan and the start of every run):
   the model FLOPs of one optimizer step over this machine's measured sgemm rate, times an efficiency
   factor. An estimate, not a measurement: the step's other work (norms, softmax, AdamW), the load of a
   shared machine and evaluations are not in it.

   FLOPs (the count of docs/performance.md "FLOP count"): every linear y = x Wᵀ, W [out, in], costs
   2·N·in·out forward and 4·N·in·out backward (the LM head and the RePo module included); causal attention
   2·B·H·T²·hd forward, twice that backward. train.recompute adds one forward of the blocks; a chunked LM
   head (logits held in chunks) computes its logits again in backward: one more 2·N·D·V. */
#ifndef REPOC_TIMEPLAN_H
#define REPOC_TIMEPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "model/config.h"
#include "train/run_config.h"

/* The step time over the sgemm rate: the median of what docs/performance.md measured the training step
   at (M 73–78%, L 82–84% of same-process sgemm, S about 70%), so an estimate good to about ±25% there */
#define TIMEPLAN_EFFICIENCY 0.78
/* The same for BF16 products over the BF16 product rate (train.compute_dtype "bf16"): lower, since the
   step's other work does not get faster. Measured (docs/cpus.md, "BF16 products"; AMD EPYC with
   avx512_bf16, 2026-12-01): the bf16 step's GFLOP/s over this probe's rate was S 0.53–0.60, M 0.61–0.69,
   L 0.72–0.75 */
#define TIMEPLAN_EFFICIENCY_BF16 0.65

/* Model FLOPs of forward + backward over B sequences of T tokens (without recompute or a chunked head);
   *attn, when not NULL: the attention part */
double model_train_flops(const ModelConfig* c, size_t B, size_t T, double* attn);

/* Best GFLOP/s of cblas_sgemm C[m,n] = A[m,k] B[k,n] with the BLAS threads in use: one warm-up call, then
   up to `calls` timed calls, stopping once max_s seconds have passed (0 = no limit; at least one timed
   call), timed by `clock` (seconds; NULL = now_s). *best_ms, when not NULL: the time of the best call. */
double sgemm_gflops(size_t m, size_t k, size_t n, int calls, double max_s, double (*clock)(void), double* best_ms);

typedef struct {
    double flop_step;  /* model FLOPs of one optimizer step on one rank */
    bool bf16;         /* train.compute_dtype "bf16": the rate is gemm_bf16's */
    double gflops;     /* the measured sgemm (or BF16 product) rate */
    double efficiency; /* TIMEPLAN_EFFICIENCY or TIMEPLAN_EFFICIENCY_BF16 */
    size_t probe_m, probe_k, probe_n;
    double s_per_step; /* flop_step / (gflops x efficiency) */
    size_t steps_left; /* train.steps less the step a resumed run starts at */
} TimePlan;

/* The estimate for rc's run of model cfg on one rank, from step `done`: the sgemm probe (about 0.2 s) at the
   shape of the model's widest block product (B·T rows, d_model inner, d_ff out; each within [64, 1024]) */
void timeplan_compute(TimePlan* p, const ModelConfig* cfg, const RunConfig* rc, size_t done);
/* "time: ≈ 34 s/step, 2000 steps ≈ 19 h (estimate: ...)" */
void timeplan_print(const TimePlan* p, FILE* fp);

#endif

/* Rotary position encoding with REAL-valued positions (docs/positions.md, "RoPE and YaRN"), in the
   Hugging Face rotate_half layout: pair i of a head vector is (x[i], x[i+hd/2]).
   One position per (token, position group): positions come as pos (N, P) and
   query head h uses group h / (H/P), kv head g uses group g / (KVH/P).
   rope layers pass p = t, repo layers pass the module's z. */
#ifndef REPOC_ROPE_H
#define REPOC_ROPE_H

#include <stddef.h>

#include "common/real.h"

#define ROPE_MAX_HALF 512

/* inv_freq and the scale m, from theta and optional YaRN (docs/positions.md, "RoPE and YaRN") */
typedef struct {
    size_t hd;
    double inv_freq[ROPE_MAX_HALF]; /* hd/2 entries */
    double mscale;                  /* m: 1, or YaRN's attention factor */
    /* m cos(t inv_freq) and m sin(t inv_freq) of the integer positions t < n_cached, (n_cached, hd/2) each,
       or NULL (rope_table_init): a rope layer's positions are the same every step, so rope_cache_fill
       computes their angles once at build and forward and backward look them up; any other
       position (RePo's z, generation past n_cached) is computed as before, to the same bits */
    const double *cos_t, *sin_t;
    size_t n_cached;
} RopeTable;

/* yarn_factor <= 1 means no YaRN. attention_factor <= 0 means the default 0.1 ln(s) + 1. */
void rope_table_init(RopeTable* rt, size_t hd, double theta, double yarn_factor, double yarn_orig_max, double beta_fast,
                     double beta_slow, double attention_factor);

/* Fill cos_t, sin_t (n, hd/2) each, owned by the caller, for positions 0 .. n-1 and point rt at them.
   Call it after rope_table_init and rope_table_llama3, which change inv_freq and m. */
void rope_cache_fill(RopeTable* rt, double* cos_t, double* sin_t, size_t n);

/* Llama-3.1 scaling of an initialised table (docs/positions.md, "llama3 RoPE"): with wavelength w_i = 2π / f_i,
   w_i < L0/high keeps f_i, w_i > L0/low becomes f_i / s, and in between
   f_i ((1 - a)/s + a) with a = (L0/w_i - low) / (high - low). m stays 1. */
void rope_table_llama3(RopeTable* rt, double factor, double low_freq_factor, double high_freq_factor, double orig_max);

/* transformers' "linear" rope_scaling of an initialised table (Gemma-3's global layers): every f_i / s, m
   unchanged */
void rope_table_linear(RopeTable* rt, double factor);

/* What the rotation runs over: N rows of H query heads and KVH key heads, whose heads fall into P groups of
   one position each (P divides KVH divides H; P = KVH for RePo's per-kv-head positions) */
typedef struct {
    size_t N, H, KVH, P;
} RopeShape;

/* IN PLACE: q (N, H*hd) and k (N, KVH*hd) are rotated by pos (N, P) */
void rope_forward(real* q, real* k, const real* pos, const RopeTable* rt, RopeShape s);
/* dq_in (N,H*hd) =   dk_in (N,KVH*hd) =   dpos (N,P) = (skipped when NULL)
   dq, dk: gradients of the rotated outputs   q, k: the rotated outputs forward left   pos (N,P) */
void rope_backward(real* dq_in, real* dk_in, real* dpos, const real* dq, const real* dk, const real* q, const real* k,
                   const real* pos, const RopeTable* rt, RopeShape s);

#endif

/* The register-blocked tile kernel of model/attention.c, private to it: every product of an attention tile
   (C (+)= alpha A B on blocks of ATT_BLOCK queries and keys) and the transposes of a query block. Written
   with GCC vector types, so the widths follow the instruction set the including file is compiled for; in a
   portable build attention.c is compiled twice (model/dispatch.c), and this kernel with it. Everything here
   is static: each compilation of attention.c has its own copy, inlined into its loops. */
#ifndef REPOC_TILE_GEMM_H
#define REPOC_TILE_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/real.h"

/* Queries and keys go in blocks of 128 with AVX-512 and of 64 otherwise: with 8 float lanes the kernel
   holds 8 accumulators, and a 128 x 128 tile (64 KiB) no longer fits a 48 KiB L1 beside its operands
   (docs/cpus.md, "Decisions on the Intel Xeon"). */
#if defined(__AVX512F__)
#define ATT_BLOCK 128
#else
#define ATT_BLOCK 64
#endif
#define ATT_BQ ATT_BLOCK /* queries of a task's block */
#define ATT_BK ATT_BLOCK /* keys of a tile */

/* The tile products run in one register-blocked kernel, C (+)= alpha A B, written with GCC vector
   types so it compiles to the widest vectors the build targets (AVX-512, AVX2 or SSE2): each inner step
   loads NV vectors of one row of B, broadcasts one element of A for each of MR rows, and does MR·NV
   multiply-adds into accumulators that stay in registers for the whole contraction (MR·NV = 24 of the
   32 AVX-512 registers, 8 of the 16 AVX2 ones). A is read through strides (a_rs between rows, a_cs
   between columns), so A^T costs nothing; B and C are row-major.
   On a tile that crosses the causal diagonal, each row needs only part of the product; `tri` says which
   part, relative to the row index r (with the tile's offset `off` = key block start - query block start
   or its negative): TRI_C_FROM columns c >= r + off, TRI_K_FROM contraction steps k >= r + off,
   TRI_K_UPTO steps k <= r + off. A block of MR rows computes the union of its rows' parts; the entries
   computed beyond a row's part are masked (zero) anyway, and the columns left out are hidden keys. */
#if defined(__AVX512F__)
#define ATT_VBYTES 64
#define ATT_NV 4
#elif defined(__AVX__)
#define ATT_VBYTES 32
#define ATT_NV 2
#else
#define ATT_VBYTES 16
#define ATT_NV 2
#endif
typedef real vreal __attribute__((vector_size(ATT_VBYTES), aligned(sizeof(real)))); /* unaligned loads */
#define VL (ATT_VBYTES / sizeof(real))
#define ATT_INLINE static inline __attribute__((always_inline))

/* The part of a tile's product each row needs (the comment above): all, or from / up to the diagonal */
typedef enum { TRI_NONE, TRI_C_FROM, TRI_K_FROM, TRI_K_UPTO } TileTri;

typedef struct {
    const real* a; /* A (m, kk): element (r, k) at a[r * a_rs + k * a_cs] */
    size_t a_rs, a_cs;
    const real* b; /* B (kk, n), row stride ldb */
    size_t ldb;
    real* c; /* C (m, n), row stride ldc */
    size_t ldc;
    size_t kk;
    real alpha;
    bool acc;    /* C += alpha A B, else C = alpha A B */
    TileTri tri; /* the part each row needs (above); TRI_NONE: all of it */
    ptrdiff_t off;
} TileGemm;

/* the contraction steps [*k0, *k1) and the first column *c0 (a whole vector) that rows [r0, r0 + MR) need */
ATT_INLINE void tile_part(const TileGemm* g, size_t r0, size_t MR, size_t* k0, size_t* k1, size_t* c0) {
    ptrdiff_t lo = (ptrdiff_t)r0 + g->off, hi = (ptrdiff_t)(r0 + MR) + g->off, kk = (ptrdiff_t)g->kk;
    *k0 = g->tri == TRI_K_FROM && lo > 0 ? (size_t)(lo < kk ? lo : kk) : 0;
    *k1 = g->tri == TRI_K_UPTO && hi < kk ? (size_t)(hi > 0 ? hi : 0) : g->kk;
    *c0 = g->tri == TRI_C_FROM && lo > 0 ? (size_t)lo / VL * VL : 0;
}

/* rows [r0, r0 + MR), columns [c0, c0 + NV·VL) of C, contraction steps [k0, k1) */
ATT_INLINE void tile_micro(const TileGemm* g, size_t r0, size_t c0, size_t k0, size_t k1, size_t MR, size_t NV) {
    vreal acc[12][4];
    for (size_t r = 0; r < MR; r++)
        for (size_t v = 0; v < NV; v++) acc[r][v] = (vreal){0};
    const real* ar = g->a + r0 * g->a_rs;
    const real* bp = g->b + k0 * g->ldb + c0;
    for (size_t k = k0; k < k1; k++, bp += g->ldb) {
        vreal bv[4];
        for (size_t v = 0; v < NV; v++) bv[v] = *(const vreal*)(bp + v * VL);
        for (size_t r = 0; r < MR; r++) {
            real x = ar[r * g->a_rs + k * g->a_cs];
            for (size_t v = 0; v < NV; v++) acc[r][v] += x * bv[v];
        }
    }
    for (size_t r = 0; r < MR; r++)
        for (size_t v = 0; v < NV; v++) {
            vreal* cp = (vreal*)(g->c + (r0 + r) * g->ldc + c0 + v * VL);
            *cp = g->acc ? *cp + g->alpha * acc[r][v] : g->alpha * acc[r][v];
        }
}

/* rows [r0, r0 + MR), the columns they need of n: NVMAX, 2, 1 vectors at a time, then single columns */
ATT_INLINE void tile_rows(const TileGemm* g, size_t r0, size_t n, size_t MR, size_t NVMAX) {
    size_t k0, k1, c0;
    tile_part(g, r0, MR, &k0, &k1, &c0);
    for (; NVMAX == 4 && c0 + 4 * VL <= n; c0 += 4 * VL) tile_micro(g, r0, c0, k0, k1, MR, 4);
    for (; c0 + 2 * VL <= n; c0 += 2 * VL) tile_micro(g, r0, c0, k0, k1, MR, 2);
    for (; c0 + VL <= n; c0 += VL) tile_micro(g, r0, c0, k0, k1, MR, 1);
    for (; c0 < n; c0++)
        for (size_t r = r0; r < r0 + MR; r++) {
            real s = 0;
            for (size_t k = k0; k < k1; k++) s += g->a[r * g->a_rs + k * g->a_cs] * g->b[k * g->ldb + c0];
            real* cp = g->c + r * g->ldc + c0;
            *cp = g->acc ? *cp + g->alpha * s : g->alpha * s;
        }
}

/* C (m, n) (+)= alpha A B. With AVX-512, 24 accumulators: 6 rows x 4 vectors, or 12 rows x 2 vectors when C
   is at most 2 vectors wide (hd 32), so that they still hide the multiply-add latency; the rows left over
   go 8 (narrow C) or 4 at a time, then one at a time. */
static void tile_gemm(const TileGemm* g, size_t m, size_t n) {
    size_t r0 = 0;
    if (ATT_NV == 4 && n <= 2 * VL) {
        for (; r0 + 12 <= m; r0 += 12) tile_rows(g, r0, n, 12, 2);
        for (; r0 + 8 <= m; r0 += 8) tile_rows(g, r0, n, 8, 2);
    } else if (ATT_NV == 4) {
        for (; r0 + 6 <= m; r0 += 6) tile_rows(g, r0, n, 6, 4);
    }
    for (; r0 + 4 <= m; r0 += 4) tile_rows(g, r0, n, 4, ATT_NV);
    for (; r0 < m; r0++) tile_rows(g, r0, n, 1, ATT_NV);
}

/* 8 x 8 blocks of the transpose below, through three rounds of two-vector shuffles (unpack pairs,
   then pairs of pairs, then halves) */
typedef real v8r __attribute__((vector_size(8 * sizeof(real)), aligned(sizeof(real)))); /* unaligned loads */
#ifdef REPOC_F64
typedef int64_t v8i __attribute__((vector_size(8 * sizeof(real))));
#else
typedef int32_t v8i __attribute__((vector_size(8 * sizeof(real))));
#endif
ATT_INLINE void transpose8(real* out, size_t os, const real* in, size_t is, real alpha) {
    v8r r[8], t[8], u[8];
    for (int k = 0; k < 8; k++) r[k] = *(const v8r*)(in + k * is);
    for (int k = 0; k < 8; k += 2) {
        t[k] = __builtin_shuffle(r[k], r[k + 1], (v8i){0, 8, 1, 9, 4, 12, 5, 13});
        t[k + 1] = __builtin_shuffle(r[k], r[k + 1], (v8i){2, 10, 3, 11, 6, 14, 7, 15});
    }
    for (int k = 0; k < 8; k += 4)
        for (int h = 0; h < 2; h++) {
            u[k + 2 * h] = __builtin_shuffle(t[k + h], t[k + h + 2], (v8i){0, 1, 8, 9, 4, 5, 12, 13});
            u[k + 2 * h + 1] = __builtin_shuffle(t[k + h], t[k + h + 2], (v8i){2, 3, 10, 11, 6, 7, 14, 15});
        }
    for (int j = 0; j < 4; j++) { /* u[j] holds columns j and j + 4 of rows 0-3, u[j + 4] of rows 4-7 */
        *(v8r*)(out + j * os) = alpha * __builtin_shuffle(u[j], u[j + 4], (v8i){0, 1, 2, 3, 8, 9, 10, 11});
        *(v8r*)(out + (j + 4) * os) = alpha * __builtin_shuffle(u[j], u[j + 4], (v8i){4, 5, 6, 7, 12, 13, 14, 15});
    }
}

/* xT (hd, ATT_BQ) = alpha x^T for the nq rows of x, row stride xs: 8 x 8 blocks, then the edges */
static void transpose_block(real* xT, const real* x, size_t nq, size_t xs, size_t hd, real alpha) {
    size_t n8 = nq / 8 * 8, h8 = hd / 8 * 8;
    for (size_t i = 0; i < n8; i += 8)
        for (size_t d = 0; d < h8; d += 8) transpose8(xT + d * ATT_BQ + i, ATT_BQ, x + i * xs + d, xs, alpha);
    for (size_t i = 0; i < nq; i++)
        for (size_t d = i < n8 ? h8 : 0; d < hd; d++) xT[d * ATT_BQ + i] = alpha * x[i * xs + d];
}

#endif

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

#include "common/bf16.h"
#include "common/real.h"
/* AVX512-BF16's instructions for the pair products and the rounding to BF16 (float builds) */
#if defined(__AVX512BF16__) && defined(__AVX512F__) && !defined(REPOC_F64)
#define ATT_BF16_HW 1
#include <immintrin.h>
#else
#define ATT_BF16_HW 0
#endif

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

/* BF16 operands (AttnShape.bf16): two BF16 values in one 32-bit word, as vdpbf16ps reads them, the low half
   the element of an even contraction step 2p and the high half that of step 2p + 1. A product on pairs
   multiplies them exactly and accumulates in FP32: per lane, acc += a_hi b_hi, then acc += a_lo b_lo. */
typedef uint32_t bfpair;
typedef uint32_t vpair __attribute__((vector_size(ATT_VBYTES), aligned(4))); /* VL pairs (float builds) */
#define ATT_PAIRS(n) (((n) + 1) / 2) /* pairs holding n elements, the last one padded with 0 */

ATT_INLINE bfpair bf_pair(real lo, real hi) {
    return (bfpair)bf16_round_nearest((float)lo) | (bfpair)bf16_round_nearest((float)hi) << 16;
}

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
    /* BF16 operands in place of a and b, when pa is set: A's pair (r, p) (steps 2p, 2p + 1) at
       pa[r * a_rs + p * a_cs], B's pair (p, c) at pb[p * ldb + c]; kk still counts elements */
    const bfpair *pa, *pb;
} TileGemm;

/* the contraction steps [*k0, *k1) and the first column *c0 (a whole vector) that rows [r0, r0 + MR) need; with
   pairs, the pairs that hold those steps (a step outside a row's part is a hidden entry, 0 in A) */
ATT_INLINE void tile_part(const TileGemm* g, size_t r0, size_t MR, size_t* k0, size_t* k1, size_t* c0) {
    ptrdiff_t lo = (ptrdiff_t)r0 + g->off, hi = (ptrdiff_t)(r0 + MR) + g->off, kk = (ptrdiff_t)g->kk;
    *k0 = g->tri == TRI_K_FROM && lo > 0 ? (size_t)(lo < kk ? lo : kk) : 0;
    *k1 = g->tri == TRI_K_UPTO && hi < kk ? (size_t)(hi > 0 ? hi : 0) : g->kk;
    *c0 = g->tri == TRI_C_FROM && lo > 0 ? (size_t)lo / VL * VL : 0;
    if (g->pa) {
        *k0 /= 2;
        *k1 = ATT_PAIRS(*k1);
    }
}

#ifndef REPOC_F64
/* acc += a b for one pair a of A and VL pairs b of B: vdpbf16ps where the build has AVX512-BF16, else the
   same two exact products and two FP32 roundings (high halves first, as the instruction) */
typedef real vsum __attribute__((vector_size(ATT_VBYTES))); /* the pair loop's accumulators, naturally aligned */
ATT_INLINE vsum dot_pairs(vsum acc, bfpair a, vpair b) {
#if ATT_BF16_HW && ATT_VBYTES == 64
    return (vsum)_mm512_dpbf16_ps((__m512)acc, (__m512bh)_mm512_set1_epi32((int)a), (__m512bh)b);
#else
    vsum b_lo = (vsum)(b << 16), b_hi = (vsum)(b & 0xFFFF0000u);
    return acc + bf16_to_f32((bf16)(a >> 16)) * b_hi + bf16_to_f32((bf16)a) * b_lo;
#endif
}
#endif

/* acc (MR, NV vectors) = the rows [r0, r0 + MR), columns [c0, c0 + NV·VL) of A B over steps [k0, k1) */
ATT_INLINE void tile_sums(vreal acc[12][4], const TileGemm* g, size_t r0, size_t c0, size_t k0, size_t k1, size_t MR,
                          size_t NV) {
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
}

#ifndef REPOC_F64
/* tile_sums on BF16 pairs [k0, k1) */
ATT_INLINE void tile_sums_pairs(vreal acc[12][4], const TileGemm* g, size_t r0, size_t c0, size_t k0, size_t k1,
                                size_t MR, size_t NV) {
    vsum sum[12][4]; /* not acc itself: through acc's type GCC kept the sums in memory, stored every step */
    for (size_t r = 0; r < MR; r++)
        for (size_t v = 0; v < NV; v++) sum[r][v] = (vsum){0};
    const bfpair* ar = g->pa + r0 * g->a_rs;
    const bfpair* bp = g->pb + k0 * g->ldb + c0;
    for (size_t k = k0; k < k1; k++, bp += g->ldb) {
        vpair bv[4];
        for (size_t v = 0; v < NV; v++) bv[v] = *(const vpair*)(bp + v * VL);
        for (size_t r = 0; r < MR; r++) {
            bfpair x = ar[r * g->a_rs + k * g->a_cs];
            for (size_t v = 0; v < NV; v++) sum[r][v] = dot_pairs(sum[r][v], x, bv[v]);
        }
    }
    for (size_t r = 0; r < MR; r++)
        for (size_t v = 0; v < NV; v++) acc[r][v] = (vreal)sum[r][v];
}
#endif

/* A B's element (r, c) over steps (or pairs) [k0, k1), one column at a time (a tile's last columns) */
ATT_INLINE real tile_dot(const TileGemm* g, size_t r, size_t c, size_t k0, size_t k1) {
    real s = 0;
    if (g->pa)
        for (size_t k = k0; k < k1; k++) {
            bfpair x = g->pa[r * g->a_rs + k * g->a_cs], y = g->pb[k * g->ldb + c];
            s += bf16_to_f32((bf16)(x >> 16)) * bf16_to_f32((bf16)(y >> 16));
            s += bf16_to_f32((bf16)x) * bf16_to_f32((bf16)y);
        }
    else
        for (size_t k = k0; k < k1; k++) s += g->a[r * g->a_rs + k * g->a_cs] * g->b[k * g->ldb + c];
    return s;
}

/* C's rows [r0, r0 + MR), columns [c0, c0 + NV·VL) (+)= alpha acc */
ATT_INLINE void tile_store(const TileGemm* g, vreal acc[12][4], size_t r0, size_t c0, size_t MR, size_t NV) {
    for (size_t r = 0; r < MR; r++)
        for (size_t v = 0; v < NV; v++) {
            vreal* cp = (vreal*)(g->c + (r0 + r) * g->ldc + c0 + v * VL);
            *cp = g->acc ? *cp + g->alpha * acc[r][v] : g->alpha * acc[r][v];
        }
}

/* rows [r0, r0 + MR), columns [c0, c0 + NV·VL) of C, contraction steps (or pairs) [k0, k1) */
ATT_INLINE void tile_micro(const TileGemm* g, size_t r0, size_t c0, size_t k0, size_t k1, size_t MR, size_t NV) {
    vreal acc[12][4];
#ifndef REPOC_F64
    if (g->pa) tile_sums_pairs(acc, g, r0, c0, k0, k1, MR, NV);
    else
#endif
        tile_sums(acc, g, r0, c0, k0, k1, MR, NV);
    tile_store(g, acc, r0, c0, MR, NV);
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
            real s = tile_dot(g, r, c0, k0, k1);
            real* cp = g->c + r * g->ldc + c0;
            *cp = g->acc ? *cp + g->alpha * s : g->alpha * s;
        }
}

/* C (m, n) (+)= alpha A B. With AVX-512, 24 accumulators: 6 rows x 4 vectors, or 12 rows x 2 vectors when C
   is at most 2 vectors wide (hd 32), so that they still hide the multiply-add latency; the rows left over
   go 8 (narrow C) or 4 at a time, then one at a time. Each element sums its steps in the same order
   whichever block it falls in, so the blocking never changes a bit. */
static void tile_gemm(const TileGemm* g, size_t m, size_t n) {
    size_t r0 = 0;
    if (ATT_NV == 4 && n <= 2 * VL) {
        for (; r0 + 12 <= m; r0 += 12) tile_rows(g, r0, n, 12, 2);
        for (; r0 + 8 <= m; r0 += 8) tile_rows(g, r0, n, 8, 2);
    } else if (ATT_NV == 4) {
        size_t n6 = m / 6; /* one block of 6 fewer where that leaves a multiple of 4 (128 = 20·6 + 2·4, not 21·6 + 2) */
        if (n6 && (m - 6 * n6) % 4 && (m - 6 * n6 + 6) % 4 == 0) n6--;
        for (; r0 < 6 * n6; r0 += 6) tile_rows(g, r0, n, 6, 4);
    }
    for (; r0 + 4 <= m; r0 += 4) tile_rows(g, r0, n, 4, ATT_NV);
    for (; r0 < m; r0++) tile_rows(g, r0, n, 1, ATT_NV);
}

/* 8 x 8 blocks of the transposes below, through three rounds of two-vector shuffles (unpack pairs, then pairs
   of pairs, then halves), on the bits: words of real's width (a bfpair's in float builds) */
typedef real v8r __attribute__((vector_size(8 * sizeof(real)), aligned(sizeof(real)))); /* unaligned loads */
#ifdef REPOC_F64
typedef int64_t v8i __attribute__((vector_size(8 * sizeof(real))));
#else
typedef int32_t v8i __attribute__((vector_size(8 * sizeof(real))));
#endif
typedef v8i v8iu __attribute__((aligned(sizeof(real)))); /* unaligned loads */
/* the 8 words of a and b (0-7 a's, 8-15 b's) at the given indices: GCC's and clang's spelling */
#ifdef __clang__
#define SHUFFLE2(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define SHUFFLE2(a, b, ...) __builtin_shuffle(a, b, (v8i){__VA_ARGS__})
#endif
ATT_INLINE void transpose8_words(v8i out[8], const v8i r[8]) {
    v8i t[8], u[8];
    for (int k = 0; k < 8; k += 2) {
        t[k] = SHUFFLE2(r[k], r[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[k + 1] = SHUFFLE2(r[k], r[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int k = 0; k < 8; k += 4)
        for (int h = 0; h < 2; h++) {
            u[k + 2 * h] = SHUFFLE2(t[k + h], t[k + h + 2], 0, 1, 8, 9, 4, 5, 12, 13);
            u[k + 2 * h + 1] = SHUFFLE2(t[k + h], t[k + h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        }
    for (int j = 0; j < 4; j++) { /* u[j] holds columns j and j + 4 of rows 0-3, u[j + 4] of rows 4-7 */
        out[j] = SHUFFLE2(u[j], u[j + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        out[j + 4] = SHUFFLE2(u[j], u[j + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

ATT_INLINE void transpose8(real* out, size_t os, const real* in, size_t is, real alpha) {
    v8i r[8], t[8];
    for (int k = 0; k < 8; k++) r[k] = (v8i) * (const v8r*)(in + k * is);
    transpose8_words(t, r);
    for (int j = 0; j < 8; j++) *(v8r*)(out + j * os) = alpha * (v8r)t[j];
}

/* xT (hd, ATT_BQ) = alpha x^T for the nq rows of x, row stride xs: 8 x 8 blocks, then the edges */
static void transpose_block(real* xT, const real* x, size_t nq, size_t xs, size_t hd, real alpha) {
    size_t n8 = nq / 8 * 8, h8 = hd / 8 * 8;
    for (size_t i = 0; i < n8; i += 8)
        for (size_t d = 0; d < h8; d += 8) transpose8(xT + d * ATT_BQ + i, ATT_BQ, x + i * xs + d, xs, alpha);
    for (size_t i = 0; i < nq; i++)
        for (size_t d = i < n8 ? h8 : 0; d < hd; d++) xT[d * ATT_BQ + i] = alpha * x[i * xs + d];
}

/* The BF16 operands of the pair products, rounded to nearest even from n rows of w elements of x (row stride
   xs) in the three layouts the products read (out's row stride os; a missing last element of a pair is 0);
   pack_row_pairs and pack_column_pairs round alpha x (alpha 1 but where AMX folds a scale into an operand).
   With AVX512-BF16, 16 or 32 at a time by vcvtne(2)ps2bf16, which round the same way but read a subnormal
   input as 0 (bf16_round_nearest keeps it): the two can differ below 2^-126, nowhere else.
   Pairs along each row, out (n, ATT_PAIRS(w)): the A operand of a product summing along x's rows */
typedef uint16_t bf16_in_pair __attribute__((may_alias)); /* one half of a bfpair */
static void pack_row_pairs(bfpair* out, size_t os, const real* x, size_t xs, size_t n, size_t w, real alpha) {
    for (size_t r = 0; r < n; r++) {
        const real* xr = x + r * xs;
        bf16_in_pair* o = (bf16_in_pair*)(out + r * os); /* the row's pairs are its elements in order */
        size_t e = 0;
#if ATT_BF16_HW
        for (; e + 16 <= w; e += 16)
            _mm256_storeu_si256((__m256i*)(o + e), (__m256i)_mm512_cvtneps_pbh(
                                                       _mm512_mul_ps(_mm512_set1_ps(alpha), _mm512_loadu_ps(xr + e))));
#endif
#pragma omp simd
        for (size_t i = e; i < w; i++) o[i] = bf16_round_nearest((float)(alpha * xr[i]));
        if (w % 2) o[w] = 0;
    }
}

/* pairs along each row, transposed: out (ATT_PAIRS(w), n), pair (p, r) from x[r][2p], x[r][2p + 1]: the B
   operand of a product summing along x's rows (Q^T, dO^T) */
static void pack_row_pairs_t(bfpair* out, size_t os, const real* x, size_t xs, size_t n, size_t w) {
    for (size_t r = 0; r < n; r++) {
        const real* xr = x + r * xs;
#pragma omp simd
        for (size_t p = 0; p < w / 2; p++) out[p * os + r] = bf_pair(xr[2 * p], xr[2 * p + 1]);
        if (w % 2) out[w / 2 * os + r] = bf_pair(xr[w - 1], 0);
    }
}

/* pairs down each column, out (ATT_PAIRS(n), w), pair (p, c) from x[2p][c], x[2p + 1][c]: an operand of a
   product summing down x's columns */
static void pack_column_pairs(bfpair* out, size_t os, const real* x, size_t xs, size_t n, size_t w, real alpha) {
    for (size_t p = 0; 2 * p < n; p++) {
        const real *x0 = x + 2 * p * xs, *x1 = x0 + xs;
        bfpair* o = out + p * os;
        if (2 * p + 1 < n) {
            size_t c = 0;
#if ATT_BF16_HW /* 16 of row 2p then 16 of row 2p + 1, interleaved */
            const __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                                                   22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
            const __m512 a = _mm512_set1_ps(alpha);
            for (; c + 16 <= w; c += 16) {
                __m512i two = (__m512i)_mm512_cvtne2ps_pbh(_mm512_mul_ps(a, _mm512_loadu_ps(x1 + c)),
                                                           _mm512_mul_ps(a, _mm512_loadu_ps(x0 + c)));
                _mm512_storeu_si512(o + c, _mm512_permutexvar_epi16(inter, two));
            }
#endif
#pragma omp simd
            for (size_t i = c; i < w; i++) o[i] = bf_pair(alpha * x0[i], alpha * x1[i]);
        } else {
            for (size_t c = 0; c < w; c++) o[c] = bf_pair(alpha * x0[c], 0);
        }
    }
}

#endif

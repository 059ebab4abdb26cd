/* Attention's BF16 tile products on AMX (Intel's tile matrix unit: Sapphire Rapids and later), private to
   model/attention.c like model/tile_gemm.h, whose pair layouts it reads. One instruction, tdpbf16ps, multiplies
   a tile of 16 rows x 16 pairs of A by 16 pairs x 16 columns of B into 16 x 16 FP32 sums: each sum adds the
   two exact products of a pair, as vdpbf16ps does, with input and output subnormals read and written as 0.
   A is row-major with the pairs along its rows (the layout tile_gemm's A has when a_cs is 1) and B holds in
   row p the pairs (2p, 2p + 1) of each column (tile_gemm's B), so the packed operands serve both kernels;
   only the products summing over keys (O = P V, dQ = dS K) need A transposed, and are done transposed
   (O^T = V^T P^T, dQ^T = K^T dS^T) with V^T and K^T packed by transpose_pairs. Whether the CPU has AMX and
   the kernel lets the process use it is model/amx.h's amx_usable. */
#ifndef REPOC_TILE_AMX_H
#define REPOC_TILE_AMX_H

#include "model/tile_gemm.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 && !defined(REPOC_F64)
#define ATT_AMX 1
#include <immintrin.h>
#define AMX_TARGET __attribute__((target("amx-tile,amx-bf16"), noinline))

/* C (m, n) (+)= A B: A (m, kp pairs) row stride lda pairs, B (kp, n) row stride ldb; m and n multiples of 16, kp
   of 16 (32 elements). Every pair of A and B is read, so the caller's hidden entries must be 0. A product
   scaled by alpha has alpha folded into one operand before its rounding, so the sums go to C and back
   directly, with no pass over them in memory. */
typedef struct {
    float* c;
    size_t ldc;
    const bfpair* a;
    size_t lda;
    const bfpair* b;
    size_t ldb;
    size_t m, n, kp;
    bool acc; /* C += A B, else C = A B */
} AmxGemm;

/* every tile register 16 rows of 64 bytes: palette 1 (the 64-byte layout the CPU loads with ldtilecfg) */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((packed, aligned(64))) AmxConfig;

/* this thread's tile registers set up for amx_gemm (each thread, before its first product), and released.
   The configuration is static data: built on the stack, GCC 12 dropped the stores into it as dead (its
   ldtilecfg builtin does not say that it reads memory) and the CPU faulted on the garbage. */
static const AmxConfig amx_config = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};
AMX_TARGET static void amx_begin(void) { _tile_loadconfig(&amx_config); }
AMX_TARGET static void amx_end(void) { _tile_release(); }

/* 32 x 32 blocks of C in four sum tiles (0-3) from two tiles of A (4, 5) and two of B (6, 7) per 16 pairs;
   the edge blocks of 16 rows or columns use the tiles they need */
#define AMX_C_IN(tile, row, col) \
    do { \
        if (g->acc) _tile_loadd(tile, g->c + (row)*g->ldc + (col), sc); \
        else _tile_zero(tile); \
    } while (0)
AMX_TARGET static void amx_gemm(const AmxGemm* g) {
    long sa = (long)(g->lda * sizeof(bfpair)), sb = (long)(g->ldb * sizeof(bfpair)),
         sc = (long)(g->ldc * sizeof(float));
    for (size_t r0 = 0; r0 < g->m; r0 += 32)
        for (size_t c0 = 0; c0 < g->n; c0 += 32) {
            bool two_r = r0 + 32 <= g->m, two_c = c0 + 32 <= g->n;
            float* c = g->c + r0 * g->ldc + c0;
            AMX_C_IN(0, r0, c0);
            if (two_c) AMX_C_IN(1, r0, c0 + 16);
            if (two_r) AMX_C_IN(2, r0 + 16, c0);
            if (two_r && two_c) AMX_C_IN(3, r0 + 16, c0 + 16);
            const bfpair *a = g->a + r0 * g->lda, *b = g->b + c0;
            for (size_t p = 0; p < g->kp; p += 16, a += 16, b += 16 * g->ldb) {
                _tile_loadd(4, a, sa);
                _tile_loadd(6, b, sb);
                _tile_dpbf16ps(0, 4, 6);
                if (two_c) {
                    _tile_loadd(7, b + 16, sb);
                    _tile_dpbf16ps(1, 4, 7);
                }
                if (two_r) {
                    _tile_loadd(5, a + 16 * g->lda, sa);
                    _tile_dpbf16ps(2, 5, 6);
                    if (two_c) _tile_dpbf16ps(3, 5, 7);
                }
            }
            _tile_stored(0, c, sc);
            if (two_c) _tile_stored(1, c + 16, sc);
            if (two_r) _tile_stored(2, c + 16 * g->ldc, sc);
            if (two_r && two_c) _tile_stored(3, c + 16 * g->ldc + 16, sc);
        }
    __asm__ volatile("" ::: "memory"); /* C was written by the tile stores, which the compiler cannot see */
}

/* out (cols, rows) = in (rows, cols) transposed, as 32-bit words (row strides os, is); rows and cols multiples
   of 8: a tile's values or keys in pairs of keys (nk/2, hd) turned into V^T or K^T (hd, nk/2) */
static void transpose_pairs(bfpair* out, size_t os, const bfpair* in, size_t is, size_t rows, size_t cols) {
    for (size_t r = 0; r < rows; r += 8)
        for (size_t c = 0; c < cols; c += 8) {
            v8i x[8], y[8];
            for (int k = 0; k < 8; k++) x[k] = *(const v8iu*)(in + (r + k) * is + c);
            transpose8_words(y, x);
            for (int k = 0; k < 8; k++) *(v8iu*)(out + (c + k) * os + r) = y[k];
        }
}
#else
#define ATT_AMX 0
#endif

#endif

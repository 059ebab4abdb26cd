/* Causal GQA attention, forward and backward (docs/backward.md, "Attention"), tiled
   in the FlashAttention-2 manner so no T×T matrix is ever stored, with every
   product of a tile done by the register-blocked kernel tile_gemm below (inside
   the OpenMP loop, each thread on its own tiles):
   - forward, one task per (batch, head, block of ATT_BQ queries): for each block of
     ATT_BK keys, S = scale Q K^T (one GEMM), an online softmax over S keeps each row's
     running max m and sum l and rescales the row's accumulator, then O += P V (one
     GEMM). Only O / l and lse = m + log l are written.
   - backward, one task per (batch, kv head), so the query heads sharing a kv head
     never race on its dk, dv: for each key block and each query block at or after it,
       S = scale Q K^T,  P = exp(S - lse),  dP = dO V^T,
       delta = rowsum(dP ⊙ P) = dO·O,  dS = P ⊙ (dP - delta),
       dQ += scale dS K,  dK += scale dS^T Q,  dV += P^T dO      (five GEMMs).
   Masked entries (keys after the query; with document masking, keys before the
   query's document start) get P = 0. Only the tiles that cross the diagonal or a
   document start have any; whole key blocks before a query block's first document
   start are skipped (forward), and query rows after the document of a key block's
   last key are never visited (backward). On a diagonal tile, the products skip the
   hidden part (`TileTri` below) and the softmax loops start each key at its first
   visible query, rounded down to a vector (`first_visited`).
   Works for any T (partial blocks) and any hd <= ATT_MAX_HD. The same math without tiles, one query
   row at a time in double, is attention_reference (model/attention_ref.c); tests/test_attention.c
   compares the two. */
#include "model/attention.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/check.h"
#include "common/mathf.h"

/* Blocks of 128 queries and keys ran the S, M and L shapes 2-9% faster than 64 with AVX-512, and 3.6% slower
   with AVX2 at T = 1024, hd 64 (bench_attention, Intel Xeon, 2 threads): with 8 float lanes the tile kernel holds
   8 accumulators, and a 128 x 128 tile (64 KiB) no longer fits a 48 KiB L1 beside its operands. */
#if defined(__AVX512F__)
#define ATT_BLOCK 128
#else
#define ATT_BLOCK 64
#endif
_Static_assert(ATT_BLOCK_MAX % ATT_BLOCK == 0, "the tests' lengths are placed around multiples of ATT_BLOCK_MAX");
#define ATT_BQ ATT_BLOCK /* queries of a task's block */
#define ATT_BK ATT_BLOCK /* keys of a tile */
#define ATT_MAX_HD 256

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

/* the queries of block [t0, t0 + nq) that come before key `key` (causally hidden from it): the first `after` */
ATT_INLINE size_t queries_before(size_t key, size_t t0, size_t nq) {
    return key <= t0 ? 0 : (key - t0 < nq ? key - t0 : nq);
}

/* the first query the softmax loops visit for key `key`: queries_before rounded down to a whole vector.
   The entries before it are hidden (P = 0) and, on a diagonal tile, never computed by tile_gemm. */
ATT_INLINE size_t first_visited(size_t key, size_t t0, size_t nq) { return queries_before(key, t0, nq) / VL * VL; }

/* S^T (nk, ATT_BQ) of key block [j0, j0 + nk) against query block [t0, t0 + nq): the entries of keys hidden
   from a query set to -inf, so exp gives P = 0 there. A key is hidden when after the query or, with document
   starts st (of the query block), before the query's document. Only blocks crossing the diagonal or a
   document start have any. Entries before first_visited are left alone: the softmax loops never read them
   and write P = 0 there. */
static void hide_keys(real* St, size_t t0, size_t nq, size_t j0, size_t nk, const int32_t* st) {
    if (j0 + nk <= t0 + 1 && !(st && (size_t)st[nq - 1] > j0)) return;
    for (size_t j = 0; j < nk; j++) {
        real* s = St + j * ATT_BQ;
        size_t key = j0 + j;
        size_t after = queries_before(key, t0, nq);
        for (size_t i = first_visited(key, t0, nq); i < after; i++) s[i] = -INFINITY;
        if (!st) continue;
        int32_t kj = (int32_t)key;
#pragma omp simd
        for (size_t i = after; i < nq; i++) s[i] = st[i] > kj ? -INFINITY : s[i]; /* another document's */
    }
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

/* forward for query rows [t0, t1) of head h in batch row b; starts: the row's document starts or NULL.
   The block works on S^T (keys × queries), so the query block is transposed once per task and every
   softmax reduction runs down the columns, vectorised across the queries. */
static void forward_block(real* out, real* lse, const real* q, const real* k, const real* v, const int32_t* starts,
                          size_t b, size_t h, size_t t0, size_t t1, size_t T, size_t H, size_t KVH, size_t hd,
                          real scale) {
    size_t g = h / (H / KVH), qs = H * hd, ks = KVH * hd, nq = t1 - t0;
    real acc[ATT_BQ * ATT_MAX_HD], qT[ATT_MAX_HD * ATT_BQ], St[ATT_BK * ATT_BQ]; /* (nq, hd) (hd, BQ) (nk, BQ) */
    real m[ATT_BQ], l[ATT_BQ], ref[ATT_BQ], corr[ATT_BQ], sum[ATT_BQ];
    for (size_t i = 0; i < nq; i++) {
        m[i] = -INFINITY;
        l[i] = 0;
    }
    for (size_t i = 0; i < nq * hd; i++) acc[i] = 0;
    const real* qb = q + (b * T + t0) * qs + h * hd;
    transpose_block(qT, qb, nq, qs, hd, scale);
    const real* kb = k + b * T * ks + g * hd;
    const real* vb = v + b * T * ks + g * hd;
    const int32_t* st = starts ? starts + t0 : NULL;
    size_t jfirst = st ? (size_t)st[0] / ATT_BK * ATT_BK : 0; /* blocks before it: other documents */
    for (size_t j0 = jfirst; j0 < t1; j0 += ATT_BK) {
        size_t nk = j0 + ATT_BK < t1 ? ATT_BK : t1 - j0;
        ptrdiff_t dj = (ptrdiff_t)j0 - (ptrdiff_t)t0; /* the diagonal's offset in this tile */
        /* S^T = K Q^T */
        tile_gemm(&(TileGemm){.a = kb + j0 * ks,
                              .a_rs = ks,
                              .a_cs = 1,
                              .b = qT,
                              .ldb = ATT_BQ,
                              .c = St,
                              .ldc = ATT_BQ,
                              .kk = hd,
                              .alpha = 1,
                              .acc = false,
                              .tri = TRI_C_FROM,
                              .off = dj},
                  nk, nq);
        hide_keys(St, t0, nq, j0, nk, st);
        for (size_t i = 0; i < nq; i++) ref[i] = m[i];
        for (size_t j = 0; j < nk; j++) { /* entries before first_visited are hidden: -inf */
            const real* s = St + j * ATT_BQ;
#pragma omp simd
            for (size_t i = first_visited(j0 + j, t0, nq); i < nq; i++) ref[i] = s[i] > ref[i] ? s[i] : ref[i];
        }
        for (size_t i = 0; i < nq; i++) { /* the new running max; a row with no key yet keeps -inf */
            real mi = ref[i];
            ref[i] = mi == -INFINITY ? 0 : mi;
            corr[i] = exp_nonpos_r(m[i] - ref[i]); /* rescales what was summed under the old max */
            m[i] = mi;
            sum[i] = 0;
        }
        for (size_t j = 0; j < nk; j++) {
            real* s = St + j * ATT_BQ;
            size_t i0 = first_visited(j0 + j, t0, nq);
            for (size_t i = 0; i < i0; i++) s[i] = 0;
#pragma omp simd
            for (size_t i = i0; i < nq; i++) {
                s[i] = exp_nonpos_r(s[i] - ref[i]); /* P^T; hidden keys give exp(-inf) = 0 */
                sum[i] += s[i];
            }
        }
        for (size_t i = 0; i < nq; i++) {
            l[i] = l[i] * corr[i] + sum[i];
            if (corr[i] != 1)
                for (size_t d = 0; d < hd; d++) acc[i * hd + d] *= corr[i];
        }
        /* acc += P V */
        tile_gemm(&(TileGemm){.a = St,
                              .a_rs = 1,
                              .a_cs = ATT_BQ,
                              .b = vb + j0 * ks,
                              .ldb = ks,
                              .c = acc,
                              .ldc = hd,
                              .kk = nk,
                              .alpha = 1,
                              .acc = true,
                              .tri = TRI_K_UPTO,
                              .off = -dj},
                  nq, hd);
    }
    for (size_t i = 0; i < nq; i++) {
        size_t row = b * T + t0 + i;
        real inv = 1 / l[i];
        for (size_t d = 0; d < hd; d++) out[row * qs + h * hd + d] = acc[i * hd + d] * inv;
        lse[row * H + h] = m[i] + (real)log(l[i]);
    }
}

void doc_starts_from_ids(int32_t* start, const int32_t* doc, size_t B, size_t T) {
    for (size_t b = 0; b < B; b++) {
        const int32_t* d = doc + b * T;
        int32_t* s = start + b * T;
        for (size_t t = 0; t < T; t++) s[t] = t > 0 && d[t] == d[t - 1] ? s[t - 1] : (int32_t)t;
    }
}

void window_starts(int32_t* start, const int32_t* doc_start, size_t B, size_t T, size_t window) {
    for (size_t n = 0; n < B * T; n++) {
        size_t w = window_first(n % T, window);
        size_t d = doc_start ? (size_t)doc_start[n] : 0;
        start[n] = (int32_t)(w > d ? w : d);
    }
}

void attention_forward(real* out, real* lse, const real* q, const real* k, const real* v, const DocSpans* docs,
                       size_t B, size_t T, size_t H, size_t KVH, size_t hd, real scale) {
    CHECK(hd <= ATT_MAX_HD && H % KVH == 0, "attention: hd %zu (max %d), H %zu, KVH %zu", hd, ATT_MAX_HD, H, KVH);
    size_t nqb = (T + ATT_BQ - 1) / ATT_BQ;
    /* later query blocks see more keys: dynamic scheduling evens the load */
#pragma omp parallel for collapse(3) schedule(dynamic, 1)
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t qb = 0; qb < nqb; qb++) {
                size_t t0 = qb * ATT_BQ, t1 = t0 + ATT_BQ < T ? t0 + ATT_BQ : T;
                forward_block(out, lse, q, k, v, docs ? docs->start + b * T : NULL, b, h, t0, t1, T, H, KVH, hd, scale);
            }
}

/* backward for kv head g of batch row b: all its query heads, query blocks, and the key blocks they see.
   Like the forward it works on S^T (keys × queries) with the query block transposed once. */
static void backward_group(real* dq, real* dk, real* dv, const real* dout, const real* out, const real* lse,
                           const real* q, const real* k, const real* v, const DocSpans* docs, size_t b, size_t g,
                           size_t T, size_t H, size_t KVH, size_t hd, real scale) {
    size_t group = H / KVH, qs = H * hd, ks = KVH * hd;
    real qT[ATT_MAX_HD * ATT_BQ], doT[ATT_MAX_HD * ATT_BQ]; /* (hd, BQ) */
    real Pt[ATT_BK * ATT_BQ], dSt[ATT_BK * ATT_BQ];         /* (nk, BQ) */
    real l[ATT_BQ], delta[ATT_BQ];
    const real* kb = k + b * T * ks + g * hd;
    const real* vb = v + b * T * ks + g * hd;
    real* dkb = dk + b * T * ks + g * hd;
    real* dvb = dv + b * T * ks + g * hd;
    for (size_t h = g * group; h < (g + 1) * group; h++)
        for (size_t t0 = 0; t0 < T; t0 += ATT_BQ) {
            size_t nq = t0 + ATT_BQ < T ? ATT_BQ : T - t0, row0 = (b * T + t0) * qs + h * hd;
            const real *qb = q + row0, *dob = dout + row0, *ob = out + row0;
            const int32_t* st = docs ? docs->start + b * T + t0 : NULL;
            transpose_block(qT, qb, nq, qs, hd, scale);
            transpose_block(doT, dob, nq, qs, hd, 1);
            for (size_t i = 0; i < nq; i++) { /* delta = rowsum(dP ⊙ P) = dO·O over hd, not the model width */
                real dl = 0;
#pragma omp simd reduction(+ : dl)
                for (size_t d = 0; d < hd; d++) dl += dob[i * qs + d] * ob[i * qs + d];
                delta[i] = dl;
                l[i] = lse[(b * T + t0 + i) * H + h];
            }
            size_t jfirst = st ? (size_t)st[0] / ATT_BK * ATT_BK : 0; /* blocks before it: other documents */
            for (size_t j0 = jfirst; j0 < t0 + nq; j0 += ATT_BK) {
                size_t nk = j0 + ATT_BK < t0 + nq ? ATT_BK : t0 + nq - j0;
                ptrdiff_t dj = (ptrdiff_t)j0 - (ptrdiff_t)t0; /* the diagonal's offset in this tile */
                const real *kj = kb + j0 * ks, *vj = vb + j0 * ks;
                /* S^T = K Q^T */
                tile_gemm(&(TileGemm){.a = kj,
                                      .a_rs = ks,
                                      .a_cs = 1,
                                      .b = qT,
                                      .ldb = ATT_BQ,
                                      .c = Pt,
                                      .ldc = ATT_BQ,
                                      .kk = hd,
                                      .alpha = 1,
                                      .acc = false,
                                      .tri = TRI_C_FROM,
                                      .off = dj},
                          nk, nq);
                /* dP^T = V dO^T */
                tile_gemm(&(TileGemm){.a = vj,
                                      .a_rs = ks,
                                      .a_cs = 1,
                                      .b = doT,
                                      .ldb = ATT_BQ,
                                      .c = dSt,
                                      .ldc = ATT_BQ,
                                      .kk = hd,
                                      .alpha = 1,
                                      .acc = false,
                                      .tri = TRI_C_FROM,
                                      .off = dj},
                          nk, nq);
                hide_keys(Pt, t0, nq, j0, nk, st);
                for (size_t j = 0; j < nk; j++) {
                    real *p = Pt + j * ATT_BQ, *ds = dSt + j * ATT_BQ;
                    size_t i0 = first_visited(j0 + j, t0, nq);
                    for (size_t i = 0; i < i0; i++) p[i] = ds[i] = 0; /* hidden */
#pragma omp simd
                    for (size_t i = i0; i < nq; i++) {
                        p[i] = exp_nonpos_r(p[i] - l[i]);                 /* P; 0 where hidden */
                        ds[i] = p[i] > 0 ? p[i] * (ds[i] - delta[i]) : 0; /* dS; dP^T skips hidden columns */
                    }
                }
                /* dQ += scale dS K,  dK += scale dS^T Q,  dV += P^T dO; each written (not added) by its first
                   tile: a query block's first key block, and a key block's diagonal tile with the group's first
                   head (no earlier query block sees that key block) */
                bool dq_add = j0 != jfirst, dkv_add = !(h == g * group && j0 == t0);
                tile_gemm(&(TileGemm){.a = dSt,
                                      .a_rs = 1,
                                      .a_cs = ATT_BQ,
                                      .b = kj,
                                      .ldb = ks,
                                      .c = dq + row0,
                                      .ldc = qs,
                                      .kk = nk,
                                      .alpha = scale,
                                      .acc = dq_add,
                                      .tri = TRI_K_UPTO,
                                      .off = -dj},
                          nq, hd);
                tile_gemm(&(TileGemm){.a = dSt,
                                      .a_rs = ATT_BQ,
                                      .a_cs = 1,
                                      .b = qb,
                                      .ldb = qs,
                                      .c = dkb + j0 * ks,
                                      .ldc = ks,
                                      .kk = nq,
                                      .alpha = scale,
                                      .acc = dkv_add,
                                      .tri = TRI_K_FROM,
                                      .off = dj},
                          nk, hd);
                tile_gemm(&(TileGemm){.a = Pt,
                                      .a_rs = ATT_BQ,
                                      .a_cs = 1,
                                      .b = dob,
                                      .ldb = qs,
                                      .c = dvb + j0 * ks,
                                      .ldc = ks,
                                      .kk = nq,
                                      .alpha = 1,
                                      .acc = dkv_add,
                                      .tri = TRI_K_FROM,
                                      .off = dj},
                          nk, hd);
            }
        }
}

void attention_backward(real* dq, real* dk, real* dv, const real* dout, const real* out, const real* lse, const real* q,
                        const real* k, const real* v, const DocSpans* docs, size_t B, size_t T, size_t H, size_t KVH,
                        size_t hd, real scale) {
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
    for (size_t b = 0; b < B; b++)
        for (size_t g = 0; g < KVH; g++)
            backward_group(dq, dk, dv, dout, out, lse, q, k, v, docs, b, g, T, H, KVH, hd, scale);
}

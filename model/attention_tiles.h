/* Attention's tiles and their products, private to model/attention.c (as model/tile_gemm.h and model/tile_amx.h,
   which it includes): which part of a key block a query block sees (Tile), the masking of hidden keys, every
   product of a tile in FP32 (tile_gemm), on BF16 pairs (tile_gemm on pairs) and on AMX tiles, and the layouts
   a key block's keys and values are rounded into for the BF16 products. */
#ifndef REPOC_ATTENTION_TILES_H
#define REPOC_ATTENTION_TILES_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "model/tile_amx.h" /* and model/tile_gemm.h */

/* One tile: key block [j0, j0 + nk) against query block [t0, t0 + nq), of head width hd; dj = j0 - t0, the
   diagonal's offset in it; st the query block's document starts, or NULL */
typedef struct {
    size_t t0, nq, j0, nk, hd;
    ptrdiff_t dj;
    const int32_t* st;
} Tile;

/* the tile of key block j0 against query block [t0, t0 + nq): its keys run to the block's end or the block's
   last query, whichever comes first (no query of the block sees a later key) */
ATT_INLINE Tile tile_at(size_t t0, size_t nq, size_t j0, size_t hd, const int32_t* st) {
    size_t end = t0 + nq, nk = j0 + ATT_BK < end ? ATT_BK : end - j0;
    return (Tile){t0, nq, j0, nk, hd, (ptrdiff_t)j0 - (ptrdiff_t)t0, st};
}

/* the queries of block [t0, t0 + nq) that come before key `key` (causally hidden from it): the first `after` */
ATT_INLINE size_t queries_before(size_t key, size_t t0, size_t nq) {
    return key <= t0 ? 0 : (key - t0 < nq ? key - t0 : nq);
}

/* the first query the softmax loops visit for key `key`: queries_before rounded down to a whole vector.
   The entries before it are hidden (P = 0) and, on a diagonal tile, never computed by tile_gemm. */
ATT_INLINE size_t first_visited(size_t key, size_t t0, size_t nq) { return queries_before(key, t0, nq) / VL * VL; }

/* S^T (nk, ATT_BQ) of tile t: the entries of keys hidden from a query set to -inf, so exp gives P = 0 there.
   A key is hidden when after the query or, with document starts, before the query's document. Only tiles
   crossing the diagonal or a document start have any. Entries before first_visited are left alone: the
   softmax loops never read them and write P = 0 there. */
static void hide_keys(real* St, Tile t) {
    size_t t0 = t.t0, nq = t.nq, j0 = t.j0;
    const int32_t* st = t.st;
    if (j0 + t.nk <= t0 + 1 && !(st && (size_t)st[nq - 1] > j0)) return;
    for (size_t j = 0; j < t.nk; j++) {
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

/* The products of a tile, in the layout both passes keep: a tile's scores or probabilities transposed,
   (nk, ATT_BQ), keys by queries; a query block transposed, (hd, ATT_BQ); a kv head's keys and values, rows
   of stride ks; a query head's rows, of stride qs. Each skips the part of a diagonal tile that is hidden. */

/* St (nk, nq) = X yT: S^T = K Q^T (X = K, yT = scale Q^T), or dP^T = V dO^T (X = V, yT = dO^T) */
static void tile_scores(real* St, const real* X, size_t ks, const real* yT, Tile t) {
    TileGemm g = {X, ks, 1, yT, ATT_BQ, St, ATT_BQ, t.hd, 1, false, TRI_C_FROM, t.dj, NULL, NULL};
    tile_gemm(&g, t.nk, t.nq);
}

/* C (nq, hd; row stride ldc) = (or += when add) alpha Xt^T Y, Y (nk, hd) the tile's values or keys:
   O += P V (Xt = P^T), dQ += scale dS K (Xt = dS^T) */
static void tile_by_keys(real* C, size_t ldc, const real* Xt, const real* Y, size_t ks, real alpha, bool add, Tile t) {
    TileGemm g = {Xt, 1, ATT_BQ, Y, ks, C, ldc, t.nk, alpha, add, TRI_K_UPTO, -t.dj, NULL, NULL};
    tile_gemm(&g, t.nq, t.hd);
}

/* C (nk, hd; row stride ldc) = (or += when add) alpha Xt Y, Y (nq, hd) the query block's rows:
   dK += scale dS^T Q (Xt = dS^T), dV += P^T dO (Xt = P^T) */
static void tile_by_queries(real* C, size_t ldc, const real* Xt, const real* Y, size_t qs, real alpha, bool add,
                            Tile t) {
    TileGemm g = {Xt, ATT_BQ, 1, Y, qs, C, ldc, t.nq, alpha, add, TRI_K_FROM, t.dj, NULL, NULL};
    tile_gemm(&g, t.nk, t.hd);
}

/* The BF16 products of a tile (AttnShape.bf16), on pairs (model/tile_gemm.h): C (+)= alpha A B with A and B
   packed by the caller, in the same shapes and parts as the FP32 ones above.
   St (nk, nq) = alpha X yT: X (nk, hd) a tile's keys or values, pairs along each row (stride ATT_PAIRS(hd));
   yT (hd, nq) the query block's Q^T or dO^T, pairs down each column (stride ATT_BQ) */
static void tile_scores_pairs(real* St, const bfpair* X, const bfpair* yT, real alpha, Tile t) {
    TileGemm g = {NULL, ATT_PAIRS(t.hd), 1, NULL, ATT_BQ, St, ATT_BQ, t.hd, alpha, false, TRI_C_FROM, t.dj, X, yT};
    tile_gemm(&g, t.nk, t.nq);
}

/* C (nq, hd) (+)= alpha Xt^T Y: Xt (nk, nq) P^T or dS^T in pairs of keys (stride ATT_BQ); Y (nk, hd) the tile's
   values or keys in pairs of keys (stride hd) */
static void tile_by_keys_pairs(real* C, size_t ldc, const bfpair* Xt, const bfpair* Y, real alpha, bool add, Tile t) {
    TileGemm g = {NULL, 1, ATT_BQ, NULL, t.hd, C, ldc, t.nk, alpha, add, TRI_K_UPTO, -t.dj, Xt, Y};
    tile_gemm(&g, t.nq, t.hd);
}

/* C (nk, hd) (+)= alpha Xt Y: Xt (nk, nq) dS^T or P^T in pairs along each row (stride ATT_PAIRS(ATT_BQ)); Y
   (nq, hd) the query block's rows in pairs of queries (stride hd) */
static void tile_by_queries_pairs(real* C, size_t ldc, const bfpair* Xt, const bfpair* Y, real alpha, bool add,
                                  Tile t) {
    TileGemm g = {NULL, ATT_PAIRS(ATT_BQ), 1, NULL, t.hd, C, ldc, t.nq, alpha, add, TRI_K_FROM, t.dj, Xt, Y};
    tile_gemm(&g, t.nk, t.hd);
}

/* The same products on AMX (model/tile_amx.h), on the same pairs, each over the whole tile: a diagonal tile's
   hidden scores are computed too (the softmax never reads them), and its hidden P and dS are 0 in the pairs.
   The scale is folded into Q^T (the scores) and dS (dQ and dK) before they are rounded, so no product has an
   alpha; with the tests' power-of-2 scales that rounds exactly as the scaled product of the rounded operands. */
#if ATT_AMX
static void amx_scores(real* St, const bfpair* X, const bfpair* yT, Tile t) {
    amx_gemm(&(AmxGemm){St, ATT_BQ, X, ATT_PAIRS(t.hd), yT, ATT_BQ, t.nk, t.nq, t.hd / 2, false});
}

/* xT (hd/2, BQ) = pairs of alpha x's rows transposed (pack_row_pairs_t) for nq rows of x (stride xs): rounded
   along the rows into tmp (nq, hd/2), then transposed; nq and hd multiples of 16 */
static void amx_pack_t(bfpair* xT, bfpair* tmp, const real* x, size_t xs, size_t nq, size_t hd, real alpha) {
    pack_row_pairs(tmp, hd / 2, x, xs, nq, hd, alpha);
    transpose_pairs(xT, ATT_BQ, tmp, hd / 2, nq, hd / 2);
}

/* C^T (hd, nq; row stride ATT_BQ) (+)= alpha Y^T Xt, transposed so that A's pairs run along its rows: Y^T the
   tile's values or keys, transposed into YT from Yp (nk/2, hd) in pairs of keys; Xt P^T or dS^T in pairs of
   keys: O^T += V^T P^T, dQ^T += scale K^T dS^T */
static void amx_by_keys(real* Ct, bfpair* YT, const bfpair* Yp, const bfpair* Xt, bool add, Tile t) {
    transpose_pairs(YT, ATT_PAIRS(ATT_BK), Yp, t.hd, t.nk / 2, t.hd);
    amx_gemm(&(AmxGemm){Ct, ATT_BQ, YT, ATT_PAIRS(ATT_BK), Xt, ATT_BQ, t.hd, t.nq, t.nk / 2, add});
}

/* C (nk, hd) (+)= Xt Y as tile_by_queries_pairs */
static void amx_by_queries(real* C, size_t ldc, const bfpair* Xt, const bfpair* Y, bool add, Tile t) {
    amx_gemm(&(AmxGemm){C, ldc, Xt, ATT_PAIRS(ATT_BQ), Y, t.hd, t.nk, t.hd, t.nq / 2, add});
}
#else /* never called: block_kind gives PROD_AMX only where ATT_AMX */
static void amx_begin(void) {}
static void amx_end(void) {}
static void amx_scores(real* St, const bfpair* X, const bfpair* yT, Tile t) {}
static void amx_pack_t(bfpair* xT, bfpair* tmp, const real* x, size_t xs, size_t nq, size_t hd, real alpha) {}
static void amx_by_keys(real* Ct, bfpair* YT, const bfpair* Yp, const bfpair* Xt, bool add, Tile t) {}
static void amx_by_queries(real* C, size_t ldc, const bfpair* Xt, const bfpair* Y, bool add, Tile t) {}
#endif

/* A key block's keys or values rounded to pairs for the BF16 products, in the layouts those read: pairs along
   the head (nk, ATT_PAIRS(hd)), the scores' K and the backward's V (dP = dO V^T); or pairs of keys
   (ATT_PAIRS(nk), hd), the forward's V (P V) and the backward's K (dS K) */
typedef enum { KV_K_ROWS, KV_V_ROWS, KV_K_COLS, KV_V_COLS, KV_LAYOUTS } KvLayout;

/* the pairs a key block takes in any of the layouts: ATT_BK x ATT_PAIRS(hd), at least ATT_PAIRS(ATT_BK) x hd */
ATT_INLINE size_t kv_block_pairs(size_t hd) { return ATT_BK * ATT_PAIRS(hd); }

/* out = x (nk rows of hd, row stride xs: a key block's keys for KV_K_*, its values for KV_V_*) in layout lay */
static void kv_pack(bfpair* out, KvLayout lay, const real* x, size_t xs, size_t nk, size_t hd) {
    if (lay == KV_K_ROWS || lay == KV_V_ROWS) pack_row_pairs(out, ATT_PAIRS(hd), x, xs, nk, hd, 1);
    else pack_column_pairs(out, hd, x, xs, nk, hd, 1);
}

#endif

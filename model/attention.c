/* Causal GQA attention, forward and backward (docs/backward.md, "Attention"), tiled
   in the FlashAttention-2 manner so no T×T matrix is ever stored, with every
   product of a tile done by the register-blocked kernel tile_gemm (model/tile_gemm.h; inside
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
   hidden part (`TileTri`, model/tile_gemm.h) and the softmax loops start each key at its first
   visible query, rounded down to a vector (`first_visited`).
   With BF16 operands (AttnShape.bf16) the tiles' products run on BF16 pairs (model/attention_tiles.h): q, dO,
   P and dS are rounded by each task, k and v once per call for all tasks where AttnShape.work gives room, and
   there the backward sums each kv head's dK and dV in dense rows of its own (dkv_rows).
   Works for any T (partial blocks) and any hd <= ATT_MAX_HD. The same math without tiles, one query
   row at a time in double, is attention_reference (model/attention_ref.c); tests/test_attention.c
   compares the two. */
#include "model/attention.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/check.h"
#include "common/mathf.h"
#include "common/threads.h"
#include "model/attention_tiles.h" /* and model/tile_amx.h, model/tile_gemm.h */

_Static_assert(ATT_BLOCK_MAX % ATT_BLOCK == 0, "the tests' lengths are placed around multiples of ATT_BLOCK_MAX");
#define ATT_MAX_HD 256

/* What runs a query block's products: FP32 tile_gemm, tile_gemm on BF16 pairs, or AMX tiles on the same pairs */
typedef enum { PROD_F32, PROD_PAIRS, PROD_AMX } ProdKind;

/* What both passes read: the inputs (attention.h's shapes) and the shape's sizes, scale and mask */
typedef struct {
    const real *q, *k, *v;
    const DocSpans* docs;
    size_t B, T, H, KVH, hd;
    real scale;
    bool bf16, amx; /* amx: BF16 products on AMX where a query block's shape allows (block_kind) */
    bfpair* pairs;  /* BF16 products: every key block's k and v rounded once per call (AttnShape.work), or NULL */
    real* dkv;      /* BF16 products: each kv head's dK and dV rows, dense (AttnShape.work, dkv_rows), or NULL */
} AttnIn;

static AttnIn attn_in(const real* q, const real* k, const real* v, const AttnShape* s) {
    CHECK(s->hd <= ATT_MAX_HD && s->H % s->KVH == 0, "attention: hd %zu (max %d), H %zu, KVH %zu", s->hd, ATT_MAX_HD,
          s->H, s->KVH);
    CHECK(!s->bf16 || sizeof(real) == 4, "attention: BF16 operands in a double build");
    bool amx = s->bf16 && !s->no_amx && ATT_AMX && amx_usable();
    bfpair* pairs = s->bf16 ? s->work : NULL;
    real* dkv = pairs ? (real*)s->work + attention_pairs_reals(s) : NULL;
    return (AttnIn){q, k, v, s->docs, s->B, s->T, s->H, s->KVH, s->hd, s->scale, s->bf16, amx, pairs, dkv};
}

/* attention_pairs_reals counts KV_LAYOUTS layouts of T keys rounded up to ATT_BLOCK_MAX, which ATT_BK divides */
_Static_assert(KV_LAYOUTS == 4 && sizeof(bfpair) == 4, "attention_pairs_reals (model/attention.h)");

/* A kv head's keys and values in one batch row (row stride ks) and, with AttnIn.pairs, their key blocks in each
   layout, rounded once per call (else NULL: each tile rounds its own) */
typedef struct {
    const real *k, *v;
    size_t ks;
    const bfpair* pairs[KV_LAYOUTS];
} KvHead;

static KvHead kv_head(const AttnIn* a, size_t b, size_t g) {
    size_t ks = a->KVH * a->hd, nb = (a->T + ATT_BK - 1) / ATT_BK;
    KvHead h = {a->k + b * a->T * ks + g * a->hd, a->v + b * a->T * ks + g * a->hd, ks, {NULL}};
    for (size_t l = 0; a->pairs && l < KV_LAYOUTS; l++)
        h.pairs[l] = a->pairs + ((l * a->B + b) * a->KVH + g) * nb * kv_block_pairs(a->hd);
    return h;
}

/* the keys (KV_K_*) or values of tile t's key block */
static const real* kv_rows(const KvHead* h, KvLayout lay, Tile t) {
    return (lay == KV_K_ROWS || lay == KV_K_COLS ? h->k : h->v) + t.j0 * h->ks;
}

/* tile t's key block in layout lay: rounded once per call, or now into own */
static const bfpair* kv_tile(const KvHead* h, KvLayout lay, Tile t, bfpair* own) {
    if (h->pairs[lay]) return h->pairs[lay] + t.j0 / ATT_BK * kv_block_pairs(t.hd);
    kv_pack(own, lay, kv_rows(h, lay, t), h->ks, t.nk, t.hd);
    return own;
}

/* With AttnIn.pairs, every key block of every (batch row, kv head) rounded into the layouts a pass reads (the
   bits of lays), so that its query blocks read them instead of each rounding every key block it sees */
static void kv_pack_all(const AttnIn* a, unsigned lays) {
    if (!a->pairs) return;
    size_t nb = (a->T + ATT_BK - 1) / ATT_BK;
#pragma omp parallel for collapse(3) schedule(static)
    for (size_t b = 0; b < a->B; b++)
        for (size_t g = 0; g < a->KVH; g++)
            for (size_t kb = 0; kb < nb; kb++) {
                KvHead h = kv_head(a, b, g);
                Tile t = tile_at(0, a->T, kb * ATT_BK, a->hd, NULL); /* the whole key block */
                for (KvLayout l = 0; l < KV_LAYOUTS; l++)
                    if (lays >> l & 1)
                        kv_pack((bfpair*)h.pairs[l] + kb * kv_block_pairs(a->hd), l, kv_rows(&h, l, t), h.ks, t.nk,
                                a->hd);
            }
}

/* the products of a query block of nq rows: on AMX when its every tile is whole 16 x 16 tiles of 16 pairs (nq
   and hd multiples of 32: then every key tile's nk is too) */
static ProdKind block_kind(const AttnIn* a, size_t nq) {
    if (!a->bf16) return PROD_F32;
    return a->amx && nq % 32 == 0 && a->hd % 32 == 0 ? PROD_AMX : PROD_PAIRS;
}

/* A forward task's BF16 operands: its query block's Q^T (unscaled, the scale the product's alpha; with AMX
   scaled) and one tile's keys, values (V^T too with AMX) and P */
typedef struct {
    bfpair qT[ATT_PAIRS(ATT_MAX_HD) * ATT_BQ]; /* (hd/2, BQ) */
    bfpair k[ATT_BK * ATT_PAIRS(ATT_MAX_HD)];  /* (nk, hd/2) */
    bfpair v[ATT_PAIRS(ATT_BK) * ATT_MAX_HD];  /* (nk/2, hd) */
    bfpair p[ATT_PAIRS(ATT_BK) * ATT_BQ];      /* (nk/2, BQ) */
    bfpair vT[ATT_MAX_HD * ATT_PAIRS(ATT_BK)]; /* (hd, nk/2): V^T for AMX */
} FwdPairs;

/* A forward task's state: its query block transposed (and scaled), or its BF16 operands; each row's running
   max m, sum l and accumulator acc (O^T with AMX), and one tile's S^T */
typedef struct {
    real acc[ATT_BQ * ATT_MAX_HD], St[ATT_BK * ATT_BQ]; /* (nq, hd), with AMX (hd, BQ); (nk, BQ) */
    union {
        real qT[ATT_MAX_HD * ATT_BQ]; /* (hd, BQ) FP32 products */
        FwdPairs bf;                  /* BF16 products */
    };
    real m[ATT_BQ], l[ATT_BQ], ref[ATT_BQ], corr[ATT_BQ], sum[ATT_BQ];
} FwdTask;

/* P^T = exp(S^T - ref) in place over tile t's St, each row's sum of them into sum; with Pp also in pairs of
   keys (nk/2, BQ), what tile_by_keys_pairs reads, each pair of rows as soon as it is done (still in L1) */
static void exp_in_place(real* St, const real* ref, real* sum, bfpair* Pp, Tile t) {
    for (size_t j = 0; j < t.nk; j++) {
        real* s = St + j * ATT_BQ;
        size_t i0 = first_visited(t.j0 + j, t.t0, t.nq);
        for (size_t i = 0; i < i0; i++) s[i] = 0;
#pragma omp simd
        for (size_t i = i0; i < t.nq; i++) {
            s[i] = exp_nonpos_r(s[i] - ref[i]); /* P^T; hidden keys give exp(-inf) = 0 */
            sum[i] += s[i];
        }
        size_t even = j / 2 * 2;
        if (Pp && (j > even || j + 1 == t.nk))
            pack_column_pairs(Pp + j / 2 * ATT_BQ, ATT_BQ, St + even * ATT_BQ, ATT_BQ, j + 1 - even, t.nq, 1);
    }
}

/* The online softmax over tile t's S^T: each row's new running max, what was summed under the old one
   rescaled (l and acc), and St turned into P^T (in place, and with BF16 products into the pairs w->bf.p) */
static void softmax_online(FwdTask* w, Tile t, ProdKind kind) {
    size_t nq = t.nq, hd = t.hd;
    real *m = w->m, *ref = w->ref, *corr = w->corr, *sum = w->sum;
    for (size_t i = 0; i < nq; i++) ref[i] = m[i];
    for (size_t j = 0; j < t.nk; j++) { /* entries before first_visited are hidden: -inf */
        const real* s = w->St + j * ATT_BQ;
#pragma omp simd
        for (size_t i = first_visited(t.j0 + j, t.t0, nq); i < nq; i++) ref[i] = s[i] > ref[i] ? s[i] : ref[i];
    }
    for (size_t i = 0; i < nq; i++) { /* the new running max; a row with no key yet keeps -inf */
        real mi = ref[i];
        ref[i] = mi == -INFINITY ? 0 : mi;
        corr[i] = exp_nonpos_r(m[i] - ref[i]); /* rescales what was summed under the old max */
        m[i] = mi;
        sum[i] = 0;
    }
    exp_in_place(w->St, ref, sum, kind != PROD_F32 ? w->bf.p : NULL, t);
    bool amx = kind == PROD_AMX;
    for (size_t i = 0; i < nq; i++) {
        w->l[i] = w->l[i] * corr[i] + sum[i];
        if (!amx && corr[i] != 1)
            for (size_t d = 0; d < hd; d++) w->acc[i * hd + d] *= corr[i];
    }
    if (amx) /* O^T: each column a query */
        for (size_t d = 0; d < hd; d++)
#pragma omp simd
            for (size_t i = 0; i < nq; i++) w->acc[d * ATT_BQ + i] *= corr[i];
}

/* One key block of a forward task: S^T = K (scale Q)^T, the online softmax turning it into P^T, acc += P V;
   with BF16 products (kind) on the keys and values in pairs (kv_tile) and P rounded to pairs. kv: the kv head. */
static void forward_tile(FwdTask* w, const KvHead* kv, real scale, ProdKind kind, Tile t) {
    FwdPairs* p = &w->bf;
    if (kind == PROD_F32) {
        tile_scores(w->St, kv_rows(kv, KV_K_ROWS, t), kv->ks, w->qT, t);
    } else {
        const bfpair* k = kv_tile(kv, KV_K_ROWS, t, p->k);
        if (kind == PROD_AMX) amx_scores(w->St, k, p->qT, t); /* Q^T scaled */
        else tile_scores_pairs(w->St, k, p->qT, scale, t);
    }
    hide_keys(w->St, t);
    softmax_online(w, t, kind); /* P^T: St, and p->p */
    if (kind == PROD_F32) {
        tile_by_keys(w->acc, t.hd, w->St, kv_rows(kv, KV_V_ROWS, t), kv->ks, 1, true, t);
        return;
    }
    const bfpair* v = kv_tile(kv, KV_V_COLS, t, p->v);
    if (kind == PROD_AMX) amx_by_keys(w->acc, p->vT, v, p->p, true, t);
    else tile_by_keys_pairs(w->acc, t.hd, p->p, v, 1, true, t);
}

/* forward for query rows [t0, t1) of head h in batch row b. The task works on S^T (keys × queries), so the
   query block is transposed once and every softmax reduction runs down the columns, vectorised across the
   queries. */
static void forward_block(real* out, real* lse, const AttnIn* a, size_t b, size_t h, size_t t0, size_t t1) {
    size_t T = a->T, H = a->H, hd = a->hd, g = h / (H / a->KVH), qs = H * hd, nq = t1 - t0;
    FwdTask w;
    ProdKind kind = block_kind(a, nq);
    for (size_t i = 0; i < nq; i++) {
        w.m[i] = -INFINITY;
        w.l[i] = 0;
    }
    for (size_t i = 0; i < (kind == PROD_AMX ? hd * ATT_BQ : nq * hd); i++) w.acc[i] = 0;
    const real* qb = a->q + (b * T + t0) * qs + h * hd;
    if (kind == PROD_AMX) {
        amx_begin();
        amx_pack_t(w.bf.qT, w.bf.vT, qb, qs, nq, hd, a->scale);
    } else if (kind == PROD_PAIRS) pack_row_pairs_t(w.bf.qT, ATT_BQ, qb, qs, nq, hd);
    else transpose_block(w.qT, qb, nq, qs, hd, a->scale);
    KvHead kv = kv_head(a, b, g);
    const int32_t* st = a->docs ? a->docs->start + b * T + t0 : NULL;
    size_t jfirst = st ? (size_t)st[0] / ATT_BK * ATT_BK : 0; /* blocks before it: other documents */
    for (size_t j0 = jfirst; j0 < t1; j0 += ATT_BK) {
        Tile t = tile_at(t0, nq, j0, hd, st);
        forward_tile(&w, &kv, a->scale, kind, t);
    }
    if (kind == PROD_AMX) amx_end();
    size_t ds = kind == PROD_AMX ? ATT_BQ : 1, is = kind == PROD_AMX ? 1 : hd; /* acc's strides: O^T or O */
    for (size_t i = 0; i < nq; i++) {
        size_t row = b * T + t0 + i;
        real inv = 1 / w.l[i];
        for (size_t d = 0; d < hd; d++) out[row * qs + h * hd + d] = w.acc[i * is + d * ds] * inv;
        lse[row * H + h] = w.m[i] + (real)log(w.l[i]);
    }
}

void attention_forward(real* out, real* lse, const real* q, const real* k, const real* v, const AttnShape* s) {
    size_t B = s->B, T = s->T, H = s->H;
    AttnIn a = attn_in(q, k, v, s);
    kv_pack_all(&a, 1u << KV_K_ROWS | 1u << KV_V_COLS);
    size_t nqb = (T + ATT_BQ - 1) / ATT_BQ;
    /* later query blocks see more keys: dynamic scheduling evens the load */
#pragma omp parallel for collapse(3) schedule(dynamic, 1)
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t qb = 0; qb < nqb; qb++) {
                size_t t0 = qb * ATT_BQ, t1 = t0 + ATT_BQ < T ? t0 + ATT_BQ : T;
                forward_block(out, lse, &a, b, h, t0, t1);
            }
}

/* What the backward reads besides AttnIn, and the gradients it writes (attention.h's shapes) */
typedef struct {
    real *dq, *dk, *dv;
    const real *dout, *out, *lse;
} AttnGrads;

/* A backward task's BF16 operands: its query block's q and dO as pairs along the head (Q^T, dO^T: the scores)
   and as pairs of queries (dK, dV), one tile's keys and values along the head, its keys in pairs of keys (dQ),
   and its P and dS in pairs of queries (dV, dK) and dS in pairs of keys (dQ) */
typedef struct {
    bfpair qT[ATT_PAIRS(ATT_MAX_HD) * ATT_BQ], doT[ATT_PAIRS(ATT_MAX_HD) * ATT_BQ]; /* (hd/2, BQ) */
    bfpair q[ATT_PAIRS(ATT_BQ) * ATT_MAX_HD], dO[ATT_PAIRS(ATT_BQ) * ATT_MAX_HD];   /* (nq/2, hd) */
    bfpair k[ATT_BK * ATT_PAIRS(ATT_MAX_HD)], v[ATT_BK * ATT_PAIRS(ATT_MAX_HD)];    /* (nk, hd/2) */
    bfpair kp[ATT_PAIRS(ATT_BK) * ATT_MAX_HD];                                      /* (nk/2, hd) */
    bfpair p[ATT_BK * ATT_PAIRS(ATT_BQ)], ds[ATT_BK * ATT_PAIRS(ATT_BQ)];           /* (nk, nq/2) */
    bfpair dsp[ATT_PAIRS(ATT_BK) * ATT_BQ];                                         /* (nk/2, BQ) */
    bfpair kT[ATT_MAX_HD * ATT_PAIRS(ATT_BK)];                                      /* (hd, nk/2) AMX */
    real dqT[ATT_MAX_HD * ATT_BQ]; /* (hd, BQ): with AMX dQ^T, written to dq at the block's end */
} BwdPairs;

/* A backward task's query block: its rows transposed (q scaled), or its BF16 operands; each row's lse l and
   delta = dO·O, and one tile's P^T and dS^T */
typedef struct {
    union {
        struct {
            real qT[ATT_MAX_HD * ATT_BQ], doT[ATT_MAX_HD * ATT_BQ]; /* (hd, BQ) FP32 products */
        };
        BwdPairs bf; /* BF16 products */
    };
    real Pt[ATT_BK * ATT_BQ], dSt[ATT_BK * ATT_BQ]; /* (nk, BQ) */
    real l[ATT_BQ], delta[ATT_BQ];
} BwdTask;

/* Where a backward query block's products read and write: its rows of q, dout and dq (stride qs) and its kv
   head's keys and values (kv: and their pairs) and rows of dk and dv (stride kv.ks), from the row's first key */
typedef struct {
    const real *qb, *dob;
    KvHead kv;
    real *dqb, *dkb, *dvb;
    size_t qs, dks; /* the row strides of q, dout, dq and of dkb, dvb */
    real scale;
    ProdKind kind; /* with BF16 products, their operands in w->bf */
} BwdRows;

/* Tile t's P^T from S^T and dS^T from dP^T, in place: P = exp(S - lse), dS = P ⊙ (dP - delta). With pairs
   also the pairs the BF16 products read (dS's multiplied by ds_scale), each row (and pair of rows) as soon as
   it is done: P and dS in pairs of queries (bf.p, bf.ds), dS in pairs of keys (bf.dsp). */
static void softmax_grad(BwdTask* w, Tile t, bool pairs, real ds_scale) {
    for (size_t j = 0; j < t.nk; j++) {
        real *p = w->Pt + j * ATT_BQ, *ds = w->dSt + j * ATT_BQ;
        size_t i0 = first_visited(t.j0 + j, t.t0, t.nq);
        for (size_t i = 0; i < i0; i++) p[i] = ds[i] = 0; /* hidden */
#pragma omp simd
        for (size_t i = i0; i < t.nq; i++) {
            p[i] = exp_nonpos_r(p[i] - w->l[i]);                 /* P; 0 where hidden */
            ds[i] = p[i] > 0 ? p[i] * (ds[i] - w->delta[i]) : 0; /* dS; dP^T skips hidden columns */
        }
        if (!pairs) continue;
        BwdPairs* b = &w->bf;
        pack_row_pairs(b->p + j * ATT_PAIRS(ATT_BQ), 0, p, 0, 1, t.nq, 1);
        pack_row_pairs(b->ds + j * ATT_PAIRS(ATT_BQ), 0, ds, 0, 1, t.nq, ds_scale);
        size_t even = j / 2 * 2;
        if (j > even || j + 1 == t.nk)
            pack_column_pairs(b->dsp + j / 2 * ATT_BQ, ATT_BQ, w->dSt + even * ATT_BQ, ATT_BQ, j + 1 - even, t.nq,
                              ds_scale);
    }
}

/* Tile t's S^T, dP^T, then P^T and dS^T: what every product of the backward reads */
static void tile_probs(BwdTask* w, const BwdRows* r, Tile t) {
    const KvHead* kv = &r->kv;
    if (r->kind == PROD_F32) {
        tile_scores(w->Pt, kv_rows(kv, KV_K_ROWS, t), kv->ks, w->qT, t);   /* S^T = K (scale Q)^T */
        tile_scores(w->dSt, kv_rows(kv, KV_V_ROWS, t), kv->ks, w->doT, t); /* dP^T = V dO^T */
    } else {
        BwdPairs* p = &w->bf;
        const bfpair *k = kv_tile(kv, KV_K_ROWS, t, p->k), *v = kv_tile(kv, KV_V_ROWS, t, p->v);
        if (r->kind == PROD_AMX) {
            amx_scores(w->Pt, k, p->qT, t); /* Q^T scaled */
            amx_scores(w->dSt, v, p->doT, t);
        } else {
            tile_scores_pairs(w->Pt, k, p->qT, r->scale, t); /* S^T = scale K Q^T */
            tile_scores_pairs(w->dSt, v, p->doT, 1, t);      /* dP^T = V dO^T */
        }
    }
    hide_keys(w->Pt, t);
    softmax_grad(w, t, r->kind != PROD_F32, r->kind == PROD_AMX ? r->scale : 1); /* AMX: dS scaled */
}

/* dQ += scale dS K for tile t (written, not added, when add is false); with AMX into dQ^T (w->bf.dqT) */
static void tile_dq(BwdTask* w, const BwdRows* r, Tile t, bool add) {
    if (r->kind == PROD_F32) {
        tile_by_keys(r->dqb, r->qs, w->dSt, kv_rows(&r->kv, KV_K_ROWS, t), r->kv.ks, r->scale, add, t);
        return;
    }
    BwdPairs* p = &w->bf;
    const bfpair* k = kv_tile(&r->kv, KV_K_COLS, t, p->kp);
    if (r->kind == PROD_AMX) amx_by_keys(p->dqT, p->kT, k, p->dsp, add, t); /* dS scaled */
    else tile_by_keys_pairs(r->dqb, r->qs, p->dsp, k, r->scale, add, t);
}

/* dK += scale dS^T Q and dV += P^T dO for tile t (written, not added, when add is false) */
static void tile_dkv(BwdTask* w, const BwdRows* r, Tile t, bool add) {
    size_t qs = r->qs;
    real *dk = r->dkb + t.j0 * r->dks, *dv = r->dvb + t.j0 * r->dks;
    if (r->kind == PROD_F32) {
        tile_by_queries(dk, r->dks, w->dSt, r->qb, qs, r->scale, add, t);
        tile_by_queries(dv, r->dks, w->Pt, r->dob, qs, 1, add, t);
        return;
    }
    BwdPairs* p = &w->bf;
    if (r->kind == PROD_AMX) {
        amx_by_queries(dk, r->dks, p->ds, p->q, add, t); /* dS scaled */
        amx_by_queries(dv, r->dks, p->p, p->dO, add, t);
        return;
    }
    tile_by_queries_pairs(dk, r->dks, p->ds, p->q, r->scale, add, t);
    tile_by_queries_pairs(dv, r->dks, p->p, p->dO, 1, add, t);
}

/* With AttnIn.dkv, kv head g of batch row b sums its dK rows (T, hd) and then its dV rows there, dense, and
   dkv_copy_out copies them into dk and dv when its task is done. On AMX, summing in place in dk and dv (rows
   strided by the other heads') made the backward 1.3-1.4x slower (docs/cpus.md, "The fourth session"). */
static real* dkv_rows(const AttnIn* a, size_t b, size_t g) { return a->dkv + (b * a->KVH + g) * 2 * a->T * a->hd; }

/* rows [j0, j1) of kv head g's dK and dV in batch row b, from its dense rows into dk and dv. Inlined: as a
   function of its own (or with memcpy) the AMX backward measured 1.15-1.3x slower, for reasons not found
   (docs/cpus.md, "The fourth session"). */
ATT_INLINE void dkv_copy_out(const AttnGrads* gr, const AttnIn* a, size_t b, size_t g, size_t j0, size_t j1) {
    if (!a->dkv) return;
    size_t T = a->T, hd = a->hd, ks = a->KVH * hd;
    const real* dense = dkv_rows(a, b, g);
    for (size_t j = j0; j < j1; j++) {
        real *dk = gr->dk + (b * T + j) * ks + g * hd, *dv = gr->dv + (b * T + j) * ks + g * hd;
        for (size_t d = 0; d < hd; d++) dk[d] = dense[j * hd + d];
        for (size_t d = 0; d < hd; d++) dv[d] = dense[(T + j) * hd + d];
    }
}

/* A query block's rows (query rows [t0, t0 + *nq) of head h in batch row b) for the backward: its BwdRows,
   q and dO transposed into w, each row's lse and delta = dO·O (over hd, not the model width); its document
   starts in *st (NULL without a mask). Returns the first key block it sees: blocks before it are other
   documents (or out of the window). */
static size_t query_block_setup(BwdTask* w, BwdRows* r, const AttnGrads* gr, const AttnIn* a, size_t b, size_t h,
                                size_t t0, size_t* nq, const int32_t** st) {
    size_t T = a->T, hd = a->hd, qs = a->H * hd, ks = a->KVH * hd, g = h / (a->H / a->KVH);
    size_t row0 = (b * T + t0) * qs + h * hd, kv0 = b * T * ks + g * hd;
    *nq = t0 + ATT_BQ < T ? ATT_BQ : T - t0;
    real* dense = a->dkv ? dkv_rows(a, b, g) : NULL;
    *r = (BwdRows){.qb = a->q + row0,
                   .dob = gr->dout + row0,
                   .kv = kv_head(a, b, g),
                   .dqb = gr->dq + row0,
                   .dkb = dense ? dense : gr->dk + kv0,
                   .dvb = dense ? dense + T * hd : gr->dv + kv0,
                   .qs = qs,
                   .dks = dense ? hd : ks,
                   .scale = a->scale,
                   .kind = block_kind(a, *nq)};
    if (r->kind == PROD_AMX) amx_begin();
    const real* ob = gr->out + row0;
    *st = a->docs ? a->docs->start + b * T + t0 : NULL;
    if (r->kind == PROD_AMX) { /* Q^T scaled: the scores' alpha */
        amx_pack_t(w->bf.qT, w->bf.kT, r->qb, qs, *nq, hd, a->scale);
        amx_pack_t(w->bf.doT, w->bf.kT, r->dob, qs, *nq, hd, 1);
    } else if (r->kind == PROD_PAIRS) {
        pack_row_pairs_t(w->bf.qT, ATT_BQ, r->qb, qs, *nq, hd);
        pack_row_pairs_t(w->bf.doT, ATT_BQ, r->dob, qs, *nq, hd);
    }
    if (r->kind != PROD_F32) {
        pack_column_pairs(w->bf.q, hd, r->qb, qs, *nq, hd, 1);
        pack_column_pairs(w->bf.dO, hd, r->dob, qs, *nq, hd, 1);
    } else {
        transpose_block(w->qT, r->qb, *nq, qs, hd, a->scale);
        transpose_block(w->doT, r->dob, *nq, qs, hd, 1);
    }
    for (size_t i = 0; i < *nq; i++) {
        real dl = 0;
#pragma omp simd reduction(+ : dl)
        for (size_t d = 0; d < hd; d++) dl += r->dob[i * qs + d] * ob[i * qs + d];
        w->delta[i] = dl;
        w->l[i] = gr->lse[(b * T + t0 + i) * a->H + h];
    }
    return *st ? (size_t)(*st)[0] / ATT_BK * ATT_BK : 0;
}

/* Accumulation order, the same in both ways of running the backward below (so they give the same bits): a
   query block's dQ rows over its key blocks in order, the first written; a key block's dK, dV rows over the
   group's heads in order, and for each over the query blocks that see it in order, the first (the first
   head's diagonal tile, which no earlier tile reaches) written. Nothing is cleared first. */

/* backward for query rows [t0, ..) of head h in batch row b, against every key block they see: dQ, and with
   dkv dK and dV. Like the forward it works on S^T (keys × queries) with the query block transposed once. */
static void backward_query_block(BwdTask* w, const AttnGrads* gr, const AttnIn* a, size_t b, size_t h, size_t t0,
                                 bool dkv) {
    BwdRows r;
    size_t nq, group = a->H / a->KVH, g = h / group;
    const int32_t* st;
    size_t jfirst = query_block_setup(w, &r, gr, a, b, h, t0, &nq, &st);
    for (size_t j0 = jfirst; j0 < t0 + nq; j0 += ATT_BK) {
        Tile t = tile_at(t0, nq, j0, a->hd, st);
        tile_probs(w, &r, t);
        tile_dq(w, &r, t, j0 != jfirst);
        if (dkv) tile_dkv(w, &r, t, !(h == g * group && j0 == t0));
    }
    if (r.kind != PROD_AMX) return;
    amx_end();
    for (size_t i = 0; i < nq; i++) /* dQ from dQ^T */
        for (size_t d = 0; d < a->hd; d++) r.dqb[i * r.qs + d] = w->bf.dqT[d * ATT_BQ + i];
}

/* backward for kv head g of batch row b: all its query heads and query blocks, in order */
static void backward_group(const AttnGrads* gr, const AttnIn* a, size_t b, size_t g) {
    size_t group = a->H / a->KVH;
    BwdTask w;
    for (size_t h = g * group; h < (g + 1) * group; h++)
        for (size_t t0 = 0; t0 < a->T; t0 += ATT_BQ) backward_query_block(&w, gr, a, b, h, t0, true);
    dkv_copy_out(gr, a, b, g, 0, a->T);
}

/* Split in two, for more tasks than (batch, kv head) pairs: dK and dV of key block j0 of kv head g (every
   query block of the group's heads that sees it), then, apart, dQ of one query block (backward_query_block
   without dkv). Each tile's P and dS are computed in both (seven products instead of five). */
static void backward_key_block(const AttnGrads* gr, const AttnIn* a, size_t b, size_t g, size_t j0) {
    size_t group = a->H / a->KVH;
    BwdTask w;
    BwdRows r;
    for (size_t h = g * group; h < (g + 1) * group; h++)
        for (size_t t0 = j0; t0 < a->T; t0 += ATT_BQ) {
            size_t nq;
            const int32_t* st;
            if (a->docs && (size_t)a->docs->start[b * a->T + t0] / ATT_BK * ATT_BK > j0)
                continue; /* this query block sees no key of block j0 (nor do later ones) */
            query_block_setup(&w, &r, gr, a, b, h, t0, &nq, &st);
            Tile t = tile_at(t0, nq, j0, a->hd, st);
            tile_probs(&w, &r, t);
            tile_dkv(&w, &r, t, !(h == g * group && j0 == t0));
            if (r.kind == PROD_AMX) amx_end();
        }
    dkv_copy_out(gr, a, b, g, j0, j0 + ATT_BK < a->T ? j0 + ATT_BK : a->T);
}

void attention_backward_by(real* dq, real* dk, real* dv, const real* dout, const real* out, const real* lse,
                           const AttnIn3 in, const AttnShape* s, bool by_blocks) {
    AttnIn a = attn_in(in.q, in.k, in.v, s);
    kv_pack_all(&a, 1u << KV_K_ROWS | 1u << KV_V_ROWS | 1u << KV_K_COLS);
    AttnGrads gr = {dq, dk, dv, dout, out, lse};
    size_t B = s->B, H = s->H, KVH = s->KVH, nb = (s->T + ATT_BQ - 1) / ATT_BQ;
    if (!by_blocks) {
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
        for (size_t b = 0; b < B; b++)
            for (size_t g = 0; g < KVH; g++) backward_group(&gr, &a, b, g);
        return;
    }
    /* earlier key blocks are seen by more query blocks, later query blocks see more keys: dynamic */
#pragma omp parallel for collapse(3) schedule(dynamic, 1)
    for (size_t b = 0; b < B; b++)
        for (size_t g = 0; g < KVH; g++)
            for (size_t kb = 0; kb < nb; kb++) backward_key_block(&gr, &a, b, g, kb * ATT_BK);
#pragma omp parallel for collapse(3) schedule(dynamic, 1)
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t qb = 0; qb < nb; qb++) {
                BwdTask w;
                backward_query_block(&w, &gr, &a, b, h, qb * ATT_BQ, false);
            }
}

void attention_backward(real* dq, real* dk, real* dv, const real* dout, const real* out, const real* lse, const real* q,
                        const real* k, const real* v, const AttnShape* s) {
    /* one task per (batch, kv head) leaves threads idle when there are fewer pairs than threads (the 1B shape at
       batch 1 has 16); the split spreads over every thread but does about 1.5x the work (seven products for
       five, and each query block set up once per key block: docs/threads.md), so it runs when the pairs are
       fewer than 2/3 of the threads. The same bits either way. */
    bool by_blocks = s->B * s->KVH * 3 < 2 * threads_max();
    attention_backward_by(dq, dk, dv, dout, out, lse, (AttnIn3){q, k, v}, s, by_blocks);
}

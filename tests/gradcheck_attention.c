/* Gradient-check problems for the attention kernel (tests/gradcheck.h): causal GQA, document masking across
   block edges, sliding windows and the query_pre_attn_scalar scale of Gemma-3. */
#include <math.h>
#include <stdlib.h>

#include "common/check.h"
#include "model/attention.h"
#include "tests/gradcheck_op.h"

/* ---- attention: causal GQA, optionally masked to documents or a sliding window (starts (B,T) in c->ints),
   scores scaled by hd^-1/2 or by query_pre_attn_scalar^-1/2 (dims[6] > 0, Gemma-3) ---- */
static real att_scale(const OpCtx* c) { return (real)(1 / sqrt((double)(c->dims[6] ? c->dims[6] : c->dims[4]))); }
/* the problem's shape; d: the mask's view of c->ints */
static AttnShape att_shape(const OpCtx* c, DocSpans* d) {
    *d = (DocSpans){c->ints};
    return (AttnShape){c->dims[0],   c->dims[1],         c->dims[2], c->dims[3], c->dims[4],
                       att_scale(c), c->ints ? d : NULL, false,      false,      NULL};
}
static double att_loss(Problem* p) {
    OpCtx* c = p->ctx;
    DocSpans d;
    AttnShape s = att_shape(c, &d);
    attention_forward(c->out, c->work[0], c->in[0], c->in[1], c->in[2], &s);
    return gc_project(c->out, c->proj, s.B * s.T * s.H * s.hd);
}
static void att_grad(Problem* p) {
    OpCtx* c = p->ctx;
    DocSpans d;
    AttnShape s = att_shape(c, &d);
    zero_grads(p);
    att_loss(p);
    attention_backward(p->dx[0], p->dx[1], p->dx[2], c->proj, c->out, c->work[0], c->in[0], c->in[1], c->in[2], &s);
}
/* doc_lens: NULL (causal), or per row the document lengths, 0-terminated, summing to T */
static OpCtx* setup_attention(Problem* out, Rng* rng, const char* name, size_t B, size_t T, size_t H, size_t KVH,
                              size_t hd, const size_t (*doc_lens)[8]) {
    OpCtx* c = new_problem(out, name);
    c->dims[0] = B;
    c->dims[1] = T;
    c->dims[2] = H;
    c->dims[3] = KVH;
    c->dims[4] = hd;
    c->in[0] = gc_random(rng, B * T * H * hd, -1.5, 1.5);
    c->in[1] = gc_random(rng, B * T * KVH * hd, -1.5, 1.5);
    c->in[2] = gc_random(rng, B * T * KVH * hd, -1, 1);
    c->out = gc_random(rng, B * T * H * hd, 0, 0);
    c->work[0] = gc_random(rng, B * T * H, 0, 0);
    c->proj = gc_random(rng, B * T * H * hd, -1, 1);
    if (doc_lens) { /* ids 7, 7, 7, 2, 2, 9, ...: any values, a new run is a new document */
        int32_t* ids = mallocCheck(B * T * sizeof(int32_t));
        for (size_t b = 0, n = 0; b < B; b++) {
            size_t t = 0;
            for (size_t i = 0; doc_lens[b][i]; i++)
                for (size_t j = 0; j < doc_lens[b][i]; j++, t++) ids[n++] = (int32_t)(i % 2 ? 2 : 7 + b + i);
            CHECK(t == T, "attention gradcheck: documents of row %zu sum to %zu, not T = %zu", b, t, T);
        }
        c->ints = mallocCheck(B * T * sizeof(int32_t));
        doc_starts_from_ids(c->ints, ids, B, T);
        free(ids);
    }
    gc_add(out, "q", c->in[0], B * T * H * hd);
    gc_add(out, "k", c->in[1], B * T * KVH * hd);
    gc_add(out, "v", c->in[2], B * T * KVH * hd);
    out->loss = att_loss;
    out->grad = att_grad;
    return c;
}

/* a sliding window of `window` keys over the problem's documents (or plain causal rows); scalar: dims[6] */
static void set_window(OpCtx* c, size_t window, size_t scalar) {
    size_t B = c->dims[0], T = c->dims[1];
    int32_t* start = mallocCheck(B * T * sizeof(int32_t));
    window_starts(start, c->ints, B, T, window);
    free(c->ints);
    c->ints = start;
    c->dims[6] = scalar;
}
size_t build_attention(Problem* out, size_t max, Rng* rng) {
    setup_attention(&out[0], rng, "attention (B=2, T=5, H=4, KVH=2 grouped, hd=4)", 2, 5, 4, 2, 4, NULL);
    setup_attention(&out[1], rng, "attention (B=1, T over one block, H=2, KVH=2)", 1, ATT_BLOCK_MAX + 6, 2, 2, 4, NULL);
    static const size_t small[2][8] = {{2, 1, 2, 0}, {1, 3, 1, 0}};
    setup_attention(&out[2], rng, "attention, 3 documents per row (T=5, GQA 4/2)", 2, 5, 4, 2, 4, small);
    /* block edges at multiples of ATT_BLOCK_MAX (model/attention.h), which are edges for every block size:
       a 4-token document across the first, one across the second, and the query block from the second starts
       in a document that starts after the first, so it skips key block 0 whole. hd 2: the finite differences
       cost T^3 (each of ~T inputs reruns a T^2 forward), and this T is 268 */
    static const size_t packed[1][8] = {{3, ATT_BLOCK_MAX - 6, 4, ATT_BLOCK_MAX + 2, 9, 0}};
    setup_attention(&out[3], rng, "attention, 5 documents across block edges (GQA 2/1, hd 2)", 1,
                    2 * ATT_BLOCK_MAX + 12, 2, 1, 2, packed);
    /* hd 20: the tile kernel's vector columns (2 vectors of 8 doubles with AVX-512, 5 of 4 with AVX2) and
       its single-column tail, on partial query and key blocks */
    setup_attention(&out[4], rng, "attention (B=1, T=70, H=1, hd=20)", 1, 70, 1, 1, 20, NULL);
    if (max < 7) return 5;
    /* Gemma-3: a sliding window of 3 keys with query_pre_attn_scalar 10; one of 5 over 3 documents per row */
    set_window(
        setup_attention(&out[5], rng, "attention, sliding window 3, scale 10^-1/2 (T=7, GQA 4/2)", 2, 7, 4, 2, 4, NULL),
        3, 10);
    static const size_t docs[2][8] = {{4, 2, 6, 0}, {9, 3, 0}};
    set_window(
        setup_attention(&out[6], rng, "attention, sliding window 5 within documents (T=12)", 2, 12, 2, 1, 4, docs), 5,
        0);
    return 7;
}

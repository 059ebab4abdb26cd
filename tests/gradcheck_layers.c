/* Gradient-check problems for the single ops (tests/gradcheck.h): embedding,
   rmsnorm, linear, bias, lora, rope (with and without YaRN), repo, swiglu, geglu, xent (attention: gradcheck_attention.c),
   and two problems the checker must reject: the deliberately wrong RMSNorm
   backward and a pole inside the finite-difference stencil. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "model/bias.h"
#include "model/embedding.h"
#include "model/linear.h"
#include "model/lora.h"
#include "model/repo.h"
#include "model/rmsnorm.h"
#include "model/rope.h"
#include "model/swiglu.h"
#include "model/xent.h"
#include "tests/gradcheck.h"

#include "tests/gradcheck_op.h"

static void free_op(Problem* p) {
    OpCtx* c = p->ctx;
    for (int i = 0; i < 8; i++) free(c->in[i]);
    for (int i = 0; i < 4; i++) free(c->work[i]);
    free(c->out);
    free(c->out2);
    free(c->proj);
    free(c->proj2);
    free(c->ints);
    free(c);
}

OpCtx* new_problem(Problem* p, const char* name) {
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", name);
    OpCtx* c = callocCheck(1, sizeof(OpCtx));
    p->ctx = c;
    p->free_ctx = free_op;
    return c;
}

void zero_grads(Problem* p) {
    for (size_t t = 0; t < p->n_tensors; t++) memset(p->dx[t], 0, p->n[t] * sizeof(real));
}

/* ---- embedding: out (N,C) = table[tokens], or sqrt(C) table[tokens] (dims[2] = 1: Gemma-3's scale) ---- */
static real emb_scale(const OpCtx* c) { return (real)(c->dims[2] ? sqrt((double)c->dims[1]) : 1.0); }
static double emb_loss(Problem* p) {
    OpCtx* c = p->ctx;
    size_t N = c->dims[0], C = c->dims[1];
    embedding_forward(c->out, c->ints, c->in[0], emb_scale(c), N, C);
    return gc_project(c->out, c->proj, N * C);
}
static void emb_grad(Problem* p) {
    OpCtx* c = p->ctx;
    zero_grads(p);
    if (c->dims[2]) embedding_backward_pad(p->dx[0], c->proj, c->ints, emb_scale(c), c->dims[0], c->dims[1], -1);
    else embedding_backward(p->dx[0], c->proj, c->ints, c->dims[0], c->dims[1]);
}
static size_t build_embedding(Problem* out, size_t max, Rng* rng) {
    OpCtx* c = new_problem(out, "embedding (V=7, C=5, N=9, repeated tokens)");
    size_t V = 7, C = 5, N = 9;
    c->dims[0] = N;
    c->dims[1] = C;
    c->in[0] = gc_random(rng, V * C, -1, 1);
    c->ints = mallocCheck(N * sizeof(int32_t));
    for (size_t n = 0; n < N; n++) c->ints[n] = (int32_t)(n < 6 ? rng_below(rng, V) : 2); /* token 2 repeats */
    c->out = gc_random(rng, N * C, 0, 0);
    c->proj = gc_random(rng, N * C, -1, 1);
    gc_add(out, "table", c->in[0], V * C);
    out->loss = emb_loss;
    out->grad = emb_grad;
    if (max < 2) return 1;
    OpCtx* s = new_problem(&out[1], "embedding scaled by sqrt(C) (Gemma-3; V=7, C=5, N=9)");
    *s = *c; /* the same table, tokens and projection, copied */
    s->in[0] = gc_random(rng, V * C, -1, 1);
    s->ints = mallocCheck(N * sizeof(int32_t));
    memcpy(s->ints, c->ints, N * sizeof(int32_t));
    s->out = gc_random(rng, N * C, 0, 0);
    s->proj = gc_random(rng, N * C, -1, 1);
    s->dims[2] = 1;
    gc_add(&out[1], "table", s->in[0], V * C);
    out[1].loss = emb_loss;
    out[1].grad = emb_grad;
    return 2;
}

/* ---- rmsnorm: out = (w + off) ⊙ x r, off = dims[2] (Gemma-3: 1) ---- */
static double rms_loss(Problem* p) {
    OpCtx* c = p->ctx;
    rmsnorm_forward(c->out, c->work[0], c->in[0], (NormGain){c->in[1], (real)c->dims[2]}, c->dims[0], c->dims[1], 1e-5);
    return gc_project(c->out, c->proj, c->dims[0] * c->dims[1]);
}
static void rms_grad(Problem* p) {
    OpCtx* c = p->ctx;
    zero_grads(p);
    rms_loss(p);
    rmsnorm_backward(p->dx[0], p->dx[1], c->proj, c->in[0], (NormGain){c->in[1], (real)c->dims[2]}, c->work[0],
                     c->work[1], c->dims[0], c->dims[1], false);
}
static OpCtx* setup_rmsnorm(Problem* out, Rng* rng, const char* name, size_t N, size_t C) {
    OpCtx* c = new_problem(out, name);
    c->dims[0] = N;
    c->dims[1] = C;
    c->in[0] = gc_random(rng, N * C, -2, 2);
    c->in[1] = gc_random(rng, C, 0.5, 1.5);
    c->out = gc_random(rng, N * C, 0, 0);
    c->work[0] = gc_random(rng, N, 0, 0);
    c->work[1] = gc_random(rng, RMSNORM_CHUNKS * C, 0, 0);
    c->proj = gc_random(rng, N * C, -1, 1);
    gc_add(out, "inp", c->in[0], N * C);
    gc_add(out, "weight", c->in[1], C);
    out->loss = rms_loss;
    return c;
}
static size_t build_rmsnorm(Problem* out, size_t max, Rng* rng) {
    setup_rmsnorm(&out[0], rng, "rmsnorm (N=4, C=6)", 4, 6);
    out[0].grad = rms_grad;
    if (max < 2) return 1;
    setup_rmsnorm(&out[1], rng, "rmsnorm (N=70, C=5: 32 row chunks, the last short or empty)", 70, 5);
    out[1].grad = rms_grad;
    if (max < 3) return 2;
    OpCtx* g = setup_rmsnorm(&out[2], rng, "rmsnorm x r (1 + w), Gemma-3 (N=6, C=7, w around 0)", 6, 7);
    for (size_t i = 0; i < 7; i++) g->in[1][i] -= 1; /* w in [-0.5, 0.5]: the scale 1 + w around 1 */
    g->dims[2] = 1;
    out[2].grad = rms_grad;
    return 3;
}

/* The deliberately wrong backward: RMSNorm's input gradient without the
   projection term x r³ (g·x)/C. The checker must FAIL on it. */
static void rms_wrong_grad(Problem* p) {
    OpCtx* c = p->ctx;
    size_t N = c->dims[0], C = c->dims[1];
    zero_grads(p);
    rms_loss(p);
    for (size_t n = 0; n < N; n++)
        for (size_t i = 0; i < C; i++) {
            p->dx[0][n * C + i] += c->work[0][n] * c->proj[n * C + i] * c->in[1][i];
            p->dx[1][i] += c->proj[n * C + i] * c->in[0][n * C + i] * c->work[0][n];
        }
}
static size_t build_rmsnorm_wrong(Problem* out, size_t max, Rng* rng) {
    setup_rmsnorm(out, rng, "rmsnorm-wrong (deliberately wrong backward: no projection term)", 4, 6);
    out->grad = rms_wrong_grad;
    return 1;
}

/* ---- linear: out (N,OC) = inp W^T ---- */
static double lin_loss(Problem* p) {
    OpCtx* c = p->ctx;
    linear_forward(NULL, c->out, c->in[0], c->in[1], c->dims[0], c->dims[1], c->dims[2]);
    return gc_project(c->out, c->proj, c->dims[0] * c->dims[2]);
}
static void lin_grad(Problem* p) {
    OpCtx* c = p->ctx;
    zero_grads(p);
    linear_backward(NULL, p->dx[0], p->dx[1], c->proj, c->in[0], c->in[1], c->dims[0], c->dims[1], c->dims[2], false);
}
static size_t build_linear(Problem* out, size_t max, Rng* rng) {
    OpCtx* c = new_problem(out, "linear (N=4, C=5, OC=3)");
    size_t N = 4, C = 5, OC = 3;
    c->dims[0] = N;
    c->dims[1] = C;
    c->dims[2] = OC;
    c->in[0] = gc_random(rng, N * C, -1, 1);
    c->in[1] = gc_random(rng, OC * C, -1, 1);
    c->out = gc_random(rng, N * OC, 0, 0);
    c->proj = gc_random(rng, N * OC, -1, 1);
    gc_add(out, "inp", c->in[0], N * C);
    gc_add(out, "weight", c->in[1], OC * C);
    out->loss = lin_loss;
    out->grad = lin_grad;
    return 1;
}

/* ---- bias: out (N,C) = inp + b on every row; C = 67 spans two of the backward's column blocks ---- */
static double bias_loss(Problem* p) {
    OpCtx* c = p->ctx;
    size_t N = c->dims[0], C = c->dims[1];
    memcpy(c->out, c->in[0], N * C * sizeof(real));
    bias_forward(c->out, c->in[1], N, C);
    return gc_project(c->out, c->proj, N * C);
}
static void bias_grad(Problem* p) {
    OpCtx* c = p->ctx;
    size_t N = c->dims[0], C = c->dims[1];
    zero_grads(p);
    memcpy(p->dx[0], c->proj, N * C * sizeof(real)); /* d inp = dout */
    bias_backward(p->dx[1], c->proj, N, C);
}
static size_t build_bias(Problem* out, size_t max, Rng* rng) {
    OpCtx* c = new_problem(out, "bias (N=5, C=67)");
    size_t N = 5, C = 67;
    c->dims[0] = N;
    c->dims[1] = C;
    c->in[0] = gc_random(rng, N * C, -1, 1);
    c->in[1] = gc_random(rng, C, -1, 1);
    c->out = gc_random(rng, N * C, 0, 0);
    c->proj = gc_random(rng, N * C, -1, 1);
    gc_add(out, "inp", c->in[0], N * C);
    gc_add(out, "bias", c->in[1], C);
    out->loss = bias_loss;
    out->grad = bias_grad;
    return 1;
}

/* ---- lora: out (N,OC) = inp W^T + s (x A^T) B^T, x = inp or its dropout (a fixed mask: dims[4] = 1) ---- */
static const LoraDropout* lora_drop(OpCtx* c, LoraDropout* d) {
    *d = (LoraDropout){0.4, 0x5eedull, c->work[2]};
    return c->dims[4] ? d : NULL;
}
/* the adapter of the problem: input in[0], A = in[2], B = in[3], scale 1.75, ax saved in work[0] */
static LoraOp lora_op(OpCtx* c, LoraDropout* d) {
    return (LoraOp){.inp = c->in[0],
                    .ax = c->work[0],
                    .A = c->in[2],
                    .B = c->in[3],
                    .scale = 1.75,
                    .drop = lora_drop(c, d),
                    .N = c->dims[0],
                    .C = c->dims[1],
                    .OC = c->dims[2],
                    .r = c->dims[3]};
}
static double lora_loss(Problem* p) {
    OpCtx* c = p->ctx;
    size_t N = c->dims[0], C = c->dims[1], OC = c->dims[2];
    LoraDropout d;
    LoraOp op = lora_op(c, &d);
    linear_forward(NULL, c->out, c->in[0], c->in[1], N, C, OC);
    lora_forward(NULL, c->out, OC, &op);
    return gc_project(c->out, c->proj, N * OC);
}
static void lora_grad(Problem* p) {
    OpCtx* c = p->ctx;
    size_t N = c->dims[0], C = c->dims[1], OC = c->dims[2];
    LoraDropout d;
    LoraOp op = lora_op(c, &d);
    zero_grads(p);
    lora_loss(p);
    linear_backward(NULL, p->dx[0], p->dx[1], c->proj, c->in[0], c->in[1], N, C, OC, false);
    lora_backward(NULL, p->dx[0], p->dx[2], p->dx[3], c->work[1], c->proj, OC, &op);
}
static void setup_lora(Problem* out, Rng* rng, const char* name, bool dropout) {
    OpCtx* c = new_problem(out, name);
    size_t N = 4, C = 5, OC = 3, r = 2;
    c->dims[0] = N;
    c->dims[1] = C;
    c->dims[2] = OC;
    c->dims[3] = r;
    c->dims[4] = dropout;
    c->in[0] = gc_random(rng, N * C, -1, 1);
    c->in[1] = gc_random(rng, OC * C, -1, 1);
    c->in[2] = gc_random(rng, r * C, -1, 1);
    c->in[3] = gc_random(rng, OC * r, -1, 1);
    c->out = gc_random(rng, N * OC, 0, 0);
    c->work[0] = gc_random(rng, N * r, 0, 0);
    c->work[1] = gc_random(rng, N * r, 0, 0);
    c->work[2] = gc_random(rng, N * C, 0, 0);
    c->proj = gc_random(rng, N * OC, -1, 1);
    gc_add(out, "inp", c->in[0], N * C);
    gc_add(out, "weight", c->in[1], OC * C);
    gc_add(out, "lora_A", c->in[2], r * C);
    gc_add(out, "lora_B", c->in[3], OC * r);
    out->loss = lora_loss;
    out->grad = lora_grad;
}
static size_t build_lora(Problem* out, size_t max, Rng* rng) {
    (void)max;
    setup_lora(&out[0], rng, "lora (N=4, C=5, OC=3, r=2, scale 1.75)", false);
    setup_lora(&out[1], rng, "lora with dropout 0.4 on its input (one fixed mask)", true);
    return 2;
}

/* ---- rope: q, k rotated in place by real positions; inputs copied first ---- */
static double rope_loss(Problem* p) {
    OpCtx* c = p->ctx;
    size_t N = c->dims[0], H = c->dims[1], KVH = c->dims[2], P = c->dims[3], hd = c->rope.hd;
    memcpy(c->out, c->in[0], N * H * hd * sizeof(real));
    memcpy(c->out2, c->in[1], N * KVH * hd * sizeof(real));
    rope_forward(c->out, c->out2, c->in[2], &c->rope, (RopeShape){N, H, KVH, P});
    return gc_project(c->out, c->proj, N * H * hd) + gc_project(c->out2, c->proj2, N * KVH * hd);
}
static void rope_grad(Problem* p) {
    OpCtx* c = p->ctx;
    size_t N = c->dims[0], H = c->dims[1], KVH = c->dims[2], P = c->dims[3];
    zero_grads(p);
    rope_loss(p);
    rope_backward(p->dx[0], p->dx[1], p->dx[2], c->proj, c->proj2, c->out, c->out2, c->in[2], &c->rope,
                  (RopeShape){N, H, KVH, P});
}
static void setup_rope(Problem* out, Rng* rng, const char* name, double yarn_factor, bool llama3) {
    OpCtx* c = new_problem(out, name);
    size_t N = 3, H = 4, KVH = 2, P = 2, hd = 8;
    c->dims[0] = N;
    c->dims[1] = H;
    c->dims[2] = KVH;
    c->dims[3] = P;
    rope_table_init(&c->rope, hd, 10000.0, yarn_factor, 8, 32, 1, 0);
    if (llama3) rope_table_llama3(&c->rope, 4.0, 1.0, 4.0, 64);
    c->in[0] = gc_random(rng, N * H * hd, -1, 1);
    c->in[1] = gc_random(rng, N * KVH * hd, -1, 1);
    c->in[2] = gc_random(rng, N * P, -3, 20); /* real, non-monotonic, some negative */
    c->out = gc_random(rng, N * H * hd, 0, 0);
    c->out2 = gc_random(rng, N * KVH * hd, 0, 0);
    c->proj = gc_random(rng, N * H * hd, -1, 1);
    c->proj2 = gc_random(rng, N * KVH * hd, -1, 1);
    gc_add(out, "q", c->in[0], N * H * hd);
    gc_add(out, "k", c->in[1], N * KVH * hd);
    gc_add(out, "positions", c->in[2], N * P);
    out->loss = rope_loss;
    out->grad = rope_grad;
}
static size_t build_rope(Problem* out, size_t max, Rng* rng) {
    setup_rope(&out[0], rng, "rope (N=3, H=4, KVH=2, one position per kv head, hd=8)", 1.0, false);
    setup_rope(&out[1], rng, "rope with YaRN (factor 2, original max 8: inv_freq ramp and scale m)", 2.0, false);
    /* wavelengths 6.3, 63, 628, 6283 against L0/high = 16 and L0/low = 64: kept, blended, divided, divided */
    setup_rope(&out[2], rng, "rope with llama3 (x4, L0 64: kept, blended, divided pairs)", 1.0, true);
    return 3;
}

/* ---- repo module: z = (silu(h Wg^T) ⊙ h Wc^T) Wz^T; Wg and Wc apart, or back to back in one tensor
   (as in a model's parameters: one product of twice the width) ---- */
static RepoWeights repo_w(const OpCtx* c) {
    size_t D = c->dims[1], dp = c->dims[2];
    bool joined = c->dims[4];
    return (RepoWeights){c->in[1], joined ? c->in[1] + dp * D : c->in[2], joined ? c->in[2] : c->in[3]};
}
static double repo_loss(Problem* p) {
    OpCtx* c = p->ctx;
    size_t N = c->dims[0], D = c->dims[1], dp = c->dims[2], P = c->dims[3];
    RepoActs s = {c->work[0], c->work[1]};
    RepoWeights w = repo_w(c);
    repo_forward(NULL, c->out, &s, c->in[0], &w, (RepoDims){N, D, dp, P});
    return gc_project(c->out, c->proj, N * P);
}
static void repo_grad(Problem* p) {
    OpCtx* c = p->ctx;
    size_t N = c->dims[0], D = c->dims[1], dp = c->dims[2], P = c->dims[3];
    zero_grads(p);
    repo_loss(p);
    RepoActs s = {c->work[0], c->work[1]};
    RepoWeights w = repo_w(c);
    RepoGrads dw =
        c->dims[4] ? (RepoGrads){p->dx[1], p->dx[1] + dp * D, p->dx[2]} : (RepoGrads){p->dx[1], p->dx[2], p->dx[3]};
    repo_backward(NULL, p->dx[0], &dw, c->proj, &s, c->in[0], &w, c->work[3], (RepoDims){N, D, dp, P});
}
static void setup_repo(Problem* out, Rng* rng, const char* name, bool joined) {
    OpCtx* c = new_problem(out, name);
    size_t N = 4, D = 16, dp = 2, P = 2;
    c->dims[0] = N;
    c->dims[1] = D;
    c->dims[2] = dp;
    c->dims[3] = P;
    c->dims[4] = joined;
    c->in[0] = gc_random(rng, N * D, -1, 1);
    gc_add(out, "h", c->in[0], N * D);
    if (joined) {
        c->in[1] = gc_random(rng, 2 * dp * D, -0.5, 0.5);
        c->in[2] = gc_random(rng, P * dp, -1, 1);
        gc_add(out, "gate_map; content_map (Wg; Wc)", c->in[1], 2 * dp * D);
        gc_add(out, "final_map (Wz)", c->in[2], P * dp);
    } else {
        c->in[1] = gc_random(rng, dp * D, -0.5, 0.5);
        c->in[2] = gc_random(rng, dp * D, -0.5, 0.5);
        c->in[3] = gc_random(rng, P * dp, -1, 1);
        gc_add(out, "gate_map (Wg)", c->in[1], dp * D);
        gc_add(out, "content_map (Wc)", c->in[2], dp * D);
        gc_add(out, "final_map (Wz)", c->in[3], P * dp);
    }
    c->out = gc_random(rng, N * P, 0, 0);
    c->work[0] = gc_random(rng, N * 2 * dp, 0, 0);
    c->work[1] = gc_random(rng, N * dp, 0, 0);
    c->work[3] = gc_random(rng, N * dp, 0, 0);
    c->proj = gc_random(rng, N * P, -1, 1);
    out->loss = repo_loss;
    out->grad = repo_grad;
}
static size_t build_repo(Problem* out, size_t max, Rng* rng) {
    setup_repo(&out[0], rng, "repo module (N=4, D=16, d_p=2, P=2 kv heads)", false);
    setup_repo(&out[1], rng, "repo module, Wg and Wc back to back (one product)", true);
    return 2;
}

/* ---- swiglu: out = silu(g) ⊙ u, g and u in separate buffers or side by side in rows [g | u] (RePo's module);
   the MLP's backward writes [dg | du] over [g | u] (dims[3] = 1) ---- */
static double swi_loss(Problem* p) {
    OpCtx* c = p->ctx;
    size_t rows = c->dims[0], cols = c->dims[1], ld = c->dims[2];
    const real* u = ld == cols ? c->in[1] : c->in[0] + cols;
    (c->dims[4] ? geglu_forward : swiglu_forward)(c->out, c->in[0], u, rows, cols, ld, NULL);
    return gc_project(c->out, c->proj, rows * cols);
}
static void swi_grad(Problem* p) {
    OpCtx* c = p->ctx;
    size_t rows = c->dims[0], cols = c->dims[1], ld = c->dims[2];
    real* du = ld == cols ? p->dx[1] : p->dx[0] + cols;
    const real* u = ld == cols ? c->in[1] : c->in[0] + cols;
    __typeof__(swiglu_backward)* backward = c->dims[4] ? geglu_backward : swiglu_backward;
    zero_grads(p);
    if (c->dims[3]) { /* in place: a copy of [g | u] in the gradient's buffer becomes [dg | du] */
        memcpy(p->dx[0], c->in[0], rows * ld * sizeof(real));
        backward(p->dx[0], du, c->proj, p->dx[0], du, rows, cols, ld, NULL);
        return;
    }
    backward(p->dx[0], du, c->proj, c->in[0], u, rows, cols, ld, NULL);
}
static OpCtx* setup_swiglu(Problem* out, Rng* rng, const char* name, size_t rows, size_t cols, bool side_by_side,
                           bool in_place) {
    OpCtx* c = new_problem(out, name);
    size_t n = rows * cols;
    c->dims[0] = rows;
    c->dims[1] = cols;
    c->dims[2] = side_by_side ? 2 * cols : cols;
    c->dims[3] = in_place;
    if (side_by_side) { /* rows [g | u]: g in [-4, 4], u in [-2, 2] */
        c->in[0] = gc_random(rng, 2 * n, -2, 2);
        for (size_t r = 0; r < rows; r++)
            for (size_t i = 0; i < cols; i++) c->in[0][r * 2 * cols + i] *= 2;
        gc_add(out, "gate | up", c->in[0], 2 * n);
    } else {
        c->in[0] = gc_random(rng, n, -4, 4);
        c->in[1] = gc_random(rng, n, -2, 2);
        gc_add(out, "gate", c->in[0], n);
        gc_add(out, "up", c->in[1], n);
    }
    c->out = gc_random(rng, n, 0, 0);
    c->proj = gc_random(rng, n, -1, 1);
    out->loss = swi_loss;
    out->grad = swi_grad;
    return c;
}
static size_t build_swiglu(Problem* out, size_t max, Rng* rng) {
    setup_swiglu(&out[0], rng, "swiglu (n=12)", 3, 4, false, false);
    setup_swiglu(&out[1], rng, "swiglu (3 rows [g | u] of 2 x 5)", 3, 5, true, false);
    setup_swiglu(&out[2], rng, "swiglu (3 rows [g | u] of 2 x 5, backward in place)", 3, 5, true, true);
    return 3;
}
/* ---- geglu: out = gelu_tanh(g) ⊙ u (Gemma-3's MLP), the swiglu problems with dims[4] = 1 ---- */
static size_t build_geglu(Problem* out, size_t max, Rng* rng) {
    setup_swiglu(&out[0], rng, "geglu (n=12)", 3, 4, false, false)->dims[4] = 1;
    setup_swiglu(&out[1], rng, "geglu (3 rows [g | u] of 2 x 5, backward in place)", 3, 5, true, true)->dims[4] = 1;
    return 2;
}

/* ---- xent: L = weighted mean over valid rows of CE + z_loss lse² (weights NULL = plain mean) ---- */
static double xent_loss(Problem* p) {
    OpCtx* c = p->ctx;
    return xent_forward(NULL, c->work[0], c->in[0], c->ints, c->work[1], c->dims[0], c->dims[1], c->z_loss, NULL);
}
static void xent_grad(Problem* p) {
    OpCtx* c = p->ctx;
    size_t N = c->dims[0], V = c->dims[1];
    XentSums sums;
    xent_forward(NULL, c->work[0], c->in[0], c->ints, c->work[1], N, V, c->z_loss, &sums);
    memcpy(p->dx[0], c->in[0], N * V * sizeof(real)); /* backward overwrites its buffer */
    xent_backward(p->dx[0], c->work[0], c->ints, c->work[1], N, V, c->z_loss, sums.weight, 1.0);
}
static void setup_xent(Problem* out, Rng* rng, const char* name, bool weighted) {
    OpCtx* c = new_problem(out, name);
    size_t N = 5, V = 7;
    c->dims[0] = N;
    c->dims[1] = V;
    c->z_loss = 0.01;
    c->in[0] = gc_random(rng, N * V, -3, 3);
    c->work[0] = gc_random(rng, N, 0, 0);
    c->work[1] = weighted ? gc_random(rng, N, 0.5, 20) : NULL; /* answer targets weigh up to 20 */
    c->ints = mallocCheck(N * sizeof(int32_t));
    for (size_t n = 0; n < N; n++) c->ints[n] = n == 2 ? -1 : (int32_t)rng_below(rng, V);
    gc_add(out, "logits", c->in[0], N * V);
    out->loss = xent_loss;
    out->grad = xent_grad;
}
static size_t build_xent(Problem* out, size_t max, Rng* rng) {
    setup_xent(&out[0], rng, "xent (N=5, V=7, one ignored target, z_loss 0.01)", false);
    setup_xent(&out[1], rng, "xent with per-target weights in [0.5, 20]", true);
    return 2;
}

/* ---- a pole in the stencil: L = Σ proj_i / x_i with x_0 = h (the default --step) ----
   The analytic gradient -proj_i / x_i² is finite everywhere, but L(x_0 - h) = ±Inf, so
   the numeric gradient of x_0 is infinite. The checker must FAIL, not compare with NaN. */
static double pole_loss(Problem* p) {
    OpCtx* c = p->ctx;
    double s = 0;
    for (size_t i = 0; i < c->dims[0]; i++) s += c->proj[i] / c->in[0][i];
    return s;
}
static void pole_grad(Problem* p) {
    OpCtx* c = p->ctx;
    for (size_t i = 0; i < c->dims[0]; i++) p->dx[0][i] = -c->proj[i] / (c->in[0][i] * c->in[0][i]);
}
static size_t build_pole(Problem* out, size_t max, Rng* rng) {
    OpCtx* c = new_problem(out, "pole (L = sum proj/x, x_0 = 2e-4: L(x_0 - h) is infinite)");
    size_t N = 6;
    c->dims[0] = N;
    c->in[0] = gc_random(rng, N, 1, 2);
    c->in[0][0] = 2e-4;
    c->proj = gc_random(rng, N, -1, 1);
    gc_add(out, "x", c->in[0], N);
    out->loss = pole_loss;
    out->grad = pole_grad;
    return 1;
}

size_t build_attention(Problem* out, size_t max, Rng* rng);
size_t build_block_olmo2(Problem* out, size_t max, Rng* rng);
size_t build_block_llama(Problem* out, size_t max, Rng* rng);
size_t build_block_qwen2(Problem* out, size_t max, Rng* rng);
size_t build_block_qwen3(Problem* out, size_t max, Rng* rng);
size_t build_qwen_model(Problem* out, size_t max, Rng* rng);
size_t build_block_gemma3(Problem* out, size_t max, Rng* rng);
size_t build_gemma3_model(Problem* out, size_t max, Rng* rng);
size_t build_block_mistral(Problem* out, size_t max, Rng* rng);
size_t build_mistral_model(Problem* out, size_t max, Rng* rng);
size_t build_model(Problem* out, size_t max, Rng* rng);
size_t build_lora_model(Problem* out, size_t max, Rng* rng);

const LayerEntry GC_LAYERS[] = {
    {"embedding", "token embedding and its scatter-add backward", build_embedding, 1},
    {"rmsnorm", "RMSNorm with weight (block norms, QK-norm, final norm)", build_rmsnorm, 1},
    {"linear", "y = x W^T through BLAS", build_linear, 1},
    {"lora", "y = x W^T + (alpha/r) (x A^T) B^T, the LoRA adapter on a linear", build_lora, 1},
    {"rope", "rotary positions with real positions per kv head; plain and YaRN", build_rope, 1},
    {"repo", "the RePo position module", build_repo, 1},
    {"attention", "causal attention with grouped-query heads", build_attention, 1},
    {"swiglu", "silu(gate) * up", build_swiglu, 1},
    {"xent", "softmax cross-entropy with ignored targets, z-loss and per-target weights", build_xent, 1},
    {"block-olmo2", "OLMo-2 block, one per position mode (rope, repo, nope)", build_block_olmo2, 1},
    {"block-llama", "Llama block with GQA, one per position mode", build_block_llama, 1},
    {"model", "tiny decoders mixing rope, repo and nope layers, GQA on", build_model, 1},
    {"lora-model", "tiny decoders with LoRA adapters on a frozen base (OLMo-2 and Llama)", build_lora_model, 1},
    {"rmsnorm-wrong", "a deliberately wrong backward; the check must FAIL", build_rmsnorm_wrong, 0},
    {"pole", "an infinite numeric gradient; the check must FAIL", build_pole, 0},
    /* after the others: each entry's random draws are keyed by its index, so adding these changed none */
    {"bias", "y = x + b per row, the projections' bias (Qwen)", build_bias, 1},
    {"block-qwen2", "Qwen2 block (q, k, v biases), one per position mode", build_block_qwen2, 1},
    {"block-qwen3", "Qwen3 block: per-head QK-norm, head_dim != D/H, attention_bias; per position mode",
     build_block_qwen3, 1},
    {"qwen-model", "tiny Qwen2 and Qwen3 decoders (biases, per-head QK-norm, RePo, LoRA)", build_qwen_model, 1},
    {"geglu", "gelu_tanh(gate) * up (Gemma-3)", build_geglu, 1},
    {"block-gemma3", "Gemma-3 block: four norms x r (1 + w), GeGLU, sliding window; per layer kind", build_block_gemma3,
     1},
    {"gemma3-model", "tiny Gemma-3 decoders (scaled embedding, sliding and global layers, RePo, documents, LoRA)",
     build_gemma3_model, 1},
    {"block-mistral", "Mistral block: Llama's with a sliding window on every layer; per position mode",
     build_block_mistral, 1},
    {"mistral-model", "tiny Mistral decoders (windows on every layer, documents)", build_mistral_model, 1},
};
const size_t GC_N_LAYERS = sizeof(GC_LAYERS) / sizeof(GC_LAYERS[0]);

/* Optimizer tests (optim/): AdamW groups and two steps against hand-computed
   values, sliced (sharded) state against the whole, frozen tensors, clipping, the non-finite check, the three schedules,
   and a global norm that is bit-identical across thread counts.
   Expected numbers are literals computed independently (Python, float64, the
   torch 1.13 formula), or a scalar double re-statement of the formula written
   here; nothing expected is computed by the code under test. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef OMP
#include <omp.h>
#endif

#include "common/check.h"
#include "common/rng.h"
#include "model/tensors.h"
#include "optim/adamw.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "tests/testutil.h"
#include "tests/optim_fixture.h"

/* ---- the tiny model: V=4 D=8 L=1 H=2 KVH=2 F=8, OLMo-2, one RePo layer, up_proj frozen ---- */
#define FROZEN "model.layers.0.mlp.up_proj.weight"

static void tiny_table(TensorTable* tt) { optim_tiny_table(tt, FROZEN); }

/* the hand-chosen values, tensor k (table index), element i */
static double w_init(size_t k, size_t i) { return 0.5 + 0.01 * k - 0.001 * i; }
static double g_step0(size_t k, size_t i) { return (i % 2 ? -1.0 : 1.0) * (0.1 + 0.01 * k + 0.001 * i); }
static double g_step1(size_t k, size_t i) { return -0.5 * g_step0(k, i) + 0.02; }

static void fill(const TensorTable* tt, real* params, real* grads, double (*g)(size_t, size_t)) {
    for (size_t k = 0; k < tt->n; k++) {
        const TensorInfo* t = &tt->t[k];
        for (size_t i = 0; i < t->numel; i++) {
            if (params) params[t->offset + i] = (real)w_init(k, i);
            if (grads && t->grad_offset != NO_GRAD) grads[t->grad_offset + i] = (real)g(k, i);
        }
    }
}

/* torch 1.13 AdamW on one scalar, in double, restated here independently:
   steps of (decay, m, v, bias-corrected update) with b1 .9, b2 .95, eps 1e-8 */
static double ref_adamw(double w, const double* g, size_t steps, double lr, double wd, int decay, double* m_out,
                        double* v_out) {
    double m = 0, v = 0;
    for (size_t s = 1; s <= steps; s++) {
        if (decay) w = w - lr * wd * w;
        m = 0.9 * m + 0.1 * g[s - 1];
        v = 0.95 * v + 0.05 * g[s - 1] * g[s - 1];
        w = w - lr / (1 - pow(0.9, (double)s)) * m / (sqrt(v) / sqrt(1 - pow(0.95, (double)s)) + 1e-8);
    }
    if (m_out) *m_out = m;
    if (v_out) *v_out = v;
    return w;
}

/* config A: the defaults with repo_lr_mult 10 and two lr_mult patterns */
static void config_a(OptimConfig* c) {
    optim_config_default(c);
    c->lr = 0.1;
    c->weight_decay = 0.1;
    c->beta1 = 0.9;
    c->beta2 = 0.95;
    c->eps = 1e-8;
    c->repo_lr_mult = 10.0;
    optim_config_add_lr_mult(c, "model.layers.0.self_attn.final_map.weight", 3.0); /* beats repo_lr_mult */
    optim_config_add_lr_mult(c, "model.layers.*.mlp.*", 0.5);
    optim_config_add_freeze(c, FROZEN);
}

/* index of a tensor that must exist */
static size_t idx(const TensorTable* tt, const char* name) {
    long k = tensor_table_find(tt, name);
    CHECK(k >= 0, "test: no tensor %s", name);
    return (size_t)k;
}

/* sizes, and the decay / lr_mult group of each kind of tensor under config A */
static void test_groups(void) {
    printf("adamw groups\n");
    TensorTable tt;
    tiny_table(&tt);
    OptimConfig c;
    config_a(&c);
    AdamW a;
    adamw_build(&a, &tt, &c);
    /* 570 params by hand: embed 32, q k v o 4x64, q/k norm 2x8, RePo 8+8+2, 2 norms 16,
       gate up down 3x64, final norm 8, lm_head 32; up_proj (64) frozen */
    EXPECT(tt.n_params == 570 && tt.n_grads == 506 && a.n == 506,
           "sizes: params %zu grads %zu state %zu "
           "(want 570, 506, 506)",
           tt.n_params, tt.n_grads, a.n);
    struct {
        const char* name;
        int decay;
        double mult;
    } want[] = {
        {"model.embed_tokens.weight", 0, 1.0},              /* embedding: no decay by default */
        {"lm_head.weight", 1, 1.0},                         /* an untied head decays (OLMo-2) */
        {"model.layers.0.self_attn.q_proj.weight", 1, 1.0}, /* matrix: decay */
        {"model.layers.0.self_attn.q_norm.weight", 1, 1.0}, /* norms decay by default */
        {"model.norm.weight", 1, 1.0},
        {"model.layers.0.self_attn.gate_map.weight", 1, 10.0}, /* RePo: repo_lr_mult */
        {"model.layers.0.self_attn.content_map.weight", 1, 10.0},
        {"model.layers.0.self_attn.final_map.weight", 1, 3.0}, /* first pattern wins */
        {"model.layers.0.mlp.down_proj.weight", 1, 0.5},
    };
    for (size_t j = 0; j < sizeof(want) / sizeof(want[0]); j++) {
        const AdamWTensor* at = &a.t[idx(&tt, want[j].name)];
        EXPECT(at->decay == (want[j].decay != 0) && at->lr_mult == want[j].mult,
               "%s: decay %d lr_mult %g "
               "(want %d, %g)",
               want[j].name, at->decay, at->lr_mult, want[j].decay, want[j].mult);
    }
    EXPECT(a.t[idx(&tt, FROZEN)].grad_offset == NO_GRAD, "%s has no gradient and no state", FROZEN);
    adamw_free(&a);
    tensor_table_free(&tt);
}

/* one probe: tensor, element, weight after step 0 and after step 1 (float64 Python
   literals), and the same two from torch 1.13.0's AdamW run in float32 (param
   groups lr 0.1*lr_mult, weight_decay 0.1 or 0), written as hex floats */
typedef struct {
    const char* name;
    size_t i;
    double w1, w2;
    float t1, t2;
} Probe;

/* steps 0 and 1 (bias corrections at t = 1 and 2) on every trainable tensor;
   the frozen one must not move */
static void test_two_steps(void) {
    printf("adamw: two steps (t = 1, 2), decay groups, lr_mult, frozen tensor\n");
    TensorTable tt;
    tiny_table(&tt);
    OptimConfig c;
    config_a(&c);
    AdamW a;
    adamw_build(&a, &tt, &c);
    real* params = arenaAlloc(tt.n_params * sizeof(real));
    real* grads = arenaAlloc(tt.n_grads * sizeof(real));
    real* before = mallocCheck(tt.n_params * sizeof(real));
    fill(&tt, params, grads, g_step0);
    memcpy(before, params, tt.n_params * sizeof(real));
    adamw_step(&a, params, grads, 0.1, 0, 1.0, false);
    real* after0 = mallocCheck(tt.n_params * sizeof(real));
    memcpy(after0, params, tt.n_params * sizeof(real));
    fill(&tt, NULL, grads, g_step1);
    adamw_step(&a, params, grads, 0.1, 1, 1.0, false);

    /* literals from float64 Python; e.g. q_proj[0]: 0.51*(1 - 0.1*0.1) - 0.1*0.11/(0.11 + 1e-8) */
    const Probe probes[] = {
        {"model.layers.0.self_attn.q_proj.weight", 0, 0.40490000909090829, 0.35914486203386015, /* decay */
         0x1.9e9e1ap-2f, 0x1.6fc3aap-2f},
        {"model.layers.0.self_attn.q_proj.weight", 1, 0.60390999099099174, 0.61146384911462903, 0x1.3533b0p-1f,
         0x1.3911cap-1f},
        {"model.embed_tokens.weight", 3, 0.59699999029126305, 0.60964179838989985, /* no decay */
         0x1.31a9fcp-1f, 0x1.3822f8p-1f},
        {"lm_head.weight", 7, 0.7464699962546818, 0.7601197290295918, 0x1.7e3152p-1f, 0x1.852e6ap-1f}, /* decay */
        {"model.layers.0.self_attn.q_norm.weight", 2, 0.44252000657894697, 0.40060012181809201,        /* norm decays */
         0x1.c523f8p-2f, 0x1.9a36ecp-2f},
        {"model.layers.0.self_attn.gate_map.weight", 0, -0.48699994117647405, -0.8016738690273898, /* lr x10 */
         -0x1.f2b024p-2f, -0x1.9a7502p-1f},
        {"model.layers.0.self_attn.final_map.weight", 1, 0.87132998429319453, 0.90195187499261964, /* lr x3 */
         0x1.be1ef6p-1f, 0x1.cdcca4p-1f},
        {"model.layers.0.mlp.down_proj.weight", 5, 0.68182499795918372, 0.68872339531211979, /* lr x0.5 */
         0x1.5d182ap-1f, 0x1.60a05ap-1f},
    };
    size_t np = sizeof(probes) / sizeof(probes[0]);
    double got[2][16], ref[2][16];
    for (size_t j = 0; j < np; j++) {
        const TensorInfo* t = &tt.t[idx(&tt, probes[j].name)];
        got[0][j] = after0[t->offset + probes[j].i];
        got[1][j] = params[t->offset + probes[j].i];
        ref[0][j] = probes[j].w1;
        ref[1][j] = probes[j].w2;
    }
    /* float32 weights below 1 (ulp <= 6e-8), a few roundings per step; lr x10 moves gate_map by ~1 */
    expect_close_each("step 0 (t=1) probes vs literals", got[0], ref[0], np, 1e-6, 1e-6);
    expect_close_each("step 1 (t=2) probes vs literals", got[1], ref[1], np, 1e-6, 1e-6);
#ifndef REPOC_F64
    /* the float build follows torch's kernels rounding for rounding (optim/adamw.c) */
    int same = 1;
    for (size_t j = 0; j < np; j++) {
        const TensorInfo* t = &tt.t[idx(&tt, probes[j].name)];
        same &= after0[t->offset + probes[j].i] == probes[j].t1 && params[t->offset + probes[j].i] == probes[j].t2;
    }
    EXPECT(same, "probes bit-identical to torch 1.13 AdamW in float32 after both steps (e.g. %a vs %a)",
           (double)params[tt.t[idx(&tt, probes[0].name)].offset], (double)probes[0].t2);
#endif

    /* every element of every trainable tensor against the scalar restatement; m and v
       sit at grad_offset in the gradient-arena layout */
    size_t n = tt.n_grads;
    double *gw = mallocCheck(n * sizeof(double)), *rw = mallocCheck(n * sizeof(double));
    double *gm = mallocCheck(n * sizeof(double)), *rm = mallocCheck(n * sizeof(double));
    double *gv = mallocCheck(n * sizeof(double)), *rv = mallocCheck(n * sizeof(double));
    for (size_t k = 0; k < tt.n; k++) {
        const TensorInfo* t = &tt.t[k];
        if (t->grad_offset == NO_GRAD) continue;
        int decay = t->kind != TK_EMBED; /* config A: norms and lm_head decay, embed_tokens not */
        double mult = t->is_repo ? 10.0 : 1.0;
        if (strstr(t->name, "final_map")) mult = 3.0;
        if (strstr(t->name, ".mlp.")) mult = 0.5;
        for (size_t i = 0; i < t->numel; i++) {
            size_t o = t->grad_offset + i;
            double g[2] = {(real)g_step0(k, i), (real)g_step1(k, i)}; /* the float values the step saw */
            rw[o] = ref_adamw((real)w_init(k, i), g, 2, 0.1 * mult, 0.1, decay, &rm[o], &rv[o]);
            gw[o] = params[t->offset + i];
            gm[o] = a.m[o];
            gv[o] = a.v[o];
        }
    }
    expect_close_each("all trainable weights after 2 steps vs scalar reference", gw, rw, n, 1e-6, 1e-6);
    expect_close_each("first moments m at grad_offset", gm, rm, n, 1e-8, 1e-6);
    expect_close_each("second moments v at grad_offset", gv, rv, n, 1e-10, 1e-6);

    const TensorInfo* up = &tt.t[idx(&tt, FROZEN)];
    EXPECT(!memcmp(params + up->offset, before + up->offset, up->numel * sizeof(real)),
           "frozen %s bit-identical after 2 steps", FROZEN);
    free(gw);
    free(rw);
    free(gm);
    free(rm);
    free(gv);
    free(rv);
    free(params);
    free(grads);
    free(before);
    free(after0);
    adamw_free(&a);
    tensor_table_free(&tt);
}

/* ZeRO-1 (the AdamW state sharded over data-parallel ranks): three optimizers over slices of the gradient arena, cut
   inside tensors and with a frozen tensor, step the same weights and hold the
   same moments as one optimizer over the whole arena, bit for bit */
static void test_slices(void) {
    printf("adamw: three slices of the state equal the whole state\n");
    TensorTable tt;
    tiny_table(&tt);
    OptimConfig c;
    config_a(&c);
    AdamW whole, part[3];
    adamw_build(&whole, &tt, &c);
    size_t cut[4] = {0, tt.n_grads / 3 + 1, 2 * tt.n_grads / 3 - 2, tt.n_grads};
    for (int p = 0; p < 3; p++) adamw_build_slice(&part[p], &tt, &c, cut[p], cut[p + 1]);
    real* params = arenaAlloc(tt.n_params * sizeof(real));
    real* sliced = arenaAlloc(tt.n_params * sizeof(real));
    real* grads = arenaAlloc(tt.n_grads * sizeof(real));
    fill(&tt, params, grads, g_step0);
    memcpy(sliced, params, tt.n_params * sizeof(real));
    for (size_t step = 0; step < 2; step++) {
        if (step) fill(&tt, NULL, grads, g_step1);
        adamw_step(&whole, params, grads, 0.1, step, 1.0, false);
        for (int p = 0; p < 3; p++) adamw_step(&part[p], sliced, grads, 0.1, step, 1.0, false);
    }
    int same_m = 1, same_v = 1;
    for (int p = 0; p < 3; p++) {
        size_t n = part[p].hi - part[p].lo;
        same_m &= !memcmp(part[p].m, whole.m + cut[p], n * sizeof(real));
        same_v &= !memcmp(part[p].v, whole.v + cut[p], n * sizeof(real));
    }
    EXPECT(!memcmp(params, sliced, tt.n_params * sizeof(real)),
           "weights after 2 steps bit-identical (slices "
           "[0, %zu) [%zu, %zu) [%zu, %zu))",
           cut[1], cut[1], cut[2], cut[2], cut[3]);
    EXPECT(same_m && same_v, "each slice's m and v bit-identical to that range of the whole state");
    size_t g0, g1;
    EXPECT(adamw_slice_part(&part[1], 0, cut[1] + 5, &g0, &g1) && g0 == cut[1] && g1 == cut[1] + 5 &&
               !adamw_slice_part(&part[1], 0, cut[1], &g0, &g1),
           "adamw_slice_part clips a range to the slice");
    for (int p = 0; p < 3; p++) adamw_free(&part[p]);
    adamw_free(&whole);
    free(params);
    free(sliced);
    free(grads);
    tensor_table_free(&tt);
}

/* decay_norms false: a norm takes the plain Adam step, a matrix still decays */
static void test_decay_norms_off(void) {
    printf("adamw: decay_norms = false\n");
    TensorTable tt;
    tiny_table(&tt);
    OptimConfig c;
    optim_config_default(&c);
    c.decay_norms = false;
    AdamW a;
    adamw_build(&a, &tt, &c);
    real* params = arenaAlloc(tt.n_params * sizeof(real));
    real* grads = arenaAlloc(tt.n_grads * sizeof(real));
    fill(&tt, params, grads, g_step0);
    adamw_step(&a, params, grads, 0.1, 0, 1.0, false);
    const TensorInfo* qn = &tt.t[idx(&tt, "model.layers.0.self_attn.q_norm.weight")];
    const TensorInfo* q = &tt.t[idx(&tt, "model.layers.0.self_attn.q_proj.weight")];
    /* q_norm[2]: 0.548 - 0.1*0.152/(0.152 + 1e-8); q_proj[0] as in the two-step test (decays) */
    double got[2] = {params[qn->offset + 2], params[q->offset]};
    double ref[2] = {0.44800000657894701, 0.40490000909090829};
    expect_close_each("q_norm undecayed, q_proj decayed", got, ref, 2, 1e-6, 1e-6);
    free(params);
    free(grads);
    adamw_free(&a);
    tensor_table_free(&tt);
}

/* exact small norms, the three clip cases, and the clip of the tiny model's arena */
static void test_clip(void) {
    printf("global norm and clipping\n");
    real x[3] = {3, 4, 12};
    EXPECT(grad_global_norm(x, 2) == 5.0 && grad_global_norm(x, 3) == 13.0 && grad_global_norm(x, 0) == 0.0,
           "norm of (3,4) = 5, of (3,4,12) = 13, of nothing = 0 (exact)");
    EXPECT(grad_clip_scale(10.0, 5.0) == 1.0, "max_norm 10 > norm 5: scale 1");
    EXPECT(grad_clip_scale(0.0, 5.0) == 1.0, "max_norm 0 (off): scale 1");
    EXPECT(grad_clip_scale(1.0, NAN) == 1.0, "NaN norm: scale 1 (the trainer stops on it)");
    double s = grad_clip_scale(1.0, 5.0);
    expect_close_each("max_norm 1, norm 5: scale 0.2", &s, (double[]){0.2}, 1, 0, 1e-15);

    /* the tiny model's gradient arena, every element 0.5: norm 0.5 sqrt(506) */
    TensorTable tt;
    tiny_table(&tt);
    real* grads = arenaAlloc(tt.n_grads * sizeof(real));
    for (size_t i = 0; i < tt.n_grads; i++) grads[i] = 0.5f;
    double norm = grad_global_norm(grads, tt.n_grads);
    s = grad_clip_scale(1.0, norm);
    for (size_t i = 0; i < tt.n_grads; i++) grads[i] *= (real)s;
    double got2[4] = {norm, s, grads[0], grad_global_norm(grads, tt.n_grads)};
    double ref2[4] = {11.247221879201993, 0.088910844894877412, 0.044455422447438706, 1.0};
    expect_close_each("arena of 506 x 0.5: norm, scale, element, norm after clip 1.0", got2, ref2, 4, 0, 1e-7);
    free(grads);
    tensor_table_free(&tt);
}

/* adamw_step's grad_scale and zero_grads, f32 and bf16 state, on a slice cut inside a tensor: the same weights
   and moments, bit for bit, as a step on gradients clipped beforehand; the slice's gradients left zero and
   every other element untouched */
static void test_scale_zero(void) {
    printf("adamw: the clip scale and zero_grad applied as the gradients are read\n");
    TensorTable tt;
    tiny_table(&tt);
    for (int bf16 = 0; bf16 < 2; bf16++) {
        OptimConfig c;
        config_a(&c);
        c.state_bf16 = bf16;
        size_t lo = tt.n_grads / 3 + 1, hi = tt.n_grads - 7;
        AdamW ref, got;
        adamw_build_slice(&ref, &tt, &c, lo, hi);
        adamw_build_slice(&got, &tt, &c, lo, hi);
        real* p_ref = arenaAlloc(tt.n_params * sizeof(real));
        real* p_got = arenaAlloc(tt.n_params * sizeof(real));
        real* g_ref = arenaAlloc(tt.n_grads * sizeof(real));
        real* g_got = arenaAlloc(tt.n_grads * sizeof(real));
        real* g_in = arenaAlloc(tt.n_grads * sizeof(real));
        fill(&tt, p_ref, g_in, g_step0);
        memcpy(p_got, p_ref, tt.n_params * sizeof(real));
        double scale = 0.3;
        bool same_w = true, zeroed = true, kept = true;
        for (size_t step = 0; step < 2; step++) {
            for (size_t i = 0; i < tt.n_grads; i++) g_ref[i] = g_in[i] * (real)scale; /* the old in-place clip */
            memcpy(g_got, g_in, tt.n_grads * sizeof(real));
            adamw_step(&ref, p_ref, g_ref, 0.1, step, 1.0, false);
            adamw_step(&got, p_got, g_got, 0.1, step, scale, true);
            same_w &= !memcmp(p_ref, p_got, tt.n_params * sizeof(real));
            for (size_t i = 0; i < tt.n_grads; i++) {
                if (i >= lo && i < hi) zeroed &= g_got[i] == 0;
                else kept &= !memcmp(&g_got[i], &g_in[i], sizeof(real));
            }
            if (!step) fill(&tt, NULL, g_in, g_step1);
        }
        size_t n = hi - lo, bytes = n * (bf16 ? 2 : sizeof(real));
        bool same_mv = bf16 ? !memcmp(ref.m16, got.m16, bytes) && !memcmp(ref.v16, got.v16, bytes)
                            : !memcmp(ref.m, got.m, bytes) && !memcmp(ref.v, got.v, bytes);
        EXPECT(same_w && same_mv, "%s state: weights, m and v after 2 steps as with gradients clipped by 0.3 first",
               bf16 ? "bf16" : "f32");
        EXPECT(zeroed && kept, "%s state: gradients [%zu, %zu) zeroed, the other %zu untouched", bf16 ? "bf16" : "f32",
               lo, hi, tt.n_grads - n);
        adamw_free(&ref);
        adamw_free(&got);
        free(p_ref);
        free(p_got);
        free(g_ref);
        free(g_got);
        free(g_in);
    }
    tensor_table_free(&tt);
}

/* the first bad tensor in table order, for the "gradient of <name> is NaN" stop */
static void test_nonfinite(void) {
    printf("non-finite gradients\n");
    TensorTable tt;
    tiny_table(&tt);
    real* grads = arenaAlloc(tt.n_grads * sizeof(real));
    fill(&tt, NULL, grads, g_step0);
    EXPECT(first_nonfinite_tensor(&tt, grads) == -1, "finite gradients: -1");
    size_t down = idx(&tt, "model.layers.0.mlp.down_proj.weight"), head = idx(&tt, "lm_head.weight");
    grads[tt.t[head].grad_offset + 31] = (real)INFINITY;
    EXPECT(first_nonfinite_tensor(&tt, grads) == (long)head, "Inf in lm_head[31]: lm_head (%zu)", head);
    grads[tt.t[down].grad_offset + 3] = (real)NAN;
    long k = first_nonfinite_tensor(&tt, grads);
    EXPECT(k == (long)down, "NaN in down_proj[3] too: the first, %s", k >= 0 ? tt.t[k].name : "none");
    EXPECT(!isfinite(grad_global_norm(grads, tt.n_grads)), "global norm is not finite");
    free(grads);
    tensor_table_free(&tt);
}

/* warmup then each schedule at fixed steps, against float64 Python literals */
static void test_schedules(void) {
    printf("schedules (lr 1e-3, min_lr 1e-4, warmup 10, total 110)\n");
    OptimConfig c;
    optim_config_default(&c);
    c.lr = 1e-3;
    c.min_lr = 1e-4;
    c.warmup_steps = 10;
    const size_t N = 110;
    const size_t steps[] = {0, 4, 9, 10, 35, 60, 109, 110, 500};
    /* warmup lr (s+1)/10; after it p = (s-10)/100; literals from float64 Python */
    const double ref[3][9] = {
        {1e-4, 5e-4, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3},                                     /* constant */
        {1e-4, 5e-4, 1e-3, 1e-3, 7.75e-4, 5.5e-4, 1.09e-4, 1e-4, 1e-4},                             /* linear */
        {1e-4, 5e-4, 1e-3, 1e-3, 8.6819805153394642e-4, 5.5e-4, 1.0022204783542078e-4, 1e-4, 1e-4}, /* cosine */
    };
    const Schedule sched[3] = {SCHED_CONSTANT, SCHED_LINEAR, SCHED_COSINE};
    for (size_t j = 0; j < 3; j++) {
        c.schedule = sched[j];
        double got[9];
        for (size_t i = 0; i < 9; i++) got[i] = lr_at(&c, steps[i], N);
        char label[96];
        snprintf(label, sizeof(label), "%s at steps 0 4 9 10 35 60 109 110 500", schedule_name(sched[j]));
        expect_close_each(label, got, ref[j], 9, 0, 1e-12);
    }
    /* no warmup: step 0 is the peak; mid and last of 100 cosine steps, min_lr 0 */
    c.warmup_steps = 0;
    c.min_lr = 0;
    c.schedule = SCHED_COSINE;
    double got[3] = {lr_at(&c, 0, 100), lr_at(&c, 50, 100), lr_at(&c, 99, 100)};
    double want[3] = {1e-3, 5e-4, 2.4671981713419e-7}; /* 0.5e-3 (1 + cos(0.99 pi)) */
    expect_close_each("cosine without warmup at steps 0, 50, 99 of 100", got, want, 3, 0, 1e-12);
    c.warmup_steps = 20;
    c.min_lr = 1e-4;
    EXPECT(lr_at(&c, 30, 10) == 1e-4, "total_steps 10 <= warmup 20: min_lr after the warmup");
    Schedule p;
    EXPECT(schedule_parse("linear", &p) && p == SCHED_LINEAR && !schedule_parse("step", &p),
           "schedule_parse: 'linear' known, 'step' rejected");
}

/* exact resume needs the same norm whatever the thread count; 1 in 1000 elements
   is 1e4x larger, so the order of addition would show */
static void test_norm_threads(void) {
    printf("global norm across thread counts (1e6 elements)\n");
    size_t n = 1000000;
    real* g = arenaAlloc(n * sizeof(real));
    Rng rng;
    rng_seed(&rng, 42);
    long double exact = 0; /* a serial extended-precision reference */
    for (size_t i = 0; i < n; i++) {
        g[i] = (real)(rng_normal(&rng) * (i % 1000 == 0 ? 100.0 : 0.01));
        exact += (long double)g[i] * g[i];
    }
    const int counts[] = {1, 2, 3, 8};
    double norms[4];
    for (size_t j = 0; j < 4; j++) {
#ifdef OMP
        omp_set_num_threads(counts[j]);
#endif
        norms[j] = grad_global_norm(g, n);
    }
#ifdef OMP
    const char* how = "OpenMP";
#else
    const char* how = "built without OpenMP; serial";
#endif
    EXPECT(!memcmp(&norms[0], &norms[1], sizeof(double)) && !memcmp(&norms[0], &norms[2], sizeof(double)) &&
               !memcmp(&norms[0], &norms[3], sizeof(double)),
           "bit-identical with %d, %d, %d and %d threads (%s): "
           "%.17g",
           counts[0], counts[1], counts[2], counts[3], how, norms[0]);
    double ref = sqrt((double)exact);
    EXPECT(fabs(norms[0] - ref) <= 1e-13 * ref, "equals the long double sum: %.17g vs %.17g", norms[0], ref);
    double again = grad_global_norm(g, n);
    EXPECT(!memcmp(&again, &norms[3], sizeof(double)), "bit-identical on a repeated call");
    free(g);
}

int main(void) {
    test_groups();
    test_two_steps();
    test_slices();
    test_decay_norms_off();
    test_clip();
    test_scale_zero();
    test_nonfinite();
    test_schedules();
    test_norm_threads();
    printf("test_optim: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}

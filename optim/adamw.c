/* AdamW (optim/adamw.h): groups from the tensor table, moment arenas, the step. */
#include "optim/adamw.h"

#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"

#ifdef REPOC_F64
#define real_sqrt sqrt
#define real_fma fma
#else
#define real_sqrt sqrtf
#define real_fma fmaf
#endif

/* Die when a freeze pattern matches no tensor or matches one that has a
   gradient (the model was built with other patterns), or when an lr_mult
   pattern matches no tensor: a typo must not pass silently. */
static void check_patterns(const TensorTable* tt, const OptimConfig* c) {
    for (size_t p = 0; p < c->n_freeze; p++) {
        size_t hits = 0;
        for (size_t k = 0; k < tt->n; k++) {
            if (fnmatch(c->freeze[p], tt->t[k].name, 0) != 0) continue;
            hits++;
            CHECK(tt->t[k].grad_offset == NO_GRAD,
                  "optim: freeze pattern '%s' matches %s, which has a gradient; build the model with the same "
                  "freeze patterns",
                  c->freeze[p], tt->t[k].name);
        }
        CHECK(hits > 0, "optim: freeze pattern '%s' matches no tensor of the model", c->freeze[p]);
    }
    for (size_t p = 0; p < c->n_lr_mult; p++) {
        size_t hits = 0;
        for (size_t k = 0; k < tt->n; k++) hits += fnmatch(c->lr_mult[p].pattern, tt->t[k].name, 0) == 0;
        CHECK(hits > 0, "optim: lr_mult pattern '%s' matches no tensor of the model", c->lr_mult[p].pattern);
    }
}

void adamw_build(AdamW* a, const TensorTable* tt, const OptimConfig* cfg) {
    adamw_build_slice(a, tt, cfg, 0, tt->n_grads);
}

/* groups per tensor, copied out of the table so the optimizer needs nothing else at step time */
void adamw_build_slice(AdamW* a, const TensorTable* tt, const OptimConfig* cfg, size_t lo, size_t hi) {
    optim_config_validate(cfg);
    check_patterns(tt, cfg);
    memset(a, 0, sizeof(*a));
    a->cfg = *cfg;
    a->n_tensors = tt->n;
    a->t = callocCheck(tt->n, sizeof(AdamWTensor));
    size_t n_state = 0; /* reals of state the table implies: must equal n_grads */
    for (size_t k = 0; k < tt->n; k++) {
        const TensorInfo* ti = &tt->t[k];
        AdamWTensor* at = &a->t[k];
        at->offset = ti->offset;
        at->grad_offset = ti->grad_offset;
        at->numel = ti->numel;
        at->decay = optim_tensor_decays(cfg, ti);
        at->lr_mult = optim_tensor_lr_mult(cfg, ti, &at->lr_source);
        if (ti->grad_offset == NO_GRAD) continue;
        CHECK(ti->grad_offset + ti->numel <= tt->n_grads,
              "optim: gradient range of %s [%zu, +%zu) is past "
              "n_grads %zu",
              ti->name, ti->grad_offset, ti->numel, tt->n_grads);
        n_state += ti->numel;
    }
    CHECK(n_state == tt->n_grads, "optim: trainable tensors hold %zu reals, the gradient arena %zu", n_state,
          tt->n_grads);
    a->n = tt->n_grads;
    CHECK(lo <= hi && hi <= a->n, "optim: slice [%zu, %zu) is not within the %zu gradients", lo, hi, a->n);
    a->lo = lo;
    a->hi = hi;
    size_t bytes = mulCheck(hi - lo, adamw_state_bytes(cfg), "AdamW moments");
    if (cfg->state_bf16) {
        a->m16 = arenaAllocNamed(bytes, "AdamW first-moment arena");
        a->v16 = arenaAllocNamed(bytes, "AdamW second-moment arena");
    } else {
        a->m = arenaAllocNamed(bytes, "AdamW first-moment arena");
        a->v = arenaAllocNamed(bytes, "AdamW second-moment arena");
    }
    adamw_print(a, tt, stdout);
}

/* frees the table copy and both moment arenas */
void adamw_free(AdamW* a) {
    free(a->t);
    free(a->m);
    free(a->v);
    free(a->m16);
    free(a->v16);
    memset(a, 0, sizeof(*a));
}

/* one summary line: "<label>: N tensors (P params)" over the trainable tensors
   for which keep(at, arg) holds; prints nothing when none does */
static void print_group(const AdamW* a, FILE* fp, const char* label, bool (*keep)(const AdamWTensor*, long), long arg) {
    size_t n = 0, p = 0;
    for (size_t k = 0; k < a->n_tensors; k++) {
        const AdamWTensor* at = &a->t[k];
        if (at->grad_offset == NO_GRAD || !keep(at, arg)) continue;
        n++;
        p += at->numel;
    }
    if (n) fprintf(fp, "  %s: %zu tensors (%zu params)\n", label, n, p);
}
/* filters for print_group */
static bool is_decay(const AdamWTensor* at, long want) { return at->decay == (want != 0); }
static bool has_source(const AdamWTensor* at, long src) { return at->lr_source == src; }

/* One line for the frozen tensors, however many (a LoRA run freezes every base tensor): their count and
   parameters, and the first FROZEN_NAMES names */
#define FROZEN_NAMES 4
static void print_frozen(const AdamW* a, const TensorTable* tt, FILE* fp, size_t n_frozen, size_t p_frozen) {
    if (!n_frozen) return;
    fprintf(fp, "  frozen: %zu tensor%s (%zu params):", n_frozen, n_frozen == 1 ? "" : "s", p_frozen);
    size_t shown = 0;
    for (size_t k = 0; k < a->n_tensors && shown < FROZEN_NAMES; k++)
        if (a->t[k].grad_offset == NO_GRAD) fprintf(fp, "%s %s", shown++ ? "," : "", tt->t[k].name);
    if (n_frozen > shown) fprintf(fp, ", and %zu more", n_frozen - shown);
    fputc('\n', fp);
}

/* the summary adamw_build prints: what decays, which lr multiplier each group has, what is frozen */
void adamw_print(const AdamW* a, const TensorTable* tt, FILE* fp) {
    size_t n_frozen = 0, p_frozen = 0;
    for (size_t k = 0; k < a->n_tensors; k++) {
        if (a->t[k].grad_offset != NO_GRAD) continue;
        n_frozen++;
        p_frozen += a->t[k].numel;
    }
    fprintf(fp, "adamw: %zu tensors trainable (%zu params), %zu frozen (%zu params, no state); m, v %.1f MiB each (%s)",
            a->n_tensors - n_frozen, a->n, n_frozen, p_frozen,
            (double)(a->hi - a->lo) * adamw_state_bytes(&a->cfg) / 1048576.0,
            a->cfg.state_bf16 ? "bf16, stochastic rounding" : REAL_NAME);
    if (a->hi - a->lo < a->n) fprintf(fp, " (the slice [%zu, %zu) of this rank)", a->lo, a->hi);
    fputc('\n', fp);
    char label[TENSOR_NAME_LEN + 64];
    snprintf(label, sizeof(label), "weight decay %g", a->cfg.weight_decay);
    print_group(a, fp, label, is_decay, 1);
    snprintf(label, sizeof(label), "no decay (input embedding %s, norms %s, biases %s)",
             a->cfg.decay_embeddings ? "decay" : "exempt", a->cfg.decay_norms ? "decay" : "exempt",
             a->cfg.decay_biases ? "decay" : "exempt");
    print_group(a, fp, label, is_decay, 0);
    snprintf(label, sizeof(label), "lr x%g (repo_lr_mult, RePo tensors)", a->cfg.repo_lr_mult);
    print_group(a, fp, label, has_source, LR_MULT_REPO);
    for (size_t p = 0; p < a->cfg.n_lr_mult; p++) {
        snprintf(label, sizeof(label), "lr x%g (lr_mult '%s')", a->cfg.lr_mult[p].mult, a->cfg.lr_mult[p].pattern);
        print_group(a, fp, label, has_source, (long)p);
    }
    print_group(a, fp, "lr x1 (the rest)", has_source, LR_MULT_NONE);
    print_frozen(a, tt, fp, n_frozen, p_frozen);
}

/* the step's constants, in real, as torch's kernels see them */
typedef struct {
    real keep;     /* 1 - lr_t*wd (1 when the tensor does not decay) */
    real neg_step; /* -lr_t / (1 - b1^t) */
    real b1, omb1, b2, omb2, bc2_sqrt, eps;
    real gs; /* the gradient's clip scale (1: no clipping) */
} StepConsts;

/* One tensor: w (n) updated in place, g (n) read as g·gs (the clip scale), then zeroed when `zero`,
   m, v (n) its moments.
   Called by every thread of adamw_step's parallel region; the elements are
   shared among them (an orphaned `omp for`, no barrier at the end).
   The operations and roundings are those of torch's CPU kernels, one line
   each; the fma is theirs and makes the result bit-identical to torch.
   GCC vectorises this loop only under -fno-math-errno (sqrtf may set errno,
   so it stays a call); with that flag the step runs about 5x faster. The
   optimize("no-math-errno") function attribute does not do it (GCC 12). */
static void adamw_tensor(real* w, bf16* w16, real* m, real* v, real* g, size_t n, StepConsts k, bool zero) {
#ifdef OMP
#pragma omp for simd schedule(static) nowait
#endif
    for (size_t i = 0; i < n; i++) {
        real gi = g[i] * k.gs;                             /* clip_grad_norm_'s g.mul_(scale) */
        if (zero) g[i] = 0;                                /* the next step's zero_grad */
        w[i] *= k.keep;                                    /* param.mul_(1 - lr*wd) */
        m[i] = real_fma(k.omb1, gi, m[i] * k.b1);          /* exp_avg.mul_(b1).add_(g, alpha=1-b1) */
        v[i] = real_fma(k.omb2 * gi, gi, v[i] * k.b2);     /* exp_avg_sq.mul_(b2).addcmul_(g, g, value=1-b2) */
        real denom = real_sqrt(v[i]) / k.bc2_sqrt + k.eps; /* (exp_avg_sq.sqrt() / sqrt(bc2)).add_(eps) */
        w[i] += k.neg_step * m[i] / denom;                 /* param.addcdiv_(m, denom, value=-lr/bc1) */
        if (w16) w16[i] = bf16_round_nearest((float)w[i]); /* the products' copy (a.mirror) */
    }
}

/* A tensor's bf16 moments m, v (n) and the step's stochastic-rounding keys of each */
typedef struct {
    uint16_t *m, *v;
    uint64_t key_m, key_v;
} Bf16Moments;

/* The same step on bf16 moments mo: widened, updated in float as above,
   stored with stochastic rounding keyed by (mo.key_m / mo.key_v, gradient-arena index g0 + i) */
static void adamw_tensor_bf16(real* w, bf16* w16, Bf16Moments mo, real* g, size_t n, StepConsts k, bool zero,
                              size_t g0) {
    uint16_t *m16 = mo.m, *v16 = mo.v;
#ifdef OMP
#pragma omp for schedule(static) nowait
#endif
    for (size_t i = 0; i < n; i++) {
        real gi = g[i] * k.gs;
        if (zero) g[i] = 0;
        real m = real_fma(k.omb1, gi, (real)bf16_to_f32(m16[i]) * k.b1);
        real v = real_fma(k.omb2 * gi, gi, (real)bf16_to_f32(v16[i]) * k.b2);
        w[i] *= k.keep;
        real denom = real_sqrt(v) / k.bc2_sqrt + k.eps;
        w[i] += k.neg_step * m / denom;
        if (w16) w16[i] = bf16_round_nearest((float)w[i]);
        m16[i] = bf16_round_stochastic((float)m, sr_bits(mo.key_m, g0 + i));
        v16[i] = bf16_round_stochastic((float)v, sr_bits(mo.key_v, g0 + i));
    }
}

/* the stochastic-rounding key of moment `which` at `step`: 64 bits from (seed, step, which) */
static uint64_t sr_key(uint64_t seed, size_t step, int which) {
    uint64_t ctr = 2 * (uint64_t)step + (uint64_t)which;
    return (uint64_t)sr_bits(seed, ctr) << 32 | sr_bits(~seed, ctr);
}

size_t adamw_state_bytes(const OptimConfig* cfg) { return cfg->state_bf16 ? 2 : sizeof(real); }

void adamw_moment_get(const AdamW* a, int which, size_t i0, size_t n, real* out) {
    if (!a->cfg.state_bf16) {
        memcpy(out, (which ? a->v : a->m) + i0, n * sizeof(real));
        return;
    }
    const uint16_t* s = (which ? a->v16 : a->m16) + i0;
    for (size_t i = 0; i < n; i++) out[i] = (real)bf16_to_f32(s[i]);
}

void adamw_moment_set(AdamW* a, int which, size_t i0, size_t n, const real* in) {
    if (!a->cfg.state_bf16) {
        memcpy((which ? a->v : a->m) + i0, in, n * sizeof(real));
        return;
    }
    uint16_t* s = (which ? a->v16 : a->m16) + i0;
    bf16_round_reals(s, in, n); /* nearest even: exact for bf16 values */
}

bool adamw_slice_part(const AdamW* a, size_t offset, size_t n, size_t* g0, size_t* g1) {
    *g0 = offset > a->lo ? offset : a->lo;
    *g1 = offset + n < a->hi ? offset + n : a->hi;
    return *g0 < *g1;
}

/* constants in double, rounded once to real; then every trainable tensor (see adamw.h) */
void adamw_step(AdamW* a, real* params, real* grads, double lr, size_t step, double grad_scale, bool zero_grads) {
    const OptimConfig* c = &a->cfg;
    double t = (double)step + 1.0;
    double bc1 = 1.0 - pow(c->beta1, t); /* bias corrections, in double */
    double bc2_sqrt = sqrt(1.0 - pow(c->beta2, t));
    uint64_t key_m = sr_key(c->seed, step, 0), key_v = sr_key(c->seed, step, 1); /* bf16 state only */
    StepConsts base = {.b1 = (real)c->beta1,
                       .omb1 = (real)(1.0 - c->beta1),
                       .b2 = (real)c->beta2,
                       .omb2 = (real)(1.0 - c->beta2),
                       .bc2_sqrt = (real)bc2_sqrt,
                       .eps = (real)c->eps,
                       .gs = (real)grad_scale};
    /* one parallel region; each tensor's elements are shared out among the
       threads, and no thread waits between tensors (they are independent) */
#ifdef OMP
#pragma omp parallel
#endif
    for (size_t k = 0; k < a->n_tensors; k++) {
        const AdamWTensor* at = &a->t[k];
        if (at->grad_offset == NO_GRAD) continue; /* frozen: no state, untouched */
        size_t g0, g1;                            /* the part of the tensor inside the slice */
        if (!adamw_slice_part(a, at->grad_offset, at->numel, &g0, &g1)) continue;
        double lr_t = lr * at->lr_mult;
        StepConsts sc = base;
        sc.keep = at->decay ? (real)(1.0 - lr_t * c->weight_decay) : (real)1;
        sc.neg_step = (real)(-lr_t / bc1);
        size_t p0 = at->offset + (g0 - at->grad_offset);
        real* w = params + p0;
        bf16* w16 = a->mirror && p0 >= a->mirror_from ? a->mirror + (p0 - a->mirror_from) : NULL;
        if (c->state_bf16) {
            Bf16Moments mo = {a->m16 + (g0 - a->lo), a->v16 + (g0 - a->lo), key_m, key_v};
            adamw_tensor_bf16(w, w16, mo, grads + g0, g1 - g0, sc, zero_grads, g0);
        } else adamw_tensor(w, w16, a->m + (g0 - a->lo), a->v + (g0 - a->lo), grads + g0, g1 - g0, sc, zero_grads);
    }
}

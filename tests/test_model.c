/* Model-level tests in the float build:
   1. a repo layer whose positions are forced to the integer indices gives
      exactly (bit for bit) the rope layer's output, and differs without forcing;
   2. forward and backward allocate nothing (a counting malloc, after warm-up);
   3. the reference size D=256 L=4 H=8 V=4096 B=4 T=256 runs forward+backward
      with a finite loss near ln V at init; its time per step is printed. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/check.h"
#include "common/clock.h"
#include "common/rng.h"
#include "common/threads.h"
#include "model/embedding.h"
#include "model/model.h"
#include "model/xent.h"
#include "tests/testutil.h"

/* ---- counting allocator: every malloc in the process while `counting` is on,
   split by caller: this program (repoc's code is linked in statically) or a
   shared library (OpenBLAS's OpenMP build mallocs a small queue per threaded
   gemm call; that is outside repoc and reported, not asserted) ---- */
extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);
static volatile int counting;
/* volatile: GCC treats malloc as a builtin that touches no program memory and
   may otherwise read the counts before the interposed malloc has run */
static volatile size_t n_allocs_ours, n_allocs_libs;
static __thread int in_count;
static void count(void* caller) {
    if (!counting || in_count) return;
    in_count = 1;
    Dl_info self, who;
    int ours = dladdr((void*)count, &self) && dladdr(caller, &who) && self.dli_fbase == who.dli_fbase;
    __atomic_add_fetch(ours ? &n_allocs_ours : &n_allocs_libs, 1, __ATOMIC_RELAXED);
    in_count = 0;
}
/* noinline: the caller must be the function that called malloc; clang inlines these into this file's calls */
#define CALLER __builtin_return_address(0)
__attribute__((noinline)) void* malloc(size_t n) {
    count(CALLER);
    return __libc_malloc(n);
}
__attribute__((noinline)) void* calloc(size_t a, size_t b) {
    count(CALLER);
    return __libc_calloc(a, b);
}
__attribute__((noinline)) void* realloc(void* p, size_t n) {
    count(CALLER);
    return __libc_realloc(p, n);
}
__attribute__((noinline)) void* aligned_alloc(size_t a, size_t n) {
    count(CALLER);
    return __libc_memalign(a, n);
}
int posix_memalign(void** p, size_t a, size_t n) {
    count(CALLER);
    *p = __libc_memalign(a, n);
    return *p ? 0 : 12;
}

static void random_batch(int32_t* tokens, int32_t* targets, size_t N, size_t V, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    for (size_t n = 0; n < N; n++) {
        tokens[n] = (int32_t)rng_below(&rng, V);
        targets[n] = (int32_t)rng_below(&rng, V);
    }
}

/* copy every tensor of src into the same-named tensor of dst */
static void copy_shared_weights(Model* dst, const Model* src) {
    for (size_t i = 0; i < src->tensors.n; i++) {
        long j = tensor_table_find(&dst->tensors, src->tensors.t[i].name);
        if (j >= 0)
            memcpy(dst->params + dst->tensors.t[j].offset, src->params + src->tensors.t[i].offset,
                   src->tensors.t[i].numel * sizeof(real));
    }
}

static void test_forced_repo_equals_rope(void) {
    printf("repo layer with positions forced to t == rope layer\n");
    ModelConfig cfg;
    model_config_default(&cfg);
    test_model_sizes(&cfg, 97, 64, 3, 4, 2, 96);
    for (int style = 0; style < 2; style++) {
        cfg.block = style ? BLOCK_LLAMA : BLOCK_OLMO2;
        size_t B = 2, T = 33, N = B * T;
        Model rope, repo;
        model_config_plan_positions(&cfg, "rope", REPO_START_DEFAULT);
        model_build(&rope, &cfg, B, T, NULL, 0, false);
        model_config_plan_positions(&cfg, "repo", 1);
        model_build(&repo, &cfg, B, T, NULL, 0, false);
        model_init_weights(&rope, &(ModelInit){.seed = 7, .std = 0.1});
        model_init_weights(&repo, &(ModelInit){.seed = 7, .std = 0.1}); /* the RePo weights get their own values */
        copy_shared_weights(&repo, &rope);
        int32_t* tokens = mallocCheck(N * sizeof(int32_t));
        int32_t* targets = mallocCheck(N * sizeof(int32_t));
        random_batch(tokens, targets, N, cfg.V, 3);
        Batch b = {.B = B, .T = T, .tokens = tokens, .targets = targets};
        double l_rope = model_forward(&rope, &b).loss;
        double l_free = model_forward(&repo, &b).loss;
        int differs = memcmp(rope.logits, repo.logits, N * cfg.V * sizeof(real)) != 0;
        /* the test hook: repo's forward with a block context of the test's own, whose force_pos replaces
           RePo's z by rope's positions t (N,KVH) */
        BlockCtx ctx = model_block_ctx(&repo, &b);
        ctx.force_pos = rope.pos_seq;
        embedding_forward(repo.res[0], tokens, repo.w.embed, (real)cfg_embed_scale(&cfg), N, cfg.D);
        for (size_t l = 0; l < cfg.L; l++)
            block_forward(repo.res[l + 1], &repo.la[l], repo.res[l], &repo.w.layer[l], l, &ctx);
        model_head_forward(repo.logits, repo.final_out, repo.final_rstd, repo.res[cfg.L], &repo, N);
        double l_forced = xent_forward(repo.losses, repo.lse, repo.logits, targets, NULL, N, cfg.V, 0, NULL);
        int same = memcmp(rope.logits, repo.logits, N * cfg.V * sizeof(real)) == 0;
        EXPECT(same && l_forced == l_rope, "%s: forced repo logits bit-identical to rope (loss %.9f vs %.9f)",
               block_style_name(cfg.block), l_forced, l_rope);
        EXPECT(differs && l_free != l_rope, "%s: learned positions change the output (loss %.9f)",
               block_style_name(cfg.block), l_free);
        model_free(&rope);
        model_free(&repo);
        free(tokens);
        free(targets);
    }
}

static double now_ms(void) { return 1e3 * now_s(); }

static void test_reference_size_no_alloc(void) {
    printf("reference size: D=256 L=4 H=8 V=4096 B=4 T=256, RePo from layer 1, no malloc in a step\n");
    ModelConfig cfg;
    model_config_default(&cfg); /* V=4096 D=256 L=4 H=8 F=1024 */
    model_config_plan_positions(&cfg, "repo", REPO_START_DEFAULT);
    size_t B = 4, T = 256, N = B * T;
    Model m;
    model_build(&m, &cfg, B, T, NULL, 0, true);
    model_init_weights(&m, &(ModelInit){.seed = 1, .std = 0.02});
    int32_t* tokens = mallocCheck(N * sizeof(int32_t));
    int32_t* targets = mallocCheck(N * sizeof(int32_t));
    random_batch(tokens, targets, N, cfg.V, 5);
    Batch b = {.B = B, .T = T, .tokens = tokens, .targets = targets};
    model_zero_grad(&m); /* warm-up step: thread pools and BLAS buffers start here */
    model_forward(&m, &b);
    model_backward(&m, &b, 1.0);

    double best = 1e30, loss = 0;
    n_allocs_ours = n_allocs_libs = 0;
    counting = 1; /* control: the hook sees a malloc made by this program */
    void* volatile probe = malloc(16);
    counting = 0;
    free(probe);
    EXPECT(n_allocs_ours == 1, "the counting allocator sees a malloc from repoc's side (%zu)", n_allocs_ours);
    n_allocs_ours = n_allocs_libs = 0;
    for (int it = 0; it < 3; it++) {
        double t0 = now_ms();
        counting = 1;
        model_zero_grad(&m);
        loss = model_forward(&m, &b).loss;
        model_backward(&m, &b, 1.0);
        counting = 0;
        double dt = now_ms() - t0;
        best = dt < best ? dt : best;
    }
    EXPECT(n_allocs_ours == 0, "allocations by repoc during 3 steps of zero_grad + forward + backward: %zu",
           n_allocs_ours);
    printf("  (allocations inside shared libraries, OpenBLAS/libgomp, in those steps: %zu)\n", n_allocs_libs);
    EXPECT(isfinite(loss) && fabs(loss - log((double)cfg.V)) < 0.1, "loss %.4f at init, ln V = %.4f", loss,
           log((double)cfg.V));
    double gsum = 0;
    for (size_t i = 0; i < m.tensors.n_grads; i++) gsum += fabs(m.grads[i]);
    EXPECT(isfinite(gsum) && gsum > 0, "gradients finite and non-zero (sum |g| = %.4e)", gsum);
    printf("  step time (zero_grad + forward + backward), best of 3: %.1f ms = %.0f tokens/s\n", best, N / best * 1e3);
    model_free(&m);
    free(tokens);
    free(targets);
}

/* the small OLMo-2 model with RePo from layer 1 of the loss tests */
static ModelConfig small_repo_config(void) {
    ModelConfig cfg;
    model_config_default(&cfg);
    test_model_sizes(&cfg, 61, 32, 2, 4, 4, 48);
    model_config_plan_positions(&cfg, "repo", 1);
    return cfg;
}

/* model_forward with target_weights: all ones reproduce the plain mean bit for
   bit; other weights give sum_n w_n ce_n / sum_n w_n over the valid targets */
static void test_target_weights(void) {
    printf("weighted loss (data.synthetic.answer_weight)\n");
    ModelConfig cfg = small_repo_config();
    size_t B = 2, T = 17, N = B * T;
    Model m;
    model_build(&m, &cfg, B, T, NULL, 0, false);
    model_init_weights(&m, &(ModelInit){.seed = 5, .std = 0.1});
    int32_t* tokens = mallocCheck(N * sizeof(int32_t));
    int32_t* targets = mallocCheck(N * sizeof(int32_t));
    real* w = mallocCheck(N * sizeof(real));
    random_batch(tokens, targets, N, cfg.V, 11);
    targets[5] = -1;
    Batch b = {.B = B, .T = T, .tokens = tokens, .targets = targets};
    double plain = model_forward(&m, &b).loss;
    for (size_t n = 0; n < N; n++) w[n] = 1;
    b.target_weights = w;
    Loss ones = model_forward(&m, &b);
    EXPECT(ones.loss == plain && ones.weight_sum == (double)ones.n_valid, "weights of 1: loss %.9f == plain mean %.9f",
           ones.loss, plain);
    for (size_t n = 0; n < N; n++) w[n] = n % 3 == 0 ? 20 : 1; /* every third target is an "answer" */
    double weighted = model_forward(&m, &b).loss, num = 0, den = 0;
    for (size_t n = 0; n < N; n++)
        if (targets[n] >= 0) {
            num += w[n] * (double)m.losses[n];
            den += w[n];
        }
    EXPECT(fabs(weighted - num / den) <= 1e-6 * fabs(num / den) && weighted != plain,
           "weights 20 / 1: loss %.9f == sum w ce / sum w = %.9f (plain %.9f)", weighted, num / den, plain);
    model_free(&m);
    free(tokens);
    free(targets);
    free(w);
}

/* The z-loss logged apart (metrics.jsonl "loss" and "z_loss"): with coefficient c the forward's objective
   is the cross-entropy of a c = 0 forward plus the forward's Loss.z, and z = c Σ w lse² / Σ w, with and
   without target weights, with the logits kept (forward) and turned into G (forward_train), whole or in
   head chunks; c = 0 gives z 0. The forward and forward_train sums run through two loops that the
   compiler may vectorise differently, so they agree to the double rounding of a sum of B*T terms
   (1e-12 of it), not bit for bit. */
static void test_z_loss_apart(void) {
    printf("z-loss term apart from the cross-entropy\n");
    ModelConfig cfg = small_repo_config();
    size_t B = 2, T = 17, N = B * T;
    int32_t* tokens = mallocCheck(N * sizeof(int32_t));
    int32_t* targets = mallocCheck(N * sizeof(int32_t));
    real* w = mallocCheck(N * sizeof(real));
    random_batch(tokens, targets, N, cfg.V, 13);
    targets[4] = -1;
    for (size_t n = 0; n < N; n++) w[n] = n % 3 == 0 ? 20 : 1;
    for (int chunked = 0; chunked < 2; chunked++) {
        Model m;
        ModelOpts opts = {.head_chunk = chunked ? 8 : 0};
        model_build_opts(&m, &cfg, B, T, NULL, 0, &opts, false);
        model_init_weights(&m, &(ModelInit){.seed = 5, .std = 0.5}); /* large logits: lse² well above 0 */
        for (int weighted = 0; weighted < 2; weighted++) {
            Batch b = {.B = B, .T = T, .tokens = tokens, .targets = targets, .target_weights = weighted ? w : NULL};
            m.opts.z_loss = 0; /* the same model with and without the term */
            Loss off = model_forward(&m, &b);
            double ce = off.loss;
            bool zero = off.z == 0;
            m.opts.z_loss = 1e-2;
            Loss on = model_forward(&m, &b);
            double total = on.loss, z = on.z, num = 0, den = 0;
            for (size_t n = 0; n < N; n++)
                if (targets[n] >= 0) {
                    double wn = weighted ? (double)w[n] : 1.0, l = (double)m.lse[n];
                    num += wn * 1e-2 * l * l;
                    den += wn;
                }
            Loss on_train = model_forward_train(&m, &b);
            double train = on_train.loss, z_train = on_train.z;
            m.has_loss = false;
            EXPECT(zero && z > 0 && fabs(ce + z - total) <= 1e-12 * fabs(total) &&
                       fabs(z - num / den) <= 1e-6 * (num / den) && fabs(train - total) <= 1e-12 * fabs(total) &&
                       fabs(z_train - z) <= 1e-12 * z,
                   "head_chunk %s, %s: objective %.9f = cross-entropy %.9f + z-loss term %.9f (c lse² mean %.9f)",
                   chunked ? "8" : "0", weighted ? "weighted" : "plain", total, ce, z, num / den);
        }
        model_free(&m);
    }
    free(tokens);
    free(targets);
    free(w);
}

int main(void) {
    threads_init(0);
    threads_print(stdout);
    test_forced_repo_equals_rope();
    test_target_weights();
    test_z_loss_apart();
    test_reference_size_no_alloc();
    printf("test_model: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}

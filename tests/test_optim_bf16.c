/* AdamW with bf16 moments (optim.state_dtype "bf16", optim/adamw.h):
   1. stochastic rounding of x = lo + k/65536 ulp rounds up for exactly k of
      the 65536 values of the random bits (unbiased), never to infinity;
   2. at beta2 = 0.999 a second moment that must grow by 0.05% a step (far
      below half a bf16 ulp) follows the f32 state within 1% after 1000 steps,
      where round-to-nearest would not move at all;
   3. the same seed gives bit-identical weights and moments, three slices of
      the state (sharded) equal the whole bit for bit, and another seed differs;
   4. moments written as reals and read back are exact for bf16 values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "model/tensors.h"
#include "optim/adamw.h"
#include "optim_fixture.h"
#include "testutil.h"

static void tiny_table(TensorTable* tt) { optim_tiny_table(tt, NULL); }

static void test_rounding(void) {
    printf("stochastic rounding to bf16\n");
    float lo = 1.0f, ulp = 1.0f / 128; /* bf16 has 8 significant bits: ulp(1) = 2^-7 */
    int exact = 1;
    for (int k = 0; k < 65536; k += 4099) {
        float x = lo + ulp * (float)k / 65536.0f;
        size_t up = 0;
        for (uint32_t r = 0; r < 65536; r++) up += bf16_to_f32(bf16_round_stochastic(x, r)) > lo;
        exact &= up == (size_t)k;
    }
    EXPECT(exact, "x = 1 + (k/65536) ulp rounds up for exactly k of the 65536 random values (k = 0, 4099, ...)");
    float big = 3.3895314e38f; /* the largest bf16 value */
    EXPECT(isfinite(bf16_to_f32(bf16_round_stochastic(nextafterf(big, INFINITY), 0xffff))),
           "a finite value above the largest bf16 never rounds to infinity");
}

/* steps of AdamW with the constant gradient g on every element, from m = 0, v = v0 */
static void run(AdamW* a, const TensorTable* tt, real* params, real g, size_t steps) {
    real* grads = arenaAlloc(tt->n_grads * sizeof(real));
    for (size_t i = 0; i < tt->n_grads; i++) grads[i] = g;
    for (size_t s = 0; s < steps; s++) adamw_step(a, params, grads, 1e-4, s, 1.0, false);
    free(grads);
}

static double mean_v(const AdamW* a) {
    real* v = mallocCheck(a->n * sizeof(real));
    adamw_moment_get(a, 1, 0, a->n, v);
    double s = 0;
    for (size_t i = 0; i < a->n; i++) s += v[i];
    free(v);
    return s / (double)a->n;
}

static void test_small_updates(void) {
    printf("beta2 = 0.999: v grows by 0.05%% a step\n");
    TensorTable tt;
    tiny_table(&tt);
    OptimConfig c;
    optim_config_default(&c);
    c.beta2 = 0.999;
    c.weight_decay = 0;
    AdamW f32, bf16;
    adamw_build(&f32, &tt, &c);
    c.state_bf16 = true;
    c.seed = 11;
    adamw_build(&bf16, &tt, &c);
    real* ones = mallocCheck(tt.n_grads * sizeof(real));
    for (size_t i = 0; i < tt.n_grads; i++) ones[i] = 1; /* v0 = 1: ulp 2^-7, 16x the step's growth */
    adamw_moment_set(&f32, 1, 0, tt.n_grads, ones);
    adamw_moment_set(&bf16, 1, 0, tt.n_grads, ones);
    real* p1 = arenaAlloc(tt.n_params * sizeof(real));
    real* p2 = arenaAlloc(tt.n_params * sizeof(real));
    real g = (real)sqrt(1.5); /* v -> 1.5 */
    run(&f32, &tt, p1, g, 1000);
    run(&bf16, &tt, p2, g, 1000);
    double ref = mean_v(&f32), got = mean_v(&bf16);
    /* round-to-nearest: 0.999 v + 0.0015 rounds back to v = 1 while 0.0005 < half an ulp (0.0039) */
    EXPECT(ref > 1.3 && fabs(got - ref) <= 0.01 * (ref - 1),
           "mean v after 1000 steps: bf16 %.6f, f32 %.6f (within 1%% of the growth %.4f)", got, ref, ref - 1);
    adamw_free(&f32);
    adamw_free(&bf16);
    free(ones);
    free(p1);
    free(p2);
    tensor_table_free(&tt);
}

static void test_determinism(void) {
    printf("determinism: seed, slices\n");
    TensorTable tt;
    tiny_table(&tt);
    OptimConfig c;
    optim_config_default(&c);
    c.state_bf16 = true;
    c.seed = 5;
    AdamW a, b, other, part[3];
    adamw_build(&a, &tt, &c);
    adamw_build(&b, &tt, &c);
    size_t cut[4] = {0, tt.n_grads / 3 + 1, 2 * tt.n_grads / 3 - 2, tt.n_grads};
    for (int p = 0; p < 3; p++) adamw_build_slice(&part[p], &tt, &c, cut[p], cut[p + 1]);
    c.seed = 6;
    adamw_build(&other, &tt, &c);
    real* w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = arenaAlloc(tt.n_params * sizeof(real));
        for (size_t k = 0; k < tt.n_params; k++) w[i][k] = (real)(0.5 - 0.001 * (double)k);
    }
    real* grads = arenaAlloc(tt.n_grads * sizeof(real));
    for (size_t step = 0; step < 3; step++) {
        for (size_t k = 0; k < tt.n_grads; k++) grads[k] = (real)sin(0.37 * (double)(k + 7 * step)) * 0.01f;
        adamw_step(&a, w[0], grads, 1e-2, step, 1.0, false);
        adamw_step(&b, w[1], grads, 1e-2, step, 1.0, false);
        for (int p = 0; p < 3; p++) adamw_step(&part[p], w[2], grads, 1e-2, step, 1.0, false);
        adamw_step(&other, w[3], grads, 1e-2, step, 1.0, false);
    }
    size_t bytes = tt.n_grads * 2;
    EXPECT(!memcmp(w[0], w[1], tt.n_params * sizeof(real)) && !memcmp(a.m16, b.m16, bytes) &&
               !memcmp(a.v16, b.v16, bytes),
           "same seed: weights, m and v bit-identical after 3 steps");
    int same = !memcmp(w[0], w[2], tt.n_params * sizeof(real));
    for (int p = 0; p < 3; p++)
        same &= !memcmp(part[p].m16, a.m16 + cut[p], (cut[p + 1] - cut[p]) * 2) &&
                !memcmp(part[p].v16, a.v16 + cut[p], (cut[p + 1] - cut[p]) * 2);
    EXPECT(same, "three slices [0, %zu) [%zu, %zu) [%zu, %zu): weights and moments bit-identical to the whole", cut[1],
           cut[1], cut[2], cut[2], cut[3]);
    EXPECT(memcmp(a.v16, other.v16, bytes) != 0, "another seed rounds differently");
    real* r = mallocCheck(tt.n_grads * sizeof(real));
    adamw_moment_get(&a, 0, 0, tt.n_grads, r);
    adamw_moment_set(&other, 0, 0, tt.n_grads, r);
    EXPECT(!memcmp(a.m16, other.m16, bytes), "bf16 moments -> reals -> bf16 is exact");
    free(r);
    for (int i = 0; i < 4; i++) free(w[i]);
    free(grads);
    adamw_free(&a);
    adamw_free(&b);
    adamw_free(&other);
    for (int p = 0; p < 3; p++) adamw_free(&part[p]);
    tensor_table_free(&tt);
}

int main(void) {
    test_rounding();
    test_small_updates();
    test_determinism();
    printf("%d passed, %d failed\n", test_passes, test_failures);
    return test_failures != 0;
}

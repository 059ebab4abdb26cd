/* Activation options of model_build_opts (ModelOpts in model/model.h):
   1. train.recompute: the gradients (and loss) are bit-identical to keeping
      every activation, for OLMo-2 and Llama blocks, with rope, repo and nope
      layers in one model, GQA, z-loss, answer weights, ignored targets and two
      accumulated micro-batches, with and without document masking (several
      documents per row, other boundaries in each micro-batch);
   2. the chunked LM head (head_chunk 1 and 7 of N = 34 rows) agrees with the
      whole head to rounding, loss and every gradient;
   3. both shrink the activation arena as model_arena_sizes says, and the
      sizes it counts are those model_build_opts allocates;
   4. an arena that cannot be allocated (4 TiB of logits) stops the build
      with a message naming the arena and its size;
   5. with compute_bf16 (train.compute_dtype "bf16") recompute is bit-identical too, and the loss
      differs from FP32's by BF16 rounding only (skipped where the build or CPU has no BF16 products). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "model/model.h"
#include "testutil.h"

enum { B = 2, T = 17, N = B * T }; /* constants, not macros: Batch has fields B and T */

static ModelConfig config(BlockStyle style) {
    ModelConfig cfg;
    model_config_default(&cfg);
    test_model_sizes(&cfg, 97, 64, 4, 4, 2, 96);
    cfg.block = style;
    model_config_plan_positions(&cfg, "rope", REPO_START_DEFAULT);
    cfg.pos[0] = POS_ROPE;
    cfg.pos[1] = POS_REPO;
    cfg.pos[2] = POS_NOPE;
    cfg.pos[3] = POS_REPO;
    if (style == BLOCK_QWEN3) { /* per-head QK-norm, head_dim 24 != 64 / 4, q, k, v, o biases */
        cfg.head_dim = 24;
        cfg.attn_bias = true;
    }
    if (style == BLOCK_GEMMA3) { /* the rope and nope layers slide over 5 keys (their own RoPE base) */
        cfg.head_dim = 24;
        cfg.sliding_window = 5;
        cfg.sliding[0] = cfg.sliding[2] = true;
        cfg.rope_local_theta = 100;
        cfg.attn_scalar = 10;
    }
    return cfg;
}

/* two micro-batches of one optimizer step into m's gradients; returns the summed loss. docs: document
   masking, row b of micro-batch k cut into documents at t = 3 + b + 2k and at 11 - k (three per row) */
static double run_step(Model* m, real* weights, bool docs) {
    Rng rng;
    rng_seed(&rng, 7);
    int32_t tok[N], tgt[N], ids[N];
    double loss = 0;
    model_zero_grad(m);
    for (int k = 0; k < 2; k++) {
        for (size_t n = 0; n < N; n++) {
            size_t b = n / T, t = n % T;
            tok[n] = (int32_t)rng_below(&rng, m->cfg.V);
            tgt[n] = n % 5 == 3 ? -1 : (int32_t)rng_below(&rng, m->cfg.V);
            ids[n] = (int32_t)(t >= 3 + b + 2 * (size_t)k) + (int32_t)(t >= 11 - (size_t)k);
        }
        Batch b =
            {.B = B, .T = T, .tokens = tok, .targets = tgt, .target_weights = weights, .doc_ids = docs ? ids : NULL};
        loss += model_forward_train(m, &b).loss;
        model_backward(m, &b, 0.5);
    }
    return loss;
}

static void build(Model* m, const ModelConfig* cfg, bool recompute, size_t chunk, bool bf16) {
    ModelOpts o = {.recompute = recompute, .head_chunk = chunk, .compute_bf16 = bf16, .z_loss = 1e-3};
    model_build_opts(m, cfg, B, T, NULL, 0, &o, false);
    model_init_weights(m, &(ModelInit){.seed = 3, .std = 0.05});
    ModelArenaSizes s = model_arena_sizes(cfg, B, T, NULL, 0, &o);
    EXPECT(s.params == m->tensors.n_params && s.grads == m->tensors.n_grads && s.acts == m->n_acts &&
               s.scratch == m->n_scratch,
           "model_arena_sizes counts what model_build_opts allocated (recompute %d, head_chunk %zu)", recompute, chunk);
}

static void build_huge(void* arg) {
    (void)arg;
    ModelConfig cfg;
    model_config_default(&cfg);
    test_model_sizes(&cfg, (size_t)1 << 20, 8, 1, 2, 2, 8);
    model_config_plan_positions(&cfg, "rope", REPO_START_DEFAULT);
    Model m;
    model_build(&m, &cfg, 1, (size_t)1 << 20, NULL, 0, false); /* logits (2^20, 2^20): 4 TiB */
}

int main(void) {
    const char* oom[] = {"out of memory allocating the activation arena of", "MiB", NULL};
    expect_dies_with("a 4 TiB activation arena", build_huge, NULL, oom);
    real weights[N];
    for (size_t n = 0; n < N; n++) weights[n] = n % 3 ? 1.0f : 2.5f;
    for (int style = BLOCK_OLMO2; style <= BLOCK_GEMMA3; style++) {
        ModelConfig cfg = config((BlockStyle)style);
        const char* name = block_style_name((BlockStyle)style);
        printf("%s: rope, repo, nope, repo layers, GQA 4/2\n", name);
        Model full, rec, chunked;
        build(&full, &cfg, false, 0, false);
        build(&rec, &cfg, true, 0, false);
        double l_masked = 0, l_full = 0;
        for (int docs = 1; docs >= 0; docs--) { /* unmasked last: the chunked runs below compare with it */
            double l = run_step(&full, weights, docs), l_rec = run_step(&rec, weights, docs);
            const char* how = docs ? " + document masking" : "";
            EXPECT(l == l_rec, "%s recompute%s: loss %.9g == %.9g", name, how, l_rec, l);
            EXPECT(!memcmp(full.grads, rec.grads, full.tensors.n_grads * sizeof(real)),
                   "%s recompute%s: every gradient bit-identical (%zu reals)", name, how, full.tensors.n_grads);
            *(docs ? &l_masked : &l_full) = l;
        }
        EXPECT(l_masked != l_full, "%s: masking changes the loss (%.9g vs %.9g)", name, l_masked, l_full);
        EXPECT(rec.n_acts < full.n_acts, "%s recompute: activations %zu < %zu reals", name, rec.n_acts, full.n_acts);
        for (size_t chunk = 1; chunk <= 7; chunk += 6) {
            build(&chunked, &cfg, chunk == 7, chunk, false);
            double l_ch = run_step(&chunked, weights, false);
            EXPECT(fabs(l_ch - l_full) <= 1e-6 * fabs(l_full), "%s head_chunk %zu: loss %.9g vs %.9g", name, chunk,
                   l_ch, l_full);
            char label[96];
            snprintf(label, sizeof(label), "%s head_chunk %zu%s: gradients", name, chunk,
                     chunk == 7 ? " + recompute" : "");
            expect_close(label, chunked.grads, full.grads, full.tensors.n_grads, 0, 1e-5, "1e-5 x max|ref|: rounding");
            EXPECT(chunked.head_rows == chunk && chunked.n_acts + (N - chunk - 1) * cfg.V <= full.n_acts,
                   "%s head_chunk %zu: logits buffer of %zu rows", name, chunk, chunked.head_rows);
            model_free(&chunked);
        }
        model_free(&full);
        model_free(&rec);
    }
    /* train.compute_dtype "bf16": recompute runs the same BF16 products in the same order */
    char why[512];
    if (!products_bf16_available(why, sizeof(why))) {
        printf("SKIP bf16 recompute: %s\n", why);
    } else {
        for (int style = 0; style < 2; style++) {
            ModelConfig cfg = config(style ? BLOCK_LLAMA : BLOCK_OLMO2);
            const char* name = style ? "llama" : "olmo2";
            Model full, rec, f32;
            build(&full, &cfg, false, 0, true);
            build(&rec, &cfg, true, 0, true);
            build(&f32, &cfg, false, 0, false);
            for (int docs = 1; docs >= 0; docs--) {
                double l = run_step(&full, weights, docs), l_rec = run_step(&rec, weights, docs);
                double l32 = run_step(&f32, weights, docs);
                EXPECT(l == l_rec, "%s bf16 recompute (docs %d): loss %.9g == %.9g", name, docs, l_rec, l);
                EXPECT(!memcmp(full.grads, rec.grads, full.tensors.n_grads * sizeof(real)),
                       "%s bf16 recompute (docs %d): every gradient bit-identical (%zu reals)", name, docs,
                       full.tensors.n_grads);
                EXPECT(l != l32 && fabs(l - l32) < 0.02 * fabs(l32),
                       "%s bf16 (docs %d): loss %.9g differs from f32's %.9g, by BF16 rounding only", name, docs, l,
                       l32);
            }
            model_free(&full);
            model_free(&rec);
            model_free(&f32);
        }
    }
    printf("%d passed, %d failed\n", test_passes, test_failures);
    return test_failures != 0;
}

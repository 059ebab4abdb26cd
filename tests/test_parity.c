/* PyTorch parity: load the fixture checkpoints of tests/fixtures/
   (written by tools/reference.py, an independent float64 PyTorch model) with
   the Hugging Face loader, and compare loss, logits, RePo positions z and every
   parameter gradient; the loss from the BF16 copy; and the save/load round trip
   (bit-identical in F32; BF16 saving rounds exactly as torch does); loss, logits and gradients with BF16
   products (train.compute_dtype "bf16") within bounds derived from BF16's 2^-8. llama3_docs adds
   llama3 RoPE and packed rows with document masking (the fixture's doc_ids); qwen2_pad
   (q, k, v biases, tied) and qwen3_hd (per-head QK-norm, head_dim 12 != D/H, attention_bias)
   add the Qwen blocks, each with a pad_token_id whose tokens are in the batch (padding_idx); gemma3_sw adds
   the Gemma-3 text block (sqrt(D)-scaled embedding, (1 + w) RMSNorms around both sublayers, GELU-tanh,
   query_pre_attn_scalar, sliding-window layers with their own RoPE base, linear rope_scaling on the full
   layers, RePo on a full layer, tied, pad_token_id 0); mistral_sw the Mistral block (Llama's, every layer
   sliding over 5 of 16 keys and rotated by the global table; rope, nope, rope). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/safetensors.h"
#include "common/threads.h"
#include "hf/hf_checkpoint.h"
#include "hf/hf_config.h"
#include "model/attention.h"
#include "model/model.h"
#include "optim/adamw.h"
#include "tests/testutil.h"

#ifdef REPOC_F64
#error "the parity test runs in the float build"
#endif

typedef struct {
    StFile ref;
    size_t B, T, N;
    Batch batch; /* tokens, targets; doc_ids: packed documents (document masking), NULL when the fixture
                           has none */
    double z_loss;
} Fixture;

static double meta_double(const StFile* f, const char* key) {
    const char* v = st_meta(f, key);
    CHECK(v, "fixture metadata lacks '%s'", key);
    return atof(v);
}

static float* ref_tensor(const StFile* f, const char* name, size_t expect_numel) {
    const StTensor* t = st_find(f, name);
    CHECK(t, "fixture lacks tensor '%s'", name);
    CHECK(t->numel == expect_numel, "fixture tensor '%s' has %zu elements, expected %zu", name, t->numel, expect_numel);
    float* out = mallocCheck(t->numel * sizeof(float));
    st_read_real(f, t, out);
    return out;
}

static double ref_scalar(const StFile* f, const char* name, size_t i) {
    const StTensor* t = st_find(f, name);
    CHECK(t && t->dtype == ST_F64 && i < t->numel, "fixture lacks F64 tensor '%s'[%zu]", name, i);
    double v;
    memcpy(&v, f->data + t->begin + i * 8, 8);
    return v;
}

static void fixture_open(Fixture* fx, const char* dir) {
    char path[512];
    snprintf(path, sizeof(path), "%s/reference.safetensors", dir);
    st_open_or_die(&fx->ref, path);
    fx->B = (size_t)meta_double(&fx->ref, "B");
    fx->T = (size_t)meta_double(&fx->ref, "T");
    fx->N = fx->B * fx->T;
    fx->z_loss = meta_double(&fx->ref, "z_loss");
    const StTensor* docs = st_find(&fx->ref, "doc_ids");
    batch_alloc(&fx->batch, fx->B, fx->T, docs != NULL, false);
    st_read_i32(&fx->ref, st_find(&fx->ref, "tokens"), fx->batch.tokens);
    st_read_i32(&fx->ref, st_find(&fx->ref, "targets"), fx->batch.targets);
    if (docs) {
        CHECK(docs->numel == fx->N, "fixture doc_ids has %zu elements, expected %zu", docs->numel, fx->N);
        st_read_i32(&fx->ref, docs, fx->batch.doc_ids);
    }
}

static void fixture_close(Fixture* fx) {
    st_close(&fx->ref);
    batch_free(&fx->batch);
}

static void load_model_opts(Model* m, const char* ckpt, const Fixture* fx, const ModelOpts* opts) {
    ModelConfig cfg;
    hf_config_read(ckpt, &cfg);
    ModelOpts o = opts ? *opts : (ModelOpts){0};
    o.z_loss = fx->z_loss;
    model_build_opts(m, &cfg, fx->B, fx->T, NULL, 0, &o, false);
    size_t fresh = hf_load_weights(m, ckpt, 1, false);
    CHECK(fresh == 0, "%s: %zu tensors were missing", ckpt, fresh);
}

static void load_model(Model* m, const char* ckpt, const Fixture* fx) { load_model_opts(m, ckpt, fx, NULL); }

/* padding_idx (Qwen's pad_token_id): the pad tokens of the batch add nothing to their embedding row, so
   untied that row's gradient is exactly 0; tied it is the head's share alone (compared with PyTorch above) */
static void check_pad_row(const Model* m, const Fixture* fx) {
    long pad = m->cfg.pad_id;
    if (pad < 0) return;
    size_t uses = 0, D = m->cfg.D, nonzero = 0;
    for (size_t n = 0; n < fx->N; n++) uses += fx->batch.tokens[n] == pad;
    const real* row = m->grads + m->tensors.t[tensor_table_find(&m->tensors, "model.embed_tokens.weight")].grad_offset +
                      (size_t)pad * D;
    for (size_t k = 0; k < D; k++) nonzero += row[k] != 0;
    EXPECT(uses > 0, "pad_token_id %ld appears %zu times among the fixture's tokens", pad, uses);
    if (!m->cfg.tie_embeddings)
        EXPECT(nonzero == 0, "untied: the pad row's gradient is exactly 0 (%zu of %zu nonzero)", nonzero, D);
}

/* every parameter gradient against the fixture's grad.NAME, within rtol x max|ref| (rtol_repo for RePo's
   maps): a tensor whose reference is all zeros must be zeros; labels start with prefix */
static void compare_grads(const Model* m, const Fixture* fx, const char* prefix, double rtol, double rtol_repo,
                          const char* why, const char* why_repo) {
    for (size_t i = 0; i < m->tensors.n; i++) {
        const TensorInfo* t = &m->tensors.t[i];
        char name[160], label[200];
        snprintf(name, sizeof(name), "grad.%s", t->name);
        snprintf(label, sizeof(label), "%s%s", prefix, name);
        float* ref = ref_tensor(&fx->ref, name, t->numel);
        expect_close(label, m->grads + t->grad_offset, ref, t->numel, 0, t->is_repo ? rtol_repo : rtol,
                     t->is_repo ? why_repo : why);
        free(ref);
    }
}

/* The FP32 bounds of a fixture's model (testutil.h, fp32_chain_rtol), the BF16 ones' chains with FP32's
   per-product bound: the longest forward chain runs through two products per half-block and the head,
   d = 4L + 1; a gradient runs that chain and back, 2d; a RePo map's gradient also RePo's two products each
   way, 2d + 4. K, the longest sum of any product: the width, the MLP's, the heads' (QK^T sums over head_dim,
   PV over the T keys), the vocabulary (the head's input gradient) and the B*T rows (a weight gradient). */
typedef struct {
    double fwd, grad, repo;
    char why_f[96], why_b[96], why_r[96];
} Fp32Tol;

static Fp32Tol fp32_tol(const ModelConfig* c, const Fixture* fx) {
    size_t dims[] = {c->D, c->F, c->H * cfg_hd(c), fx->T, c->V, fx->N}, K = 0;
    for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++) K = dims[i] > K ? dims[i] : K;
    double d = 4.0 * (double)c->L + 1;
    Fp32Tol t = {.fwd = fp32_chain_rtol(d, (double)K),
                 .grad = fp32_chain_rtol(2 * d, (double)K),
                 .repo = fp32_chain_rtol(2 * d + 4, (double)K)};
    snprintf(t.why_f, sizeof(t.why_f), "(4L+1) K 2^-24 = %.1e x max|ref|, K %zu", t.fwd, K);
    snprintf(t.why_b, sizeof(t.why_b), "2 (4L+1) K 2^-24 = %.1e x max|ref|", t.grad);
    snprintf(t.why_r, sizeof(t.why_r), "(2 (4L+1) + 4) K 2^-24 = %.1e x max|ref|", t.repo);
    return t;
}

static double max_abs(const float* x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)x[i]));
    return m;
}

/* loss, logits, z, every gradient, with the FP32 products on `engine` (labels start with its name). The loss
   moves by at most twice the largest logit error: log-sum-exp and the target's logit each by it. */
static void check_forward_backward(const char* dir, Fixture* fx, F32Engine engine) {
    char ckpt[512], label[96];
    const char* e = f32_engine_name(engine);
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt", dir);
    products_set_f32_engine(engine);
    Model m;
    load_model(&m, ckpt, fx);
    Fp32Tol tol = fp32_tol(&m.cfg, fx);
    model_zero_grad(&m);
    double loss = model_forward(&m, &fx->batch).loss;
    double ref_loss = ref_scalar(&fx->ref, "loss", 0);
    float* ref = ref_tensor(&fx->ref, "logits", fx->N * m.cfg.V);
    double max_logit = max_abs(ref, fx->N * m.cfg.V);
    EXPECT(fabs(loss - ref_loss) <= 2 * tol.fwd * max_logit,
           "%s: loss %.9f vs PyTorch %.9f: |diff| %.2e <= 2 x %.1e x max|logit| %.3f", e, loss, ref_loss,
           fabs(loss - ref_loss), tol.fwd, max_logit);
    snprintf(label, sizeof(label), "%s logits", e);
    expect_close(label, m.logits, ref, fx->N * m.cfg.V, 0, tol.fwd, tol.why_f);
    free(ref);
    for (size_t l = 0; l < m.cfg.L; l++) {
        if (m.cfg.pos[l] != POS_REPO) continue;
        snprintf(label, sizeof(label), "%s z.%zu", e, l);
        ref = ref_tensor(&fx->ref, label + strlen(e) + 1, fx->N * m.cfg.KVH);
        expect_close(label, m.la[l].z, ref, fx->N * m.cfg.KVH, 0, tol.fwd, tol.why_f);
        free(ref);
    }
    model_backward(&m, &fx->batch, 1.0);
    snprintf(label, sizeof(label), "%s ", e);
    compare_grads(&m, fx, label, tol.grad, tol.repo, tol.why_b, tol.why_r);
    check_pad_row(&m, fx);
    model_free(&m);
    products_set_f32_engine(F32_OPENBLAS);
}

/* train.compute_dtype "bf16" against the same float64 reference. Each product rounds both operands to
   BF16 (relative error at most 2^-9 each), so one product's result is off by at most about 2^-8 of the
   sum of its terms' magnitudes; along a chain of d products these first-order errors add up to d 2^-8.
   Forward, the longest chain runs through two products per half-block and the head: d = 4L + 1, and where
   attention takes BF16 operands too (attention_bf16_pays) also its two, QK^T and PV: d = 6L + 1; a gradient
   runs that chain and back: 2d, and a RePo map's gradient also RePo's two products each way: 2d + 4. The
   tolerances are those bounds relative to max|ref|. */
static void check_forward_backward_bf16(const char* dir, Fixture* fx) {
    char why[512];
    if (!products_bf16_available(why, sizeof(why))) {
        printf("SKIP bf16 parity: %s\n", why);
        return;
    }
    char ckpt[512];
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt", dir);
    Model m;
    load_model_opts(&m, ckpt, fx, &(ModelOpts){.compute_bf16 = true});
    int per_layer = attention_bf16_pays() ? 6 : 4;
    double d = per_layer * (double)m.cfg.L + 1, tol = d * 0x1p-8;
    char why_f[96], why_b[96];
    snprintf(why_f, sizeof(why_f), "(%dL+1) 2^-8 = %.3f x max|ref|", per_layer, tol);
    snprintf(why_b, sizeof(why_b), "2 (%dL+1) 2^-8 = %.3f x max|ref|", per_layer, 2 * tol);
    model_zero_grad(&m);
    double loss = model_forward(&m, &fx->batch).loss, ref_loss = ref_scalar(&fx->ref, "loss", 0);
    float* ref = ref_tensor(&fx->ref, "logits", fx->N * m.cfg.V);
    double max_logit = max_abs(ref, fx->N * m.cfg.V);
    /* the loss moves by at most the largest logit error: log-sum-exp and the target's logit each by it */
    EXPECT(fabs(loss - ref_loss) <= 2 * tol * max_logit,
           "bf16 loss %.6f vs PyTorch %.6f: |diff| %.2e <= 2 x %.3f x %.3f", loss, ref_loss, fabs(loss - ref_loss), tol,
           max_logit);
    expect_close("bf16 logits", m.logits, ref, fx->N * m.cfg.V, 0, tol, why_f);
    free(ref);
    model_backward(&m, &fx->batch, 1.0);
    char why_r[96];
    snprintf(why_r, sizeof(why_r), "(2 (%dL+1) + 4) 2^-8 = %.3f x max|ref|", per_layer, 2 * tol + 4 * 0x1p-8);
    compare_grads(&m, fx, "bf16 ", 2 * tol, 2 * tol + 4 * 0x1p-8, why_b, why_r);
    EXPECT(m.products->prod.weight_rounded == 0, "bf16: every weight read from the mirror");
    model_free(&m);
}

/* 3 AdamW steps on the same batch, torch.optim.AdamW semantics with the fixture's hyperparameters and
   OLMo-2's decay groups (repoc's defaults: every weight decays, the untied lm_head and the norms included;
   only embed_tokens is exempt), no clipping, the FP32 products on `engine`. eps = 2 is far above every |g|
   (max 0.64), so each update is proportional to the averaged gradient, and its relative error is the
   gradient's (the FP32 bound 2 (4L+1) K 2^-24), plus what the weights' own float32 rounding moves it by:
   the fixture measured that a 1e-7 relative perturbation of the weights moves the updates by at most
   update_conditioning (1.1e-6 to 1.7e-6), so a 2^-24 one by update_conditioning / 1e-7 x 2^-24. The exempt
   embedding moves only by its gradient step (7e-4 of its norm in olmo2_mix), so float32 storage alone costs
   its update up to f32_weight_rounding_error_exempt (4.2e-5 there), in repoc's weights and again in the
   reference's rounding to float32: twice that is added to its tolerance. The Qwen biases are exempt from decay
   too (optim.decay_biases false) and are judged like it. Each step's loss: as the loss above. */
static void check_adamw(const char* dir, Fixture* fx, F32Engine engine) {
    char ckpt[512];
    const char* e = f32_engine_name(engine);
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt", dir);
    products_set_f32_engine(engine);
    Model m;
    load_model(&m, ckpt, fx);
    Fp32Tol ft = fp32_tol(&m.cfg, fx);
    OptimConfig oc;
    optim_config_default(&oc);
    oc.lr = meta_double(&fx->ref, "lr");
    oc.beta1 = meta_double(&fx->ref, "beta1");
    oc.beta2 = meta_double(&fx->ref, "beta2");
    oc.eps = meta_double(&fx->ref, "eps");
    oc.weight_decay = meta_double(&fx->ref, "weight_decay");
    CHECK(!oc.decay_embeddings && oc.decay_norms && !oc.decay_biases,
          "the defaults are OLMo-2's groups, biases exempt as transformers' Trainer");
    oc.grad_clip = 0;
    oc.schedule = SCHED_CONSTANT;
    oc.warmup_steps = 0;
    AdamW opt;
    adamw_build(&opt, &m.tensors, &oc);
    real* before = mallocCheck(m.tensors.n_params * sizeof(real));
    memcpy(before, m.params, m.tensors.n_params * sizeof(real));
    size_t steps = (size_t)meta_double(&fx->ref, "adamw_steps");
    for (size_t s = 0; s < steps; s++) {
        model_zero_grad(&m);
        double loss = model_forward(&m, &fx->batch).loss;
        double ref = ref_scalar(&fx->ref, "adamw_losses", s), bound = 2 * ft.fwd * max_abs(m.logits, fx->N * m.cfg.V);
        EXPECT(fabs(loss - ref) <= bound, "%s: AdamW step %zu: loss %.9f vs PyTorch %.9f: |diff| %.2e <= %.2e", e, s,
               loss, ref, fabs(loss - ref), bound);
        model_backward(&m, &fx->batch, 1.0);
        adamw_step(&opt, m.params, m.grads, oc.lr, s, 1.0, false);
    }
    double cond = meta_double(&fx->ref, "update_conditioning") / 1e-7;
    double tol = fmax(ft.grad, ft.repo) + cond * 0x1p-24;
    double exempt_tol = tol + 2 * meta_double(&fx->ref, "f32_weight_rounding_error_exempt");
    double worst = 0;
    const char* worst_name = "";
    printf("  %s: 3-step update, relative L2 error per tensor:", e);
    for (size_t i = 0; i < m.tensors.n; i++) {
        const TensorInfo* t = &m.tensors.t[i];
        char name[160];
        snprintf(name, sizeof(name), "update.%s", t->name);
        float* ref = ref_tensor(&fx->ref, name, t->numel);
        double num = 0, den = 0;
        for (size_t k = 0; k < t->numel; k++) {
            double got = (double)m.params[t->offset + k] - before[t->offset + k];
            num += (got - ref[k]) * (got - ref[k]);
            den += (double)ref[k] * ref[k];
        }
        double rel = sqrt(num / den), lim = t->is_embedding || t->is_bias ? exempt_tol : tol;
        printf("%s%s %.1e", i % 4 ? "  " : "\n    ", t->name, rel);
        if (!t->is_embedding && !t->is_bias && rel > worst) {
            worst = rel;
            worst_name = t->name;
        }
        if (!(rel <= lim)) {
            printf("\n");
            EXPECT(0, "%s: %s: relative L2 error of the 3-step update %.2e > %.2e", e, t->name, rel, lim);
        }
        free(ref);
    }
    printf("\n");
    EXPECT(worst <= tol,
           "%s: 3 AdamW steps: update (after - before) of all decayed tensors within %.1e relative L2 (the gradient "
           "bound + %.0f x 2^-24 of the weights' rounding; worst %.2e, %s); embed_tokens and biases within %.1e",
           e, tol, cond, worst, worst_name, exempt_tol);
    free(before);
    adamw_free(&opt);
    model_free(&m);
    products_set_f32_engine(F32_OPENBLAS);
}

/* the BF16 copy of the checkpoint gives PyTorch's loss on the same BF16-rounded weights (float64 there): the
   FP32 loss bound */
static void check_bf16_loss(const char* dir, Fixture* fx) {
    char ckpt[512];
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt_bf16", dir);
    Model m;
    load_model(&m, ckpt, fx);
    double loss = model_forward(&m, &fx->batch).loss,
           bound = 2 * fp32_tol(&m.cfg, fx).fwd * max_abs(m.logits, fx->N * m.cfg.V);
    double ref_loss = ref_scalar(&fx->ref, "loss_bf16", 0);
    EXPECT(fabs(loss - ref_loss) <= bound,
           "BF16 checkpoint: loss %.9f vs PyTorch (bf16 weights) %.9f: |diff| %.2e <= %.2e", loss, ref_loss,
           fabs(loss - ref_loss), bound);
    model_free(&m);
}

static int arenas_equal(const Model* a, const Model* b) {
    return a->tensors.n_params == b->tensors.n_params &&
           memcmp(a->params, b->params, a->tensors.n_params * sizeof(real)) == 0;
}

/* load → save → load is bit-identical; BF16 save equals torch's bf16 rounding */
static void check_round_trip(const char* dir, Fixture* fx) {
    char ckpt[512], bf16[512], tmp[] = "/tmp/repoc_parity_XXXXXX";
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt", dir);
    snprintf(bf16, sizeof(bf16), "%s/ckpt_bf16", dir);
    CHECK(mkdtemp(tmp), "mkdtemp");
    char out_f32[600], out_bf16[600];
    snprintf(out_f32, sizeof(out_f32), "%s/f32", tmp);
    snprintf(out_bf16, sizeof(out_bf16), "%s/bf16", tmp);
    Model a, b, c, d;
    load_model(&a, ckpt, fx);
    hf_save(&a, out_f32, ST_F32);
    load_model(&b, out_f32, fx);
    EXPECT(arenas_equal(&a, &b), "F32 load -> save -> load: all %zu parameters bit-identical", a.tensors.n_params);
    ModelConfig ca, cb;
    hf_config_read(ckpt, &ca);
    hf_config_read(out_f32, &cb);
    EXPECT(memcmp(ca.pos, cb.pos, sizeof(ca.pos)) == 0 && ca.block == cb.block &&
               ca.tie_embeddings == cb.tie_embeddings && ca.yarn_factor == cb.yarn_factor &&
               ca.rope_theta == cb.rope_theta && cfg_hd(&ca) == cfg_hd(&cb) && ca.attn_bias == cb.attn_bias &&
               ca.pad_id == cb.pad_id && memcmp(ca.sliding, cb.sliding, sizeof(ca.sliding)) == 0 &&
               ca.sliding_window == cb.sliding_window && ca.attn_scalar == cb.attn_scalar &&
               ca.rope_local_theta == cb.rope_local_theta && ca.rope_linear_factor == cb.rope_linear_factor,
           "saved config.json reads back the same block, positions, tie, theta, YaRN, head_dim, biases, pad id and "
           "Gemma-3's sliding layers, window, attention scalar, local theta and linear factor");
    hf_save(&a, out_bf16, ST_BF16);
    load_model(&c, out_bf16, fx);
    load_model(&d, bf16, fx);
    EXPECT(arenas_equal(&c, &d), "BF16 save of the F32 weights == PyTorch's .to(torch.bfloat16) copy, bit for bit");
    model_free(&a);
    model_free(&b);
    model_free(&c);
    model_free(&d);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    CHECK(system(cmd) == 0, "cleaning %s", tmp);
}

int main(void) {
    threads_init(0);
    const char* fixtures[] = {"tests/fixtures/olmo2_mix", "tests/fixtures/llama_gqa", "tests/fixtures/llama3_docs",
                              "tests/fixtures/qwen2_pad", "tests/fixtures/qwen3_hd",  "tests/fixtures/gemma3_sw",
                              "tests/fixtures/mistral_sw"};
    for (size_t k = 0; k < sizeof(fixtures) / sizeof(fixtures[0]); k++) {
        printf("%s\n", fixtures[k]);
        Fixture fx;
        fixture_open(&fx, fixtures[k]);
        for (int e = 0; e < 2; e++) { /* every FP32 engine this build has */
            if (e == F32_ONEDNN && !onednn_available()) {
                printf("SKIP onednn: this build has no oneDNN\n");
                continue;
            }
            check_forward_backward(fixtures[k], &fx, (F32Engine)e);
            check_adamw(fixtures[k], &fx, (F32Engine)e);
        }
        check_forward_backward_bf16(fixtures[k], &fx);
        check_bf16_loss(fixtures[k], &fx);
        check_round_trip(fixtures[k], &fx);
        fixture_close(&fx);
    }
    printf("test_parity: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}

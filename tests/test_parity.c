/* PyTorch parity (issue #3): load the fixture checkpoints of tests/fixtures/
   (written by tools/reference.py, an independent float64 PyTorch model) with
   the Hugging Face loader, and compare loss, logits, RePo positions z and every
   parameter gradient; the loss from the BF16 copy; and the save/load round trip
   (bit-identical in F32; BF16 saving rounds exactly as torch does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/safetensors.h"
#include "common/threads.h"
#include "model/hf_checkpoint.h"
#include "model/hf_config.h"
#include "model/model.h"
#include "tests/testutil.h"

#ifdef REPOC_F64
#error "the parity test runs in the float build"
#endif

typedef struct {
    StFile ref;
    size_t B, T, N;
    int32_t *tokens, *targets;
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
    fx->tokens = mallocCheck(fx->N * sizeof(int32_t));
    fx->targets = mallocCheck(fx->N * sizeof(int32_t));
    st_read_i32(&fx->ref, st_find(&fx->ref, "tokens"), fx->tokens);
    st_read_i32(&fx->ref, st_find(&fx->ref, "targets"), fx->targets);
}

static void fixture_close(Fixture* fx) {
    st_close(&fx->ref);
    free(fx->tokens);
    free(fx->targets);
}

static void load_model(Model* m, const char* ckpt, const Fixture* fx) {
    ModelConfig cfg;
    hf_config_read(ckpt, &cfg);
    model_build(m, &cfg, fx->B, fx->T, NULL, 0, false);
    size_t fresh = hf_load_weights(m, ckpt, 1, false);
    CHECK(fresh == 0, "%s: %zu tensors were missing", ckpt, fresh);
    m->z_loss = fx->z_loss;
}

/* loss, logits, z, every gradient */
static void check_forward_backward(const char* dir, Fixture* fx) {
    char ckpt[512];
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt", dir);
    Model m;
    load_model(&m, ckpt, fx);
    model_zero_grad(&m);
    double loss = model_forward(&m, fx->tokens, fx->targets);
    double ref_loss = ref_scalar(&fx->ref, "loss", 0);
    double rel = fabs(loss - ref_loss) / fabs(ref_loss);
    EXPECT(rel <= 1e-5, "loss %.9f vs PyTorch %.9f: rel err %.2e (tol 1e-5)", loss, ref_loss, rel);
    float* ref = ref_tensor(&fx->ref, "logits", fx->N * m.cfg.V);
    expect_close("logits", m.logits, ref, fx->N * m.cfg.V, 1e-6, 1e-4, "1e-4 x max|ref| + 1e-6");
    free(ref);
    for (size_t l = 0; l < m.cfg.L; l++) {
        if (m.cfg.pos[l] != POS_REPO) continue;
        char name[64];
        snprintf(name, sizeof(name), "z.%zu", l);
        ref = ref_tensor(&fx->ref, name, fx->N * m.cfg.KVH);
        expect_close(name, m.la[l].z, ref, fx->N * m.cfg.KVH, 1e-5, 0, "RePo positions within 1e-5");
        free(ref);
    }
    model_backward(&m, 1.0);
    for (size_t i = 0; i < m.tensors.n; i++) {
        const TensorInfo* t = &m.tensors.t[i];
        char name[160];
        snprintf(name, sizeof(name), "grad.%s", t->name);
        ref = ref_tensor(&fx->ref, name, t->numel);
        expect_close(name, m.grads + t->grad_offset, ref, t->numel, 1e-6, 1e-4, "1e-4 x max|ref| + 1e-6");
        free(ref);
    }
    model_free(&m);
}

/* the BF16 copy of the checkpoint gives PyTorch's bf16-weight loss */
static void check_bf16_loss(const char* dir, Fixture* fx) {
    char ckpt[512];
    snprintf(ckpt, sizeof(ckpt), "%s/ckpt_bf16", dir);
    Model m;
    load_model(&m, ckpt, fx);
    double loss = model_forward(&m, fx->tokens, fx->targets);
    double ref_loss = ref_scalar(&fx->ref, "loss_bf16", 0);
    EXPECT(fabs(loss - ref_loss) <= 1e-3, "BF16 checkpoint: loss %.6f vs PyTorch (bf16 weights) %.6f (tol 1e-3)",
           loss, ref_loss);
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
    EXPECT(memcmp(ca.pos, cb.pos, sizeof(ca.pos)) == 0 && ca.block == cb.block && ca.tie_embeddings == cb.tie_embeddings
               && ca.yarn_factor == cb.yarn_factor && ca.rope_theta == cb.rope_theta,
           "saved config.json reads back the same block, positions, tie, theta and YaRN");
    hf_save(&a, out_bf16, ST_BF16);
    load_model(&c, out_bf16, fx);
    load_model(&d, bf16, fx);
    EXPECT(arenas_equal(&c, &d), "BF16 save of the F32 weights == PyTorch's .to(torch.bfloat16) copy, bit for bit");
    model_free(&a), model_free(&b), model_free(&c), model_free(&d);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    CHECK(system(cmd) == 0, "cleaning %s", tmp);
}

int main(void) {
    threads_init(0);
    const char* fixtures[] = {"tests/fixtures/olmo2_mix", "tests/fixtures/llama_gqa"};
    for (int k = 0; k < 2; k++) {
        printf("%s\n", fixtures[k]);
        Fixture fx;
        fixture_open(&fx, fixtures[k]);
        check_forward_backward(fixtures[k], &fx);
        check_bf16_loss(fixtures[k], &fx);
        check_round_trip(fixtures[k], &fx);
        fixture_close(&fx);
    }
    printf("test_parity: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}

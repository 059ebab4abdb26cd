/* LoRA adapters: PEFT's zero B leaves the base model's logits unchanged; a
   merged checkpoint (W + (alpha/r) B A) gives the adapter model's logits within
   float rounding; the PEFT files round-trip; an adapter whose shapes do not
   match the base is refused, naming the tensor and both shapes. */
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/rng.h"
#include "common/safetensors.h"
#include "model/model.h"
#include "model/peft.h"
#include "tests/testutil.h"

#define NT 12

static void random_weights(Model* m, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    for (size_t i = 0; i < m->tensors.n; i++) {
        const TensorInfo* t = &m->tensors.t[i];
        for (size_t k = 0; k < t->numel; k++)
            m->params[t->offset + k] = (real)(t->is_norm ? 0.5 + rng_uniform(&rng) : 0.3 * (2 * rng_uniform(&rng) - 1));
    }
}

/* copy every tensor of dst from src by name; LoRA tensors only with lora (and when src has them) */
static void copy_by_name(Model* dst, const Model* src, bool lora) {
    for (size_t i = 0; i < dst->tensors.n; i++) {
        const TensorInfo* t = &dst->tensors.t[i];
        long j = tensor_table_find(&src->tensors, t->name);
        if (t->is_lora && (j < 0 || !lora)) continue;
        CHECK(j >= 0, "test_lora: %s missing", t->name);
        memcpy(dst->params + t->offset, src->params + src->tensors.t[j].offset, t->numel * sizeof(real));
    }
}

static float* logits_of(Model* m, const int32_t* tokens) {
    model_forward(m, tokens, NULL);
    size_t n = m->B * m->T * m->cfg.V;
    float* out = mallocCheck(n * sizeof(float));
    for (size_t i = 0; i < n; i++) out[i] = (float)m->logits[i];
    return out;
}

static void run(const char* label, ModelConfig cfg, const char* tmp) {
    printf("%s\n", label);
    int32_t tokens[NT];
    for (size_t n = 0; n < NT; n++) tokens[n] = (int32_t)((n * 7 + 3) % cfg.V);
    ModelConfig plain = cfg;
    plain.lora_rank = 0;
    Model base, lora;
    model_build(&base, &plain, 2, NT / 2, NULL, 0, false);
    model_build(&lora, &cfg, 2, NT / 2, NULL, 0, false);
    random_weights(&base, 5);

    /* PEFT's init: A uniform, B = 0, so the adapter model is the base model */
    model_init_weights(&lora, 9, 0.02);
    copy_by_name(&lora, &base, false);
    float* ref = logits_of(&base, tokens);
    float* got = logits_of(&lora, tokens);
    expect_close("B = 0 at init: the base model's logits", got, ref, lora.B * lora.T * cfg.V, 0, 0, "exact");
    free(ref);
    free(got);

    /* the PEFT files round-trip */
    random_weights(&lora, 11);
    float* adapted = logits_of(&lora, tokens);
    peft_save(&lora, tmp, "base");
    ModelConfig read = plain;
    EXPECT(peft_read_config(tmp, &read) && read.lora_rank == cfg.lora_rank && read.lora_alpha == cfg.lora_alpha &&
               read.lora_targets == cfg.lora_targets, "adapter_config.json gives back r, lora_alpha, target_modules");
    Model back;
    model_build(&back, &read, 2, NT / 2, NULL, 0, false);
    random_weights(&back, 13);
    copy_by_name(&back, &lora, false);   /* the base only: the adapter comes from the files */
    size_t n = peft_load(&back, tmp, NULL);
    float* again = logits_of(&back, tokens);
    expect_close("reloaded adapter: same logits", again, adapted, lora.B * lora.T * cfg.V, 0, 0, "exact");
    EXPECT(n > 0, "peft_load read %zu tensors", n);
    free(again);

    /* merge: W + (alpha/r) B A in a plain model = the adapter model */
    peft_merge(&lora);
    copy_by_name(&base, &lora, false);
    float* merged = logits_of(&base, tokens);
    expect_close("merged checkpoint = adapter model", merged, adapted, lora.B * lora.T * cfg.V, 0, 1e-5,
                 "float rounding");
    free(merged);
    free(adapted);
    model_free(&back);
    model_free(&base);
    model_free(&lora);
}

/* A BF16 base (cfg.base_bf16) computes exactly what an F32 model holding the
   same BF16-rounded base computes: logits and the adapters' gradients. */
static void check_bf16_base(ModelConfig cfg) {
    printf("bf16 base\n");
    int32_t tokens[NT], targets[NT];
    for (size_t n = 0; n < NT; n++) {
        tokens[n] = (int32_t)((n * 5 + 1) % cfg.V);
        targets[n] = (int32_t)((n * 3) % cfg.V);
    }
    Model ref, half;
    model_build(&ref, &cfg, 2, NT / 2, NULL, 0, false);
    cfg.base_bf16 = true;
    model_build(&half, &cfg, 2, NT / 2, NULL, 0, false);
    EXPECT(half.tensors.n_bf16 > 0 && half.tensors.n_params < ref.tensors.n_params,
           "the frozen layer matrices leave the F32 arena: %zu BF16 values, F32 %zu -> %zu", half.tensors.n_bf16,
           ref.tensors.n_params, half.tensors.n_params);
    random_weights(&ref, 17);
    for (size_t i = 0; i < ref.tensors.n; i++) {   /* round the base to BF16 and give both models the same values */
        const TensorInfo *r = &ref.tensors.t[i], *h = &half.tensors.t[i];
        for (size_t k = 0; k < r->numel; k++) {
            real* x = ref.params + r->offset + k;
            if (!h->bf16) { half.params[h->offset + k] = *x; continue; }
            half.base_bf16[h->offset + k] = st_f32_to_bf16((float)*x);
            *x = (real)st_bf16_to_f32(half.base_bf16[h->offset + k]);
        }
    }
    double lr = model_forward(&ref, tokens, targets), lh = model_forward(&half, tokens, targets);
    EXPECT(lr == lh, "the same loss (%.9g, %.9g)", lr, lh);
    model_zero_grad(&ref);
    model_zero_grad(&half);
    model_backward(&ref, 1.0);
    model_backward(&half, 1.0);
    EXPECT(ref.tensors.n_grads == half.tensors.n_grads &&
               !memcmp(ref.grads, half.grads, ref.tensors.n_grads * sizeof(real)),
           "the same adapter gradients (%zu values)", ref.tensors.n_grads);
    model_free(&ref);
    model_free(&half);
}

typedef struct { ModelConfig cfg; const char* dir; } LoadArg;
static void load_child(void* p) {
    LoadArg* a = p;
    Model m;
    model_build(&m, &a->cfg, 1, 2, NULL, 0, false);
    peft_load(&m, a->dir, NULL);
}

int main(void) {
    char tmp[] = "/tmp/test_lora_XXXXXX";
    CHECK(mkdtemp(tmp), "mkdtemp");
    ModelConfig olmo;
    model_config_default(&olmo);
    test_model_sizes(&olmo, 29, 32, 2, 4, 2, 48);
    olmo.pos[1] = POS_REPO;
    olmo.lora_rank = 3;
    olmo.lora_alpha = 5;
    olmo.lora_targets = (1u << LORA_N_TARGETS) - 1;
    run("olmo2, rank 3 on all seven projections, a RePo layer", olmo, tmp);
    ModelConfig llama = olmo;
    llama.block = BLOCK_LLAMA;
    llama.tie_embeddings = true;
    llama.lora_rank = 2;
    llama.lora_alpha = 16;
    llama.lora_targets = 1u << LORA_Q | 1u << LORA_O | 1u << LORA_UP;
    run("llama, rank 2 on q_proj, o_proj, up_proj", llama, tmp);

    check_bf16_base(olmo);
    check_bf16_base(llama);

    printf("errors\n");
    LoadArg arg = {olmo, tmp};   /* tmp holds llama's rank-2 adapter; olmo asks for rank 3 */
    arg.cfg.lora_rank = 2;
    arg.cfg.lora_targets = llama.lora_targets;
    arg.cfg.D = 64;
    const char* shapes[] = {"adapter_model.safetensors", "q_proj.lora_A.weight", "[2, 32]", "[2, 64]", NULL};
    expect_dies_with("an adapter for another base: tensor and both shapes", load_child, &arg, shapes);
    arg.cfg.D = 32;
    arg.cfg.lora_rank = 3;
    const char* rank[] = {"lora_A.weight", "[2, 32]", "[3, 32]", NULL};
    expect_dies_with("an adapter of another rank", load_child, &arg, rank);

    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    if (system(cmd)) return 1;
    printf("test_lora: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}

/* LoRA adapters: PEFT's zero B leaves the base model's logits unchanged; a
   merged checkpoint (W + (alpha/r) B A) gives the adapter model's logits within
   float rounding, also with use_rslora (alpha/sqrt(r)), whose merge adds exactly
   that scale; the PEFT files round-trip; trained RePo weights are saved
   under PEFT's adapter-file names for modules_to_save and listed there; an
   adapter whose shapes do not match the base is refused, naming the tensor and
   both shapes, and so is one whose RePo weights and modules_to_save disagree. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "common/rng.h"
#include "common/safetensors.h"
#include "hf/peft.h"
#include "model/linear.h"
#include "model/lora.h"
#include "model/model.h"
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

static float* logits_of(Model* m, int32_t* tokens) {
    model_forward(m, &(Batch){.B = m->B, .T = m->T, .tokens = tokens});
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
    model_init_weights(&lora, &(ModelInit){.seed = 9, .std = 0.02});
    copy_by_name(&lora, &base, false);
    float* ref = logits_of(&base, tokens);
    float* got = logits_of(&lora, tokens);
    /* the same values, but the adapted projections are products of their own, which a kernel may sum in
       another order than the base model's joined ones: twice the FP32 bound of the forward chain
       (testutil.h) */
    size_t K = cfg.D > cfg.F ? cfg.D : cfg.F;
    K = K > cfg.V ? K : cfg.V;
    double rtol = 2 * fp32_chain_rtol(4.0 * (double)cfg.L + 1, (double)K);
    char why[96];
    snprintf(why, sizeof(why), "2 (4L+1) K 2^-24 = %.1e x max|ref|, K %zu", rtol, K);
    expect_close("B = 0 at init: the base model's logits", got, ref, lora.B * lora.T * cfg.V, 0, rtol, why);
    free(ref);
    free(got);

    /* the PEFT files round-trip */
    random_weights(&lora, 11);
    float* adapted = logits_of(&lora, tokens);
    LoraBase base_id = {.path = "/abs/base dir", .fingerprint = 0x00ab00cd00ef0012ull};
    peft_save(&lora, tmp, false, &base_id);
    LoraBase named;
    EXPECT(peft_read_lora_base(tmp, &named) && !strcmp(named.path, "/abs/base dir") &&
               named.fingerprint == base_id.fingerprint,
           "adapter_model.safetensors' __metadata__ gives back the base's path and fingerprint");
    char hdr[4096] = "", path[600];
    snprintf(path, sizeof(path), "%s/adapter_model.safetensors", tmp);
    FILE* fh = fopen(path, "rb");
    size_t got_hdr = fh ? fread(hdr, 1, sizeof(hdr) - 1, fh) : 0;
    hdr[got_hdr] = 0;
    if (fh) fclose(fh);
    EXPECT(strstr(hdr + 8, "\"repoc.base_fingerprint\":\"00ab00cd00ef0012\"") &&
               strstr(hdr + 8, "\"repoc.base_path\":\"/abs/base dir\""),
           "the metadata keys build/merge reads: repoc.base_path, repoc.base_fingerprint as %%016llx");
    Model unmerged; /* the base, for folding the adapter in from its files */
    model_build(&unmerged, &plain, 2, NT / 2, NULL, 0, false);
    copy_by_name(&unmerged, &lora, false);
    ModelConfig read = plain;
    EXPECT(peft_read_config(tmp, &read) && read.lora_rank == cfg.lora_rank && read.lora_alpha == cfg.lora_alpha &&
               read.lora_targets == cfg.lora_targets && read.lora_rslora == cfg.lora_rslora,
           "adapter_config.json gives back r, lora_alpha, use_rslora, target_modules");
    Model back;
    model_build(&back, &read, 2, NT / 2, NULL, 0, false);
    random_weights(&back, 13);
    copy_by_name(&back, &lora, false); /* the base only: the adapter comes from the files */
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
    size_t folded = peft_merge_file(&unmerged, tmp);
    float* from_files = logits_of(&unmerged, tokens);
    expect_close("peft_merge_file into a model without LoRA = peft_merge", from_files, merged, lora.B * lora.T * cfg.V,
                 0, 0, "the same products on the same values");
    EXPECT(folded > 0, "peft_merge_file folded %zu projections and RePo weights", folded);
    free(from_files);
    model_free(&unmerged);
    free(merged);
    free(adapted);
    model_free(&back);
    model_free(&base);
    model_free(&lora);
}

/* use_rslora: the merge adds s B A with s = alpha / sqrt(r) (3 for alpha 6, r 4; alpha / r would be 1.5) to
   every adapted W, checked against B A summed in double; adapter_config.json records use_rslora */
static void check_rslora(ModelConfig cfg, const char* tmp) {
    printf("rslora merge\n");
    cfg.lora_rank = 4;
    cfg.lora_alpha = 6;
    cfg.lora_rslora = true;
    Model m;
    model_build(&m, &cfg, 1, 2, NULL, 0, false);
    random_weights(&m, 21);
    peft_save(&m, tmp, false, NULL);
    ModelConfig read = cfg;
    read.lora_rslora = false;
    EXPECT(peft_read_config(tmp, &read) && read.lora_rslora, "adapter_config.json: use_rslora true read back");
    real* before = mallocCheck(m.tensors.n_params * sizeof(real));
    memcpy(before, m.params, m.tensors.n_params * sizeof(real));
    peft_merge(&m);
    size_t total = 0, r = cfg.lora_rank;
    for (size_t i = 0; i < m.tensors.n; i++)
        if (m.tensors.t[i].kind == TK_LORA_A) total += m.tensors.t[i - 1].numel;
    float* got = mallocCheck(total * sizeof(float));
    float* want = mallocCheck(total * sizeof(float));
    size_t n = 0;
    for (size_t i = 0; i < m.tensors.n; i++) { /* the table lists W, its lora_A, its lora_B in a row */
        const TensorInfo *a = &m.tensors.t[i], *w = a - 1, *b = a + 1;
        if (a->kind != TK_LORA_A) continue;
        size_t out = w->shape[0], in = w->shape[1];
        for (size_t o = 0; o < out; o++)
            for (size_t k = 0; k < in; k++, n++) {
                double ba = 0;
                for (size_t j = 0; j < r; j++)
                    ba += (double)before[b->offset + o * r + j] * before[a->offset + j * in + k];
                got[n] = (float)(m.params[w->offset + o * in + k] - before[w->offset + o * in + k]);
                want[n] = (float)(6.0 / sqrt(4.0) * ba);
            }
    }
    expect_close("merged W - W = (alpha / sqrt(r)) B A", got, want, total, 0, 1e-5, "float rounding of W + s B A");
    free(got);
    free(want);
    free(before);
    model_free(&m);
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
    for (size_t i = 0; i < ref.tensors.n; i++) { /* round the base to BF16 and give both models the same values */
        const TensorInfo *r = &ref.tensors.t[i], *h = &half.tensors.t[i];
        for (size_t k = 0; k < r->numel; k++) {
            real* x = ref.params + r->offset + k;
            if (!h->bf16) {
                half.params[h->offset + k] = *x;
                continue;
            }
            half.base_bf16[h->offset + k] = bf16_round_nearest((float)*x);
            *x = (real)bf16_to_f32(half.base_bf16[h->offset + k]);
        }
    }
    Batch b = {.B = 2, .T = NT / 2, .tokens = tokens, .targets = targets};
    double lr = model_forward(&ref, &b).loss, lh = model_forward(&half, &b).loss;
    EXPECT(lr == lh, "the same loss (%.9g, %.9g)", lr, lh);
    model_zero_grad(&ref);
    model_zero_grad(&half);
    model_backward(&ref, &b, 1.0);
    model_backward(&half, &b, 1.0);
    EXPECT(ref.tensors.n_grads == half.tensors.n_grads &&
               !memcmp(ref.grads, half.grads, ref.tensors.n_grads * sizeof(real)),
           "the same adapter gradients (%zu values)", ref.tensors.n_grads);
    /* BF16 products (train.compute_dtype "bf16"): the frozen base is read as it is stored, the F32 model's
       rounded base through its mirror; both see the same operands and compute the same bits */
    char why[512];
    if (products_bf16_available(why, sizeof(why))) {
        ModelOpts bo = {.compute_bf16 = true};
        Model ref16, half16;
        ModelConfig f32cfg = cfg;
        f32cfg.base_bf16 = false;
        model_build_opts(&ref16, &f32cfg, 2, NT / 2, NULL, 0, &bo, false);
        model_build_opts(&half16, &cfg, 2, NT / 2, NULL, 0, &bo, false);
        memcpy(ref16.params, ref.params, ref.tensors.n_params * sizeof(real));
        memcpy(half16.params, half.params, half.tensors.n_params * sizeof(real));
        memcpy(half16.base_bf16, half.base_bf16, half.tensors.n_bf16 * sizeof(uint16_t));
        model_params_changed(&ref16);
        model_params_changed(&half16);
        double l16 = model_forward(&ref16, &b).loss, h16 = model_forward(&half16, &b).loss;
        model_zero_grad(&ref16);
        model_zero_grad(&half16);
        model_backward(&ref16, &b, 1.0);
        model_backward(&half16, &b, 1.0);
        EXPECT(l16 == h16 && l16 != lr && fabs(l16 - lr) < 0.01 * lr &&
                   !memcmp(ref16.grads, half16.grads, ref.tensors.n_grads * sizeof(real)),
               "bf16 products: the same loss (%.9g; f32 products %.9g) and adapter gradients, bit for bit", h16, lr);
        EXPECT(half16.products->prod.weight_rounded == 0 && ref16.products->prod.weight_rounded == 0,
               "bf16 products: every base weight read from base_bf16 (or the mirror), none rounded at a product");
        model_free(&ref16);
        model_free(&half16);
    } else printf("SKIP bf16 products on a BF16 base: %s\n", why);
    model_free(&ref);
    model_free(&half);
}

/* LoRA dropout: the mask keeps about 1 - p of the inputs, scaled by 1/(1 - p), the same for the same key;
   a model's dropout changes the loss only while on, and recompute remakes the same masks (bit-identical
   gradients) */
static void check_dropout(ModelConfig cfg) {
    printf("dropout\n");
    size_t n = 1 << 16;
    real* ones = mallocCheck(n * sizeof(real));
    real* a = mallocCheck(n * sizeof(real));
    real* b = mallocCheck(n * sizeof(real));
    for (size_t i = 0; i < n; i++) ones[i] = 1;
    LoraDropout d = {0.25, 42, NULL};
    lora_dropout_apply(a, ones, false, &d, 256, n / 256);
    size_t kept = 0, scaled = 0;
    for (size_t i = 0; i < n; i++) {
        kept += a[i] != 0;
        scaled += a[i] == 0 || a[i] == (real)(1 / 0.75);
    }
    double frac = (double)kept / (double)n; /* binomial: sd sqrt(p (1-p) / n) = 0.0017 */
    EXPECT(fabs(frac - 0.75) < 0.01 && scaled == n, "p 0.25 keeps %.4f of %zu inputs (0.75 +- 0.01), each x 1/0.75",
           frac, n);
    lora_dropout_apply(b, ones, false, &d, 256, n / 256);
    EXPECT(!memcmp(a, b, n * sizeof(real)), "the same key gives the same mask");
    d.key = 43;
    lora_dropout_apply(b, ones, false, &d, 256, n / 256);
    EXPECT(memcmp(a, b, n * sizeof(real)), "another key gives another mask");
    free(ones);
    free(a);
    free(b);

    int32_t tokens[NT], targets[NT];
    for (size_t i = 0; i < NT; i++) {
        tokens[i] = (int32_t)((i * 5 + 2) % cfg.V);
        targets[i] = (int32_t)((i * 7) % cfg.V);
    }
    cfg.lora_dropout = 0.3;
    Model m[2];
    double loss[2];
    for (int rec = 0; rec < 2; rec++) {
        ModelOpts o = {.recompute = rec};
        model_build_opts(&m[rec], &cfg, 2, NT / 2, NULL, 0, &o, false);
        random_weights(&m[rec], 19);
        Batch b = {.B = 2, .T = NT / 2, .tokens = tokens, .targets = targets, .lora_dropout_key = 7};
        double off = model_forward(&m[rec], &b).loss;
        b.lora_dropout_on = true;
        loss[rec] = model_forward(&m[rec], &b).loss;
        if (!rec)
            EXPECT(off != loss[rec], "dropout changes the loss only while on (%.9g off, %.9g on)", off, loss[rec]);
        model_zero_grad(&m[rec]);
        model_backward(&m[rec], &b, 1.0);
    }
    EXPECT(loss[0] == loss[1] && !memcmp(m[0].grads, m[1].grads, m[0].tensors.n_grads * sizeof(real)),
           "recompute with dropout: the same loss and bit-identical gradients (%zu values)", m[0].tensors.n_grads);
    model_free(&m[0]);
    model_free(&m[1]);
}

typedef struct {
    ModelConfig cfg;
    const char* dir;
    const char* const* frozen;
    size_t n_frozen;
} LoadArg;
static void load_child(void* p) {
    LoadArg* a = p;
    Model m;
    model_build(&m, &a->cfg, 1, 2, a->frozen, a->n_frozen, false);
    peft_load(&m, a->dir, NULL);
}

static void write_text(const char* dir, const char* file, const char* text) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    file_write_atomic(path, text, strlen(text));
}

/* RePo layers 1 and 2 trained with LoRA, layer 2's gate_map frozen: PEFT's adapter-file names
   (base_model.model.<module>.weight, never the in-model <module>.modules_to_save.default.weight), and
   modules_to_save by short name where every module of a kind is saved, by path otherwise */
static void check_modules_to_save(ModelConfig cfg, const char* tmp) {
    printf("modules_to_save\n");
    cfg.L = 3;
    cfg.pos[1] = POS_REPO;
    cfg.pos[2] = POS_REPO;
    const char* frozen[] = {"model.layers.2.self_attn.gate_map.weight"};
    Model m;
    model_build(&m, &cfg, 1, 2, frozen, 1, false);
    model_init_weights(&m, &(ModelInit){.seed = 3, .std = 0.02});
    peft_save(&m, tmp, false, NULL);
    char path[512];
    snprintf(path, sizeof(path), "%s/adapter_model.safetensors", tmp);
    StFile f;
    st_open_or_die(&f, path);
    bool plain = true;
    for (size_t j = 0; j < f.n_tensors; j++)
        plain &= !strstr(f.tensors[j].name, "modules_to_save") && !strstr(f.tensors[j].name, ".default");
    EXPECT(plain && st_find(&f, "base_model.model.model.layers.1.self_attn.gate_map.weight") &&
               st_find(&f, "base_model.model.model.layers.2.self_attn.content_map.weight") &&
               st_find(&f, "base_model.model.model.layers.2.self_attn.final_map.weight") &&
               !st_find(&f, "base_model.model.model.layers.2.self_attn.gate_map.weight"),
           "adapter_model.safetensors: trained RePo weights as base_model.model.<module>.weight, the frozen one out");
    st_close(&f);
    snprintf(path, sizeof(path), "%s/adapter_config.json", tmp);
    size_t len;
    char* text = file_read_all_or_null(path, &len);
    cJSON* j = cJSON_ParseWithLength(text, len);
    char* mts = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(j, "modules_to_save"));
    EXPECT(!strcmp(mts, "[\"model.layers.1.self_attn.gate_map\",\"content_map\",\"final_map\"]"),
           "adapter_config.json modules_to_save %s: the path of the one saved gate_map, short names for the rest", mts);
    Model back;
    model_build(&back, &cfg, 1, 2, frozen, 1, false);
    size_t n = peft_load(&back, tmp, NULL), lora = 0;
    for (size_t i = 0; i < m.tensors.n; i++) lora += m.tensors.t[i].is_lora;
    EXPECT(n == lora + 5, "peft_load reads the %zu LoRA tensors and the 5 saved RePo weights (%zu)", lora, n);
    model_free(&back);

    LoadArg arg = {cfg, tmp, frozen, 1};
    write_text(
        tmp, "adapter_config.json",
        "{\"peft_type\": \"LORA\", \"r\": 3, \"lora_alpha\": 5, "
        "\"target_modules\": [\"q_proj\"], \"modules_to_save\": [\"gate_map\", \"content_map\", \"final_map\"]}");
    const char* missing[] = {"no tensor 'base_model.model.model.layers.2.self_attn.gate_map.weight'",
                             "modules_to_save lists its module", NULL};
    expect_dies_with("modules_to_save names a module the file lacks", load_child, &arg, missing);
    write_text(tmp, "adapter_config.json",
               "{\"peft_type\": \"LORA\", \"r\": 3, \"lora_alpha\": 5, "
               "\"target_modules\": [\"q_proj\"], \"modules_to_save\": null}");
    const char* unlisted[] = {"layers.1.self_attn.gate_map.weight' is a RePo weight", "does not list", NULL};
    expect_dies_with("a RePo weight modules_to_save does not name", load_child, &arg, unlisted);
    real w[4] = {0};
    StWriteTensor in_model = {.name = "base_model.model.model.layers.1.self_attn.gate_map.modules_to_save.default"
                                      ".weight",
                              .dtype = ST_F32,
                              .ndim = 2,
                              .shape = {2, 2},
                              .data = w};
    snprintf(path, sizeof(path), "%s/adapter_model.safetensors", tmp);
    st_write(path, &in_model, 1, NULL, NULL, 0);
    const char* named[] = {"has PEFT's in-model name", "without 'modules_to_save.<adapter name>.'", NULL};
    expect_dies_with("PEFT's in-model name in the adapter file", load_child, &arg, named);
    cJSON_free(mts);
    cJSON_Delete(j);
    free(text);
    peft_save(&m, tmp, true, NULL); /* a checkpoint without a base copy: the frozen RePo weight too */
    snprintf(path, sizeof(path), "%s/adapter_model.safetensors", tmp);
    st_open_or_die(&f, path);
    EXPECT(st_find(&f, "base_model.model.model.layers.2.self_attn.gate_map.weight") != NULL,
           "all_repo: the frozen gate_map is in the adapter (the base may lack it)");
    st_close(&f);
    model_build(&back, &cfg, 1, 2, frozen, 1, false);
    EXPECT(peft_load(&back, tmp, NULL) == lora + 6, "peft_load reads it back with the 5 others");
    model_free(&back);
    model_free(&m);
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
    check_modules_to_save(olmo, tmp);
    check_rslora(olmo, tmp);
    ModelConfig rslora = olmo;
    rslora.lora_rslora = true;
    run("olmo2, rank 3, use_rslora (scale alpha / sqrt(r)): training forward and merge agree", rslora, tmp);
    run("llama, rank 2 on q_proj, o_proj, up_proj", llama, tmp);
    ModelConfig qwen3 = llama; /* the biases are base tensors: frozen with it, kept F32 by a BF16 base */
    qwen3.block = BLOCK_QWEN3;
    qwen3.head_dim = 6;
    qwen3.attn_bias = true;
    qwen3.lora_targets = 1u << LORA_Q | 1u << LORA_K | 1u << LORA_V | 1u << LORA_O;
    run("qwen3 (head_dim 6, attention_bias), rank 2 on q_proj, k_proj, v_proj, o_proj", qwen3, tmp);
    ModelConfig gemma = qwen3; /* its four norms and q/k norms are base tensors, frozen with it */
    gemma.block = BLOCK_GEMMA3;
    gemma.attn_bias = false;
    gemma.sliding_window = 3;
    gemma.sliding[0] = true;
    gemma.lora_targets = 1u << LORA_Q | 1u << LORA_V | 1u << LORA_GATE | 1u << LORA_DOWN;
    run("gemma3 (layer 0 sliding over 3 keys), rank 2 on q_proj, v_proj, gate_proj, down_proj", gemma, tmp);
    ModelConfig qwen2 = llama;
    qwen2.block = BLOCK_QWEN2;
    run("qwen2, rank 2 on q_proj, o_proj, up_proj", qwen2, tmp);

    check_bf16_base(olmo);
    check_bf16_base(llama);
    check_bf16_base(qwen3);
    check_bf16_base(gemma);
    check_dropout(olmo);

    printf("errors\n");
    LoadArg arg = {olmo, tmp, NULL, 0}; /* tmp holds llama's rank-2 adapter; olmo asks for rank 3 */
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

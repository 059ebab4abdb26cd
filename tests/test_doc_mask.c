/* Document masking against its definition: a packed row with the batch's doc_ids gives every
   document the logits, per-token losses and (summed) gradients it gets when run alone
   in a model of its own length. Two models: OLMo-2 with rope/repo/nope layers (MHA) and
   Llama with GQA 4/2, tied embeddings and llama3 RoPE. Rows of T = 80 hold 3 documents
   each, one of them across the attention's 64-key block edge. Rope positions restart at 0
   per document (checked directly: RoPE scores depend only on t - j, so logits cannot
   show it). Cached generation with gen_reset at each boundary reproduces the masked
   logits token by token. Also: without doc_ids the
   same packed row does NOT match (the check can fail), and a masked forward leaves the
   next unmasked forward bit-identical to one before it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/rng.h"
#include "data/documents.h"
#include "model/generate.h"
#include "model/model.h"
#include "tests/testutil.h"
#include "train/run_config.h"

enum { B = 2, T = 80 }; /* rows, tokens per row (constants, not macros: Batch has fields B and T) */
#define N_DOCS 3
static const size_t DOC_LEN[B][N_DOCS] = {{5, 60, 15}, {30, 3, 47}};

typedef struct {
    int32_t tokens[B * T], targets[B * T], ids[B * T];
} Packed;

static void make_batch(Packed* p, size_t V) {
    Rng rng;
    rng_seed(&rng, 99);
    for (size_t b = 0, n = 0; b < B; b++)
        for (size_t d = 0; d < N_DOCS; d++)
            for (size_t j = 0; j < DOC_LEN[b][d]; j++, n++) {
                p->tokens[n] = (int32_t)rng_below(&rng, V);
                p->targets[n] = n % 11 == 4 ? -1 : (int32_t)rng_below(&rng, V);
                p->ids[n] = (int32_t)(b * 10 + d);
            }
}

/* float copies of n reals */
static float* to_float(const real* x, size_t n) {
    float* f = mallocCheck(n * sizeof(float));
    for (size_t i = 0; i < n; i++) f[i] = (float)x[i];
    return f;
}

static void check_model(const char* label, const ModelConfig* cfg) {
    printf("%s\n", label);
    size_t V = cfg->V, N = B * T;
    Model packed;
    model_build(&packed, cfg, B, T, NULL, 0, false);
    model_init_weights(&packed, &(ModelInit){.seed = 7, .std = 0.3});
    Packed p;
    make_batch(&p, V);

    /* unmasked forward: the reference for "nothing changes without doc_ids" */
    Batch unmasked = {.B = B, .T = T, .tokens = p.tokens, .targets = p.targets};
    model_forward(&packed, &unmasked);
    float* plain = to_float(packed.logits, N * V);

    Batch masked = unmasked;
    masked.doc_ids = p.ids;
    model_zero_grad(&packed);
    size_t n_total = model_forward(&packed, &masked).n_valid;
    model_backward(&packed, &masked, 1.0);

    /* rerun the masked forward for logits and per-token losses (backward overwrote the logits) */
    model_forward(&packed, &masked);
    /* RoPE scores depend only on t - j, so the restart is invisible in the logits: check the positions */
    size_t pos_bad = 0;
    for (size_t b = 0, n = 0; b < B; b++)
        for (size_t d = 0; d < N_DOCS; d++)
            for (size_t j = 0; j < DOC_LEN[b][d]; j++, n++)
                for (size_t g = 0; g < cfg->KVH; g++) pos_bad += packed.pos_seq[n * cfg->KVH + g] != (real)j;
    EXPECT(pos_bad == 0, "rope positions restart at 0 in every document (%zu wrong)", pos_bad);
    float* got_logits = to_float(packed.logits, N * V);
    float* got_losses = to_float(packed.losses, N);
    float* ref_logits = mallocCheck(N * V * sizeof(float));
    float* ref_losses = mallocCheck(N * sizeof(float));
    real* ref_grads = callocCheck(packed.tensors.n_grads, sizeof(real));

    for (size_t b = 0, n0 = 0; b < B; b++)
        for (size_t d = 0; d < N_DOCS; d++) {
            size_t len = DOC_LEN[b][d];
            Model alone;
            model_build(&alone, cfg, 1, len, NULL, 0, false);
            CHECK(alone.tensors.n_params == packed.tensors.n_params, "same tensor list");
            memcpy(alone.params, packed.params, packed.tensors.n_params * sizeof(real));
            model_zero_grad(&alone);
            Batch doc = {.B = 1, .T = len, .tokens = p.tokens + n0, .targets = p.targets + n0};
            size_t n_valid = model_forward(&alone, &doc).n_valid;
            for (size_t i = 0; i < len * V; i++) ref_logits[n0 * V + i] = (float)alone.logits[i];
            for (size_t i = 0; i < len; i++) ref_losses[n0 + i] = (float)alone.losses[i];
            /* the packed loss is the mean over all valid targets: document d's share is n_d / n_total */
            if (n_valid) {
                model_backward(&alone, &doc, (double)n_valid / (double)n_total);
                for (size_t i = 0; i < packed.tensors.n_grads; i++) ref_grads[i] += alone.grads[i];
            }
            model_free(&alone);
            n0 += len;
        }
    expect_close("logits: packed + doc_ids = each document alone", got_logits, ref_logits, N * V, 1e-5, 2e-5,
                 "float sums in another order");
    expect_close("per-token losses", got_losses, ref_losses, N, 1e-5, 2e-5, "float sums in another order");
    float* g = to_float(packed.grads, packed.tensors.n_grads);
    float* r = to_float(ref_grads, packed.tensors.n_grads);
    expect_close("every gradient: packed = sum of documents", g, r, packed.tensors.n_grads, 1e-6, 1e-4,
                 "float sums of 6 backward passes vs one");

    /* cached decoding: gen_reset at each document boundary, then one token at a time, gives the masked
       packed logits (the cache holds one document; positions restart with it) */
    Generator gen;
    gen_build(&gen, &packed, T, 4);
    float* dec = mallocCheck(N * V * sizeof(float));
    for (size_t b = 0, n0 = 0; b < B; b++)
        for (size_t d = 0; d < N_DOCS; n0 += DOC_LEN[b][d], d++) {
            gen_reset(&gen);
            for (size_t j = 0; j < DOC_LEN[b][d]; j++) {
                const real* lg = gen_step(&gen, p.tokens[n0 + j]);
                for (size_t v = 0; v < V; v++) dec[(n0 + j) * V + v] = (float)lg[v];
            }
        }
    expect_close("cached decoding, reset per document = masked packed logits", dec, got_logits, N * V, 1e-5, 2e-5,
                 "float sums in another order");
    gen_free(&gen);
    free(dec);

    /* negative control: the same row without masking is not the documents alone */
    double max_diff = 0;
    for (size_t i = 0; i < N * V; i++) max_diff = fmax(max_diff, fabs((double)plain[i] - ref_logits[i]));
    EXPECT(max_diff > 1e-2, "without doc_ids the packed logits differ from the documents alone (max %.3e)", max_diff);

    /* back to unmasked: positions and attention are the plain ones again, bit for bit */
    model_forward(&packed, &unmasked);
    EXPECT(packed.pos_seq[(T + 70) * cfg->KVH] == 70, "positions are t again: %g at row 1, t = 70",
           (double)packed.pos_seq[(T + 70) * cfg->KVH]);
    float* again = to_float(packed.logits, N * V);
    EXPECT(!memcmp(plain, again, N * V * sizeof(float)), "unmasked forward after a masked one is bit-identical");
    free(again);
    free(plain);
    free(got_logits);
    free(got_losses);
    free(ref_logits);
    free(ref_losses);
    free(ref_grads);
    free(g);
    free(r);
    model_free(&packed);
}

/* the data side: ids from an end-of-document token, and the run config keys */
static void check_data_side(void) {
    printf("document ids from data.eos_token_id, and the config keys\n");
    const int32_t tokens[2 * 6] = {5, 1, 5, 5, 2, 1, /* row 2 */ 1, 1, 4, 4, 4, 4};
    const int32_t want[2 * 6] = {0, 0, 1, 1, 1, 1, /* row 2 */ 0, 1, 2, 2, 2, 2};
    int32_t ids[2 * 6];
    doc_ids_from_eos(ids, tokens, 2, 6, 1);
    EXPECT(!memcmp(ids, want, sizeof(want)), "eos ends its own document; every row starts at document 0");

    char err[1024] = "";
    RunConfig rc;
    const char* no_eos[] = {"data.synthetic={}", "data.document_mask=true"};
    int bad = run_config_load(&rc, NULL, no_eos, 2, err, sizeof(err));
    EXPECT(bad && strstr(err, "data.eos_token_id: is required with data.document_mask"), "no eos id: %s", err);
    run_config_free(&rc);

    const char* with_eos[] = {"data.synthetic={}", "data.document_mask=true", "data.eos_token_id=40"};
    CHECK(!run_config_load(&rc, NULL, with_eos, 3, err, sizeof(err)), "%s", err);
    ModelConfig mc;
    model_config_default(&mc);
    mc.V = 32;
    int32_t eos = 0;
    bad = run_config_eos(&rc, &mc, &eos, err, sizeof(err));
    EXPECT(bad && strstr(err, "data.eos_token_id: 40 is outside the vocabulary [0, 32)"), "eos >= V: %s", err);
    mc.V = 64;
    bad = run_config_eos(&rc, &mc, &eos, err, sizeof(err));
    EXPECT(!bad && eos == 40, "data.eos_token_id 40 is used: %d", (int)eos);
    run_config_free(&rc);

    /* init_from: the checkpoint's eos_token_id (number or list) when data.eos_token_id is not given */
    const char* from_ckpt[] = {"data.synthetic={}", "data.document_mask=true", "model.init_from=ckpt"};
    CHECK(!run_config_load(&rc, NULL, from_ckpt, 3, err, sizeof(err)), "%s", err);
    snprintf(mc.hf_carried, sizeof(mc.hf_carried), "{\"eos_token_id\": [7, 9]}");
    bad = run_config_eos(&rc, &mc, &eos, err, sizeof(err));
    EXPECT(!bad && eos == 7, "checkpoint eos_token_id [7, 9]: %d", (int)eos);
    mc.hf_carried[0] = 0;
    bad = run_config_eos(&rc, &mc, &eos, err, sizeof(err));
    EXPECT(bad && strstr(err, "data.eos_token_id: is required"), "checkpoint without eos_token_id: %s", err);
    run_config_free(&rc);
}

int main(void) {
    check_data_side();
    ModelConfig cfg;
    model_config_default(&cfg);
    test_model_sizes(&cfg, 32, 32, 3, 4, 4, 48);
    cfg.pos[0] = POS_ROPE;
    cfg.pos[1] = POS_REPO;
    cfg.pos[2] = POS_NOPE;
    check_model("OLMo-2, layers rope/repo/nope, MHA", &cfg);
    cfg.block = BLOCK_LLAMA;
    cfg.KVH = 2;
    cfg.tie_embeddings = true;
    cfg.pos[0] = POS_REPO;
    cfg.pos[1] = POS_ROPE;
    cfg.pos[2] = POS_ROPE;
    cfg.llama3 = true;
    cfg.llama3_factor = 4;
    cfg.llama3_low_freq_factor = 1;
    cfg.llama3_high_freq_factor = 4;
    cfg.llama3_orig_max = 16;
    check_model("Llama, layers repo/rope/rope, GQA 4/2, tied, llama3 RoPE", &cfg);
    printf("test_doc_mask: %d passed, %d failed\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}

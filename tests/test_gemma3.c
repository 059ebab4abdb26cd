/* The Gemma-3 text family (docs/interop.md, "Block families"): what config.json sets (Gemma3TextConfig's defaults,
   layer_types or the sliding-window pattern, the window, query_pre_attn_scalar, rope_local_base_freq, linear
   rope_scaling, tied embeddings, pad_token_id as padding_idx) and what it refuses (softcapping, another
   activation, bidirectional attention, the image-text model, RePo on a sliding layer), the config written
   back, the tensor list (four block norms, [hd] q/k norms), the initial norms (w = 0: the scale 1 + w is 1),
   the sqrt(D) embedding, the "repo" plan that keeps the sliding layers rope, and the window's starts.
   Numerics are test_parity's (the gemma3_sw fixture) and gradcheck's. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "hf/hf_config.h"
#include "model/attention.h"
#include "model/model.h"
#include "tests/testutil.h"

static int parse_arch(const char* arch, const char* extra, ModelConfig* c, char* err, size_t len) {
    return test_parse_arch(arch, 4, extra, c, err, len);
}
static int parse(const char* extra, ModelConfig* c, char* err, size_t len) {
    return parse_arch("Gemma3ForCausalLM", extra, c, err, len);
}

static void test_read(void) {
    printf("config.json of Gemma-3\n");
    ModelConfig c;
    char err[512] = "";
    int rc = parse("", &c, err, sizeof(err));
    EXPECT(!rc && c.block == BLOCK_GEMMA3 && cfg_hd(&c) == 256 && c.tie_embeddings && c.rope_theta == 1e6 &&
               c.rope_local_theta == 10000 && c.sliding_window == 4096 && c.attn_scalar == 256 && c.sliding[0] &&
               c.sliding[3] && cfg_qk_norm(&c) && !cfg_qkv_bias(&c),
           "Gemma3TextConfig's defaults: head_dim 256, tied, theta 1e6, local 1e4, window 4096, scalar 256, "
           "pattern 6 (all 4 layers sliding) %s",
           err);
    rc = parse("\"sliding_window_pattern\": 2, \"sliding_window\": 8, \"head_dim\": 16, \"query_pre_attn_scalar\": 10, "
               "\"rope_local_base_freq\": 500.0, \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 8.0}, "
               "\"tie_word_embeddings\": false, \"pad_token_id\": 0",
               &c, err, sizeof(err));
    EXPECT(!rc && c.sliding[0] && !c.sliding[1] && c.sliding[2] && !c.sliding[3] && c.sliding_window == 8 &&
               cfg_hd(&c) == 16 && c.attn_scalar == 10 && c.rope_local_theta == 500 && c.rope_linear_factor == 8 &&
               !c.tie_embeddings && c.pad_id == 0,
           "sliding_window_pattern 2 (layers 1, 3 global), window, head_dim, scalar, local base, linear x8, untied, "
           "pad 0 %s",
           err);
    rc = parse("\"layer_types\": [\"full_attention\", \"sliding_attention\", \"sliding_attention\", "
               "\"full_attention\"], \"_sliding_window_pattern\": 2",
               &c, err, sizeof(err));
    EXPECT(!rc && !c.sliding[0] && c.sliding[1] && c.sliding[2] && !c.sliding[3],
           "layer_types wins over the pattern %s", err);
    size_t n;
    char* text = file_read_all("tests/corpus/hf_configs/gemma3_270m.json", &n);
    rc = hf_config_parse(text, n, "gemma3_270m.json", &c, err, sizeof(err));
    free(text);
    size_t global = 0;
    for (size_t l = 0; l < c.L; l++) global += !c.sliding[l];
    EXPECT(!rc && c.L == 18 && global == 3 && !c.sliding[5] && !c.sliding[11] && !c.sliding[17] &&
               c.sliding_window == 512 && cfg_hd(&c) == 256 && c.attn_scalar == 256 && c.pad_id == 0,
           "Gemma-3-270M: 18 layers, global 5, 11, 17, window 512, head_dim 256, pad 0 %s", err);

    const struct {
        const char* arch;
        const char* extra;
        const char* want;
    } refused[] = {
        {"Gemma3ForCausalLM", "\"attn_logit_softcapping\": 50.0", "attn_logit_softcapping must be null"},
        {"Gemma3ForCausalLM", "\"final_logit_softcapping\": 30.0", "final_logit_softcapping must be null"},
        {"Gemma3ForCausalLM", "\"hidden_activation\": \"gelu\"", "hidden_activation gelu is not supported"},
        {"Gemma3ForCausalLM", "\"use_bidirectional_attention\": true", "use_bidirectional_attention must be null"},
        {"Gemma3ForCausalLM", "\"layer_types\": [\"full_attention\"]", "'layer_types' must be a list of 4 strings"},
        {"Gemma3ForCausalLM",
         "\"layer_types\": [\"full_attention\", \"local\", \"full_attention\", \"full_attention\"]",
         "layer_types[1] must be \"sliding_attention\" or \"full_attention\""},
        {"Gemma3ForCausalLM", "\"query_pre_attn_scalar\": 0", "query_pre_attn_scalar 0 must be positive"},
        {"Gemma3ForCausalLM", "\"sliding_window\": 0", "'sliding_window' must be a positive integer"},
        {"Gemma3ForCausalLM", "\"repoc_layer_positions\": [\"rope\", \"repo\", \"rope\", \"rope\"]",
         "layer 1 is RePo but a sliding_attention layer"},
        {"Gemma3ForConditionalGeneration", "", "Gemma3ForConditionalGeneration is the image-text model"},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        rc = parse_arch(refused[i].arch, refused[i].extra, &c, err, sizeof(err));
        EXPECT(rc && strstr(err, refused[i].want), "%s {%s} refused: %s", refused[i].arch, refused[i].extra,
               rc ? err : "(loaded)");
    }
    rc = parse("\"repoc_layer_positions\": [\"rope\", \"rope\", \"rope\", \"repo\"], \"sliding_window_pattern\": 4", &c,
               err, sizeof(err));
    EXPECT(!rc && c.pos[3] == POS_REPO, "RePo on the global layer 3 loads %s", err);
}

/* written config.json -> read: the same architecture, in the keys Gemma3TextConfig reads */
static void test_write(void) {
    printf("config.json written back\n");
    ModelConfig c, back;
    char err[512] = "";
    CHECK(!parse("\"layer_types\": [\"sliding_attention\", \"full_attention\", \"sliding_attention\", "
                 "\"full_attention\"], \"sliding_window\": 6, \"head_dim\": 12, \"query_pre_attn_scalar\": 20, "
                 "\"rope_local_base_freq\": 300.0, \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 4.0}, "
                 "\"pad_token_id\": 0",
                 &c, err, sizeof(err)),
          "%s", err);
    char* out = hf_config_write(&c, "float32");
    cJSON* root = cJSON_Parse(out);
    const cJSON* act = cJSON_GetObjectItemCaseSensitive(root, "hidden_activation");
    EXPECT(cJSON_IsString(act) && !strcmp(act->valuestring, "gelu_pytorch_tanh") &&
               !cJSON_GetObjectItemCaseSensitive(root, "hidden_act") &&
               cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "attn_logit_softcapping")) &&
               cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "final_logit_softcapping")) &&
               !cJSON_GetObjectItemCaseSensitive(root, "use_sliding_window") && strstr(out, "\"Gemma3ForCausalLM\"") &&
               strstr(out, "\"model_type\":\t\"gemma3_text\""),
           "architectures, model_type gemma3_text, hidden_activation, softcapping null, no hidden_act");
    CHECK(!hf_config_parse(out, strlen(out), "written", &back, err, sizeof(err)), "%s", err);
    EXPECT(back.block == BLOCK_GEMMA3 && !memcmp(back.sliding, c.sliding, sizeof(c.sliding)) &&
               back.sliding_window == 6 && cfg_hd(&back) == 12 && back.attn_scalar == 20 &&
               back.rope_local_theta == 300 && back.rope_linear_factor == 4 && back.tie_embeddings && back.pad_id == 0,
           "... reads back the same layer types, window, head_dim, scalar, local base, linear x4, tie, pad 0");
    cJSON_Delete(root);
    free(out);
}

/* the tensors of layer 0, in table order, as "suffix[shape]" */
static void layer0(const ModelConfig* c, char* out, size_t len) {
    TensorTable tt;
    tensor_table_build(&tt, c, NULL, 0);
    out[0] = 0;
    for (size_t i = tt.layer_range[0].first; i < tt.layer_range[0].end; i++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s[%zu]", out[0] ? " " : "",
                 tt.t[i].name + strlen("model.layers.0."), tt.t[i].shape[0]);
    tensor_table_free(&tt);
}

static void test_tensors_and_init(void) {
    printf("tensor list, initial norms, the scaled embedding, the repo plan\n");
    ModelConfig c;
    char err[512] = "", got[1024];
    CHECK(!parse("\"head_dim\": 12, \"sliding_window\": 3, \"sliding_window_pattern\": 2", &c, err, sizeof(err)), "%s",
          err);
    layer0(&c, got, sizeof(got));
    EXPECT(!strcmp(got, "self_attn.q_proj.weight[48] self_attn.k_proj.weight[24] self_attn.v_proj.weight[24] "
                        "self_attn.o_proj.weight[32] self_attn.q_norm.weight[12] self_attn.k_norm.weight[12] "
                        "input_layernorm.weight[32] post_attention_layernorm.weight[32] "
                        "pre_feedforward_layernorm.weight[32] post_feedforward_layernorm.weight[32] "
                        "mlp.gate_proj.weight[48] mlp.up_proj.weight[48] mlp.down_proj.weight[32]"),
           "Gemma-3 layer 0: %s", got);
    Model m;
    model_build(&m, &c, 1, 4, NULL, 0, false);
    model_init_weights(&m, &(ModelInit){.seed = 7, .std = 0.02});
    size_t norms = 0, nonzero = 0;
    for (size_t i = 0; i < m.tensors.n; i++) {
        const TensorInfo* t = &m.tensors.t[i];
        if (!t->is_norm) continue;
        norms++;
        for (size_t k = 0; k < t->numel; k++) nonzero += m.params[t->offset + k] != 0;
    }
    EXPECT(norms == 4 * 6 + 1 && nonzero == 0, "%zu norms start at w = 0 (x r (1 + w) is the identity): %zu nonzero",
           norms, nonzero);
    int32_t tok[4] = {3, 0, 7, 3}, tgt[4] = {1, 2, 3, 4};
    model_forward(&m, &(Batch){.B = 1, .T = 4, .tokens = tok, .targets = tgt});
    real s = (real)sqrt(32.0);
    size_t exact = 0, pad_zero = 0;
    for (size_t k = 0; k < 32; k++) {
        exact += m.res[0][2 * 32 + k] == m.w.embed[7 * 32 + k] * s;
        pad_zero += m.w.embed[k] == 0;
    }
    EXPECT(exact == 32 && pad_zero == 32, "the input is sqrt(D) E[token] exactly (%zu/32); the pad row 0 starts at 0",
           exact);
    model_free(&m);
    model_config_plan_positions(&c, "repo", 0);
    EXPECT(c.pos[0] == POS_ROPE && c.pos[1] == POS_REPO && c.pos[2] == POS_ROPE && c.pos[3] == POS_REPO,
           "the \"repo\" plan from layer 0: the sliding layers 0 and 2 stay rope");
}

static void test_window_starts(void) {
    printf("sliding-window starts\n");
    int32_t doc[10] = {0, 0, 0, 0, 0, 0, 0, 0, 3, 3}, ds[10], start[10], want[10] = {0, 0, 0, 1, 2, 3, 4, 5, 8, 8};
    doc_starts_from_ids(ds, doc, 1, 10);
    window_starts(start, ds, 1, 10, 3);
    EXPECT(!memcmp(start, want, sizeof(want)), "window 3 over a document start at 8: each token sees itself and the "
                                               "2 before it, within its document");
    window_starts(start, NULL, 2, 5, 9);
    EXPECT(start[4] == 0 && start[9] == 0 && start[7] == 0, "a window wider than the row: start 0 everywhere");
}

int main(void) {
    test_read();
    test_write();
    test_tensors_and_init();
    test_window_starts();
    printf("test_gemma3: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}

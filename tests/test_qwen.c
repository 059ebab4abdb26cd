/* The Qwen2 and Qwen3 families (docs/interop.md, "Block families"): what config.json sets (biases,
   head_dim and Qwen3Config's default of 128, pad_token_id as padding_idx) and what it refuses
   (use_sliding_window true), the config written back, the tensor list (biases after their weights,
   Qwen3's [hd] q/k norms), the optimizer's bias group, the initial weights (zero biases and pad row) and the
   embedding backward that skips the pad row. Numerics are test_parity's and gradcheck's. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "hf/hf_config.h"
#include "model/embedding.h"
#include "model/model.h"
#include "optim/optim_config.h"
#include "tests/testutil.h"

static int parse_arch(const char* arch, const char* extra, ModelConfig* c, char* err, size_t len) {
    return test_parse_arch(arch, 2, extra, c, err, len);
}

static void test_read(void) {
    printf("config.json of Qwen2 and Qwen3\n");
    ModelConfig c;
    char err[512] = "";
    int rc = parse_arch("Qwen2ForCausalLM", "", &c, err, sizeof(err));
    EXPECT(!rc && c.block == BLOCK_QWEN2 && cfg_qkv_bias(&c) && !cfg_o_bias(&c) && cfg_hd(&c) == 8 && c.pad_id == -1 &&
               c.norm_eps == 1e-6 && !cfg_qk_norm(&c),
           "Qwen2: q, k, v biases, no o bias, hd = 32/4, no pad row, rms_norm_eps default 1e-6 %s", err);
    rc = parse_arch("Qwen3ForCausalLM", "", &c, err, sizeof(err));
    EXPECT(!rc && c.block == BLOCK_QWEN3 && cfg_hd(&c) == 128 && !cfg_qkv_bias(&c) && cfg_qk_norm(&c),
           "Qwen3 without head_dim: Qwen3Config's 128 (got %zu), no biases, QK-norm %s", cfg_hd(&c), err);
    rc = parse_arch("Qwen3ForCausalLM", "\"head_dim\": 12, \"attention_bias\": true, \"pad_token_id\": 5", &c, err,
                    sizeof(err));
    EXPECT(!rc && cfg_hd(&c) == 12 && cfg_qkv_bias(&c) && cfg_o_bias(&c) && c.pad_id == 5,
           "Qwen3 head_dim 12, attention_bias: q, k, v and o biases; pad_token_id 5 %s", err);
    rc = parse_arch("Qwen2ForCausalLM", "\"head_dim\": 16, \"pad_token_id\": null, \"attention_bias\": true", &c, err,
                    sizeof(err));
    EXPECT(!rc && cfg_hd(&c) == 16 && !cfg_o_bias(&c) && c.pad_id == -1,
           "Qwen2 reads head_dim, ignores attention_bias (its q, k, v always have biases), pad null %s", err);
    rc = parse_arch("LlamaForCausalLM", "\"head_dim\": 16, \"pad_token_id\": 5", &c, err, sizeof(err));
    EXPECT(!rc && cfg_hd(&c) == 16 && c.pad_id == -1,
           "Llama: an explicit head_dim; pad_token_id only carried (every row keeps its gradient) %s", err);

    const struct {
        const char *arch, *extra, *want;
    } refused[] = {
        {"Qwen2ForCausalLM", "\"use_sliding_window\": true", "use_sliding_window true is not supported"},
        {"Qwen3ForCausalLM", "\"use_sliding_window\": true", "use_sliding_window true is not supported"},
        {"Qwen3ForCausalLM", "\"use_sliding_window\": 1", "'use_sliding_window' must be true or false"},
        {"Qwen3ForCausalLM", "\"attention_bias\": \"yes\"", "'attention_bias' must be true or false"},
        {"Qwen2ForCausalLM", "\"mlp_bias\": true", "mlp_bias must be false"},
        {"Qwen3ForCausalLM", "\"pad_token_id\": 64", "pad_token_id must be null or a token id in [0, vocab_size 64)"},
        {"Qwen2ForCausalLM", "\"pad_token_id\": -1", "pad_token_id must be null or a token id"},
        {"Qwen3ForCausalLM", "\"head_dim\": 7", "head_dim 7 must be even"},
        {"LlamaForCausalLM", "\"attention_bias\": true", "attention_bias must be false"},
        {"Olmo2ForCausalLM", "\"head_dim\": 16", "not supported for OLMo-2"},
        {"Gemma2ForCausalLM", "", "Qwen3ForCausalLM, Gemma3ForCausalLM, MistralForCausalLM)"},
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        rc = parse_arch(refused[i].arch, refused[i].extra, &c, err, sizeof(err));
        EXPECT(rc && strstr(err, refused[i].want), "%s {%s} refused: %s", refused[i].arch, refused[i].extra,
               rc ? err : "(loaded)");
    }
}

/* written config.json -> read: the same architecture; the keys transformers' Qwen configs read */
static void test_write(void) {
    printf("config.json written back\n");
    ModelConfig c, back;
    char err[512] = "";
    CHECK(!parse_arch("Qwen3ForCausalLM", "\"head_dim\": 12, \"attention_bias\": true, \"pad_token_id\": 5", &c, err,
                      sizeof(err)),
          "%s", err);
    char* out = hf_config_write(&c, "float32");
    cJSON* root = cJSON_Parse(out);
    const cJSON* hd = cJSON_GetObjectItemCaseSensitive(root, "head_dim");
    const cJSON* pad = cJSON_GetObjectItemCaseSensitive(root, "pad_token_id");
    EXPECT(cJSON_IsNumber(hd) && hd->valuedouble == 12 &&
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "attention_bias")) && cJSON_IsNumber(pad) &&
               pad->valuedouble == 5 && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(root, "use_sliding_window")) &&
               strstr(out, "\"Qwen3ForCausalLM\"") && strstr(out, "\"model_type\":\t\"qwen3\""),
           "Qwen3: architectures, model_type, head_dim 12, attention_bias true, pad_token_id 5, no sliding window");
    CHECK(!hf_config_parse(out, strlen(out), "written", &back, err, sizeof(err)), "%s", err);
    EXPECT(back.block == BLOCK_QWEN3 && cfg_hd(&back) == 12 && back.attn_bias && back.pad_id == 5,
           "... reads back the same");
    cJSON_Delete(root);
    free(out);
    back.hf_carried[0] = 0; /* a pad id set without the source's keys is written from the config itself */
    out = hf_config_write(&back, "float32");
    CHECK(!hf_config_parse(out, strlen(out), "written", &c, err, sizeof(err)), "%s", err);
    EXPECT(c.pad_id == 5, "pad_token_id written from the model's config, not only carried (%ld)", c.pad_id);
    free(out);
    CHECK(!parse_arch("Qwen3ForCausalLM", "\"head_dim\": 8", &c, err, sizeof(err)), "%s", err);
    out = hf_config_write(&c, "float32");
    CHECK(!hf_config_parse(out, strlen(out), "written", &back, err, sizeof(err)), "%s", err);
    EXPECT(strstr(out, "\"head_dim\":\t8") && cfg_hd(&back) == 8,
           "Qwen3 head_dim 8 = hidden/heads is still written (absent, Qwen3Config would read 128)");
    free(out);
    CHECK(!parse_arch("Qwen2ForCausalLM", "", &c, err, sizeof(err)), "%s", err);
    out = hf_config_write(&c, "float32");
    EXPECT(strstr(out, "\"Qwen2ForCausalLM\"") && !strstr(out, "attention_bias") && !strstr(out, "head_dim"),
           "Qwen2: no attention_bias (Qwen2Config has none), no head_dim when it is hidden/heads");
    free(out);
}

/* the tensors of layer 0, in table order, as "suffix[shape]" */
static void layer0(const ModelConfig* c, char* out, size_t len) {
    TensorTable tt;
    tensor_table_build(&tt, c, NULL, 0);
    out[0] = 0;
    for (size_t i = tt.layer_range[0].first; i < tt.layer_range[0].end; i++) {
        const TensorInfo* t = &tt.t[i];
        snprintf(out + strlen(out), len - strlen(out), "%s%s[%zu]", out[0] ? " " : "",
                 t->name + strlen("model.layers.0.self_attn."), t->shape[0]);
        if (i + 1 < tt.layer_range[0].end && !strncmp(tt.t[i + 1].name + 15, "self_attn", 9)) continue;
        break; /* the attention tensors only */
    }
    tensor_table_free(&tt);
}

static void test_tensors(void) {
    printf("tensor list\n");
    ModelConfig c;
    char err[512] = "", got[1024];
    CHECK(!parse_arch("Qwen2ForCausalLM", "", &c, err, sizeof(err)), "%s", err);
    layer0(&c, got, sizeof(got));
    EXPECT(!strcmp(got, "q_proj.weight[32] q_proj.bias[32] k_proj.weight[16] k_proj.bias[16] v_proj.weight[16] "
                        "v_proj.bias[16] o_proj.weight[32]"),
           "Qwen2 layer 0: %s", got);
    CHECK(!parse_arch("Qwen3ForCausalLM", "\"head_dim\": 12, \"attention_bias\": true", &c, err, sizeof(err)), "%s",
          err);
    layer0(&c, got, sizeof(got));
    EXPECT(!strcmp(got, "q_proj.weight[48] q_proj.bias[48] k_proj.weight[24] k_proj.bias[24] v_proj.weight[24] "
                        "v_proj.bias[24] o_proj.weight[32] o_proj.bias[32] q_norm.weight[12] k_norm.weight[12]"),
           "Qwen3 layer 0 (head_dim 12): %s", got);
}

/* biases: exempt from weight decay unless optim.decay_biases; zero at init, with the pad row */
static void test_groups_and_init(void) {
    printf("optimizer groups, initial weights, the pad row's gradient\n");
    ModelConfig c;
    char err[512] = "";
    CHECK(!parse_arch("Qwen3ForCausalLM", "\"head_dim\": 12, \"attention_bias\": true, \"pad_token_id\": 5", &c, err,
                      sizeof(err)),
          "%s", err);
    Model m;
    model_build(&m, &c, 1, 4, NULL, 0, false);
    OptimConfig oc;
    optim_config_default(&oc);
    size_t biases = 0, decayed = 0, nonzero = 0;
    model_init_weights(&m, &(ModelInit){.seed = 7, .std = 0.02});
    for (size_t i = 0; i < m.tensors.n; i++) {
        const TensorInfo* t = &m.tensors.t[i];
        if (!t->is_bias) continue;
        biases++;
        decayed += optim_tensor_decays(&oc, t);
        for (size_t k = 0; k < t->numel; k++) nonzero += m.params[t->offset + k] != 0;
    }
    oc.decay_biases = true;
    size_t decayed_on = 0;
    for (size_t i = 0; i < m.tensors.n; i++)
        decayed_on += m.tensors.t[i].is_bias && optim_tensor_decays(&oc, &m.tensors.t[i]);
    EXPECT(biases == 8 && decayed == 0 && decayed_on == 8,
           "8 biases: none decays by default, all with optim.decay_biases (%zu, %zu)", decayed, decayed_on);
    EXPECT(nonzero == 0, "biases start at 0, as transformers' _init_weights (%zu nonzero)", nonzero);
    size_t pad_nonzero = 0, other_nonzero = 0, D = c.D;
    for (size_t k = 0; k < D; k++) {
        pad_nonzero += m.w.embed[5 * D + k] != 0;
        other_nonzero += m.w.embed[4 * D + k] != 0;
    }
    EXPECT(pad_nonzero == 0 && other_nonzero == D,
           "the pad row starts at 0 (nn.Embedding padding_idx), row 4 does not");
    model_free(&m);

    real table[3 * 2] = {0}, dout[4 * 2] = {1, 2, 3, 4, 5, 6, 7, 8};
    int32_t tokens[4] = {2, 1, 2, 0};
    embedding_backward_pad(table, dout, tokens, 1, 4, 2, 2);
    EXPECT(table[0] == 7 && table[1] == 8 && table[2] == 3 && table[3] == 4 && table[4] == 0 && table[5] == 0,
           "embedding_backward_pad: rows 0 and 1 get their gradients, the pad row 2 nothing");
}

int main(void) {
    test_read();
    test_write();
    test_tensors();
    test_groups_and_init();
    printf("test_qwen: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}

/* The Mistral family (docs/interop.md, "Mistral"): what config.json sets (MistralConfig's defaults, the
   sliding_window of every layer or null for none, head_dim), what it refuses (attention biases, RePo on a
   sliding layer), the config written back, the published Mistral-7B-v0.1's parameter count, the tensor list
   (Llama's), the rotation by the global table and the "repo" plan that keeps its sliding layers rope.
   Numerics are test_parity's (the mistral_sw fixture), gradcheck's and test_generate's. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "hf/hf_config.h"
#include "model/model.h"
#include "tests/testutil.h"

static int parse(const char* extra, ModelConfig* c, char* err, size_t len) {
    return test_parse_arch("MistralForCausalLM", 3, extra, c, err, len);
}

static bool all_slide(const ModelConfig* c, bool want) {
    for (size_t l = 0; l < c->L; l++)
        if (cfg_sliding(c, l) != want) return false;
    return true;
}

static void test_read(void) {
    printf("config.json of Mistral\n");
    ModelConfig c;
    char err[512] = "";
    int rc = parse("", &c, err, sizeof(err));
    EXPECT(!rc && c.block == BLOCK_MISTRAL && c.sliding_window == 4096 && all_slide(&c, true) && cfg_hd(&c) == 8 &&
               !c.tie_embeddings && c.norm_eps == 1e-6 && c.max_position_embeddings == 131072 && !cfg_qk_norm(&c) &&
               !cfg_qkv_bias(&c) && !cfg_post_norms(&c) && cfg_norm_offset(&c) == 0 && cfg_embed_scale(&c) == 1,
           "MistralConfig's defaults: window 4096 on every layer, hd = D/H, untied, eps 1e-6, 131072 positions; "
           "Llama's block %s",
           err);
    rc = parse("\"sliding_window\": null, \"head_dim\": 16, \"pad_token_id\": 3", &c, err, sizeof(err));
    EXPECT(!rc && c.sliding_window == 0 && all_slide(&c, false) && cfg_hd(&c) == 16 && c.pad_id == 3,
           "sliding_window null: every earlier key; head_dim 16; pad_token_id 3 (padding_idx) %s", err);
    rc = parse("\"attention_bias\": true", &c, err, sizeof(err));
    EXPECT(rc && strstr(err, "attention_bias must be false"), "attention_bias true refused: %s", err);
    rc =
        parse("\"sliding_window\": 8, \"repoc_layer_positions\": [\"rope\", \"repo\", \"nope\"]", &c, err, sizeof(err));
    EXPECT(rc && strstr(err, "layer 1 is RePo but a sliding_attention layer"), "RePo on a sliding layer refused: %s",
           err);
    err[0] = 0;
    rc = parse("\"sliding_window\": null, \"repoc_layer_positions\": [\"rope\", \"repo\", \"nope\"]", &c, err,
               sizeof(err));
    EXPECT(!rc && c.pos[1] == POS_REPO, "... and allowed without a window %s", err);
    CHECK(!parse("\"sliding_window\": 8", &c, err, sizeof(err)), "%s", err);
    CHECK(model_config_plan_positions(&c, "repo", 0), "plan");
    EXPECT(c.pos[0] == POS_ROPE && c.pos[1] == POS_ROPE && c.pos[2] == POS_ROPE,
           "the \"repo\" plan keeps every sliding layer rope");
    EXPECT(!cfg_local_rope(&c, 0) && cfg_sliding(&c, 0), "a sliding layer rotates by the global table");
}

static void test_write(void) {
    printf("config.json written back\n");
    ModelConfig c, back;
    char err[512] = "";
    CHECK(!parse("\"sliding_window\": 6, \"rope_theta\": 1000000.0", &c, err, sizeof(err)), "%s", err);
    char* out = hf_config_write(&c, "float32");
    CHECK(!hf_config_parse(out, strlen(out), "written", &back, err, sizeof(err)), "%s", err);
    EXPECT(strstr(out, "\"MistralForCausalLM\"") && strstr(out, "\"model_type\":\t\"mistral\"") &&
               back.block == BLOCK_MISTRAL && back.sliding_window == 6 && all_slide(&back, true) &&
               back.rope_theta == 1e6,
           "architectures, model_type mistral, sliding_window 6 on every layer, theta read back");
    free(out);
    CHECK(!parse("\"sliding_window\": null", &c, err, sizeof(err)), "%s", err);
    out = hf_config_write(&c, "float32");
    cJSON* root = cJSON_Parse(out);
    CHECK(!hf_config_parse(out, strlen(out), "written", &back, err, sizeof(err)), "%s", err);
    EXPECT(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "sliding_window")) && back.sliding_window == 0,
           "no window: written as null (absent would read as 4096)");
    cJSON_Delete(root);
    free(out);
}

static void test_published(void) {
    printf("Mistral-7B-v0.1's config.json (tests/corpus/hf_configs/mistral_7b.json)\n");
    ModelConfig c;
    hf_config_read_file("tests/corpus/hf_configs/mistral_7b.json", &c);
    TensorTable tt;
    tensor_table_build(&tt, &c, NULL, 0);
    /* embed 32000x4096 and lm_head, 32 x (q 4096^2, k, v 1024x4096, o 4096^2, 3 x 4096x14336, 2 norms), norm */
    EXPECT(tt.n_params == 7241732096 && tt.n == 2 + 32 * 9 + 1 && c.sliding_window == 4096 && all_slide(&c, true) &&
               cfg_hd(&c) == 128 && c.KVH == 8 && c.norm_eps == 1e-5 && c.max_position_embeddings == 32768,
           "%zu parameters in %zu tensors (the model card's 7.24B), window 4096 on all 32 layers, hd 128, GQA 32/8",
           tt.n_params, tt.n);
    tensor_table_free(&tt);
}

int main(void) {
    test_read();
    test_write();
    test_published();
    printf("test_mistral: %d passed, %d failed\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}

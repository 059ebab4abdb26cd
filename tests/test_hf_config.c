/* config.json interop: the published configs repoc meets (load or a clear refusal), the
   keys it refuses instead of computing something else, transformers' rms_norm_eps
   defaults, token ids carried through a save, pe_config read and written as the
   released RePo loader reads it, and the written YaRN rope_scaling checked against
   transformers' validation rules, restated here (no transformers needed). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "hf/hf_config.h"
#include "hf/hf_config_gemma.h"
#include "hf/hf_loaders.h"
#include "model/tensors.h"
#include "tests/testutil.h"

/* parse text; returns 0 or 1 with err set */
static int parse(const char* text, ModelConfig* c, char* err, size_t len) {
    return hf_config_parse(text, strlen(text), "config.json", c, err, len);
}

/* ---- the published configs: what repoc does with each ---- */
static void test_published(void) {
    printf("published config.json files (tests/corpus/hf_configs)\n");
    const struct {
        const char* file;
        const char* refusal;
    } cases[] = {
        /* refusal NULL: loads */
        {"olmo2_1b.json", NULL},     {"olmo2_7b.json", NULL},       {"smollm2_135m.json", NULL},
        {"smollm2_360m.json", NULL}, {"tinyllama_1.1b.json", NULL}, {"llama3.2_1b.json", NULL},
        {"qwen2.5_0.5b.json", NULL}, {"qwen3_0.6b.json", NULL},     {"gemma3_270m.json", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[256], err[512] = "";
        snprintf(path, sizeof(path), "tests/corpus/hf_configs/%s", cases[i].file);
        size_t n;
        char* text = file_read_all(path, &n);
        ModelConfig c;
        int rc = hf_config_parse(text, n, path, &c, err, sizeof(err));
        if (cases[i].refusal) EXPECT(rc && strstr(err, cases[i].refusal), "%s refused: %s", cases[i].file, err);
        else
            EXPECT(!rc, "%s loads: %s V=%zu D=%zu L=%zu H=%zu KVH=%zu F=%zu eps=%g theta=%g tied=%d carried %s%s",
                   cases[i].file, block_style_name(c.block), c.V, c.D, c.L, c.H, c.KVH, c.F, c.norm_eps, c.rope_theta,
                   c.tie_embeddings, c.hf_carried, err);
        free(text);
    }
    /* the parameter counts the model cards give: the tensor list repoc builds from each config */
    const struct {
        const char* file;
        size_t params, without_embedding;
    } counts[] = {{"qwen2.5_0.5b.json", 494032768, 357898112},
                  {"qwen3_0.6b.json", 596049920, 440467456},
                  {"gemma3_270m.json", 268098176, 100326016}};
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        char path[256];
        snprintf(path, sizeof(path), "tests/corpus/hf_configs/%s", counts[i].file);
        ModelConfig c;
        hf_config_read_file(path, &c);
        TensorTable tt;
        tensor_table_build(&tt, &c, NULL, 0);
        EXPECT(tt.n_params == counts[i].params && tt.n_params - c.V * c.D == counts[i].without_embedding,
               "%s: %zu parameters, %zu without the embedding (hd %zu, %zu tensors)", counts[i].file, tt.n_params,
               tt.n_params - c.V * c.D, cfg_hd(&c), tt.n);
        tensor_table_free(&tt);
    }
}

/* a small OLMo-2 config with extra text spliced in before the closing brace */
#define BASE_KEYS \
    "\"architectures\": [\"Olmo2ForCausalLM\"], \"vocab_size\": 64, \"hidden_size\": 32, " \
    "\"intermediate_size\": 64, \"num_hidden_layers\": 6, \"num_attention_heads\": 4"
static int parse_with(const char* extra, ModelConfig* c, char* err, size_t len) {
    char text[2048];
    snprintf(text, sizeof(text), "{" BASE_KEYS "%s%s}", extra[0] ? ", " : "", extra);
    return parse(text, c, err, len);
}

/* ---- refusals at config time, each naming its key ---- */
static void test_refusals(void) {
    printf("keys repoc does not compute are refused\n");
    const struct {
        const char* extra;
        const char* want;
    } cases[] = {
        {"\"hidden_act\": \"gelu\"", "hidden_act gelu is not supported"},
        {"\"hidden_act\": \"gelu_pytorch_tanh\"", "hidden_act gelu_pytorch_tanh"},
        {"\"attention_bias\": true", "attention_bias must be false"},
        {"\"mlp_bias\": true", "mlp_bias must be false"},
        {"\"attention_dropout\": 0.1", "attention_dropout must be 0"},
        {"\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0, \"beta_fast\": 32}",
         "rope_scaling.beta_fast is not implemented (linear keys: factor)"},
        {"\"rope_scaling\": {\"type\": \"linear\"}", "linear rope_scaling needs 'factor'"},
        {"\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 0.5}", "rope_scaling.factor 0.5 must be >= 1"},
        {"\"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": 2.0}", "rope_scaling type 'dynamic'"},
        {"\"rope_scaling\": {\"rope_type\": \"longrope\", \"short_factor\": [1], \"long_factor\": [1]}",
         "rope_scaling type 'longrope'"},
        {"\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, \"mscale\": 0.707}",
         "rope_scaling.mscale is not implemented"},
        {"\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"high_freq_factor\": 4.0, "
         "\"original_max_position_embeddings\": 8192}",
         "llama3 rope_scaling needs 'low_freq_factor'"},
        {"\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
         "\"original_max_position_embeddings\": 8192}",
         "llama3 rope_scaling needs 'high_freq_factor'"},
        {"\"rope_scaling\": {\"rope_type\": \"llama3\", \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
         "\"original_max_position_embeddings\": 8192}",
         "llama3 rope_scaling needs 'factor'"},
        {"\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
         "\"high_freq_factor\": 4.0}",
         "llama3 rope_scaling needs 'original_max_position_embeddings'"},
        {"\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 0.5, \"low_freq_factor\": 1.0, "
         "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192}",
         "rope_scaling.factor 0.5 must be >= 1"},
        {"\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 4.0, "
         "\"high_freq_factor\": 1.0, \"original_max_position_embeddings\": 8192}",
         "rope_scaling.high_freq_factor 1 must be > low_freq_factor 4"},
        {"\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 0, "
         "\"high_freq_factor\": 1.0, \"original_max_position_embeddings\": 8192}",
         "rope_scaling.low_freq_factor 0 must be > 0"},
        {"\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
         "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192.5}",
         "rope_scaling.original_max_position_embeddings must be a positive integer"},
        {"\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
         "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192, \"beta_fast\": 32}",
         "rope_scaling.beta_fast is not implemented (llama3 keys"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ModelConfig c;
        char err[512] = "";
        int rc = parse_with(cases[i].extra, &c, err, sizeof(err));
        EXPECT(rc && strstr(err, cases[i].want), "{%s}: %s", cases[i].extra, rc ? err : "(loaded)");
    }
    ModelConfig c;
    char err[512] = "";
    EXPECT(!parse_with("\"hidden_act\": \"silu\", \"attention_bias\": false, \"mlp_bias\": false, "
                       "\"attention_dropout\": 0.0",
                       &c, err, sizeof(err)),
           "silu, no biases, no dropout: loads %s", err);
}

/* ---- the family: model_type first, as transformers' AutoConfig and AutoModelForCausalLM choose it ---- */
static void test_model_type(void) {
    printf("the family comes from model_type; architectures[0] must agree with it\n");
    const char* sizes = "\"vocab_size\": 64, \"hidden_size\": 32, \"intermediate_size\": 64, "
                        "\"num_hidden_layers\": 2, \"num_attention_heads\": 4";
    const struct {
        const char* keys;
        int block; /* -1: refused */
        const char* want;
    } cases[] = {
        {"\"model_type\": \"gemma3_text\", \"architectures\": [\"Qwen2ForCausalLM\"]", -1,
         "model_type 'gemma3_text' and architectures[0] 'Qwen2ForCausalLM' name different models"},
        {"\"model_type\": \"llama\", \"architectures\": [\"MistralForCausalLM\"]", -1, "name different models"},
        {"\"model_type\": \"qwen2\"", BLOCK_QWEN2, ""},
        {"\"model_type\": \"qwen3\", \"architectures\": [\"Qwen3ForCausalLM\"]", BLOCK_QWEN3, ""},
        {"\"architectures\": [\"LlamaForCausalLM\"]", BLOCK_LLAMA, ""},
        {"\"model_type\": \"phi3\"", -1, "model_type 'phi3' is not supported"},
        {"\"model_type\": \"gemma3\"", -1, "is the image-text model"},
        {"\"model_type\": 3", -1, "'model_type' must be a string"},
        {"\"hidden_act\": \"silu\"", -1, "missing 'model_type'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[512], err[512] = "";
        snprintf(text, sizeof(text), "{%s, %s}", cases[i].keys, sizes);
        ModelConfig c;
        int rc = parse(text, &c, err, sizeof(err));
        if (cases[i].block < 0) EXPECT(rc && strstr(err, cases[i].want), "{%s}: refused: %s", cases[i].keys, err);
        else
            EXPECT(!rc && c.block == (BlockStyle)cases[i].block, "{%s}: %s %s", cases[i].keys,
                   rc ? "refused" : block_style_name(c.block), err);
    }
}

/* ---- rms_norm_eps absent: transformers' default of the model type ---- */
static void test_eps_default(void) {
    printf("rms_norm_eps defaults\n");
    ModelConfig c;
    char err[512] = "";
    int rc = parse_with("", &c, err, sizeof(err));
    EXPECT(!rc && c.norm_eps == 1e-5, "olmo2 without rms_norm_eps: %g (Olmo2Config's default 1e-5)", c.norm_eps);
    rc = parse("{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 64, \"hidden_size\": 32, "
               "\"intermediate_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4}",
               &c, err, sizeof(err));
    EXPECT(!rc && c.norm_eps == 1e-6, "llama without rms_norm_eps: %g (LlamaConfig's default 1e-6)", c.norm_eps);
    rc = parse_with("\"rms_norm_eps\": 1e-06", &c, err, sizeof(err));
    EXPECT(!rc && c.norm_eps == 1e-6, "olmo2 with rms_norm_eps 1e-6: %g", c.norm_eps);
}

/* ---- token ids and harmless keys survive read -> write -> read ---- */
static void test_carried(void) {
    printf("token ids and other carried keys round trip\n");
    size_t n;
    char* text = file_read_all("tests/corpus/hf_configs/olmo2_1b.json", &n);
    ModelConfig c, back;
    char err[512] = "";
    CHECK(!hf_config_parse(text, n, "olmo2_1b.json", &c, err, sizeof(err)), "%s", err);
    free(text);
    char* out = hf_config_write(&c, "bfloat16");
    cJSON* root = cJSON_Parse(out);
    const cJSON* eos = cJSON_GetObjectItemCaseSensitive(root, "eos_token_id");
    const cJSON* pad = cJSON_GetObjectItemCaseSensitive(root, "pad_token_id");
    const cJSON* init = cJSON_GetObjectItemCaseSensitive(root, "initializer_range");
    const cJSON* cache = cJSON_GetObjectItemCaseSensitive(root, "use_cache");
    EXPECT(cJSON_IsNumber(eos) && eos->valuedouble == 100257 && cJSON_IsNumber(pad) && pad->valuedouble == 100277,
           "OLMo-2's eos_token_id 100257 and pad_token_id 100277 are written back (not transformers' 50279 / 1)");
    EXPECT(cJSON_IsNumber(init) && init->valuedouble == 0.02 && cJSON_IsTrue(cache) &&
               !cJSON_GetObjectItemCaseSensitive(root, "bos_token_id"),
           "initializer_range and use_cache carried; bos_token_id, absent in the source, stays absent");
    CHECK(!parse(out, &back, err, sizeof(err)), "%s", err);
    EXPECT(!strcmp(back.hf_carried, c.hf_carried) && back.norm_eps == 1e-6, "re-read: the same carried keys (%s)",
           back.hf_carried);
    cJSON_Delete(root);
    free(out);
    /* eos as a list (Llama-3 instruct) is carried as it is */
    CHECK(!parse_with("\"eos_token_id\": [128001, 128008, 128009]", &c, err, sizeof(err)), "%s", err);
    EXPECT(!strcmp(c.hf_carried, "{\"eos_token_id\":[128001,128008,128009]}"), "an eos_token_id list: %s",
           c.hf_carried);
}

/* ---- pe_config, read as the released loader reads it ---- */
static void positions(const ModelConfig* c, char* out, size_t len) {
    out[0] = 0;
    for (size_t l = 0; l < c->L; l++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s", l ? "," : "", pos_mode_name(c->pos[l]));
}

static void test_pe_read(void) {
    printf("pe_config read as the released RePo loader reads it\n");
    const struct {
        const char* pe;
        const char* want;
    } cases[] = {
        /* want: positions, or an error phrase */
        {"{\"dynamic_pe_mode\": \"swigluex_multihead\", \"dynmaic_pe_start_layer\": 2}",
         "rope,rope,repo,repo,repo,repo"},
        {"{\"dynamic_pe_mode\": \"swigluex_multihead\", \"dynmaic_pe_start_layer\": 2, "
         "\"dynmaic_pe_layer_ids\": \"1,3,5\"}",
         "rope,rope,rope,repo,rope,repo"}, /* ids below start dropped */
        {"{\"dynamic_pe_mode\": \"nope\", \"dynmaic_pe_layer_ids\": \"2,5\"}", "rope,rope,nope,rope,rope,nope"},
        {"{\"dynamic_pe_mode\": \"nope\"}", "nope,nope,nope,nope,nope,nope"},
        {"{\"dynamic_pe_mode\": \"none\", \"dynmaic_pe_layer_ids\": \"1\"}", "rope,rope,rope,rope,rope,rope"},
        {"{\"dynamic_pe_mode\": \"swigluex_multihead\", \"dynamic_pe_start_layer\": 3, \"dynmaic_pe_start_layer\": 3}",
         "rope,rope,rope,repo,repo,repo"},
        {"{\"dynamic_pe_mode\": \"swigluex_multihead\", \"dynamic_pe_start_layer\": 3}",
         "pe_config.dynamic_pe_start_layer = 3 disagrees with pe_config.dynmaic_pe_start_layer = 0 (absent"},
        {"{\"dynamic_pe_mode\": \"swigluex_multihead\", \"dynamic_pe_layer_ids\": \"4\", \"dynmaic_pe_layer_ids\": \"5\"}",
         "pe_config.dynamic_pe_layer_ids = \"4\" disagrees with pe_config.dynmaic_pe_layer_ids = \"5\""},
        {"{\"dynmaic_pe_mode\": \"nope\"}", "pe_config.dynmaic_pe_mode = \"nope\" disagrees with "
                                            "pe_config.dynamic_pe_mode = \"none\""},
        {"{\"dynamic_pe_mode\": \"continuous\"}", "dynamic_pe_mode 'continuous' is not supported"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char extra[512], err[512] = "", got[128] = "";
        snprintf(extra, sizeof(extra), "\"pe_config\": %s", cases[i].pe);
        ModelConfig c;
        int rc = parse_with(extra, &c, err, sizeof(err));
        if (!rc) positions(&c, got, sizeof(got));
        EXPECT(rc ? strstr(err, cases[i].want) != NULL : !strcmp(got, cases[i].want), "%s -> %s", cases[i].pe,
               rc ? err : got);
    }
}

/* The released loader's reading, restated from its code: mode "dynamic_pe_mode" (default none), start
   "dynmaic_pe_start_layer" (0), ids "dynmaic_pe_layer_ids" (all when empty), kept if >= start; no pe_config
   means all RoPE. Writes the positions that loader would run. */
static void released_reading(const cJSON* root, size_t L, char* out, size_t len) {
    const cJSON* pe = cJSON_GetObjectItemCaseSensitive(root, "pe_config");
    const cJSON* m = pe ? cJSON_GetObjectItemCaseSensitive(pe, "dynamic_pe_mode") : NULL;
    const cJSON* s = pe ? cJSON_GetObjectItemCaseSensitive(pe, "dynmaic_pe_start_layer") : NULL;
    const cJSON* ids = pe ? cJSON_GetObjectItemCaseSensitive(pe, "dynmaic_pe_layer_ids") : NULL;
    const char* mode = m ? m->valuestring : "none";
    const char* as = !strcmp(mode, "swigluex_multihead") ? "repo" : (!strcmp(mode, "nope") ? "nope" : "rope");
    int chosen[MAX_LAYERS] = {0};
    if (ids && ids->valuestring[0])
        for (const char* p = ids->valuestring; *p;) {
            char* e;
            long id = strtol(p, &e, 10);
            if ((size_t)id < L) chosen[id] = 1;
            p = *e ? e + 1 : e;
        }
    else
        for (size_t l = 0; l < L; l++) chosen[l] = 1;
    out[0] = 0;
    for (size_t l = 0; l < L; l++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s", l ? "," : "",
                 chosen[l] && (double)l >= (s ? s->valuedouble : 0) ? as : "rope");
}

/* ---- pe_config written for every layout the released loader can express, and only for those ---- */
static void test_pe_write(void) {
    printf("pe_config written in the released loader's reading\n");
    const struct {
        const char* plan;
        int expressible;
    } cases[] = {
        {"rope", 1}, {"repo", 1}, {"nope", 1}, {"r2n1", 1}, {"n2r1", 1}, {"mixed", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ModelConfig c;
        char err[512] = "", want[128], got[128], note[512];
        CHECK(!parse_with("", &c, err, sizeof(err)), "%s", err);
        if (!strcmp(cases[i].plan, "mixed")) {
            model_config_plan_positions(&c, "repo", 2);
            c.pos[5] = POS_NOPE;
        } else {
            model_config_plan_positions(&c, cases[i].plan, REPO_START_DEFAULT);
        }
        positions(&c, want, sizeof(want));
        c.hf_released_names = true;
        char* text = hf_config_write(&c, "float32");
        cJSON* root = cJSON_Parse(text);
        released_reading(root, c.L, got, sizeof(got));
        int noted = hf_config_release_note(&c, note, sizeof(note));
        ModelConfig back;
        int rc = parse(text, &back, err, sizeof(err));
        char reread[128] = "";
        if (!rc) positions(&back, reread, sizeof(reread));
        /* with the released loader's names asked for (train.save_model_type "released"), an expressible layout
           keeps olmo2, and the save says what stock transformers does with it */
        const char* type = cJSON_GetObjectItemCaseSensitive(root, "model_type")->valuestring;
        bool rope = !strcmp(cases[i].plan, "rope");
        if (cases[i].expressible)
            EXPECT(!strcmp(got, want) && !strcmp(type, "olmo2") && noted == !rope &&
                       (rope || strstr(note, "stock transformers' Olmo2ForCausalLM runs RoPE")) &&
                       !strcmp(reread, want),
                   "%-5s %s: the released loader runs %s (model_type %s%s%s); repoc re-reads %s", cases[i].plan, want,
                   got, type, noted ? ", note: " : "", noted ? note : "", rc ? err : reread);
        else
            EXPECT(!cJSON_GetObjectItemCaseSensitive(root, "pe_config") && noted && !strcmp(reread, want),
                   "%-5s %s: no pe_config claimed, note \"%s\"; repoc re-reads %s from repoc_layer_positions",
                   cases[i].plan, want, note, rc ? err : reread);
        cJSON_Delete(root);
        free(text);
    }
}

/* ---- what stock transformers does: every family with RePo (or NoPE) layers is written under names no
   transformers release registers (model_type repoc_*, class Repoc*), so AutoConfig refuses it rather than
   running RoPE; repoc reads them back as the same model ---- */
static void test_stock_transformers(void) {
    printf("layouts stock transformers cannot run are written under names it refuses\n");
    for (int b = 0; b < BLOCK_N_STYLES; b++) {
        for (int plan = 0; plan < 3; plan++) { /* rope, repo, nope */
            ModelConfig c;
            model_config_default(&c);
            c.block = (BlockStyle)b;
            if (b == BLOCK_GEMMA3) hf_gemma3_defaults(&c);
            if (b == BLOCK_MISTRAL) c.sliding_window = 0; /* learned positions need full attention (v0.2 on) */
            model_config_plan_positions(&c, plan == 0 ? "rope" : plan == 1 ? "repo" : "nope", 1);
            char* text = hf_config_write(&c, "float32");
            cJSON* root = cJSON_Parse(text);
            const char* type = cJSON_GetObjectItemCaseSensitive(root, "model_type")->valuestring;
            const char* arch =
                cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "architectures"), 0)->valuestring;
            ModelConfig back;
            char err[512] = "", want[128], reread[128] = "", note[512];
            int rc = parse(text, &back, err, sizeof(err));
            positions(&c, want, sizeof want);
            if (!rc) positions(&back, reread, sizeof reread);
            bool refused = !strncmp(type, "repoc_", 6) && !strncmp(arch, "Repoc", 5);
            bool stock = !strcmp(type, block_style_name(c.block)) && !strcmp(arch, block_style_arch(c.block));
            EXPECT((plan == 0 ? stock : refused) && !rc && back.block == c.block && !strcmp(reread, want) &&
                       (plan == 0 || (hf_config_release_note(&c, note, sizeof note) && strstr(note, "refuses"))),
                   "%-11s %s: written as model_type %s, class %s (%s); repoc re-reads %s %s", block_style_name(c.block),
                   plan == 0   ? "all RoPE"
                   : plan == 1 ? "RePo"
                               : "NoPE",
                   type, arch, plan == 0 ? "stock transformers runs it" : "stock transformers refuses it",
                   rc ? err : reread, rc ? "" : block_style_name(back.block));
            /* asking for the released loader's names: kept only where that loader reads the layout */
            c.hf_released_names = true;
            char t2[64], a2[64];
            hf_model_names(&c, t2, sizeof t2, a2, sizeof a2);
            bool released_reads = b == BLOCK_OLMO2 || plan == 0;
            EXPECT(released_reads ? !strcmp(t2, block_style_name(c.block)) : !strncmp(t2, "repoc_", 6),
                   "%-11s %s with the released names asked for: model_type %s", block_style_name(c.block),
                   plan == 0   ? "all RoPE"
                   : plan == 1 ? "RePo"
                               : "NoPE",
                   t2);
            cJSON_Delete(root);
            free(text);
        }
    }
    ModelConfig c;
    char err[512] = "";
    EXPECT(
        parse("{\"model_type\": \"repoc_llama\", \"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 64, "
              "\"hidden_size\": 32, \"intermediate_size\": 64, \"num_hidden_layers\": 3, \"num_attention_heads\": 4}",
              &c, err, sizeof(err)) &&
            strstr(err, "disagree on the repoc prefix"),
        "repoc_llama with LlamaForCausalLM: %s", err);
}

/* ---- the other layouts the released loader will not reproduce get a note at save ---- */
static void test_release_notes(void) {
    printf("notes for layouts the released RePo loader does not reproduce\n");
    ModelConfig c;
    char err[512] = "", note[512];
    CHECK(!parse("{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 64, \"hidden_size\": 32, "
                 "\"intermediate_size\": 64, \"num_hidden_layers\": 3, \"num_attention_heads\": 4}",
                 &c, err, sizeof(err)),
          "%s", err);
    EXPECT(!hf_config_release_note(&c, note, sizeof(note)), "llama, all RoPE: no note");
    model_config_plan_positions(&c, "repo", 1);
    EXPECT(hf_config_release_note(&c, note, sizeof(note)) && strstr(note, "OLMo-2 only"), "llama with RePo: %s", note);
    CHECK(!parse_with("\"num_key_value_heads\": 2", &c, err, sizeof(err)), "%s", err);
    model_config_plan_positions(&c, "repo", 2);
    EXPECT(hf_config_release_note(&c, note, sizeof(note)) && strstr(note, "final_map") && strstr(note, "repoc_olmo2"),
           "olmo2 RePo, 2 kv heads of 4: %s", note);
}

/* ---- YaRN as written, against transformers' rope validation (restated) ---- */

/* the raw JSON token after "key": in text (Python's json reads a float iff it has '.', 'e' or 'E') */
static int is_float_token(const char* text, const char* key) {
    char pat[80];
    snprintf(pat, sizeof(pat), "\"%s\":", key);
    const char* p = strstr(text, pat);
    if (!p) return 0;
    p += strlen(pat);
    while (*p == ' ' || *p == '\t') p++;
    size_t n = strcspn(p, ",}\n");
    return memchr(p, '.', n) || memchr(p, 'e', n) || memchr(p, 'E', n);
}

/* modeling_rope_utils: rope_config_validation -> _validate_yarn_parameters with _check_received_keys.
   Required {rope_type, factor} (a "type" key counts as rope_type); optional attention_factor, beta_fast,
   beta_slow, original_max_position_embeddings, mscale, mscale_all_dim, truncate; anything else is
   "unrecognized"; factor a float >= 1, attention_factor a float >= 0, betas floats with beta_fast >=
   beta_slow; and max_position_embeddings / original_max_position_embeddings must equal factor. Returns
   NULL when accepted without a warning, else the rule broken. */
static const char* rope_config_validation(const cJSON* root, const char* text) {
    const cJSON* rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    if (!rs || cJSON_IsNull(rs)) return NULL;
    const cJSON* type = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!type) type = cJSON_GetObjectItemCaseSensitive(rs, "type");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "yarn")) return "rope_type is not yarn";
    if (!cJSON_GetObjectItemCaseSensitive(rs, "rope_type")) return "missing required key rope_type";
    const char* allowed[] = {"rope_type", "factor",         "attention_factor",
                             "beta_fast", "beta_slow",      "original_max_position_embeddings",
                             "mscale",    "mscale_all_dim", "truncate"};
    const cJSON* it;
    cJSON_ArrayForEach(it, rs) {
        size_t k = 0;
        while (k < 9 && strcmp(it->string, allowed[k])) k++;
        if (k == 9) return "an unrecognized key";
    }
    const cJSON* f = cJSON_GetObjectItemCaseSensitive(rs, "factor");
    if (!cJSON_IsNumber(f) || !is_float_token(text, "factor") || f->valuedouble < 1) return "factor not a float >= 1";
    const cJSON* af = cJSON_GetObjectItemCaseSensitive(rs, "attention_factor");
    if (af && (!is_float_token(text, "attention_factor") || af->valuedouble < 0)) return "attention_factor";
    const cJSON* bf = cJSON_GetObjectItemCaseSensitive(rs, "beta_fast");
    const cJSON* bs = cJSON_GetObjectItemCaseSensitive(rs, "beta_slow");
    if ((bf && !is_float_token(text, "beta_fast")) || (bs && !is_float_token(text, "beta_slow")))
        return "beta_fast / beta_slow not floats";
    if ((bf ? bf->valuedouble : 32) < (bs ? bs->valuedouble : 1)) return "beta_fast < beta_slow";
    const cJSON* om = cJSON_GetObjectItemCaseSensitive(rs, "original_max_position_embeddings");
    const cJSON* mp = cJSON_GetObjectItemCaseSensitive(root, "max_position_embeddings");
    if (!om) return "original_max_position_embeddings unset (transformers then assumes max_position_embeddings)";
    if (mp->valuedouble / om->valuedouble != f->valuedouble) return "implicit factor != factor";
    return NULL;
}

/* Olmo2Config._rope_scaling_validation of the 4.x releases that kept OLMo's legacy rule (and of the
   released RePo loader): exactly two fields, type linear|dynamic, float factor > 1. */
static const char* legacy_olmo2_validation(const cJSON* root) {
    const cJSON* rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    if (!rs || cJSON_IsNull(rs)) return NULL;
    if (cJSON_GetArraySize(rs) != 2) return "must be a dictionary with two fields, type and factor";
    const cJSON* type = cJSON_GetObjectItemCaseSensitive(rs, "type");
    if (!cJSON_IsString(type) || (strcmp(type->valuestring, "linear") && strcmp(type->valuestring, "dynamic")))
        return "type must be linear or dynamic";
    return NULL;
}

static void test_yarn_export(void) {
    printf("YaRN in the written config.json, against transformers' rope validation\n");
    const char* arch[] = {"Olmo2ForCausalLM", "LlamaForCausalLM"};
    for (size_t a = 0; a < 2; a++) {
        char text_in[1024], err[512] = "";
        snprintf(text_in, sizeof(text_in),
                 "{\"architectures\": [\"%s\"], \"vocab_size\": 64, \"hidden_size\": 32, "
                 "\"intermediate_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                 "\"max_position_embeddings\": 16384, \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4, "
                 "\"original_max_position_embeddings\": 4096, \"beta_fast\": 32, \"beta_slow\": 1}}",
                 arch[a]);
        ModelConfig c, back;
        CHECK(!parse(text_in, &c, err, sizeof(err)), "%s", err);
        char* text = hf_config_write(&c, "float32");
        cJSON* root = cJSON_Parse(text);
        const char* why = rope_config_validation(root, text);
        EXPECT(!why, "%s: rope_scaling passes rope_config_validation's yarn rules, factor 4 = 16384 / 4096 %s", arch[a],
               why ? why : "");
        CHECK(!parse(text, &back, err, sizeof(err)), "%s", err);
        EXPECT(back.yarn_factor == 4 && back.yarn_orig_max == 4096 && back.max_position_embeddings == 16384,
               "%s: reads back factor %g, original %g, max_position_embeddings %zu", arch[a], back.yarn_factor,
               back.yarn_orig_max, back.max_position_embeddings);
        if (a == 0) {
            char note[512];
            const char* legacy = legacy_olmo2_validation(root);
            EXPECT(legacy && hf_config_release_note(&c, note, sizeof(note)) && strstr(note, "YaRN"),
                   "Olmo2Config's legacy rule refuses it (%s), and the save notes so: %s", legacy ? legacy : "accepted",
                   note);
        }
        cJSON_Delete(root);
        free(text);
    }
}

/* Llama-3.2-1B: the llama3 table is read, written back in the same form, and the full config (vocab 128256,
   rope_theta 500000, GQA 32/8, head_dim 64, tied) validates and lists 1,235,814,400 parameters without
   allocating them */
static void test_llama3(void) {
    printf("Llama-3.2-1B: llama3 rope_scaling read, written back, full-size config validated\n");
    const char* path = "tests/corpus/hf_configs/llama3.2_1b.json";
    size_t n;
    char err[512] = "";
    char* text = file_read_all(path, &n);
    ModelConfig c, back;
    CHECK(!hf_config_parse(text, n, path, &c, err, sizeof(err)), "%s", err);
    free(text);
    EXPECT(c.llama3 && c.llama3_factor == 32 && c.llama3_low_freq_factor == 1 && c.llama3_high_freq_factor == 4 &&
               c.llama3_orig_max == 8192 && c.rope_theta == 500000 && c.V == 128256 && c.H == 32 && c.KVH == 8 &&
               cfg_hd(&c) == 64 && c.tie_embeddings && c.max_position_embeddings == 131072,
           "llama3 factor %g low %g high %g L0 %g theta %g V %zu H %zu KVH %zu hd %zu tied %d", c.llama3_factor,
           c.llama3_low_freq_factor, c.llama3_high_freq_factor, c.llama3_orig_max, c.rope_theta, c.V, c.H, c.KVH,
           cfg_hd(&c), c.tie_embeddings);
    model_config_validate(&c);
    TensorTable tt;
    tensor_table_build(&tt, &c, NULL, 0);
    EXPECT(tt.n_params == 1235814400, "tensor list of the full config: %zu parameters (Llama-3.2-1B: 1235814400)",
           tt.n_params);
    tensor_table_free(&tt);
    char* out = hf_config_write(&c, "bfloat16");
    cJSON* root = cJSON_Parse(out);
    const cJSON* rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    const cJSON* type = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    EXPECT(cJSON_GetArraySize(rs) == 5 && cJSON_IsString(type) && !strcmp(type->valuestring, "llama3") &&
               strstr(out, "\"factor\":\t32.0") && strstr(out, "\"low_freq_factor\":\t1.0") &&
               strstr(out, "\"high_freq_factor\":\t4.0") && strstr(out, "\"original_max_position_embeddings\":\t8192"),
           "written rope_scaling has the source's five keys, floats written as floats");
    CHECK(!hf_config_parse(out, strlen(out), "written", &back, err, sizeof(err)), "%s", err);
    EXPECT(back.llama3 && back.llama3_factor == 32 && back.llama3_low_freq_factor == 1 &&
               back.llama3_high_freq_factor == 4 && back.llama3_orig_max == 8192 && !(back.yarn_factor > 1),
           "reads back the same llama3 table");
    cJSON_Delete(root);
    free(out);
}

int main(void) {
    test_published();
    test_stock_transformers();
    test_llama3();
    test_refusals();
    test_model_type();
    test_eps_default();
    test_carried();
    test_pe_read();
    test_pe_write();
    test_release_notes();
    test_yarn_export();
    printf("test_hf_config: %d passed, %d failed\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}

/* config.json reading and writing (DESIGN.md §5). */
#include "model/hf_config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"

/* a positive integer key; absent is an error unless *out already holds a default and required is 0 */
static int get_size(const cJSON* root, const char* key, size_t* out, int required, const char* label, char* err,
                    size_t len) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return required ? set_err(err, len, "%s: missing key '%s'", label, key) : 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != floor(v->valuedouble))
        return set_err(err, len, "%s: '%s' must be a positive integer", label, key);
    *out = (size_t)v->valuedouble;
    return 0;
}

static int get_real(const cJSON* root, const char* key, double* out, const char* label, char* err, size_t len) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return set_err(err, len, "%s: '%s' must be a number", label, key);
    *out = v->valuedouble;
    return 0;
}

/* YaRN from rope_scaling; other scaling types are refused rather than ignored */
static int parse_rope_scaling(const cJSON* rs, ModelConfig* c, const char* label, char* err, size_t len) {
    if (!rs || cJSON_IsNull(rs)) return 0;
    if (!cJSON_IsObject(rs)) return set_err(err, len, "%s: 'rope_scaling' must be an object or null", label);
    const cJSON* type = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!type) type = cJSON_GetObjectItemCaseSensitive(rs, "type");
    if (!cJSON_IsString(type)) return set_err(err, len, "%s: rope_scaling needs a string 'rope_type'", label);
    if (!strcmp(type->valuestring, "default")) return 0;
    if (strcmp(type->valuestring, "yarn") != 0)
        return set_err(err, len, "%s: rope_scaling.rope_type '%s' is not supported (only \"yarn\")", label,
                    type->valuestring);
    c->yarn_factor = 0;
    c->yarn_orig_max = (double)c->max_position_embeddings;
    if (get_real(rs, "factor", &c->yarn_factor, label, err, len) ||
        get_real(rs, "original_max_position_embeddings", &c->yarn_orig_max, label, err, len) ||
        get_real(rs, "beta_fast", &c->yarn_beta_fast, label, err, len) ||
        get_real(rs, "beta_slow", &c->yarn_beta_slow, label, err, len) ||
        get_real(rs, "attention_factor", &c->yarn_attention_factor, label, err, len))
        return 1;
    if (!(c->yarn_factor >= 1)) return set_err(err, len, "%s: rope_scaling.factor must be >= 1", label);
    return 0;
}

/* a pe_config key under either spelling (the released loader reads "dynmaic_") */
static const cJSON* pe_key(const cJSON* pe, const char* suffix) {
    char a[64], b[64];
    snprintf(a, sizeof(a), "dynamic_%s", suffix);
    snprintf(b, sizeof(b), "dynmaic_%s", suffix);
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(pe, a);
    return v ? v : cJSON_GetObjectItemCaseSensitive(pe, b);
}

/* RePo's pe_config: mode swigluex_multihead → RePo on the listed layers (or from the start layer);
   "nope" → NoPE there; "none" → all RoPE */
static int parse_pe_config(const cJSON* pe, ModelConfig* c, const char* label, char* err, size_t len) {
    if (!pe || cJSON_IsNull(pe)) return 0;
    if (!cJSON_IsObject(pe)) return set_err(err, len, "%s: 'pe_config' must be an object", label);
    const cJSON* mode = pe_key(pe, "pe_mode");
    if (!mode || cJSON_IsNull(mode)) return 0;
    if (!cJSON_IsString(mode)) return set_err(err, len, "%s: pe_config.dynamic_pe_mode must be a string", label);
    PosMode pm;
    if (!strcmp(mode->valuestring, "none")) return 0;
    else if (!strcmp(mode->valuestring, "swigluex_multihead")) pm = POS_REPO;
    else if (!strcmp(mode->valuestring, "nope")) pm = POS_NOPE;
    else return set_err(err, len, "%s: pe_config.dynamic_pe_mode '%s' is not supported (swigluex_multihead, nope, none)",
                     label, mode->valuestring);
    const cJSON* ids = pe_key(pe, "pe_layer_ids");
    if (cJSON_IsString(ids) && ids->valuestring[0]) {   /* "3,4,5" */
        const char* s = ids->valuestring;
        while (*s) {
            char* end;
            long id = strtol(s, &end, 10);
            if (end == s || id < 0 || (size_t)id >= c->L)
                return set_err(err, len, "%s: pe_config.dynamic_pe_layer_ids '%s': bad layer id (n_layers %zu)", label,
                            ids->valuestring, c->L);
            c->pos[id] = pm;
            s = end;
            while (*s == ',' || *s == ' ') s++;
        }
        return 0;
    }
    if (ids && !cJSON_IsNull(ids) && !cJSON_IsString(ids))
        return set_err(err, len, "%s: pe_config.dynamic_pe_layer_ids must be a comma-separated string", label);
    size_t start = 0;
    const cJSON* sl = pe_key(pe, "pe_start_layer");
    if (sl && !cJSON_IsNull(sl)) {
        if (!cJSON_IsNumber(sl) || sl->valuedouble < 0 || sl->valuedouble != floor(sl->valuedouble) ||
            sl->valuedouble >= (double)c->L)
            return set_err(err, len, "%s: pe_config.dynamic_pe_start_layer must be an integer in [0, %zu)", label, c->L);
        start = (size_t)sl->valuedouble;
    }
    for (size_t l = start; l < c->L; l++) c->pos[l] = pm;
    return 0;
}

static int parse_layer_list(const cJSON* list, ModelConfig* c, const char* label, char* err, size_t len) {
    if (!list) return 0;
    if (!cJSON_IsArray(list) || (size_t)cJSON_GetArraySize(list) != c->L)
        return set_err(err, len, "%s: 'repoc_layer_positions' must be a list of %zu modes", label, c->L);
    size_t l = 0;
    const cJSON* it;
    cJSON_ArrayForEach(it, list) {
        if (!cJSON_IsString(it) || !pos_mode_parse(it->valuestring, &c->pos[l]))
            return set_err(err, len, "%s: repoc_layer_positions[%zu] must be rope, repo or nope", label, l);
        l++;
    }
    return 0;
}

static int parse_root(const cJSON* root, ModelConfig* c, const char* label, char* err, size_t len) {
    if (!cJSON_IsObject(root)) return set_err(err, len, "%s: the top level must be a JSON object", label);
    const cJSON* arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON* a0 = cJSON_IsArray(arch) ? cJSON_GetArrayItem(arch, 0) : NULL;
    if (!cJSON_IsString(a0)) return set_err(err, len, "%s: missing 'architectures' (a list of class names)", label);
    if (!strcmp(a0->valuestring, "Olmo2ForCausalLM")) c->block = BLOCK_OLMO2;
    else if (!strcmp(a0->valuestring, "LlamaForCausalLM")) c->block = BLOCK_LLAMA;
    else return set_err(err, len, "%s: architectures[0] '%s' is not supported (Olmo2ForCausalLM, LlamaForCausalLM)",
                     label, a0->valuestring);
    if (get_size(root, "vocab_size", &c->V, 1, label, err, len) ||
        get_size(root, "hidden_size", &c->D, 1, label, err, len) ||
        get_size(root, "intermediate_size", &c->F, 1, label, err, len) ||
        get_size(root, "num_hidden_layers", &c->L, 1, label, err, len) ||
        get_size(root, "num_attention_heads", &c->H, 1, label, err, len))
        return 1;
    c->KVH = c->H;
    size_t head_dim = 0;
    if (get_size(root, "num_key_value_heads", &c->KVH, 0, label, err, len) ||
        get_size(root, "max_position_embeddings", &c->max_position_embeddings, 0, label, err, len) ||
        get_size(root, "head_dim", &head_dim, 0, label, err, len) ||
        get_real(root, "rms_norm_eps", &c->norm_eps, label, err, len) ||
        get_real(root, "rope_theta", &c->rope_theta, label, err, len))
        return 1;
    if (c->L > MAX_LAYERS) return set_err(err, len, "%s: num_hidden_layers %zu exceeds %d", label, c->L, MAX_LAYERS);
    if (c->D % c->H || c->H % c->KVH)
        return set_err(err, len, "%s: hidden_size %zu, num_attention_heads %zu, num_key_value_heads %zu do not divide",
                    label, c->D, c->H, c->KVH);
    if (head_dim && head_dim != c->D / c->H)
        return set_err(err, len, "%s: head_dim %zu != hidden_size/num_attention_heads %zu is not supported", label,
                    head_dim, c->D / c->H);
    const cJSON* tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    if (tie && !cJSON_IsBool(tie)) return set_err(err, len, "%s: 'tie_word_embeddings' must be true or false", label);
    c->tie_embeddings = cJSON_IsTrue(tie);
    for (size_t l = 0; l < c->L; l++) c->pos[l] = POS_ROPE;
    if (parse_rope_scaling(cJSON_GetObjectItemCaseSensitive(root, "rope_scaling"), c, label, err, len) ||
        parse_pe_config(cJSON_GetObjectItemCaseSensitive(root, "pe_config"), c, label, err, len) ||
        parse_layer_list(cJSON_GetObjectItemCaseSensitive(root, "repoc_layer_positions"), c, label, err, len))
        return 1;
    return 0;
}

int hf_config_parse(const char* json, size_t len, const char* label, ModelConfig* cfg, char* err, size_t err_len) {
    model_config_default(cfg);
    const char* end = NULL;
    cJSON* root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root) {
        size_t off = end && end >= json && end <= json + len ? (size_t)(end - json) : 0;
        return set_err(err, err_len, "%s: invalid JSON near byte %zu", label, off);
    }
    int rc = parse_root(root, cfg, label, err, err_len);
    cJSON_Delete(root);
    return rc;
}

void hf_config_read(const char* dir, ModelConfig* cfg) {
    char path[4096], err[512];
    snprintf(path, sizeof(path), "%s/config.json", dir);
    size_t len;
    char* text = file_read_all_or_null(path, &len);
    if (!text) DIE("%s: cannot read the checkpoint's config.json (is '%s' a Hugging Face checkpoint directory?)",
                   path, dir);
    int rc = hf_config_parse(text, len, path, cfg, err, sizeof(err));
    free(text);
    if (rc) DIE("%s", err);
}

char* hf_config_write(const ModelConfig* c, const char* torch_dtype) {
    cJSON* root = cJSON_CreateObject();
    bool olmo2 = c->block == BLOCK_OLMO2;
    cJSON* arch = cJSON_AddArrayToObject(root, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString(olmo2 ? "Olmo2ForCausalLM" : "LlamaForCausalLM"));
    cJSON_AddStringToObject(root, "model_type", olmo2 ? "olmo2" : "llama");
    cJSON_AddNumberToObject(root, "vocab_size", (double)c->V);
    cJSON_AddNumberToObject(root, "hidden_size", (double)c->D);
    cJSON_AddNumberToObject(root, "intermediate_size", (double)c->F);
    cJSON_AddNumberToObject(root, "num_hidden_layers", (double)c->L);
    cJSON_AddNumberToObject(root, "num_attention_heads", (double)c->H);
    cJSON_AddNumberToObject(root, "num_key_value_heads", (double)c->KVH);
    cJSON_AddNumberToObject(root, "rms_norm_eps", c->norm_eps);
    cJSON_AddNumberToObject(root, "rope_theta", c->rope_theta);
    if (c->yarn_factor > 1.0) {
        cJSON* rs = cJSON_AddObjectToObject(root, "rope_scaling");
        cJSON_AddStringToObject(rs, "rope_type", "yarn");
        cJSON_AddNumberToObject(rs, "factor", c->yarn_factor);
        cJSON_AddNumberToObject(rs, "original_max_position_embeddings", c->yarn_orig_max);
        cJSON_AddNumberToObject(rs, "beta_fast", c->yarn_beta_fast);
        cJSON_AddNumberToObject(rs, "beta_slow", c->yarn_beta_slow);
        if (c->yarn_attention_factor > 0) cJSON_AddNumberToObject(rs, "attention_factor", c->yarn_attention_factor);
    } else {
        cJSON_AddNullToObject(root, "rope_scaling");
    }
    cJSON_AddBoolToObject(root, "tie_word_embeddings", c->tie_embeddings);
    cJSON_AddNumberToObject(root, "max_position_embeddings", (double)c->max_position_embeddings);
    cJSON_AddStringToObject(root, "hidden_act", "silu");
    cJSON_AddBoolToObject(root, "attention_bias", false);
    cJSON_AddStringToObject(root, "torch_dtype", torch_dtype);
    /* pe_config for the released RePo loader: the RePo layers, under both spellings */
    char ids[4 * MAX_LAYERS] = "";
    long first = -1;
    for (size_t l = 0; l < c->L; l++) {
        if (c->pos[l] != POS_REPO) continue;
        if (first < 0) first = (long)l;
        snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%zu", ids[0] ? "," : "", l);
    }
    cJSON* pe = cJSON_AddObjectToObject(root, "pe_config");
    cJSON_AddStringToObject(pe, "dynamic_pe_mode", first >= 0 ? "swigluex_multihead" : "none");
    cJSON_AddNumberToObject(pe, "dynamic_pe_start_layer", first >= 0 ? (double)first : 0);
    cJSON_AddNumberToObject(pe, "dynmaic_pe_start_layer", first >= 0 ? (double)first : 0);
    cJSON_AddStringToObject(pe, "dynamic_pe_layer_ids", ids);
    cJSON_AddStringToObject(pe, "dynmaic_pe_layer_ids", ids);
    cJSON* list = cJSON_AddArrayToObject(root, "repoc_layer_positions");
    for (size_t l = 0; l < c->L; l++) cJSON_AddItemToArray(list, cJSON_CreateString(pos_mode_name(c->pos[l])));
    cJSON_AddNumberToObject(root, "repoc_format_version", REPOC_CONFIG_FORMAT_VERSION);
    char* text = cJSON_Print(root);
    cJSON_Delete(root);
    CHECK(text, "out of memory printing config.json");
    return text;
}

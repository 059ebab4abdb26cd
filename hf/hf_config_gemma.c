/* Gemma-3 text's config.json keys (docs/interop.md, "Block families"; transformers' Gemma3TextConfig): which layers
   slide, the window, the attention scale, the local RoPE base and the MLP's activation. What repoc does not
   compute (softcapping, bidirectional attention, another activation) is refused, naming the key. */
#include "hf/hf_config_gemma.h"

#include <math.h>
#include <string.h>

#include "common/check.h"
#include "hf/hf_config_keys.h"

void hf_gemma3_defaults(ModelConfig* c) { /* Gemma3TextConfig's, where config.json leaves a key out */
    c->rope_theta = 1e6;
    c->rope_local_theta = 10000.0;
    c->sliding_window = 4096;
    c->attn_scalar = 256;
    c->max_position_embeddings = 131072;
    c->tie_embeddings = true;
}

/* a key that must be absent or null: repoc does not compute what it asks for */
static int refuse_set(const cJSON* root, const char* key, const char* why, const char* label, char* err, size_t len) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v)) return 0;
    return set_err(err, len, "%s: %s must be null: %s", label, key, why);
}

/* layer_types ("sliding_attention" / "full_attention", one per layer), else the pattern: every pattern-th
   layer global (transformers' default 6) */
static int parse_layer_types(const cJSON* root, ModelConfig* c, const char* label, char* err, size_t len) {
    const cJSON* types = cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    if (types && !cJSON_IsNull(types)) {
        if (!cJSON_IsArray(types) || (size_t)cJSON_GetArraySize(types) != c->L)
            return set_err(err, len, "%s: 'layer_types' must be a list of %zu strings (num_hidden_layers)", label,
                           c->L);
        size_t l = 0;
        const cJSON* it;
        cJSON_ArrayForEach(it, types) {
            bool slide = cJSON_IsString(it) && !strcmp(it->valuestring, "sliding_attention");
            if (!slide && !(cJSON_IsString(it) && !strcmp(it->valuestring, "full_attention")))
                return set_err(err, len, "%s: layer_types[%zu] must be \"sliding_attention\" or \"full_attention\"",
                               label, l);
            c->sliding[l++] = slide;
        }
        return 0;
    }
    size_t pattern = 6;
    if (hf_get_size(root, "_sliding_window_pattern", &pattern, 0, label, err, len) ||
        hf_get_size(root, "sliding_window_pattern", &pattern, 0, label, err, len))
        return 1;
    for (size_t l = 0; l < c->L; l++) c->sliding[l] = (l + 1) % pattern != 0;
    return 0;
}

int hf_gemma3_parse(const cJSON* root, ModelConfig* c, const char* label, char* err, size_t len) {
    const cJSON* act = cJSON_GetObjectItemCaseSensitive(root, "hidden_activation");
    if (act && !cJSON_IsNull(act) && !(cJSON_IsString(act) && !strcmp(act->valuestring, "gelu_pytorch_tanh")))
        return set_err(err, len,
                       "%s: hidden_activation %s is not supported: repoc's Gemma-3 MLP is GeGLU with "
                       "\"gelu_pytorch_tanh\"",
                       label, cJSON_IsString(act) ? act->valuestring : "(not a string)");
    if (refuse_set(root, "attn_logit_softcapping", "repoc's attention does not cap its scores", label, err, len) ||
        refuse_set(root, "final_logit_softcapping", "repoc's head does not cap its logits", label, err, len) ||
        refuse_set(root, "use_bidirectional_attention", "repoc's attention is causal", label, err, len) ||
        hf_get_size(root, "sliding_window", &c->sliding_window, 0, label, err, len) ||
        hf_get_real(root, "query_pre_attn_scalar", &c->attn_scalar, label, err, len) ||
        hf_get_real(root, "rope_local_base_freq", &c->rope_local_theta, label, err, len) ||
        parse_layer_types(root, c, label, err, len))
        return 1;
    if (!(c->attn_scalar > 0))
        return set_err(err, len, "%s: query_pre_attn_scalar %g must be positive", label, c->attn_scalar);
    if (!(c->rope_local_theta > 1))
        return set_err(err, len, "%s: rope_local_base_freq %g must be > 1", label, c->rope_local_theta);
    return 0;
}

void hf_gemma3_write(cJSON* root, const ModelConfig* c) {
    cJSON_AddStringToObject(root, "hidden_activation", "gelu_pytorch_tanh");
    cJSON_AddNumberToObject(root, "query_pre_attn_scalar", c->attn_scalar > 0 ? c->attn_scalar : (double)cfg_hd(c));
    cJSON_AddNumberToObject(root, "sliding_window", (double)c->sliding_window);
    hf_add_float(root, "rope_local_base_freq", c->rope_local_theta);
    cJSON* types = cJSON_AddArrayToObject(root, "layer_types");
    for (size_t l = 0; l < c->L; l++)
        cJSON_AddItemToArray(types, cJSON_CreateString(c->sliding[l] ? "sliding_attention" : "full_attention"));
    cJSON_AddNullToObject(root, "attn_logit_softcapping");
    cJSON_AddNullToObject(root, "final_logit_softcapping");
}

/* Mistral's config.json keys (docs/interop.md, "Mistral"; transformers' MistralConfig): the Llama block with
   every layer attending within sliding_window keys (absent: MistralConfig's 4096; null: every earlier key),
   rotated by the global rope_theta table. */
#include "hf/hf_config_mistral.h"

#include "hf/hf_config_keys.h"

void hf_mistral_defaults(ModelConfig* c) { /* MistralConfig's, where config.json leaves a key out */
    c->sliding_window = 4096;
    c->max_position_embeddings = 4096 * 32;
}

int hf_mistral_parse(const cJSON* root, ModelConfig* c, const char* label, char* err, size_t len) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, "sliding_window");
    if (v && cJSON_IsNull(v)) c->sliding_window = 0;
    else if (hf_get_size(root, "sliding_window", &c->sliding_window, 0, label, err, len)) return 1;
    for (size_t l = 0; l < c->L; l++) c->sliding[l] = c->sliding_window > 0;
    return 0;
}

void hf_mistral_write(cJSON* root, const ModelConfig* c) {
    if (c->sliding_window) cJSON_AddNumberToObject(root, "sliding_window", (double)c->sliding_window);
    else cJSON_AddNullToObject(root, "sliding_window");
}

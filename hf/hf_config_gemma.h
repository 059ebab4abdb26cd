/* Gemma-3 text's config.json keys (hf/hf_config_gemma.c), for hf/hf_config.c's family dispatch. */
#ifndef REPOC_HF_CONFIG_GEMMA_H
#define REPOC_HF_CONFIG_GEMMA_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "model/config.h"

/* Gemma-3 text (Gemma3ForCausalLM, model_type gemma3_text): its defaults before the common keys are read */
void hf_gemma3_defaults(ModelConfig* c);
/* its own keys, after the common ones (c->L known): layer_types or sliding_window_pattern, sliding_window,
   query_pre_attn_scalar, rope_local_base_freq, hidden_activation; softcapping and bidirectional attention
   refused */
int hf_gemma3_parse(const cJSON* root, ModelConfig* c, const char* label, char* err, size_t len);
/* its keys into a config.json being written */
void hf_gemma3_write(cJSON* root, const ModelConfig* c);

#endif

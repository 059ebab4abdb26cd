/* The typed key readers of config.json (hf/hf_config.c), shared with the Gemma-3 and Mistral parts
   (hf/hf_config_gemma.c, hf/hf_config_mistral.c).
   Each returns 0, or non-zero with err set to "<label>: '<key>' ...". An absent or null key leaves *out. */
#ifndef REPOC_HF_CONFIG_KEYS_H
#define REPOC_HF_CONFIG_KEYS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/config.h"

/* a positive integer; absent is an error when required */
int hf_get_size(const cJSON* root, const char* key, size_t* out, int required, const char* label, char* err,
                size_t len);
/* a finite number */
int hf_get_real(const cJSON* root, const char* key, double* out, const char* label, char* err, size_t len);
/* true or false */
int hf_get_bool(const cJSON* root, const char* key, bool* out, const char* label, char* err, size_t len);

/* a JSON number that Python reads as a float (transformers' rope validation checks isinstance(x, float)) */
void hf_add_float(cJSON* obj, const char* key, double v);

/* Gemma-3 text (Gemma3ForCausalLM, model_type gemma3_text): its defaults before the common keys are read */
void hf_gemma3_defaults(ModelConfig* c);
/* its own keys, after the common ones (c->L known): layer_types or sliding_window_pattern, sliding_window,
   query_pre_attn_scalar, rope_local_base_freq, hidden_activation; softcapping and bidirectional attention
   refused */
int hf_gemma3_parse(const cJSON* root, ModelConfig* c, const char* label, char* err, size_t len);
/* its keys into a config.json being written */
void hf_gemma3_write(cJSON* root, const ModelConfig* c);

/* Mistral (MistralForCausalLM, model_type mistral): its defaults before the common keys are read, its
   sliding_window after them (c->L known; every layer slides, or none with null), and that key written */
void hf_mistral_defaults(ModelConfig* c);
int hf_mistral_parse(const cJSON* root, ModelConfig* c, const char* label, char* err, size_t len);
void hf_mistral_write(cJSON* root, const ModelConfig* c);

#endif

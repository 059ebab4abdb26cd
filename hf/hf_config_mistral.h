/* Mistral's config.json keys (hf/hf_config_mistral.c), for hf/hf_config.c's family dispatch. */
#ifndef REPOC_HF_CONFIG_MISTRAL_H
#define REPOC_HF_CONFIG_MISTRAL_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "model/config.h"

/* Mistral (MistralForCausalLM, model_type mistral): its defaults before the common keys are read, its
   sliding_window after them (c->L known; every layer slides, or none with null), and that key written */
void hf_mistral_defaults(ModelConfig* c);
int hf_mistral_parse(const cJSON* root, ModelConfig* c, const char* label, char* err, size_t len);
void hf_mistral_write(cJSON* root, const ModelConfig* c);

#endif

/* Hugging Face config.json <-> ModelConfig (DESIGN.md §5): Olmo2ForCausalLM and
   LlamaForCausalLM, rope_scaling (YaRN), and RePo's pe_config (both spellings
   of its keys), plus repoc's explicit per-layer list "repoc_layer_positions".
   Keys a Hugging Face config carries that repoc does not use are ignored. */
#ifndef REPOC_HF_CONFIG_H
#define REPOC_HF_CONFIG_H

#include <stddef.h>

#include "model/config.h"

#define REPOC_CONFIG_FORMAT_VERSION 1

/* Parse config.json text. label names the file in messages. Returns 0, or
   non-zero with err set ("<label>: <key>: <what was expected, what was found>").
   Never exits: the fuzzer and the malformed-file tests call it. */
int hf_config_parse(const char* json, size_t len, const char* label, ModelConfig* cfg, char* err, size_t err_len);
/* Read <dir>/config.json; dies with the message. */
void hf_config_read(const char* dir, ModelConfig* cfg);
/* config.json text for cfg (malloc'd); torch_dtype "float32" or "bfloat16" */
char* hf_config_write(const ModelConfig* cfg, const char* torch_dtype);

#endif

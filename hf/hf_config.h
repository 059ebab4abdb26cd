/* Hugging Face config.json <-> ModelConfig (docs/formats.md, "config.json"): Olmo2ForCausalLM,
   LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM (head_dim, Qwen3's attention_bias, Qwen's
   pad_token_id as padding_idx), Gemma3ForCausalLM (its keys in hf/hf_config_gemma.c) and MistralForCausalLM
   (hf/hf_config_mistral.c), rope_scaling
   (YaRN, llama3, linear), and RePo's pe_config (read as the
   released RePo loader reads it), plus repoc's explicit per-layer list
   "repoc_layer_positions". What repoc does not compute (hidden_act other than
   silu, MLP biases and OLMo-2/Llama attention biases, Qwen's sliding windows, Gemma-3's softcapping,
   dropout, other rope_scaling types)
   is refused; token ids and a few other harmless keys are carried to the saved config; the rest is
   ignored. */
#ifndef REPOC_HF_CONFIG_H
#define REPOC_HF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "model/config.h"

#define REPOC_CONFIG_FORMAT_VERSION 1

/* Parse config.json text. label names the file in messages. Returns 0, or
   non-zero with err set ("<label>: <key>: <what was expected, what was found>").
   Never exits: the fuzzer and the malformed-file tests call it. */
int hf_config_parse(const char* json, size_t len, const char* label, ModelConfig* cfg, char* err, size_t err_len);
/* Read <dir>/config.json; dies with the message. */
void hf_config_read(const char* dir, ModelConfig* cfg);
/* Whether dir/config.json's torch_dtype is "bfloat16" (hf_save's BF16 weights); dies naming the file when it
   cannot be read or parsed, or torch_dtype is not a string */
bool hf_config_torch_dtype_is_bf16(const char* dir);
/* Read the config.json at path (any file name); dies with the message. */
void hf_config_read_file(const char* path, ModelConfig* cfg);
/* config.json text for cfg (malloc'd); torch_dtype "float32" or "bfloat16". The source config's carried keys
   (token ids, ...) are written back; pe_config is written in the released RePo loader's reading whenever the
   layout is expressible there (all RoPE, RoPE + RePo, RoPE + NoPE) and left out when it mixes RePo and NoPE;
   model_type and architectures are repoc's own (refused by stock transformers) for a layout with RePo or NoPE
   layers, unless cfg->hf_released_names keeps the stock ones for the released loader (hf/hf_loaders.h). */
char* hf_config_write(const ModelConfig* cfg, const char* torch_dtype);
/* The eos_token_id cfg carried from its config.json (the first of a list); -1 when it has none */
double hf_carried_eos(const ModelConfig* cfg);
#endif

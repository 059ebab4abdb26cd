/* A checkpoint directory's weights, whichever way it holds them, in and out: a Hugging Face model (model.safetensors
   or shards), that plus a PEFT LoRA adapter (adapter_config.json, adapter_model.safetensors), or an
   adapter alone that names its base (__metadata__ "repoc.base_path" and "repoc.base_fingerprint", the
   base's hf_weights_fingerprint): the base is then read from that path once its fingerprint matches, so
   a base changed since the adapter was trained is refused. A model without LoRA given a LoRA checkpoint
   gets the adapter folded into its weights (peft_merge_file), with a note. */
#ifndef REPOC_CKPT_WEIGHTS_H
#define REPOC_CKPT_WEIGHTS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/safetensors.h"
#include "hf/peft.h"
#include "model/model.h"

/* The directory whose model weights checkpoint dir uses: dir, or the base its adapter names when dir has
   an adapter and no model weights of its own (dies when the adapter names none). Reads headers only: no fingerprint check. */
const char* ckpt_weights_dir(const char* dir, char* out, size_t len);

/* Load checkpoint dir into m (see above; ckpt_weights_load_dirs' rules for missing RePo and LoRA tensors).
   With base (may be NULL), *base gets the base m's frozen weights belong to: the one dir's adapter names
   (also when dir holds a copy of it), else dir itself (absolute) with its fingerprint. init: how missing
   tensors are drawn (hf_init_missing). Returns the count of newly initialised tensors. */
size_t ckpt_weights_load(Model* m, const char* dir, const ModelInit* init, bool verbose, LoraBase* base);

/* The weights of dir (hf_load_weights' rules) with, when m has LoRA and adapter_dir (may be NULL) holds
   adapter_model.safetensors, that adapter read in between (peft_load), so only what neither holds is
   initialised (hf_init_missing's init). Returns the count of newly initialised tensors. */
size_t ckpt_weights_load_dirs(Model* m, const char* dir, const char* adapter_dir, const ModelInit* init, bool verbose);
/* Write m into dir (created): config.json and model.safetensors in dtype (hf_save), and with LoRA the PEFT
   adapter files next to them (peft_save), naming base (may be NULL). adapter_only (a LoRA model whose base
   is named): the config.json and the adapter alone, with every RePo weight, trained or frozen (the base may
   lack them). */
void ckpt_weights_save(const Model* m, const char* dir, StDtype dtype, const LoraBase* base, bool adapter_only);

#endif

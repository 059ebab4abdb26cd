/* LoRA adapters in PEFT's on-disk format, next to a Hugging Face checkpoint:
   adapter_config.json (peft_type LORA, r, lora_alpha, target_modules, ...) and
   adapter_model.safetensors with PEFT's names, "base_model.model." + the base
   tensor's module + ".lora_A.weight" [r, in] / ".lora_B.weight" [out, r].
   Trainable RePo tensors are PEFT "modules_to_save" (gate_map, content_map,
   final_map). In a PEFT model such a module's weight is
   base_model.model.<module>.modules_to_save.<adapter name>.weight; the adapter
   file drops "modules_to_save.<adapter name>." and stores
   base_model.model.<module>.weight (get_peft_model_state_dict), which loading
   maps back. We write and read the file's form. */
#ifndef REPOC_PEFT_H
#define REPOC_PEFT_H

#include <stdbool.h>

#include "model/model.h"

#define PEFT_PREFIX "base_model.model."
/* adapter_model.safetensors' __metadata__ naming the base: its absolute path, and its hf_weights_fingerprint as
   16 lowercase hex digits (printf "%016llx"); build/merge checks the second */
#define PEFT_META_BASE_PATH "repoc.base_path"
#define PEFT_META_BASE_FINGERPRINT "repoc.base_fingerprint"

/* Write dir/adapter_config.json and dir/adapter_model.safetensors (F32) for m's LoRA tensors and its
   trainable RePo tensors; modules_to_save lists a RePo kind by its short name (gate_map) when every one is
   trained, else the full path of each trained module; all_repo: every RePo tensor, trained or frozen (an
   adapter saved without its base, which may lack them). m->lora_base, when its path is set, is named in
   both files: base_model_name_or_path, and the __metadata__ keys above. */
void peft_save(const Model* m, const char* dir, bool all_repo);
/* The base dir/adapter_model.safetensors names (the __metadata__ keys above) into *base; false (and base
   zeroed) when the file or the keys are absent. Dies on a malformed fingerprint. */
bool peft_read_base(const char* dir, LoraBase* base);
/* When dir holds adapter_config.json: set cfg's lora_rank, lora_alpha and lora_targets from it (dies on a
   config repoc cannot run: another peft_type, an unknown target module, a lora_dropout outside [0, 1)) and return true. */
bool peft_read_config(const char* dir, ModelConfig* cfg);
/* Load dir/adapter_model.safetensors into m: every LoRA tensor of m must be there with m's shape (the
   error names the tensor and both shapes), and so must every RePo tensor whose module adapter_config.json's
   modules_to_save names (an entry matches a module whose path ends with it, as in PEFT); a RePo tensor of
   a module it does not name, or one under PEFT's in-model name (".modules_to_save.<adapter>."), is refused.
   loaded (m->tensors.n flags, may be NULL) gets 1 for each tensor read. Returns the count. */
size_t peft_load(Model* m, const char* dir, char* loaded);

/* Fold every adapter into its base weight: W (out,in) += (alpha / r) B (out,r) A (r,in). The adapters
   stay as they were, so forwards now count them twice: save or copy the base tensors next. */
void peft_merge(Model* m);
/* The same from dir's adapter files into m, a model without LoRA (its config need not name the adapter):
   every lora_A / lora_B pair is folded into its projection with adapter_config.json's alpha / r, every RePo
   weight (modules_to_save) replaces the model's. Each tensor is checked against the model by name and shape.
   Returns the count of adapted projections plus RePo weights. */
size_t peft_merge_file(Model* m, const char* dir);

#endif

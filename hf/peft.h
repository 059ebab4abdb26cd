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

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"

#define PEFT_PREFIX "base_model.model."

/* The base checkpoint of a LoRA model: the absolute path of the directory its frozen weights came from and
   their hf_weights_fingerprint; path "" = none on disk (a fresh model), so a checkpoint must keep a copy */
typedef struct {
    char path[4096];
    uint64_t fingerprint;
} LoraBase;

/* adapter_model.safetensors' __metadata__ naming the base: its absolute path, and its hf_weights_fingerprint as
   16 lowercase hex digits (printf "%016llx"); build/merge checks the second */
#define PEFT_META_BASE_PATH "repoc.base_path"
#define PEFT_META_BASE_FINGERPRINT "repoc.base_fingerprint"

/* The base an adapter was trained on, as adapter_model.safetensors' __metadata__ records it:
     repoc.base_fingerprint       16 lowercase hex digits, printf "%016llx" of hf_weights_fingerprint(base dir)
     repoc.base_path              the base directory's absolute path (for the messages)
     repoc.base_model_type        config.json's model_type of the base: "olmo2" or "llama"
     repoc.base_layer_positions   one position mode per layer, comma-separated: "rope,repo,rope"
   The last two come from the model itself and are always written; the first two only when the saver
   knows the base (peft_save's base names a path). PEFT ignores the metadata. */

/* Write dir/adapter_config.json and dir/adapter_model.safetensors (F32) for m's LoRA tensors and its
   trainable RePo tensors; modules_to_save lists a RePo kind by its short name (gate_map) when every one is
   trained, else the full path of each trained module; all_repo: every RePo tensor, trained or frozen (an
   adapter saved without its base, which may lack them). base (may be NULL), when its path is set, is named in
   both files: base_model_name_or_path, and the __metadata__ keys above. */
void peft_save(const Model* m, const char* dir, bool all_repo, const LoraBase* base);
/* When dir holds adapter_config.json: set cfg's lora_rank, lora_alpha, lora_rslora (use_rslora) and
   lora_targets from it and return true. Dies naming the file and key on a config repoc cannot run as
   written: another peft_type, r not a positive integer, lora_alpha not finite and > 0, an unknown target
   module, a lora_dropout outside [0, 1), or any option peft_check_options refuses. */
bool peft_read_config(const char* dir, ModelConfig* cfg);
/* Every key of adapter_config.json (j, read from path) against PEFT's LoraConfig: a key that changes the
   math away from W + s B A unless it has its default value (fan_in_fan_out, use_dora, rank_pattern,
   alpha_pattern, layers_to_transform, lora_bias, an initialisation that rewrites the base, ...) must have
   that value, and a key PEFT does not define is refused; each message names the key and the file
   (hf/peft_options.c lists them all). */
void peft_check_options(const cJSON* j, const char* path);

/* What adapter_model.safetensors in dir records of its base (PeftBaseId's keys); "" for an absent key.
   Dies naming the file and key on a malformed repoc.base_fingerprint. */
typedef struct {
    bool has_fingerprint;
    uint64_t fingerprint;
    char path[4096];
    char model_type[16];
    char positions[8 * MAX_LAYERS];
} PeftBaseRecord;
void peft_read_base(const char* dir, PeftBaseRecord* rec);
/* The base dir's adapter names (path and fingerprint) into *base; false (and base zeroed) when dir has no
   adapter_model.safetensors or it names no base path. Dies when it names a path without a fingerprint. */
bool peft_read_lora_base(const char* dir, LoraBase* base);
/* c's position mode of every layer, comma-separated (repoc.base_layer_positions): "rope,repo,rope" */
void peft_layer_positions(const ModelConfig* c, char* out, size_t len);
/* Check that base_dir (its config in base_cfg) is the base the adapter in adapter_dir was trained on:
   with repoc.base_fingerprint, hf_weights_fingerprint(base_dir) must equal it; with model_type and layer
   positions recorded, base_cfg's must match. A mismatch dies naming both sides, unless force, which
   prints it as a warning. An adapter that records no fingerprint gets a warning that the base could not
   be verified (only the shapes, layer count and what it records are compared). Prints what it verified. */
void peft_check_base(const char* adapter_dir, const char* base_dir, const ModelConfig* base_cfg, bool force);
/* Load dir/adapter_model.safetensors into m: every LoRA tensor of m must be there with m's shape (the
   error names the tensor and both shapes), and so must every RePo tensor whose module adapter_config.json's
   modules_to_save names (an entry matches a module whose path ends with it, as in PEFT); a RePo tensor of
   a module it does not name, or one under PEFT's in-model name (".modules_to_save.<adapter>."), is refused.
   loaded (m->tensors.n flags, may be NULL) gets 1 for each tensor read. Returns the count. */
size_t peft_load(Model* m, const char* dir, char* loaded);

/* Fold every adapter into its base weight: W (out,in) += s B (out,r) A (r,in), s = cfg_lora_scale
   (alpha / r, or alpha / sqrt(r) with use_rslora). The adapters
   stay as they were, so forwards now count them twice: save or copy the base tensors next. */
void peft_merge(Model* m);
/* The same from dir's adapter files into m, a model without LoRA (its config need not name the adapter):
   every lora_A / lora_B pair is folded into its projection with adapter_config.json's alpha / r, every RePo
   weight (modules_to_save) replaces the model's. Each tensor is checked against the model by name and shape.
   Returns the count of adapted projections plus RePo weights. */
size_t peft_merge_file(Model* m, const char* dir);

#endif

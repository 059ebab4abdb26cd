/* Hugging Face checkpoint directories in and out (docs/formats.md, "Hugging Face checkpoint directory"): config.json +
   model.safetensors, or shards listed by model.safetensors.index.json. Tensors
   are loaded by name with every shape checked, converted from F32/BF16/F16/F64
   straight out of the mmap'd file into the parameter arena (no second copy). */
#ifndef REPOC_HF_CHECKPOINT_H
#define REPOC_HF_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/safetensors.h"
#include "model/model.h"

/* Load the weights of checkpoint directory dir into m (built from a config with
   the same sizes). An expected tensor that the checkpoint lacks is an error,
   except RePo weights (continuing a plain checkpoint with RePo) and LoRA adapters, which are
   initialised (RePo N(0, 0.02²) truncated at ±3σ, LoRA A uniform in ±1/sqrt(in) and B = 0) from init_seed and
   reported; a tensor the model does not have is an error. All missing/unexpected names are listed in
   one message. Returns the number of newly initialised tensors. A PEFT adapter next to the weights
   is not read here: hf/ckpt_weights.h reads a checkpoint directory whole. */
size_t hf_load_weights(Model* m, const char* dir, uint64_t init_seed, bool verbose);
/* hf_load_weights in its two halves, for a loader that reads more tensors between them: dir's weights
   into m, loaded (m->tensors.n bytes, zeroed) getting 1 for each tensor read; then every tensor not
   loaded initialised as init says (model_init_tensor; NULL: seed 0 and the default RePo stds), reported when
   verbose; returns their count. */
void hf_read_weights(Model* m, const char* dir, char* loaded);
size_t hf_init_missing(Model* m, const char* dir, const char* loaded, const ModelInit* init, bool verbose);
/* Whether dir has weight files (model.safetensors or model.safetensors.index.json): a directory of a
   published config.json alone has none */
bool hf_has_weights(const char* dir);

/* The same checks from the safetensors headers alone (weight files present, every name, dtype and shape
   against cfg), before anything of the model's size is allocated; dies with the message. */
void hf_check_weights(const char* dir, const ModelConfig* cfg);

/* Write dir/config.json and dir/model.safetensors (F32 or BF16; every tensor but the LoRA adapters),
   each atomically; creates dir. */
void hf_save(const Model* m, const char* dir, StDtype dtype);
/* hf_save's dir/config.json alone (m's architecture; torch_dtype from dtype); creates dir */
void hf_save_config(const Model* m, const char* dir, StDtype dtype);

#endif

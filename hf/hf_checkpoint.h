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
   except RePo weights (continuing a plain checkpoint with RePo), which are
   initialised (N(0, 0.02²) truncated at ±3σ) from init_seed and reported; a tensor the
   model does not have is an error. All missing/unexpected names are listed in
   one message. Returns the number of newly initialised tensors. */
size_t hf_load_weights(Model* m, const char* dir, uint64_t init_seed, bool verbose);
/* The same with the base weights from dir and the PEFT adapter (for a model with LoRA) from adapter_dir
   (NULL: none; hf_load_weights passes dir): a LoRA checkpoint that names its base instead of holding it. */
size_t hf_load_adapted(Model* m, const char* dir, const char* adapter_dir, uint64_t init_seed, bool verbose);

/* Whether dir has weight files (model.safetensors or model.safetensors.index.json): a directory of a
   published config.json alone has none */
bool hf_has_weights(const char* dir);

/* The same checks from the safetensors headers alone (weight files present, every name, dtype and shape
   against cfg), before anything of the model's size is allocated; dies with the message. */
void hf_check_weights(const char* dir, const ModelConfig* cfg);

/* With LoRA, hf_load_weights also reads dir's PEFT adapter (hf/peft.h) when it has one, and hf_save
   writes the base to model.safetensors and the adapters to the PEFT files next to it. */
/* Write dir/config.json and dir/model.safetensors (F32 or BF16), each atomically;
   creates dir. extra_meta: n key/value pairs for the safetensors __metadata__. */
void hf_save(const Model* m, const char* dir, StDtype dtype);
/* hf_save's dir/config.json alone (m's architecture; torch_dtype from dtype); creates dir */
void hf_save_config(const Model* m, const char* dir, StDtype dtype);

/* A 64-bit fingerprint of dir's weights: every tensor's name, dtype, shape and bytes, in any sharding
   (the same tensors in other files give the same value). Reads every weight byte once (page cache speed);
   names a LoRA adapter's base so a wrong or changed base is caught at load and merge. */
uint64_t hf_weights_fingerprint(const char* dir);

#endif

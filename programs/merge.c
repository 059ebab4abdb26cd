/* build/merge BASE ADAPTER OUT: a LoRA adapter folded into its base model.
   BASE is a Hugging Face checkpoint directory, ADAPTER a PEFT LoRA directory
   (adapter_config.json + adapter_model.safetensors, as repoc's LoRA runs save
   in every checkpoint). OUT gets a plain Hugging Face checkpoint (config.json
   and model.safetensors, F32 or --bf16) whose every adapted projection is
   W + (alpha / r) B A; RePo tensors saved with the adapter (PEFT's
   modules_to_save) replace the base's. A run's own checkpoint directory holds
   both halves, so `build/merge CKPT CKPT OUT` merges it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "model/hf_checkpoint.h"
#include "model/hf_config.h"
#include "model/peft.h"

int main(int argc, char** argv) {
    bool bf16 = argc == 5 && !strcmp(argv[4], "--bf16");
    if (argc != 4 && !bf16) {
        fprintf(stderr, "usage: build/merge BASE ADAPTER OUT [--bf16]\n"
                        "  writes OUT, a Hugging Face checkpoint with the LoRA adapter of ADAPTER folded into BASE\n");
        return 2;
    }
    const char *base = argv[1], *adapter = argv[2], *out = argv[3];
    ModelConfig cfg;
    hf_config_read(base, &cfg);
    CHECK(peft_read_config(adapter, &cfg), "%s: no adapter_config.json (is it a PEFT LoRA directory?)", adapter);
    hf_check_weights(base, &cfg);
    Model m;
    const char* no_grads[] = {"*"};
    model_build(&m, &cfg, 1, 1, no_grads, 1, false);
    hf_load_weights(&m, base, 0, false);   /* the adapter of BASE, if any, is replaced next */
    size_t n = peft_load(&m, adapter, NULL);
    peft_merge(&m);
    m.cfg.lora_rank = 0;   /* the merged model is a plain one: hf_save writes no adapter files */
    hf_save(&m, out, bf16 ? ST_BF16 : ST_F32);
    printf("merged %zu adapter tensors of %s (rank %zu, alpha %g) into %s: wrote %s\n", n, adapter, cfg.lora_rank,
           cfg.lora_alpha, base, out);
    model_free(&m);
    return 0;
}

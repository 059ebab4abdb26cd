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
#include "programs/cli.h"

int main(int argc, char** argv) {
    cli_init("merge");
    const char* paths[3];   /* BASE ADAPTER OUT */
    size_t n_paths = 0;
    bool bf16 = false;
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: build/merge BASE ADAPTER OUT [--bf16]\n"
                   "  writes OUT, a Hugging Face checkpoint with the LoRA adapter of ADAPTER folded into BASE\n"
                   "  --bf16   write the weights as BF16 (default F32)\n");
            return 0;
        }
        if (!strcmp(a, "--bf16")) bf16 = true;
        else if (a[0] == '-') cli_bad_option("unknown option '%s'", a);   /* never a path: OUT could be "--bf16" */
        else if (n_paths == 3) cli_bad_option("unexpected argument '%s' (expected BASE ADAPTER OUT)", a);
        else paths[n_paths++] = a;
    }
    if (n_paths < 3) cli_bad_option("expected BASE ADAPTER OUT, got %zu path%s", n_paths, n_paths == 1 ? "" : "s");
    const char *base = paths[0], *adapter = paths[1], *out = paths[2];
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

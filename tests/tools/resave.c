/* build/tools/resave SRC DST [f32|bf16]: load a Hugging Face checkpoint with
   repoc's loader and write it with repoc's saver (F32 by default). Used to check
   that PyTorch reads what repoc writes (tools/torch_load_check.py). */
#include <stdio.h>
#include <string.h>

#include "hf/hf_checkpoint.h"
#include "hf/hf_config.h"

int main(int argc, char** argv) {
    if (argc < 3 || !strcmp(argv[1], "--help")) {
        printf("usage: resave SRC DST [f32|bf16]\n");
        return argc < 3 && !(argc == 2 && !strcmp(argv[1], "--help")) ? 2 : 0;
    }
    ModelConfig cfg;
    hf_config_read(argv[1], &cfg);
    Model m;
    model_build(&m, &cfg, 1, 1, (const char*[]){"*"}, 1, false);
    hf_load_weights(&m, argv[1], 0, false);
    hf_save(&m, argv[2], argc > 3 && !strcmp(argv[3], "bf16") ? ST_BF16 : ST_F32);
    model_free(&m);
    return 0;
}

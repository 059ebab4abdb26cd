/* libFuzzer harness for the Hugging Face config.json parser (hf/hf_config.c).
   Each input is a config.json text. A rejected input must come with a message
   naming the file; an accepted one must give a ModelConfig whose layer modes
   are valid and whose sizes are those the parser promises (positive, divisible
   heads, at most MAX_LAYERS layers). Build and run: make fuzz-config. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hf/hf_config.h"

#define FUZZ_ASSERT(c) \
    do { \
        if (!(c)) __builtin_trap(); \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ModelConfig cfg;
    char err[512];
    err[0] = 0;
    int rc = hf_config_parse((const char*)data, size, "fuzz/config.json", &cfg, err, sizeof(err));
    if (rc) {
        FUZZ_ASSERT(strncmp(err, "fuzz/config.json", 16) == 0);
        return 0;
    }
    FUZZ_ASSERT(cfg.L >= 1 && cfg.L <= MAX_LAYERS && cfg.V >= 1 && cfg.D >= 1 && cfg.F >= 1);
    FUZZ_ASSERT(cfg.H >= 1 && cfg.KVH >= 1 && cfg.D % cfg.H == 0 && cfg.H % cfg.KVH == 0);
    for (size_t l = 0; l < cfg.L; l++)
        FUZZ_ASSERT(cfg.pos[l] == POS_ROPE || cfg.pos[l] == POS_REPO || cfg.pos[l] == POS_NOPE);
    char* text = hf_config_write(&cfg, "float32"); /* what parses must also print */
    FUZZ_ASSERT(text != NULL);
    ModelConfig back;
    FUZZ_ASSERT(hf_config_parse(text, strlen(text), "fuzz/config.json", &back, err, sizeof(err)) == 0 || cfg.L == 0);
    free(text);
    return 0;
}

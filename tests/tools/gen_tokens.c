/* build/tools/gen_tokens OUT N VOCAB SEED [FORMAT]: write N tokens for tests, as
   raw little-endian .u16 (default), .u32, or an llm.c shard (FORMAT bin16 | bin32).
   The stream follows a seeded random walk (the next id is near the last), so a
   model can learn something from it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/rng.h"

int main(int argc, char** argv) {
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: gen_tokens OUT N VOCAB SEED [u16|u32|bin16|bin32]\n");
        return 0;
    }
    if (argc < 5) {
        fprintf(stderr, "usage: gen_tokens OUT N VOCAB SEED [u16|u32|bin16|bin32]\n");
        return 2;
    }
    const char* out = argv[1];
    size_t n = strtoull(argv[2], NULL, 10), vocab = strtoull(argv[3], NULL, 10);
    const char* fmt = argc > 5 ? argv[5] : "u16";
    Rng rng;
    rng_seed(&rng, strtoull(argv[4], NULL, 10));
    int wide = !strcmp(fmt, "u32") || !strcmp(fmt, "bin32");
    FILE* fp = fopenCheck(out, "wb");
    if (!strncmp(fmt, "bin", 3)) { /* llm.c header: 256 int32, magic, version, count */
        int32_t header[256] = {0};
        header[0] = wide ? 20240801 : 20240520;
        header[1] = wide ? 7 : 1;
        header[2] = (int32_t)n;
        fwriteCheck(header, sizeof(int32_t), 256, fp, out);
    }
    uint64_t tok = 0;
    for (size_t i = 0; i < n; i++) {
        tok = (tok + vocab + rng_below(&rng, 7) - 3) % vocab;
        if (wide) {
            uint32_t v = (uint32_t)tok;
            fwriteCheck(&v, 4, 1, fp, out);
        } else {
            uint16_t v = (uint16_t)tok;
            fwriteCheck(&v, 2, 1, fp, out);
        }
    }
    fcloseCheck(fp, out);
    return 0;
}

/* build/tools/adapter_meta ADAPTER --stamp BASE | --strip: rewrite a LoRA adapter directory's files for the
   merge tests.
     --stamp BASE  load BASE and the adapter and save the adapter again through peft_save with BASE's
                   hf_weights_fingerprint and absolute path, as a trainer that knows its base does;
     --strip       keep only PEFT's own "format": "pt" in adapter_model.safetensors' __metadata__, as an
                   adapter saved by PEFT has. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/safetensors.h"
#include "hf/ckpt_weights.h"
#include "hf/hf_fingerprint.h"
#include "hf/hf_config.h"
#include "hf/peft.h"

static void stamp(const char* adapter, const char* base) {
    ModelConfig cfg;
    hf_config_read(base, &cfg);
    CHECK(peft_read_config(adapter, &cfg), "%s: no adapter_config.json", adapter);
    Model m;
    model_build(&m, &cfg, 1, 1, (const char*[]){"*"}, 1, false);
    ckpt_weights_load_dirs(&m, base, base, NULL, false);
    peft_load(&m, adapter, NULL);
    char abs[PATH_MAX];
    CHECK(realpath(base, abs), "realpath '%s'", base);
    LoraBase named = {.fingerprint = hf_weights_fingerprint(base)};
    snprintf(named.path, sizeof(named.path), "%s", abs);
    peft_save(&m, adapter, false, &named);
    model_free(&m);
}

static void strip(const char* adapter) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/adapter_model.safetensors", adapter);
    StFile f;
    st_open_or_die(&f, path);
    StWriteTensor* w = callocCheck(f.n_tensors, sizeof(StWriteTensor));
    for (size_t j = 0; j < f.n_tensors; j++) {
        const StTensor* t = &f.tensors[j];
        real* data = mallocCheck(t->numel * sizeof(real));
        st_read_real(&f, t, data);
        w[j] = (StWriteTensor){.name = t->name, .dtype = ST_F32, .ndim = t->ndim, .data = data};
        memcpy(w[j].shape, t->shape, sizeof(t->shape));
    }
    const char* keys[] = {"format"};
    const char* values[] = {"pt"};
    st_write(path, w, f.n_tensors, keys, values, 1);
    for (size_t j = 0; j < f.n_tensors; j++) free((void*)w[j].data);
    free(w);
    st_close(&f);
}

int main(int argc, char** argv) {
    if (argc == 4 && !strcmp(argv[2], "--stamp")) stamp(argv[1], argv[3]);
    else if (argc == 3 && !strcmp(argv[2], "--strip")) strip(argv[1]);
    else {
        fprintf(stderr, "usage: adapter_meta ADAPTER --stamp BASE | --strip\n");
        return 2;
    }
    return 0;
}

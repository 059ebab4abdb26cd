/* A checkpoint directory's weights in and out, its LoRA base named or held (ckpt_weights.h): plain Hugging
   Face weights (hf/hf_checkpoint.h), then the PEFT adapter (hf/peft.h). */
#include "hf/ckpt_weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "hf/hf_checkpoint.h"
#include "hf/hf_fingerprint.h"
#include "hf/peft.h"

/* dir's adapter files: both or neither (dies naming the missing one); true when both */
static bool has_adapter(const char* dir) {
    char c[4200], w[4200];
    snprintf(c, sizeof(c), "%s/adapter_config.json", dir);
    snprintf(w, sizeof(w), "%s/adapter_model.safetensors", dir);
    bool has_c = path_exists(c), has_w = path_exists(w);
    CHECK(has_c || !has_w, "%s: a LoRA adapter without its adapter_config.json (rank, alpha, targets)", w);
    CHECK(has_w || !has_c,
          "%s: a LoRA checkpoint (it has adapter_config.json) without adapter_model.safetensors, "
          "the adapter's weights: the checkpoint is incomplete",
          dir);
    return has_c;
}

/* the base an adapter-only checkpoint names; dies when it names none */
static void named_base(const char* dir, LoraBase* base) {
    CHECK(has_adapter(dir) && peft_read_lora_base(dir, base),
          "%s: no model weights (model.safetensors) and no base "
          "named by a LoRA adapter (__metadata__ '%s' of adapter_model.safetensors)",
          dir, PEFT_META_BASE_PATH);
}

const char* ckpt_weights_dir(const char* dir, char* out, size_t len) {
    if (hf_has_weights(dir) || !has_adapter(dir)) return dir; /* no weights, no adapter: hf_checkpoint's message */
    LoraBase base;
    named_base(dir, &base);
    snprintf(out, len, "%s", base.path);
    return out;
}

/* the base an adapter-only checkpoint names, its weights' fingerprint checked */
static void check_base(const char* dir, const LoraBase* base) {
    CHECK(is_dir(base->path),
          "%s: its LoRA base '%s' (%s in adapter_model.safetensors) does not exist: the adapter "
          "holds only the low-rank update, so it needs that base; restore it there",
          dir, base->path, PEFT_META_BASE_PATH);
    uint64_t fp = hf_weights_fingerprint(base->path);
    CHECK(fp == base->fingerprint,
          "%s: its LoRA base '%s' has changed since the adapter was trained (weights "
          "fingerprint %016llx, the adapter records %016llx): the adapter of '%s' belongs to the base's earlier "
          "weights; restore them in '%s'",
          dir, base->path, (unsigned long long)fp, (unsigned long long)base->fingerprint, dir, base->path);
}

size_t ckpt_weights_load_dirs(Model* m, const char* dir, const char* adapter_dir, const ModelInit* init, bool verbose) {
    char* loaded = callocCheck(m->tensors.n, 1);
    hf_read_weights(m, dir, loaded);
    char adapter[4096];
    snprintf(adapter, sizeof(adapter), "%s/adapter_model.safetensors", adapter_dir ? adapter_dir : "");
    if (m->cfg.lora_rank && adapter_dir && path_exists(adapter)) peft_load(m, adapter_dir, loaded);
    size_t n_fresh = hf_init_missing(m, dir, loaded, init, verbose);
    free(loaded);
    return n_fresh;
}

size_t ckpt_weights_load(Model* m, const char* dir, const ModelInit* init, bool verbose, LoraBase* base) {
    bool adapter = has_adapter(dir);
    LoraBase named;
    memset(&named, 0, sizeof(named));
    const char* weights = dir;
    if (!hf_has_weights(dir) && adapter) {
        named_base(dir, &named);
        check_base(dir, &named);
        weights = named.path;
        if (verbose)
            printf("LoRA checkpoint %s: its base %s (weights fingerprint %016llx, checked)\n", dir, named.path,
                   (unsigned long long)named.fingerprint);
    }
    size_t fresh = ckpt_weights_load_dirs(m, weights, m->cfg.lora_rank ? dir : NULL, init, verbose);
    if (adapter && !m->cfg.lora_rank) {
        size_t n = peft_merge_file(m, dir);
        printf("note: %s holds a LoRA adapter and this model has none (no model.lora): folded its %zu adapted "
               "projections and RePo weights into the base weights (W + (alpha / r) B A), so the model is the "
               "adapted one\n",
               dir, n);
    }
    if (!base) return fresh;
    if (named.path[0] || (adapter && peft_read_lora_base(dir, &named))) { /* a base copy still names the base */
        *base = named;
        return fresh;
    }
    CHECK(realpath(dir, base->path), "%s: cannot resolve the path", dir);
    base->fingerprint = hf_weights_fingerprint(dir);
    return fresh;
}

void ckpt_weights_save(const Model* m, const char* dir, StDtype dtype, const LoraBase* base, bool adapter_only) {
    if (adapter_only) hf_save_config(m, dir, ST_F32); /* the model's config.json; the base is named, not copied */
    else hf_save(m, dir, dtype);                      /* creates dir */
    if (m->cfg.lora_rank) peft_save(m, dir, adapter_only, base); /* adapter only: frozen RePo weights too */
}

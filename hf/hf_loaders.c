/* Which loaders read a saved position layout, and config.json's names for it (hf/hf_loaders.h). */
#include "hf/hf_loaders.h"

#include <stdio.h>

int hf_release_mode(const ModelConfig* c) {
    int mode = POS_ROPE;
    for (size_t l = 0; l < c->L; l++) {
        if (c->pos[l] == POS_ROPE) continue;
        if (mode != POS_ROPE && mode != (int)c->pos[l]) return -1;
        mode = (int)c->pos[l];
    }
    return mode;
}

bool hf_released_loader_reads(const ModelConfig* c, char* why, size_t len) {
    int mode = hf_release_mode(c);
    why[0] = 0;
    if (mode < 0)
        snprintf(why, len,
                 "the layout mixes RePo and NoPE layers, which pe_config cannot express (repoc_layer_positions "
                 "records it)");
    else if (c->block != BLOCK_OLMO2)
        snprintf(why, len, "the released RePo loader is OLMo-2 only; %s knows no RePo or NoPE layer",
                 block_style_arch(c->block));
    else if (mode == POS_REPO && c->KVH != c->H)
        snprintf(why, len,
                 "the released RePo loader's final_map has num_attention_heads (%zu) rows, repoc's one per kv "
                 "head (%zu)",
                 c->H, c->KVH);
    else if (c->yarn_factor > 1.0)
        snprintf(why, len,
                 "rope_scaling is YaRN, which the released RePo loader's legacy {type: linear|dynamic, "
                 "factor} rule refuses");
    return why[0] == 0;
}

bool hf_stock_names(const ModelConfig* c) {
    char why[256];
    return hf_release_mode(c) == POS_ROPE || (c->hf_released_names && hf_released_loader_reads(c, why, sizeof why));
}

void hf_model_names(const ModelConfig* c, char* type, size_t type_len, char* arch, size_t arch_len) {
    bool stock = hf_stock_names(c);
    snprintf(type, type_len, "%s%s", stock ? "" : HF_REPOC_TYPE_PREFIX, block_style_name(c->block));
    snprintf(arch, arch_len, "%s%s", stock ? "" : HF_REPOC_ARCH_PREFIX, block_style_arch(c->block));
}

int hf_config_release_note(const ModelConfig* c, char* note, size_t len) {
    note[0] = 0;
    char why[256], type[64], arch[64];
    bool released = hf_released_loader_reads(c, why, sizeof why);
    hf_model_names(c, type, sizeof type, arch, sizeof arch);
    if (hf_release_mode(c) == POS_ROPE) {
        if (c->yarn_factor > 1.0 && c->block == BLOCK_OLMO2)
            snprintf(note, len,
                     "rope_scaling is YaRN: Olmo2Config versions that validate rope_scaling with the legacy "
                     "{type: linear|dynamic, factor} rule (the released RePo loader's included) refuse this config");
    } else if (hf_stock_names(c))
        snprintf(note, len,
                 "model_type %s with pe_config, for the released RePo loader (train.save_model_type "
                 "\"released\"): stock transformers' %s runs RoPE in every layer and drops the position weights",
                 type, arch);
    else
        snprintf(note, len,
                 "model_type %s: stock transformers refuses it, as it runs no RePo or NoPE layer; repoc reads it "
                 "(build/eval, build/generate); %s",
                 type,
                 released ? "train.save_model_type \"released\" writes model_type olmo2 for the released RePo loader"
                          : why);
    return note[0] != 0;
}

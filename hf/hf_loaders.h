/* Which loaders read a saved position layout, and the names config.json gives the model for it.

   Stock transformers builds the model that config.json's model_type names, and its classes run RoPE in
   every layer: a RePo or NoPE layer is unknown to them, its weights are dropped with a warning, and the
   outputs are another model's. So a layout with such layers is saved under names no transformers
   release knows, model_type "repoc_<type>" and architectures ["Repoc<Class>"]: AutoConfig and the Auto
   model classes refuse it ("does not recognize this architecture") instead of running something else,
   and repoc reads both spellings. The one exception is the layout the RePo paper's own loader reads (its
   transformers fork and vLLM Olmo2Model, docs/interop.md): asked for (train.save_model_type "released",
   or carried from a source saved that way), it keeps model_type "olmo2", and the save notes that stock
   transformers runs it as RoPE. */
#ifndef REPOC_HF_LOADERS_H
#define REPOC_HF_LOADERS_H

#include <stdbool.h>
#include <stddef.h>

#include "model/config.h"

/* the prefixes of the names that stock transformers refuses */
#define HF_REPOC_TYPE_PREFIX "repoc_"
#define HF_REPOC_ARCH_PREFIX "Repoc"

/* The one mode besides RoPE that the layout uses (POS_ROPE: every layer RoPE), or -1 when it mixes RePo and
   NoPE, which the released loader's single dynamic_pe_mode cannot express. */
int hf_release_mode(const ModelConfig* cfg);
/* Whether the RePo paper's loader reproduces cfg from the written config.json; when not, why ("" when it
   does): OLMo-2 only, one dynamic_pe_mode, one final_map row per head, no YaRN (its legacy rope rule). */
bool hf_released_loader_reads(const ModelConfig* cfg, char* why, size_t len);
/* Whether config.json gets the stock model_type and class: every layer RoPE, or the released loader's
   layout asked for (cfg->hf_released_names) */
bool hf_stock_names(const ModelConfig* cfg);
/* config.json's model_type and architectures[0] for cfg (stock, or with the repoc prefixes) */
void hf_model_names(const ModelConfig* cfg, char* type, size_t type_len, char* arch, size_t arch_len);
/* 1 and a one-line note when stock transformers or the released RePo loader will not reproduce cfg from
   the written config.json (what each does with it); 0 and "" when both do */
int hf_config_release_note(const ModelConfig* cfg, char* note, size_t len);

#endif

/* config.json reading and writing (docs/formats.md, "config.json"). */
#include "hf/hf_config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "hf/hf_config_gemma.h"
#include "hf/hf_config_mistral.h"
#include "hf/hf_config_keys.h"
#include "hf/hf_loaders.h"

/* every key of it is one of keys[0..n), else an error naming the first unknown one */
static int check_keys(const cJSON* rs, const char* const* keys, size_t n, const char* kind, const char* label,
                      char* err, size_t len) {
    const cJSON* it;
    cJSON_ArrayForEach(it, rs) {
        size_t k = 0;
        while (k < n && strcmp(it->string, keys[k])) k++;
        if (k == n) {
            char list[256] = "";
            for (size_t j = 2; j < n; j++)
                snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", j > 2 ? ", " : "", keys[j]);
            return set_err(err, len, "%s: rope_scaling.%s is not implemented (%s keys: %s)", label, it->string, kind,
                           list);
        }
    }
    return 0;
}

/* the keys of a llama3 rope_scaling; all four numbers are required, as transformers requires them */
static const char* const LLAMA3_KEYS[] = {
    "rope_type", "type", "factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"};

static int get_required(const cJSON* rs, const char* kind, const char* key, double* out, const char* label, char* err,
                        size_t len) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(rs, key);
    if (!v || cJSON_IsNull(v)) return set_err(err, len, "%s: %s rope_scaling needs '%s'", label, kind, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return set_err(err, len, "%s: rope_scaling.%s must be a number", label, key);
    *out = v->valuedouble;
    return 0;
}

static int parse_llama3(const cJSON* rs, ModelConfig* c, const char* label, char* err, size_t len) {
    if (check_keys(rs, LLAMA3_KEYS, sizeof(LLAMA3_KEYS) / sizeof(LLAMA3_KEYS[0]), "llama3", label, err, len) ||
        get_required(rs, "llama3", "factor", &c->llama3_factor, label, err, len) ||
        get_required(rs, "llama3", "low_freq_factor", &c->llama3_low_freq_factor, label, err, len) ||
        get_required(rs, "llama3", "high_freq_factor", &c->llama3_high_freq_factor, label, err, len) ||
        get_required(rs, "llama3", "original_max_position_embeddings", &c->llama3_orig_max, label, err, len))
        return 1;
    if (!(c->llama3_factor >= 1))
        return set_err(err, len, "%s: rope_scaling.factor %g must be >= 1", label, c->llama3_factor);
    if (!(c->llama3_low_freq_factor > 0))
        return set_err(err, len, "%s: rope_scaling.low_freq_factor %g must be > 0", label, c->llama3_low_freq_factor);
    if (!(c->llama3_high_freq_factor > c->llama3_low_freq_factor))
        return set_err(err, len, "%s: rope_scaling.high_freq_factor %g must be > low_freq_factor %g", label,
                       c->llama3_high_freq_factor, c->llama3_low_freq_factor);
    if (!(c->llama3_orig_max >= 1) || c->llama3_orig_max != floor(c->llama3_orig_max))
        return set_err(err, len, "%s: rope_scaling.original_max_position_embeddings must be a positive integer", label);
    c->llama3 = true;
    return 0;
}

/* the keys of a YaRN rope_scaling that repoc implements; any other (mscale, truncate, ...) changes the
   table in ways repoc does not compute, so it is refused */
static const char* const YARN_KEYS[] = {"rope_type", "type",      "factor",          "original_max_position_embeddings",
                                        "beta_fast", "beta_slow", "attention_factor"};

/* YaRN, llama3 or linear from rope_scaling; other scaling types (dynamic, longrope) are refused rather than
   ignored */
static int parse_rope_scaling(const cJSON* rs, ModelConfig* c, const char* label, char* err, size_t len) {
    if (!rs || cJSON_IsNull(rs)) return 0;
    if (!cJSON_IsObject(rs)) return set_err(err, len, "%s: 'rope_scaling' must be an object or null", label);
    const cJSON* type = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!type) type = cJSON_GetObjectItemCaseSensitive(rs, "type");
    if (!cJSON_IsString(type)) return set_err(err, len, "%s: rope_scaling needs a string 'rope_type'", label);
    if (!strcmp(type->valuestring, "default")) return 0;
    if (!strcmp(type->valuestring, "llama3")) return parse_llama3(rs, c, label, err, len);
    if (!strcmp(type->valuestring, "linear")) { /* Gemma-3's global layers: positions divided by the factor */
        static const char* const LINEAR_KEYS[] = {"rope_type", "type", "factor"};
        if (check_keys(rs, LINEAR_KEYS, 3, "linear", label, err, len) ||
            get_required(rs, "linear", "factor", &c->rope_linear_factor, label, err, len))
            return 1;
        if (!(c->rope_linear_factor >= 1))
            return set_err(err, len, "%s: rope_scaling.factor %g must be >= 1", label, c->rope_linear_factor);
        return 0;
    }
    if (strcmp(type->valuestring, "yarn") != 0)
        return set_err(err, len,
                       "%s: rope_scaling type '%s' is not implemented (repoc implements \"yarn\", \"llama3\" "
                       "and \"linear\")",
                       label, type->valuestring);
    if (check_keys(rs, YARN_KEYS, sizeof(YARN_KEYS) / sizeof(YARN_KEYS[0]), "YaRN", label, err, len)) return 1;
    c->yarn_factor = 0;
    c->yarn_orig_max = (double)c->max_position_embeddings;
    if (hf_get_real(rs, "factor", &c->yarn_factor, label, err, len) ||
        hf_get_real(rs, "original_max_position_embeddings", &c->yarn_orig_max, label, err, len) ||
        hf_get_real(rs, "beta_fast", &c->yarn_beta_fast, label, err, len) ||
        hf_get_real(rs, "beta_slow", &c->yarn_beta_slow, label, err, len) ||
        hf_get_real(rs, "attention_factor", &c->yarn_attention_factor, label, err, len))
        return 1;
    if (!(c->yarn_factor >= 1)) return set_err(err, len, "%s: rope_scaling.factor must be >= 1", label);
    return 0;
}

/* RePo's pe_config as the released loader (the RePo paper's transformers and vLLM Olmo2 code) reads it:
   the mode from "dynamic_pe_mode" (default "none"), the start layer from "dynmaic_pe_start_layer" (default 0)
   and the layer ids from "dynmaic_pe_layer_ids" (a comma list; empty or absent = every layer), keeping the ids
   >= the start layer; those layers get the mode, every other layer RoPE. The other spelling of each key is
   accepted only when it agrees with the value the released loader uses (its default when its key is absent). */
typedef struct {
    const char* read;
    const char* other;
} PeKey;
static const PeKey PE_MODE = {"dynamic_pe_mode", "dynmaic_pe_mode"};
static const PeKey PE_START = {"dynmaic_pe_start_layer", "dynamic_pe_start_layer"};
static const PeKey PE_IDS = {"dynmaic_pe_layer_ids", "dynamic_pe_layer_ids"};

/* the value under k.read (NULL when absent or null); the other spelling must print the same, where a missing
   read key counts as dflt (the released loader's default) */
static int pe_get(const cJSON* pe, PeKey k, const char* dflt, const cJSON** out, const char* label, char* err,
                  size_t len) {
    const cJSON* a = cJSON_GetObjectItemCaseSensitive(pe, k.read);
    const cJSON* b = cJSON_GetObjectItemCaseSensitive(pe, k.other);
    if (a && cJSON_IsNull(a)) a = NULL;
    if (b && cJSON_IsNull(b)) b = NULL;
    *out = a;
    if (!b) return 0;
    char* va = a ? cJSON_PrintUnformatted(a) : NULL;
    char* vb = cJSON_PrintUnformatted(b);
    CHECK(vb && (va || !a), "out of memory printing pe_config");
    int same = !strcmp(va ? va : dflt, vb);
    int rc = same
                 ? 0
                 : set_err(err, len,
                           "%s: pe_config.%s = %s disagrees with pe_config.%s = %s (%s); the released "
                           "RePo loader reads only %s: give both the same value",
                           label, k.other, vb, k.read, va ? va : dflt, va ? "given" : "absent, so its default", k.read);
    free(va);
    free(vb);
    return rc;
}

static int parse_pe_config(const cJSON* pe, ModelConfig* c, const char* label, char* err, size_t len) {
    if (!pe || cJSON_IsNull(pe)) return 0;
    if (!cJSON_IsObject(pe)) return set_err(err, len, "%s: 'pe_config' must be an object", label);
    const cJSON *mode, *sl, *ids;
    if (pe_get(pe, PE_MODE, "\"none\"", &mode, label, err, len) || pe_get(pe, PE_START, "0", &sl, label, err, len) ||
        pe_get(pe, PE_IDS, "\"\"", &ids, label, err, len))
        return 1;
    if (!mode) return 0;
    if (!cJSON_IsString(mode)) return set_err(err, len, "%s: pe_config.dynamic_pe_mode must be a string", label);
    PosMode pm;
    if (!strcmp(mode->valuestring, "none")) return 0;
    else if (!strcmp(mode->valuestring, "swigluex_multihead")) pm = POS_REPO;
    else if (!strcmp(mode->valuestring, "nope")) pm = POS_NOPE;
    else
        return set_err(err, len, "%s: pe_config.dynamic_pe_mode '%s' is not supported (swigluex_multihead, nope, none)",
                       label, mode->valuestring);
    size_t start = 0;
    if (sl) {
        if (!cJSON_IsNumber(sl) || sl->valuedouble < 0 || sl->valuedouble != floor(sl->valuedouble) ||
            sl->valuedouble >= (double)c->L)
            return set_err(err, len, "%s: pe_config.dynmaic_pe_start_layer must be an integer in [0, %zu)", label,
                           c->L);
        start = (size_t)sl->valuedouble;
    }
    if (ids && !cJSON_IsString(ids))
        return set_err(err, len, "%s: pe_config.dynmaic_pe_layer_ids must be a comma-separated string", label);
    if (!ids || !ids->valuestring[0]) { /* every layer from the start layer */
        for (size_t l = start; l < c->L; l++) c->pos[l] = pm;
        return 0;
    }
    const char* s = ids->valuestring; /* "3,4,5" */
    while (*s) {
        char* end;
        long id = strtol(s, &end, 10);
        if (end == s || id < 0 || (size_t)id >= c->L)
            return set_err(err, len, "%s: pe_config.dynmaic_pe_layer_ids '%s': bad layer id (n_layers %zu)", label,
                           ids->valuestring, c->L);
        if ((size_t)id >= start) c->pos[id] = pm; /* the released loader drops ids below the start layer */
        s = end;
        while (*s == ',' || *s == ' ') s++;
    }
    return 0;
}

static int parse_layer_list(const cJSON* list, ModelConfig* c, const char* label, char* err, size_t len) {
    if (!list) return 0;
    if (!cJSON_IsArray(list) || (size_t)cJSON_GetArraySize(list) != c->L)
        return set_err(err, len, "%s: 'repoc_layer_positions' must be a list of %zu modes", label, c->L);
    size_t l = 0;
    const cJSON* it;
    cJSON_ArrayForEach(it, list) {
        if (!cJSON_IsString(it) || !pos_mode_parse(it->valuestring, &c->pos[l]))
            return set_err(err, len, "%s: repoc_layer_positions[%zu] must be rope, repo or nope", label, l);
        l++;
    }
    return 0;
}

/* Keys a Hugging Face config carries that do not change what repoc computes (each is checked below where it
   could): kept verbatim in c->hf_carried and written back on save, so token ids survive a round trip. */
static const char* const CARRIED_KEYS[] = {"bos_token_id", "eos_token_id",        "pad_token_id", "initializer_range",
                                           "use_cache",    "attention_dropout",   "mlp_bias",     "pretraining_tp",
                                           "head_dim",     "transformers_version"};

double hf_carried_eos(const ModelConfig* cfg) {
    if (!cfg->hf_carried[0]) return -1;
    cJSON* carried = cJSON_Parse(cfg->hf_carried);
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(carried, "eos_token_id");
    if (cJSON_IsArray(v)) v = cJSON_GetArrayItem(v, 0);
    double id = cJSON_IsNumber(v) ? v->valuedouble : -1;
    cJSON_Delete(carried);
    return id;
}

static int carry_keys(const cJSON* root, ModelConfig* c, const char* label, char* err, size_t len) {
    cJSON* keep = cJSON_CreateObject();
    CHECK(keep, "out of memory");
    for (size_t k = 0; k < sizeof(CARRIED_KEYS) / sizeof(CARRIED_KEYS[0]); k++) {
        const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, CARRIED_KEYS[k]);
        if (v) cJSON_AddItemToObject(keep, CARRIED_KEYS[k], cJSON_Duplicate(v, 1));
    }
    char* text = cJSON_PrintUnformatted(keep);
    cJSON_Delete(keep);
    CHECK(text, "out of memory");
    size_t n = strlen(text);
    int rc = n < sizeof(c->hf_carried) ? 0
                                       : set_err(err, len,
                                                 "%s: the token ids and other carried keys (%s) take "
                                                 "%zu bytes, more than %d",
                                                 label, "bos/eos/pad_token_id, ...", n, HF_CARRIED_LEN - 1);
    if (!rc) snprintf(c->hf_carried, sizeof(c->hf_carried), "%s", strcmp(text, "{}") ? text : "");
    free(text);
    return rc;
}

/* what repoc does not compute is refused at config time, naming the key, instead of training something else.
   Biases: Qwen3 reads attention_bias (q, k, v, o); Qwen2's q, k, v always have them and it reads no key. */
static int check_unsupported(const cJSON* root, BlockStyle block, const char* label, char* err, size_t len) {
    const cJSON* act = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
    if (block == BLOCK_GEMMA3) act = NULL; /* Gemma-3 reads hidden_activation (hf_gemma3_parse) */
    if (act && !(cJSON_IsString(act) && !strcmp(act->valuestring, "silu")))
        return set_err(err, len, "%s: hidden_act %s is not supported: repoc's MLP is SwiGLU, hidden_act \"silu\"",
                       label, cJSON_IsString(act) ? act->valuestring : "(not a string)");
    const char* bias[] = {"mlp_bias", "attention_bias"};
    const BlockTraits* t = &BLOCK_FAMILIES[block].traits;
    for (size_t k = 0; k < (t->qkv_bias || t->attention_bias ? 1u : 2u); k++) {
        const cJSON* b = cJSON_GetObjectItemCaseSensitive(root, bias[k]);
        if (b && !cJSON_IsFalse(b) && !cJSON_IsNull(b))
            return set_err(err, len, "%s: %s must be false: %s", label, bias[k],
                           k ? "repoc's OLMo-2 and Llama attention has no biases (Qwen2's and Qwen3's has)"
                             : "repoc's MLP projections have no biases");
    }
    bool sliding = false;
    if (block >= BLOCK_QWEN2 && hf_get_bool(root, "use_sliding_window", &sliding, label, err, len)) return 1;
    if (sliding)
        return set_err(err, len,
                       "%s: use_sliding_window true is not supported: repoc's Qwen attention sees every earlier "
                       "token (the released small Qwen models have it false)",
                       label);
    const cJSON* drop = cJSON_GetObjectItemCaseSensitive(root, "attention_dropout");
    if (drop && !(cJSON_IsNumber(drop) && drop->valuedouble == 0))
        return set_err(err, len, "%s: attention_dropout must be 0: repoc trains without dropout", label);
    return 0;
}

/* Qwen2/3, Gemma-3: transformers builds nn.Embedding(vocab_size, hidden_size, padding_idx = pad_token_id), so
   the pad row gets no gradient from the input lookup; repoc does the same (docs/interop.md). Read after
   vocab_size; OLMo-2 and Llama keep every row's gradient (the key is only carried). Absent, Gemma3TextConfig's
   default is 0; null is no padding_idx. */
static int parse_pad_id(const cJSON* root, ModelConfig* c, const char* label, char* err, size_t len) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, "pad_token_id");
    c->pad_id = c->block == BLOCK_GEMMA3 && !v ? 0 : -1;
    if (!cfg_traits(c)->pad_idx || !v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble >= (double)c->V)
        return set_err(err, len, "%s: pad_token_id must be null or a token id in [0, vocab_size %zu)", label, c->V);
    c->pad_id = (long)v->valuedouble;
    return 0;
}

/* The family, as transformers' Auto classes choose it: by model_type (AutoConfig's key; the model class
   follows from the config class), architectures[0] only where model_type is absent; the two disagreeing is
   refused rather than one of them silently followed. */
/* name without prefix when it starts with it (repoc's names for layouts stock transformers cannot run,
   hf/hf_loaders.h), else name; *had says which */
static const char* unprefixed(const char* name, const char* prefix, bool* had) {
    *had = !strncmp(name, prefix, strlen(prefix));
    return *had ? name + strlen(prefix) : name;
}

static int parse_block(const cJSON* root, ModelConfig* c, const char* label, char* err, size_t len) {
    const cJSON* arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON* a0 = cJSON_IsArray(arch) ? cJSON_GetArrayItem(arch, 0) : NULL;
    const cJSON* type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (type && !cJSON_IsString(type)) return set_err(err, len, "%s: 'model_type' must be a string", label);
    if (!type && !cJSON_IsString(a0))
        return set_err(err, len, "%s: missing 'model_type' (and 'architectures', a list of class names)", label);
    if ((type && !strcmp(type->valuestring, "gemma3")) ||
        (cJSON_IsString(a0) && !strcmp(a0->valuestring, "Gemma3ForConditionalGeneration")))
        return set_err(err, len,
                       "%s: Gemma3ForConditionalGeneration is the image-text model (model_type gemma3): repoc reads "
                       "the text-only Gemma3ForCausalLM (model_type gemma3_text)",
                       label);
    bool type_repoc = false, arch_repoc = false;
    const char* type_name = type ? unprefixed(type->valuestring, HF_REPOC_TYPE_PREFIX, &type_repoc) : NULL;
    const char* arch_name = cJSON_IsString(a0) ? unprefixed(a0->valuestring, HF_REPOC_ARCH_PREFIX, &arch_repoc) : NULL;
    if (type_name && arch_name && type_repoc != arch_repoc)
        return set_err(err, len,
                       "%s: model_type '%s' and architectures[0] '%s' disagree on the repoc prefix (repoc writes both "
                       "with it, or neither): make them agree",
                       label, type->valuestring, a0->valuestring);
    /* stock names with RePo or NoPE layers (checked when the layout is read): kept when saved again, where the
       released loader reads the layout */
    c->hf_released_names = !(type_name ? type_repoc : arch_repoc);
    int by_type = BLOCK_OLMO2, by_arch = BLOCK_OLMO2;
    while (type_name && by_type < BLOCK_N_STYLES && strcmp(type_name, block_style_name((BlockStyle)by_type))) by_type++;
    while (arch_name && by_arch < BLOCK_N_STYLES && strcmp(arch_name, block_style_arch((BlockStyle)by_arch))) by_arch++;
    if (type && by_type == BLOCK_N_STYLES)
        return set_err(err, len,
                       "%s: model_type '%s' is not supported (olmo2, llama, qwen2, qwen3, gemma3_text, mistral)", label,
                       type->valuestring);
    if (!type && by_arch == BLOCK_N_STYLES)
        return set_err(err, len,
                       "%s: architectures[0] '%s' is not supported (Olmo2ForCausalLM, LlamaForCausalLM, "
                       "Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma3ForCausalLM, MistralForCausalLM)",
                       label, a0->valuestring);
    if (type && cJSON_IsString(a0) && by_arch != by_type)
        return set_err(err, len,
                       "%s: model_type '%s' and architectures[0] '%s' name different models (transformers builds "
                       "the model of model_type, %s): make them agree",
                       label, type->valuestring, a0->valuestring, block_style_arch((BlockStyle)by_type));
    c->block = (BlockStyle)(type ? by_type : by_arch);
    return 0;
}

static int parse_root(const cJSON* root, ModelConfig* c, const char* label, char* err, size_t len) {
    if (!cJSON_IsObject(root)) return set_err(err, len, "%s: the top level must be a JSON object", label);
    if (parse_block(root, c, label, err, len)) return 1;
    if (c->block == BLOCK_GEMMA3) hf_gemma3_defaults(c);
    if (c->block == BLOCK_MISTRAL) hf_mistral_defaults(c);
    if (check_unsupported(root, c->block, label, err, len) || carry_keys(root, c, label, err, len)) return 1;
    /* transformers' default when the key is absent: Olmo2Config 1e-5, LlamaConfig, Qwen2Config, Qwen3Config 1e-6 */
    c->norm_eps = c->block == BLOCK_OLMO2 ? 1e-5 : 1e-6;
    if (hf_get_size(root, "vocab_size", &c->V, 1, label, err, len) ||
        hf_get_size(root, "hidden_size", &c->D, 1, label, err, len) ||
        hf_get_size(root, "intermediate_size", &c->F, 1, label, err, len) ||
        hf_get_size(root, "num_hidden_layers", &c->L, 1, label, err, len) ||
        hf_get_size(root, "num_attention_heads", &c->H, 1, label, err, len))
        return 1;
    c->KVH = c->H;
    /* Qwen3Config's default head_dim is 128, Gemma3TextConfig's 256 */
    size_t head_dim = c->block == BLOCK_QWEN3 ? 128 : c->block == BLOCK_GEMMA3 ? 256 : 0;
    if (hf_get_size(root, "num_key_value_heads", &c->KVH, 0, label, err, len) ||
        hf_get_size(root, "max_position_embeddings", &c->max_position_embeddings, 0, label, err, len) ||
        hf_get_size(root, "head_dim", &head_dim, 0, label, err, len) ||
        hf_get_real(root, "rms_norm_eps", &c->norm_eps, label, err, len) ||
        hf_get_real(root, "rope_theta", &c->rope_theta, label, err, len) ||
        (cfg_traits(c)->attention_bias && hf_get_bool(root, "attention_bias", &c->attn_bias, label, err, len)) ||
        parse_pad_id(root, c, label, err, len))
        return 1;
    if (c->L > MAX_LAYERS) return set_err(err, len, "%s: num_hidden_layers %zu exceeds %d", label, c->L, MAX_LAYERS);
    if ((c->D % c->H && !head_dim) || c->H % c->KVH)
        return set_err(err, len, "%s: hidden_size %zu, num_attention_heads %zu, num_key_value_heads %zu do not divide",
                       label, c->D, c->H, c->KVH);
    if (head_dim && (c->D % c->H || head_dim != c->D / c->H)) {
        /* transformers' Llama, Qwen2 and Qwen3 read head_dim; OLMo-2 takes hidden_size / heads */
        if (c->block == BLOCK_OLMO2)
            return set_err(err, len, "%s: head_dim %zu != hidden_size/num_attention_heads is not supported for OLMo-2",
                           label, head_dim);
        if (head_dim % 2) return set_err(err, len, "%s: head_dim %zu must be even (rotary pairs)", label, head_dim);
        c->head_dim = head_dim;
    }
    const cJSON* tie = cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings");
    if (tie && !cJSON_IsBool(tie)) return set_err(err, len, "%s: 'tie_word_embeddings' must be true or false", label);
    if (tie || c->block != BLOCK_GEMMA3) c->tie_embeddings = cJSON_IsTrue(tie); /* Gemma-3's default: tied */
    for (size_t l = 0; l < c->L; l++) c->pos[l] = POS_ROPE;
    if (c->block == BLOCK_GEMMA3 && hf_gemma3_parse(root, c, label, err, len)) return 1;
    if (c->block == BLOCK_MISTRAL && hf_mistral_parse(root, c, label, err, len)) return 1;
    if (parse_rope_scaling(cJSON_GetObjectItemCaseSensitive(root, "rope_scaling"), c, label, err, len) ||
        parse_pe_config(cJSON_GetObjectItemCaseSensitive(root, "pe_config"), c, label, err, len) ||
        parse_layer_list(cJSON_GetObjectItemCaseSensitive(root, "repoc_layer_positions"), c, label, err, len))
        return 1;
    for (size_t l = 0; l < c->L; l++) /* Gemma-3: learned positions on the global layers only (docs/interop.md) */
        if (cfg_sliding(c, l) && c->pos[l] == POS_REPO)
            return set_err(err, len,
                           "%s: layer %zu is RePo but a sliding_attention layer: repoc learns positions on Gemma-3's "
                           "full_attention layers only (pe_config / repoc_layer_positions)",
                           label, l);
    /* stock names count as the released loader's only on a layout with RePo or NoPE layers */
    if (hf_release_mode(c) == POS_ROPE) c->hf_released_names = false;
    return 0;
}

int hf_config_parse(const char* json, size_t len, const char* label, ModelConfig* cfg, char* err, size_t err_len) {
    model_config_default(cfg);
    const char* end = NULL;
    cJSON* root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root) {
        size_t off = end && end >= json && end <= json + len ? (size_t)(end - json) : 0;
        return set_err(err, err_len, "%s: invalid JSON near byte %zu", label, off);
    }
    int rc = parse_root(root, cfg, label, err, err_len);
    cJSON_Delete(root);
    return rc;
}

void hf_config_read_file(const char* path, ModelConfig* cfg) {
    char err[512];
    size_t len;
    char* text = file_read_all_or_null(path, &len);
    if (!text) DIE("%s: cannot read the config.json: %s", path, strerror(errno));
    int rc = hf_config_parse(text, len, path, cfg, err, sizeof(err));
    free(text);
    if (rc) DIE("%s", err);
}

bool hf_config_torch_dtype_is_bf16(const char* dir) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/config.json", dir);
    cJSON* root = json_read_file(path);
    const cJSON* dtype = cJSON_GetObjectItemCaseSensitive(root, "torch_dtype");
    CHECK(!dtype || cJSON_IsString(dtype) || cJSON_IsNull(dtype), "%s: 'torch_dtype' must be a string", path);
    bool bf16 = cJSON_IsString(dtype) && !strcmp(dtype->valuestring, "bfloat16");
    cJSON_Delete(root);
    return bf16;
}

void hf_config_read(const char* dir, ModelConfig* cfg) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/config.json", dir);
    if (!path_exists(path))
        DIE("%s: cannot read the checkpoint's config.json (is '%s' a Hugging Face checkpoint "
            "directory?)",
            path, dir);
    hf_config_read_file(path, cfg);
}

/* YaRN in the form transformers' rope_config_validation accepts: rope_type, float factor, the original context,
   float betas; config.json's max_position_embeddings is original x factor (the writers keep it so) */
static void write_rope_scaling(cJSON* root, const ModelConfig* c) {
    if (c->llama3) { /* the form Llama-3.1/3.2 config.json files use */
        cJSON* rs = cJSON_AddObjectToObject(root, "rope_scaling");
        hf_add_float(rs, "factor", c->llama3_factor);
        hf_add_float(rs, "low_freq_factor", c->llama3_low_freq_factor);
        hf_add_float(rs, "high_freq_factor", c->llama3_high_freq_factor);
        cJSON_AddNumberToObject(rs, "original_max_position_embeddings", c->llama3_orig_max);
        cJSON_AddStringToObject(rs, "rope_type", "llama3");
        return;
    }
    if (c->rope_linear_factor > 1) {
        cJSON* rs = cJSON_AddObjectToObject(root, "rope_scaling");
        cJSON_AddStringToObject(rs, "rope_type", "linear");
        hf_add_float(rs, "factor", c->rope_linear_factor);
        return;
    }
    if (!(c->yarn_factor > 1.0)) {
        cJSON_AddNullToObject(root, "rope_scaling");
        return;
    }
    cJSON* rs = cJSON_AddObjectToObject(root, "rope_scaling");
    cJSON_AddStringToObject(rs, "rope_type", "yarn");
    hf_add_float(rs, "factor", c->yarn_factor);
    cJSON_AddNumberToObject(rs, "original_max_position_embeddings", c->yarn_orig_max);
    hf_add_float(rs, "beta_fast", c->yarn_beta_fast);
    hf_add_float(rs, "beta_slow", c->yarn_beta_slow);
    if (c->yarn_attention_factor > 0) hf_add_float(rs, "attention_factor", c->yarn_attention_factor);
}

/* pe_config as the released RePo loader reads it (parse_pe_config), both spellings of each key with the same
   value; none when the layout mixes RePo and NoPE (repoc_layer_positions alone then describes it) */
static void write_pe_config(cJSON* root, const ModelConfig* c) {
    int mode = hf_release_mode(c);
    if (mode < 0) return;
    char ids[4 * MAX_LAYERS] = "";
    long first = -1;
    for (size_t l = 0; l < c->L; l++) {
        if (c->pos[l] == POS_ROPE) continue;
        if (first < 0) first = (long)l;
        snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%zu", ids[0] ? "," : "", l);
    }
    cJSON* pe = cJSON_AddObjectToObject(root, "pe_config");
    cJSON_AddStringToObject(pe, "dynamic_pe_mode",
                            mode == POS_REPO ? "swigluex_multihead" : (mode == POS_NOPE ? "nope" : "none"));
    cJSON_AddNumberToObject(pe, "dynamic_pe_start_layer", first >= 0 ? (double)first : 0);
    cJSON_AddNumberToObject(pe, "dynmaic_pe_start_layer", first >= 0 ? (double)first : 0);
    cJSON_AddStringToObject(pe, "dynamic_pe_layer_ids", ids);
    cJSON_AddStringToObject(pe, "dynmaic_pe_layer_ids", ids);
}

static void write_carried(cJSON* root, const ModelConfig* c) {
    if (!c->hf_carried[0]) return;
    cJSON* keep = cJSON_Parse(c->hf_carried);
    CHECK(cJSON_IsObject(keep), "hf_carried is not a JSON object: %s", c->hf_carried);
    const cJSON* it;
    cJSON_ArrayForEach(it, keep) if (!cJSON_GetObjectItemCaseSensitive(root, it->string))
        cJSON_AddItemToObject(root, it->string, cJSON_Duplicate(it, 1));
    cJSON_Delete(keep);
}

char* hf_config_write(const ModelConfig* c, const char* torch_dtype) {
    cJSON* root = cJSON_CreateObject();
    char type[64], arch_name[64]; /* repoc's own where stock transformers would run other positions */
    hf_model_names(c, type, sizeof type, arch_name, sizeof arch_name);
    cJSON* arch = cJSON_AddArrayToObject(root, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString(arch_name));
    cJSON_AddStringToObject(root, "model_type", type);
    cJSON_AddNumberToObject(root, "vocab_size", (double)c->V);
    cJSON_AddNumberToObject(root, "hidden_size", (double)c->D);
    cJSON_AddNumberToObject(root, "intermediate_size", (double)c->F);
    cJSON_AddNumberToObject(root, "num_hidden_layers", (double)c->L);
    cJSON_AddNumberToObject(root, "num_attention_heads", (double)c->H);
    cJSON_AddNumberToObject(root, "num_key_value_heads", (double)c->KVH);
    if (c->head_dim || c->block >= BLOCK_QWEN3) /* Qwen3Config's default is 128, Gemma-3's 256, not hidden / heads */
        cJSON_AddNumberToObject(root, "head_dim", (double)cfg_hd(c));
    cJSON_AddNumberToObject(root, "rms_norm_eps", c->norm_eps);
    cJSON_AddNumberToObject(root, "rope_theta", c->rope_theta);
    write_rope_scaling(root, c);
    cJSON_AddBoolToObject(root, "tie_word_embeddings", c->tie_embeddings);
    cJSON_AddNumberToObject(root, "max_position_embeddings", (double)c->max_position_embeddings);
    if (c->block == BLOCK_GEMMA3) hf_gemma3_write(root, c);
    else cJSON_AddStringToObject(root, "hidden_act", "silu");
    if (c->block == BLOCK_MISTRAL) hf_mistral_write(root, c);
    if (c->block != BLOCK_QWEN2) cJSON_AddBoolToObject(root, "attention_bias", c->attn_bias);
    if (c->block == BLOCK_QWEN2 || c->block == BLOCK_QWEN3) cJSON_AddBoolToObject(root, "use_sliding_window", false);
    if (c->pad_id >= 0) /* Qwen's and Gemma-3's padding_idx */
        cJSON_AddNumberToObject(root, "pad_token_id", (double)c->pad_id);
    cJSON_AddStringToObject(root, "torch_dtype", torch_dtype);
    write_carried(root, c);
    write_pe_config(root, c);
    cJSON* list = cJSON_AddArrayToObject(root, "repoc_layer_positions");
    for (size_t l = 0; l < c->L; l++) cJSON_AddItemToArray(list, cJSON_CreateString(pos_mode_name(c->pos[l])));
    cJSON_AddNumberToObject(root, "repoc_format_version", REPOC_CONFIG_FORMAT_VERSION);
    char* text = cJSON_Print(root);
    cJSON_Delete(root);
    CHECK(text, "out of memory printing config.json");
    return text;
}

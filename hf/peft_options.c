/* adapter_config.json's keys against PEFT's PeftConfig and LoraConfig (peft_check_options, hf/peft.h).
   repoc computes exactly y = W x + s B A x on the wrapped nn.Linear projections, with A, B as stored, and
   merges W + s B A (s = alpha / r, or alpha / sqrt(r) with use_rslora). A PEFT option is one of:
     read     peft_read_config reads and checks it (r, lora_alpha, use_rslora, target_modules, ...);
     free     bookkeeping, or a training-time or initialisation setting that leaves the stored B A and the
              base weights as they are (task_type, inference_mode, runtime_config, qalora_group_size, ...);
     false    changes the math when true: only false (or null) is accepted;
     empty    changes the math when set: only null or an empty list, object or string is accepted.
   init_lora_weights is "free" for the initialisations that leave W alone (true, false, "gaussian", "eva",
   "orthogonal"); the others (PiSSA, OLoRA, CorDA, LoftQ, LoRA-GA) subtract the initial B A from W or
   quantise it, so the adapter belongs to a modified base repoc does not have, and MiCA is a variant.
   A key PEFT does not define is refused: what it changes cannot be known. */
#include <cjson/cJSON.h>
#include <string.h>

#include "common/check.h"
#include "common/utf8.h"
#include "hf/peft.h"

typedef enum { OPT_READ, OPT_FREE, OPT_FALSE, OPT_EMPTY } OptRule;

typedef struct {
    const char* key;
    OptRule rule;
    const char* why; /* for false and empty: what a set value does that repoc does not */
} PeftOption;

static const PeftOption OPTIONS[] = {
    {"peft_type", OPT_READ, NULL},
    {"r", OPT_READ, NULL},
    {"lora_alpha", OPT_READ, NULL},
    {"lora_dropout", OPT_READ, NULL},
    {"bias", OPT_READ, NULL},
    {"target_modules", OPT_READ, NULL},
    {"modules_to_save", OPT_READ, NULL},
    {"use_rslora", OPT_READ, NULL},
    {"init_lora_weights", OPT_READ, NULL},
    {"task_type", OPT_FREE, NULL},
    {"base_model_name_or_path", OPT_FREE, NULL},
    {"revision", OPT_FREE, NULL},
    {"inference_mode", OPT_FREE, NULL},
    {"auto_mapping", OPT_FREE, NULL},
    {"peft_version", OPT_FREE, NULL},
    {"runtime_config", OPT_FREE, NULL},
    {"megatron_core", OPT_FREE, NULL},
    {"qalora_group_size", OPT_FREE, NULL},
    {"loftq_config", OPT_FREE, NULL}, /* used only by init_lora_weights "loftq", refused there */
    {"eva_config", OPT_FREE, NULL},
    {"corda_config", OPT_FREE, NULL},   /* used only by "corda", refused there */
    {"lora_ga_config", OPT_FREE, NULL}, /* used only by "lora_ga", refused there */
    {"fan_in_fan_out", OPT_FALSE,
     "the base weights would be stored (in, out) as GPT-2's Conv1D; repoc's "
     "projections are nn.Linear (out, in)"},
    {"use_dora", OPT_FALSE, "DoRA rescales each column of W + s B A by a learned magnitude"},
    {"use_qalora", OPT_FALSE, "QALoRA pools the adapter's input in groups"},
    {"lora_bias", OPT_FALSE, "lora_B would carry a bias"},
    {"rank_pattern", OPT_EMPTY, "some modules would have another rank than r"},
    {"alpha_pattern", OPT_EMPTY, "some modules would have another lora_alpha"},
    {"layers_to_transform", OPT_EMPTY, "only some layers would have adapters"},
    {"layers_pattern", OPT_EMPTY, "it selects the layers layers_to_transform counts"},
    {"exclude_modules", OPT_EMPTY, "some target modules would have no adapter"},
    {"target_parameters", OPT_EMPTY, "parameters other than the projections' weights would be adapted"},
    {"trainable_token_indices", OPT_EMPTY, "embedding rows would be trained"},
    {"layer_replication", OPT_EMPTY, "the layers would be repeated"},
    {"alora_invocation_tokens", OPT_EMPTY, "Activated LoRA applies the adapter only after the invocation tokens"},
    {"megatron_config", OPT_EMPTY, "the projections would be Megatron's parallel layers"},
    {"velora_config", OPT_EMPTY, "VeLoRA is a LoRA variant"},
    {"monteclora_config", OPT_EMPTY, "MonteCLoRA samples the adapter"},
    {"use_bdlora", OPT_EMPTY, "BD-LoRA's factors are block-diagonal"},
    {"arrow_config", OPT_EMPTY, "Arrow routes between adapters"},
    {"kasa_config", OPT_EMPTY, "KaSA truncates W's singular values and scales B A by learned ones"},
};

/* null, or an empty list, object or string */
static bool is_empty(const cJSON* v) {
    if (cJSON_IsNull(v)) return true;
    if (cJSON_IsArray(v) || cJSON_IsObject(v)) return cJSON_GetArraySize(v) == 0;
    return cJSON_IsString(v) && !v->valuestring[0];
}

/* the initialisations that leave the base weights as they are */
static void check_init(const cJSON* v, const char* path) {
    static const char* const keeps_base[] = {"gaussian", "eva", "orthogonal"};
    if (!v || cJSON_IsNull(v) || cJSON_IsBool(v)) return;
    CHECK(cJSON_IsString(v), "%s: 'init_lora_weights' must be true, false or the name of an initialisation", path);
    for (size_t i = 0; i < sizeof(keeps_base) / sizeof(keeps_base[0]); i++)
        if (!strcmp(v->valuestring, keeps_base[i])) return;
    DIE("%s: init_lora_weights \"%s\" is not supported: PiSSA, OLoRA, CorDA, LoftQ and LoRA-GA subtract the initial "
        "B A from the base weights (or quantise them), so such an adapter belongs to a modified base, and MiCA is a "
        "LoRA variant; repoc accepts true, false, \"gaussian\", \"eva\" and \"orthogonal\" (PEFT's "
        "path_initial_model_for_weight_conversion saves a PiSSA or OLoRA adapter as a plain one)",
        path, v->valuestring);
}

void peft_check_options(const cJSON* j, const char* path) {
    const size_t n = sizeof(OPTIONS) / sizeof(OPTIONS[0]);
    const cJSON* it;
    cJSON_ArrayForEach(it, j) {
        const PeftOption* o = NULL;
        for (size_t i = 0; i < n && !o; i++)
            if (!strcmp(OPTIONS[i].key, it->string)) o = &OPTIONS[i];
        CHECK(o,
              "%s: unknown key '%s': it is not one of PEFT's LoraConfig options, and repoc cannot tell whether it "
              "changes the adapter's math",
              path, it->string);
        bool ok = o->rule == OPT_READ || o->rule == OPT_FREE ||
                  (o->rule == OPT_FALSE && (cJSON_IsFalse(it) || cJSON_IsNull(it))) ||
                  (o->rule == OPT_EMPTY && is_empty(it));
        if (ok) continue;
        char* text = cJSON_PrintUnformatted(it);
        const char* shown = text ? text : "?";
        DIE("%s: '%s' is %.*s%s, which repoc does not apply: %s; only %s is accepted", path, o->key,
            utf8_clip(shown, strlen(shown), 80), shown, strlen(shown) > 80 ? "..." : "", o->why,
            o->rule == OPT_FALSE ? "false (or null)" : "null or empty");
    }
    check_init(cJSON_GetObjectItemCaseSensitive(j, "init_lora_weights"), path);
}

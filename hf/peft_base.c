/* Which base a LoRA adapter belongs to (peft_read_base, peft_check_base; hf/peft.h). An adapter is a
   difference to one set of weights: folded into another base of the same shapes it gives a model nobody
   trained, and nothing in the shapes tells. repoc's adapters record the base's weight fingerprint
   (hf_weights_fingerprint: names, dtypes, shapes and bytes of every tensor) and its architecture in
   adapter_model.safetensors' __metadata__; a PEFT adapter from elsewhere records neither, so only its
   shapes and layer count can be compared. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "common/safetensors.h"
#include "hf/hf_fingerprint.h"
#include "hf/peft.h"

/* 16 lowercase hex digits into *v */
static bool parse_fingerprint(const char* s, uint64_t* v) {
    if (strlen(s) != 16 || strspn(s, "0123456789abcdef") != 16) return false;
    *v = strtoull(s, NULL, 16);
    return true;
}

void peft_read_base(const char* dir, PeftBaseRecord* rec) {
    memset(rec, 0, sizeof(*rec));
    char path[4096];
    snprintf(path, sizeof(path), "%s/adapter_model.safetensors", dir);
    StFile f;
    st_open_or_die(&f, path);
    const char* fp = st_meta(&f, "repoc.base_fingerprint");
    if (fp) {
        CHECK(parse_fingerprint(fp, &rec->fingerprint),
              "%s: __metadata__ 'repoc.base_fingerprint' is '%.40s', not "
              "16 lowercase hex digits",
              path, fp);
        rec->has_fingerprint = true;
    }
    const char* keys[] = {"repoc.base_path", "repoc.base_model_type", "repoc.base_layer_positions"};
    char* out[] = {rec->path, rec->model_type, rec->positions};
    size_t len[] = {sizeof(rec->path), sizeof(rec->model_type), sizeof(rec->positions)};
    for (int k = 0; k < 3; k++) {
        const char* v = st_meta(&f, keys[k]);
        CHECK(!v || strlen(v) < len[k], "%s: __metadata__ '%s' is longer than %zu bytes", path, keys[k], len[k] - 1);
        snprintf(out[k], len[k], "%s", v ? v : "");
    }
    st_close(&f);
}

bool peft_read_lora_base(const char* dir, LoraBase* base) {
    memset(base, 0, sizeof(*base));
    char path[4096];
    snprintf(path, sizeof(path), "%s/adapter_model.safetensors", dir);
    if (!path_exists(path)) return false;
    PeftBaseRecord rec;
    peft_read_base(dir, &rec);
    if (!rec.path[0]) return false;
    CHECK(rec.has_fingerprint, "%s: __metadata__ names the base '%s' (%s) but has no %s", path, rec.path,
          PEFT_META_BASE_PATH, PEFT_META_BASE_FINGERPRINT);
    snprintf(base->path, sizeof(base->path), "%s", rec.path);
    base->fingerprint = rec.fingerprint;
    return true;
}

void peft_layer_positions(const ModelConfig* c, char* out, size_t len) {
    out[0] = 0;
    for (size_t l = 0; l < c->L; l++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s", l ? "," : "", pos_mode_name(c->pos[l]));
}

/* adapter_config.json's base_model_name_or_path into out ("" when absent) */
static void config_base_name(const char* dir, char* out, size_t len) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/adapter_config.json", dir);
    char* text = file_read_all_or_null(path, NULL);
    cJSON* j = text ? cJSON_Parse(text) : NULL;
    const cJSON* name = cJSON_GetObjectItemCaseSensitive(j, "base_model_name_or_path");
    snprintf(out, len, "%s", cJSON_IsString(name) ? name->valuestring : "");
    cJSON_Delete(j);
    free(text);
}

/* a mismatch: dies, or with force only warns */
static void mismatch(bool force, const char* what) {
    if (!force) DIE("%s; merge onto the base it was trained on, or pass --force to merge anyway", what);
    fprintf(stderr, "warning: %s; merging anyway (--force)\n", what);
}

void peft_check_base(const char* adapter_dir, const char* base_dir, const ModelConfig* base_cfg, bool force) {
    PeftBaseRecord rec;
    peft_read_base(adapter_dir, &rec);
    char what[16384];
    const char* trained_on = rec.path[0] ? rec.path : "(repoc.base_path not recorded)";
    const char* type = block_style_name(base_cfg->block);
    if (rec.model_type[0] && strcmp(rec.model_type, type)) {
        snprintf(what, sizeof(what),
                 "%s/adapter_model.safetensors: the adapter was trained on another base: its "
                 "repoc.base_model_type is %s, but %s/config.json's model_type is %s (repoc.base_path: %s)",
                 adapter_dir, rec.model_type, base_dir, type, trained_on);
        mismatch(force, what);
    }
    char positions[8 * MAX_LAYERS];
    peft_layer_positions(base_cfg, positions, sizeof(positions));
    if (rec.positions[0] && strcmp(rec.positions, positions)) {
        snprintf(what, sizeof(what),
                 "%s/adapter_model.safetensors: the adapter was trained on another base: its "
                 "repoc.base_layer_positions are %s, but %s's layers are %s (repoc_layer_positions in its config.json; "
                 "repoc.base_path: %s)",
                 adapter_dir, rec.positions, base_dir, positions, trained_on);
        mismatch(force, what);
    }
    if (!rec.has_fingerprint) {
        char name[1024];
        config_base_name(adapter_dir, name, sizeof(name));
        fprintf(stderr,
                "warning: %s/adapter_model.safetensors records no repoc.base_fingerprint (an adapter from "
                "elsewhere, or saved without its base's): the base %s could not be verified; compared only the "
                "tensor shapes and the layer count%s; adapter_config.json names the base '%s' "
                "(base_model_name_or_path)\n",
                adapter_dir, base_dir, rec.model_type[0] ? ", the model type and the layer positions" : "", name);
        return;
    }
    uint64_t have = hf_weights_fingerprint(base_dir);
    if (have != rec.fingerprint) {
        snprintf(what, sizeof(what),
                 "%s/adapter_model.safetensors: the adapter was trained on another base: its "
                 "repoc.base_fingerprint is %016llx (the weights of repoc.base_path %s), but the weights of %s have "
                 "fingerprint %016llx",
                 adapter_dir, (unsigned long long)rec.fingerprint, trained_on, base_dir, (unsigned long long)have);
        mismatch(force, what);
        return;
    }
    printf("base verified: %s has the weights the adapter was trained on (fingerprint %016llx)\n", base_dir,
           (unsigned long long)have);
}

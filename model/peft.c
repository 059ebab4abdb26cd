/* PEFT adapter directories: adapter_config.json and adapter_model.safetensors. */
#include "model/peft.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "common/safetensors.h"

/* the adapter file's name of tensor t */
static void peft_name(char* out, size_t len, const TensorInfo* t) { snprintf(out, len, PEFT_PREFIX "%s", t->name); }

/* the tensors an adapter holds: LoRA A and B, and trainable RePo weights */
static bool in_adapter(const TensorInfo* t) { return t->is_lora || (t->is_repo && t->grad_offset != NO_GRAD); }

void peft_save(const Model* m, const char* dir, const char* base_model) {
    const ModelConfig* c = &m->cfg;
    CHECK(c->lora_rank, "peft_save: the model has no LoRA adapters");
    mkdir_p(dir);
    const TensorTable* tt = &m->tensors;
    StWriteTensor* w = callocCheck(tt->n, sizeof(StWriteTensor));
    char (*names)[TENSOR_NAME_LEN + 32] = callocCheck(tt->n, TENSOR_NAME_LEN + 32);
    size_t n = 0;
    bool repo = false;
    for (size_t i = 0; i < tt->n; i++) {
        const TensorInfo* t = &tt->t[i];
        if (!in_adapter(t)) continue;
        repo |= t->is_repo;
        peft_name(names[n], TENSOR_NAME_LEN + 32, t);
        w[n] = (StWriteTensor){.name = names[n], .dtype = ST_F32, .ndim = t->ndim, .data = m->params + t->offset};
        for (size_t d = 0; d < t->ndim; d++) w[n].shape[d] = t->shape[d];
        n++;
    }
    char path[4096];
    const char* keys[] = {"format", "producer"};
    const char* values[] = {"pt", "repoc"};
    snprintf(path, sizeof(path), "%s/adapter_model.safetensors", dir);
    st_write(path, w, n, keys, values, 2);
    free(w);
    free(names);

    cJSON* j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "peft_type", "LORA");
    cJSON_AddStringToObject(j, "task_type", "CAUSAL_LM");
    cJSON_AddStringToObject(j, "base_model_name_or_path", base_model ? base_model : "");
    cJSON_AddNumberToObject(j, "r", (double)c->lora_rank);
    cJSON_AddNumberToObject(j, "lora_alpha", c->lora_alpha);
    cJSON_AddNumberToObject(j, "lora_dropout", 0.0);
    cJSON_AddStringToObject(j, "bias", "none");
    cJSON_AddBoolToObject(j, "fan_in_fan_out", false);
    cJSON_AddBoolToObject(j, "inference_mode", true);
    cJSON* targets = cJSON_AddArrayToObject(j, "target_modules");
    for (int t = 0; t < LORA_N_TARGETS; t++)
        if (cfg_lora_on(c, (LoraTarget)t)) cJSON_AddItemToArray(targets, cJSON_CreateString(lora_target_name((LoraTarget)t)));
    if (repo) {
        cJSON* mts = cJSON_AddArrayToObject(j, "modules_to_save");
        const char* repo_modules[] = {"gate_map", "content_map", "final_map"};
        for (int k = 0; k < 3; k++) cJSON_AddItemToArray(mts, cJSON_CreateString(repo_modules[k]));
    } else {
        cJSON_AddNullToObject(j, "modules_to_save");
    }
    char* text = cJSON_Print(j);
    cJSON_Delete(j);
    snprintf(path, sizeof(path), "%s/adapter_config.json", dir);
    file_write_atomic(path, text, strlen(text));
    free(text);
}

bool peft_read_config(const char* dir, ModelConfig* cfg) {
    char path[4096];
    size_t len;
    snprintf(path, sizeof(path), "%s/adapter_config.json", dir);
    char* text = file_read_all_or_null(path, &len);
    if (!text) return false;
    cJSON* j = cJSON_ParseWithLength(text, len);
    free(text);
    CHECK(cJSON_IsObject(j), "%s: expected a JSON object", path);
    const cJSON* type = cJSON_GetObjectItemCaseSensitive(j, "peft_type");
    CHECK(cJSON_IsString(type) && !strcmp(type->valuestring, "LORA"), "%s: peft_type must be \"LORA\"", path);
    const cJSON* r = cJSON_GetObjectItemCaseSensitive(j, "r");
    const cJSON* alpha = cJSON_GetObjectItemCaseSensitive(j, "lora_alpha");
    CHECK(cJSON_IsNumber(r) && r->valuedouble >= 1 && r->valuedouble <= 65536 && r->valuedouble == (int)r->valuedouble,
          "%s: 'r' must be an integer in [1, 65536]", path);
    CHECK(cJSON_IsNumber(alpha) && alpha->valuedouble > 0, "%s: 'lora_alpha' must be a positive number", path);
    const cJSON* dropout = cJSON_GetObjectItemCaseSensitive(j, "lora_dropout");
    if (dropout && !cJSON_IsNull(dropout) && !(cJSON_IsNumber(dropout) && dropout->valuedouble == 0))
        fprintf(stderr, "note: %s: lora_dropout is ignored (repoc applies no adapter dropout)\n", path);
    const cJSON* bias = cJSON_GetObjectItemCaseSensitive(j, "bias");
    CHECK(!bias || cJSON_IsNull(bias) || (cJSON_IsString(bias) && !strcmp(bias->valuestring, "none")),
          "%s: 'bias' must be \"none\" (no bias adapters)", path);
    const cJSON* targets = cJSON_GetObjectItemCaseSensitive(j, "target_modules");
    CHECK(cJSON_IsArray(targets) && cJSON_GetArraySize(targets) > 0, "%s: 'target_modules' must be a list of names",
          path);
    cfg->lora_rank = (size_t)r->valuedouble;
    cfg->lora_alpha = alpha->valuedouble;
    cfg->lora_targets = 0;
    const cJSON* it;
    cJSON_ArrayForEach(it, targets) {
        LoraTarget t;
        CHECK(cJSON_IsString(it) && lora_target_parse(it->valuestring, &t),
              "%s: target_modules entry %s matches no projection; the valid names are q_proj, k_proj, v_proj, "
              "o_proj, gate_proj, up_proj, down_proj", path, cJSON_IsString(it) ? it->valuestring : "(not a string)");
        cfg->lora_targets |= 1u << t;
    }
    cJSON_Delete(j);
    return true;
}

size_t peft_load(Model* m, const char* dir, char* loaded) {
    char path[4096], name[TENSOR_NAME_LEN + 32];
    snprintf(path, sizeof(path), "%s/adapter_model.safetensors", dir);
    StFile f;
    st_open_or_die(&f, path);
    const TensorTable* tt = &m->tensors;
    size_t n = 0;
    for (size_t j = 0; j < f.n_tensors; j++) {   /* every tensor of the file must belong to the model */
        const StTensor* st = &f.tensors[j];
        size_t pl = strlen(PEFT_PREFIX);
        long i = strncmp(st->name, PEFT_PREFIX, pl) ? -1 : tensor_table_find(tt, st->name + pl);
        CHECK(i >= 0 && (tt->t[i].is_lora || tt->t[i].is_repo),
              "%s: tensor '%s' is not a LoRA or RePo tensor of this model (rank %zu, targets as configured)", path,
              st->name, m->cfg.lora_rank);
    }
    for (size_t i = 0; i < tt->n; i++) {
        const TensorInfo* t = &tt->t[i];
        if (!t->is_lora && !t->is_repo) continue;
        peft_name(name, sizeof(name), t);
        const StTensor* st = st_find(&f, name);
        CHECK(st || !t->is_lora, "%s: no tensor '%s' (the adapter's rank or target_modules differ from the model's)",
              path, name);
        if (!st) continue;
        bool same = st->ndim == t->ndim;
        for (size_t d = 0; same && d < t->ndim; d++) same = st->shape[d] == t->shape[d];
        CHECK(same, "%s: tensor '%s' has shape [%zu, %zu] but the base model expects [%zu, %zu]", path, name,
              st->shape[0], st->ndim > 1 ? st->shape[1] : 0, t->shape[0], t->ndim > 1 ? t->shape[1] : 0);
        st_read_real(&f, st, m->params + t->offset);
        if (loaded) loaded[i] = 1;
        n++;
    }
    st_close(&f);
    return n;
}

void peft_merge(Model* m) {
    const TensorTable* tt = &m->tensors;
    real scale = (real)cfg_lora_scale(&m->cfg);
    size_t r = m->cfg.lora_rank;
    for (size_t i = 0; i < tt->n; i++) {   /* the table lists W, W's lora_A, W's lora_B in a row */
        const TensorInfo* a = &tt->t[i];
        if (a->kind != TK_LORA_A) continue;
        const TensorInfo *w = &tt->t[i - 1], *b = &tt->t[i + 1];
        CHECK(w->kind == lora_target_kind(a->lora_target) && b->kind == TK_LORA_B, "peft_merge: table order of %s",
              a->name);
        size_t out = w->shape[0], in = w->shape[1];
        cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)out, (int)in, (int)r, scale,
                   m->params + b->offset, (int)r, m->params + a->offset, (int)in, 1, m->params + w->offset, (int)in);
    }
}

/* PEFT adapter directories: adapter_config.json and adapter_model.safetensors. */
#include "hf/peft.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "common/safetensors.h"

/* the adapter file's name of tensor t */
static void peft_name(char* out, size_t len, const TensorInfo* t) { snprintf(out, len, PEFT_PREFIX "%s", t->name); }

/* the tensors an adapter holds: LoRA A and B, and trainable RePo weights (every RePo weight with all_repo) */
static bool in_adapter(const TensorInfo* t, bool all_repo) {
    return t->is_lora || (t->is_repo && (all_repo || t->grad_offset != NO_GRAD));
}

/* A RePo tensor's module: its name without ".weight" (model.layers.N.self_attn.gate_map) and the short name
   (gate_map) that modules_to_save may give instead */
static void module_of(const TensorInfo* t, char* path, size_t len, const char** short_name) {
    snprintf(path, len, "%s", t->name);
    char* dot = strrchr(path, '.');
    if (dot) *dot = 0;
    dot = strrchr(path, '.');
    *short_name = dot ? dot + 1 : path;
}

/* modules_to_save: per RePo kind, its short name when every tensor of the kind is saved (PEFT then wraps
   every such module), else the full path of each saved one (PEFT matches a module whose name ends with an
   entry); null without saved RePo tensors */
static void add_modules_to_save(cJSON* j, const TensorTable* tt, bool all_repo) {
    cJSON* list = cJSON_CreateArray();
    const TensorKind kinds[] = {TK_REPO_GATE, TK_REPO_CONTENT, TK_REPO_FINAL};
    for (int k = 0; k < 3; k++) {
        size_t all = 0, saved = 0;
        const char* short_name = NULL;
        char path[TENSOR_NAME_LEN];
        for (size_t i = 0; i < tt->n; i++) {
            if (tt->t[i].kind != kinds[k]) continue;
            all++;
            saved += in_adapter(&tt->t[i], all_repo);
            module_of(&tt->t[i], path, sizeof(path), &short_name);
        }
        if (saved && saved == all) {
            cJSON_AddItemToArray(list, cJSON_CreateString(short_name));
            continue;
        }
        for (size_t i = 0; saved && i < tt->n; i++) {
            if (tt->t[i].kind != kinds[k] || !in_adapter(&tt->t[i], all_repo)) continue;
            module_of(&tt->t[i], path, sizeof(path), &short_name);
            cJSON_AddItemToArray(list, cJSON_CreateString(path));
        }
    }
    if (cJSON_GetArraySize(list)) {
        cJSON_AddItemToObject(j, "modules_to_save", list);
    } else {
        cJSON_Delete(list);
        cJSON_AddNullToObject(j, "modules_to_save");
    }
}

/* repoc.base_* metadata (peft.h): the model's own architecture and layer positions, and its base when named */
static size_t base_metadata(const ModelConfig* c, const LoraBase* base, const char** keys, const char** values,
                            char* fingerprint, char* positions, size_t positions_len) {
    size_t n = 0;
    keys[n] = "repoc.base_model_type";
    values[n++] = block_style_name(c->block);
    peft_layer_positions(c, positions, positions_len);
    keys[n] = "repoc.base_layer_positions";
    values[n++] = positions;
    if (base->path[0]) { /* the base is named when it is on disk */
        snprintf(fingerprint, 17, "%016llx", (unsigned long long)base->fingerprint);
        keys[n] = PEFT_META_BASE_FINGERPRINT;
        values[n++] = fingerprint;
        keys[n] = PEFT_META_BASE_PATH;
        values[n++] = base->path;
    }
    return n;
}

void peft_save(const Model* m, const char* dir, bool all_repo, const LoraBase* base) {
    const ModelConfig* c = &m->cfg;
    CHECK(c->lora_rank, "peft_save: the model has no LoRA adapters");
    mkdir_p(dir);
    const TensorTable* tt = &m->tensors;
    StWriteTensor* w = callocCheck(tt->n, sizeof(StWriteTensor));
    char(*names)[TENSOR_NAME_LEN + 32] = callocCheck(tt->n, TENSOR_NAME_LEN + 32);
    size_t n = 0;
    for (size_t i = 0; i < tt->n; i++) {
        const TensorInfo* t = &tt->t[i];
        if (!in_adapter(t, all_repo)) continue;
        peft_name(names[n], TENSOR_NAME_LEN + 32, t);
        w[n] = (StWriteTensor){.name = names[n], .dtype = ST_F32, .ndim = t->ndim, .data = m->params + t->offset};
        for (size_t d = 0; d < t->ndim; d++) w[n].shape[d] = t->shape[d];
        n++;
    }
    char path[4096];
    static const LoraBase none;
    if (!base) base = &none;
    const char* keys[6] = {"format", "producer"};
    const char* values[6] = {"pt", "repoc"};
    char fingerprint[17], positions[8 * MAX_LAYERS];
    size_t n_meta = 2 + base_metadata(c, base, keys + 2, values + 2, fingerprint, positions, sizeof(positions));
    snprintf(path, sizeof(path), "%s/adapter_model.safetensors", dir);
    st_write(path, w, n, keys, values, n_meta);
    free(w);
    free(names);

    cJSON* j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "peft_type", "LORA");
    cJSON_AddStringToObject(j, "task_type", "CAUSAL_LM");
    cJSON_AddStringToObject(j, "base_model_name_or_path", base->path);
    cJSON_AddNumberToObject(j, "r", (double)c->lora_rank);
    cJSON_AddNumberToObject(j, "lora_alpha", c->lora_alpha);
    cJSON_AddNumberToObject(j, "lora_dropout", c->lora_dropout);
    cJSON_AddBoolToObject(j, "use_rslora", c->lora_rslora);
    cJSON_AddStringToObject(j, "bias", "none");
    cJSON_AddBoolToObject(j, "fan_in_fan_out", false);
    cJSON_AddBoolToObject(j, "inference_mode", true);
    cJSON* targets = cJSON_AddArrayToObject(j, "target_modules");
    for (int t = 0; t < LORA_N_TARGETS; t++)
        if (cfg_lora_on(c, (LoraTarget)t))
            cJSON_AddItemToArray(targets, cJSON_CreateString(lora_target_name((LoraTarget)t)));
    add_modules_to_save(j, tt, all_repo);
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
    CHECK(cJSON_IsNumber(alpha) && isfinite(alpha->valuedouble) && alpha->valuedouble > 0,
          "%s: 'lora_alpha' must be a finite number > 0 (it is %s)", path,
          !cJSON_IsNumber(alpha)         ? "not a number"
          : isfinite(alpha->valuedouble) ? "<= 0"
                                         : "beyond a double's range, which reads as infinity");
    const cJSON* rslora = cJSON_GetObjectItemCaseSensitive(j, "use_rslora");
    CHECK(!rslora || cJSON_IsNull(rslora) || cJSON_IsBool(rslora), "%s: 'use_rslora' must be true or false", path);
    peft_check_options(j, path);
    const cJSON* dropout = cJSON_GetObjectItemCaseSensitive(j, "lora_dropout");
    CHECK(!dropout || cJSON_IsNull(dropout) ||
              (cJSON_IsNumber(dropout) && dropout->valuedouble >= 0 && dropout->valuedouble < 1),
          "%s: 'lora_dropout' must be a number in [0, 1)", path);
    const cJSON* bias = cJSON_GetObjectItemCaseSensitive(j, "bias");
    CHECK(!bias || cJSON_IsNull(bias) || (cJSON_IsString(bias) && !strcmp(bias->valuestring, "none")),
          "%s: 'bias' must be \"none\" (no bias adapters)", path);
    const cJSON* targets = cJSON_GetObjectItemCaseSensitive(j, "target_modules");
    CHECK(cJSON_IsArray(targets) && cJSON_GetArraySize(targets) > 0, "%s: 'target_modules' must be a list of names",
          path);
    cfg->lora_rank = (size_t)r->valuedouble;
    cfg->lora_alpha = alpha->valuedouble;
    cfg->lora_rslora = cJSON_IsTrue(rslora);
    cfg->lora_dropout = cJSON_IsNumber(dropout) ? dropout->valuedouble : 0; /* applies only while training */
    cfg->lora_targets = 0;
    const cJSON* it;
    cJSON_ArrayForEach(it, targets) {
        LoraTarget t;
        CHECK(cJSON_IsString(it) && lora_target_parse(it->valuestring, &t),
              "%s: target_modules entry %s matches no projection; the valid names are q_proj, k_proj, v_proj, "
              "o_proj, gate_proj, up_proj, down_proj (or PEFT's self_attn.q_proj, mlp.down_proj forms)",
              path, cJSON_IsString(it) ? it->valuestring : "(not a string)");
        cfg->lora_targets |= 1u << t;
    }
    cJSON_Delete(j);
    return true;
}

/* adapter_config.json's modules_to_save (an array, or NULL when null or absent); *root to cJSON_Delete */
static const cJSON* read_modules_to_save(const char* dir, cJSON** root) {
    char path[4096];
    size_t len;
    snprintf(path, sizeof(path), "%s/adapter_config.json", dir);
    char* text = file_read_all_or_null(path, &len);
    *root = text ? cJSON_ParseWithLength(text, len) : NULL;
    free(text);
    const cJSON* mts = cJSON_GetObjectItemCaseSensitive(*root, "modules_to_save");
    if (!mts || cJSON_IsNull(mts)) return NULL;
    const cJSON* it;
    CHECK(cJSON_IsArray(mts), "%s: 'modules_to_save' must be null or a list of module names", path);
    cJSON_ArrayForEach(it, mts) CHECK(cJSON_IsString(it), "%s: 'modules_to_save' entries must be strings", path);
    return mts;
}

/* whether modules_to_save names t's module: as PEFT matches, the module's path ends with an entry */
static bool listed(const cJSON* mts, const TensorInfo* t) {
    char path[TENSOR_NAME_LEN];
    const char* short_name;
    module_of(t, path, sizeof(path), &short_name);
    size_t n = strlen(path);
    const cJSON* it;
    cJSON_ArrayForEach(it, mts) {
        size_t k = strlen(it->valuestring);
        if (k <= n && !strcmp(path + n - k, it->valuestring)) return true;
    }
    return false;
}

/* Every entry of modules_to_save names a module the adapter file holds weights of: one that names nothing
   (a typo, a module of another model) is refused rather than merged as if it were not there. */
static void check_modules_exist(const cJSON* mts, const StFile* f, const char* path) {
    const cJSON* it;
    cJSON_ArrayForEach(it, mts) {
        bool found = false;
        for (size_t j = 0; j < f->n_tensors && !found; j++) {
            char module[TENSOR_NAME_LEN + 32];
            snprintf(module, sizeof module, "%s", f->tensors[j].name);
            char* dot = strrchr(module, '.'); /* the module's path: the name without ".weight" */
            if (dot) *dot = 0;
            size_t n = strlen(module), k = strlen(it->valuestring);
            found = k <= n && !strcmp(module + n - k, it->valuestring);
        }
        CHECK(found,
              "%s/adapter_config.json: modules_to_save names '%s', but %s holds no weight of a module whose name "
              "ends with it: a module this model does not have, or weights missing from the file",
              path, it->valuestring, "adapter_model.safetensors");
    }
}

/* a RePo weight's name (model.layers.N.self_attn.gate_map.weight and the other two maps) */
static bool is_repo_name(const char* name) {
    return strstr(name, ".self_attn.gate_map.") || strstr(name, ".self_attn.content_map.") ||
           strstr(name, ".self_attn.final_map.");
}

/* The layers the adapter file has LoRA tensors for: 1 + the largest N of a
   "base_model.model.model.layers.N.*.lora_[AB].weight" name (0 without any) */
static size_t adapter_layers(const StFile* f) {
    const char* stem = PEFT_PREFIX "model.layers.";
    size_t n = 0;
    for (size_t j = 0; j < f->n_tensors; j++) {
        const char* name = f->tensors[j].name;
        if (strncmp(name, stem, strlen(stem)) || name[strlen(stem)] < '0' || name[strlen(stem)] > '9' ||
            !(strstr(name, ".lora_A.") || strstr(name, ".lora_B.")))
            continue;
        size_t l = strtoul(name + strlen(stem), NULL, 10);
        if (l + 1 > n) n = l + 1;
    }
    return n;
}

/* Every tensor of the adapter file belongs to the model: a LoRA or RePo tensor of it under PEFT's file name;
   a RePo weight the base lacks says that the adapter's run added RePo layers, and how to merge it */
static void check_file_tensor(const Model* m, const StTensor* st, const char* path) {
    CHECK(!strstr(st->name, ".modules_to_save."),
          "%s: tensor '%s' has PEFT's in-model name; the adapter file "
          "stores a modules_to_save weight without 'modules_to_save.<adapter name>.' (e.g. "
          "base_model.model.model.layers.N.self_attn.gate_map.weight)",
          path, st->name);
    size_t pl = strlen(PEFT_PREFIX);
    long i = strncmp(st->name, PEFT_PREFIX, pl) ? -1 : tensor_table_find(&m->tensors, st->name + pl);
    if (i < 0 && is_repo_name(st->name)) {
        char positions[8 * MAX_LAYERS];
        peft_layer_positions(&m->cfg, positions, sizeof positions);
        DIE("%s: tensor '%s' is a RePo weight, but the base model's layer at that place has none (its layer "
            "positions are %s): the run that trained this adapter added RePo layers to its base. Merge with "
            "the run's checkpoint as BASE (build/merge CKPT CKPT OUT): its config.json has the layers the "
            "adapter was trained with, and it takes the weights from the base it names",
            path, st->name, positions);
    }
    CHECK(i >= 0 && (m->tensors.t[i].is_lora || m->tensors.t[i].is_repo),
          "%s: tensor '%s' is not a LoRA or RePo tensor of this model (rank %zu, targets as configured)", path,
          st->name, m->cfg.lora_rank);
}

size_t peft_load(Model* m, const char* dir, char* loaded) {
    char path[4096], name[TENSOR_NAME_LEN + 32];
    snprintf(path, sizeof(path), "%s/adapter_model.safetensors", dir);
    cJSON* root;
    const cJSON* mts = read_modules_to_save(dir, &root);
    StFile f;
    st_open_or_die(&f, path);
    const TensorTable* tt = &m->tensors;
    if (mts) check_modules_exist(mts, &f, dir);
    size_t n = 0, layers = adapter_layers(&f);
    CHECK(!layers || layers == m->cfg.L,
          "%s: the adapter has LoRA tensors for %zu layers (model.layers.0 to %zu) "
          "but the base model has %zu (num_hidden_layers): it was trained on another base",
          path, layers, layers - 1, m->cfg.L);
    for (size_t j = 0; j < f.n_tensors; j++) check_file_tensor(m, &f.tensors[j], path);
    for (size_t i = 0; i < tt->n; i++) {
        const TensorInfo* t = &tt->t[i];
        if (!t->is_lora && !t->is_repo) continue;
        peft_name(name, sizeof(name), t);
        const StTensor* st = st_find(&f, name);
        bool saved = t->is_repo && mts && listed(mts, t); /* a module PEFT wraps and loads */
        CHECK(st || !(t->is_lora || saved), "%s: no tensor '%s' (%s)", path, name,
              t->is_lora ? "the model adapts this projection in every layer, as target_modules asks, and the file "
                           "lacks it in this one"
                         : "adapter_config.json's modules_to_save lists its module");
        CHECK(!st || t->is_lora || saved,
              "%s: tensor '%s' is a RePo weight whose module adapter_config.json's "
              "modules_to_save does not list (PEFT would not load it)",
              path, name);
        if (!st) continue;
        bool same = st->ndim == t->ndim;
        for (size_t d = 0; same && d < t->ndim; d++) same = st->shape[d] == t->shape[d];
        CHECK(same, "%s: tensor '%s' has shape [%zu, %zu] but the base model expects [%zu, %zu]%s", path, name,
              st->shape[0], st->ndim > 1 ? st->shape[1] : 0, t->shape[0], t->ndim > 1 ? t->shape[1] : 0,
              !t->is_lora            ? ""
              : t->kind == TK_LORA_A ? " ([r, in]: r is adapter_config.json's, in the base's width)"
                                     : " ([out, r]: out is the base's width, r adapter_config.json's)");
        st_read_real(&f, st, m->params + t->offset);
        if (loaded) loaded[i] = 1;
        n++;
    }
    st_close(&f);
    cJSON_Delete(root);
    return n;
}

/* W (out,in) += scale B (out,r) A (r,in) */
static void fold(real* w, const real* b, const real* a, size_t out, size_t in, size_t r, real scale) {
    cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)out, (int)in, (int)r, scale, b, (int)r, a, (int)in, 1, w,
               (int)in);
}

void peft_merge(Model* m) {
    const TensorTable* tt = &m->tensors;
    real scale = (real)cfg_lora_scale(&m->cfg);
    for (size_t i = 0; i < tt->n; i++) { /* the table lists W, W's lora_A, W's lora_B in a row */
        const TensorInfo* a = &tt->t[i];
        if (a->kind != TK_LORA_A) continue;
        const TensorInfo *w = &tt->t[i - 1], *b = &tt->t[i + 1];
        CHECK(w->kind == lora_target_kind(a->lora_target) && b->kind == TK_LORA_B, "peft_merge: table order of %s",
              a->name);
        fold(m->params + w->offset, m->params + b->offset, m->params + a->offset, w->shape[0], w->shape[1],
             m->cfg.lora_rank, scale);
    }
}

/* tensor `name` of f into a new buffer, shape checked against [d0, d1] */
static real* read_factor(const StFile* f, const char* path, const char* name, size_t d0, size_t d1) {
    const StTensor* st = st_find(f, name);
    CHECK(st, "%s: no tensor '%s' (each lora_A needs its lora_B)", path, name);
    CHECK(st->ndim == 2 && st->shape[0] == d0 && st->shape[1] == d1,
          "%s: tensor '%s' has shape [%zu, %zu] but the "
          "base model expects [%zu, %zu]",
          path, name, st->shape[0], st->ndim > 1 ? st->shape[1] : 0, d0, d1);
    real* v = mallocCheck(d0 * d1 * sizeof(real));
    st_read_real(f, st, v);
    return v;
}

size_t peft_merge_file(Model* m, const char* dir) {
    ModelConfig ac = m->cfg;
    CHECK(peft_read_config(dir, &ac), "%s: no adapter_config.json", dir);
    char path[4096], name[TENSOR_NAME_LEN + 32];
    snprintf(path, sizeof(path), "%s/adapter_model.safetensors", dir);
    StFile f;
    st_open_or_die(&f, path);
    const TensorTable* tt = &m->tensors;
    const size_t pl = strlen(PEFT_PREFIX), al = strlen(".lora_A.weight");
    size_t n = 0;
    for (size_t j = 0; j < f.n_tensors; j++) {
        const StTensor* st = &f.tensors[j];
        const char* inner = strncmp(st->name, PEFT_PREFIX, pl) ? NULL : st->name + pl;
        size_t len = inner ? strlen(inner) : 0;
        CHECK(inner, "%s: tensor '%s' lacks PEFT's prefix '%s'", path, st->name, PEFT_PREFIX);
        if (len > al && !strcmp(inner + len - al, ".lora_B.weight")) continue; /* read with its lora_A */
        bool is_a = len > al && !strcmp(inner + len - al, ".lora_A.weight");
        snprintf(name, sizeof(name), "%.*s.weight", (int)(is_a ? len - al : len - strlen(".weight")), inner);
        long i = tensor_table_find(tt, name);
        CHECK(i >= 0 && (is_a ? !tt->t[i].is_repo : tt->t[i].is_repo),
              "%s: tensor '%s' is neither a LoRA factor "
              "of a projection of this model nor one of its RePo weights",
              path, st->name);
        const TensorInfo* t = &tt->t[i];
        CHECK(!t->bf16, "%s: cannot fold the adapter into '%s', kept in BF16 (model.base_dtype)", path, t->name);
        if (is_a) {
            size_t out = t->shape[0], in = t->shape[1], r = ac.lora_rank;
            real* a = read_factor(&f, path, st->name, r, in);
            snprintf(name, sizeof(name), "%.*slora_B.weight", (int)(strlen(st->name) - strlen("lora_A.weight")),
                     st->name);
            real* b = read_factor(&f, path, name, out, r);
            fold(m->params + t->offset, b, a, out, in, r, (real)cfg_lora_scale(&ac));
            free(a);
            free(b);
        } else {
            CHECK(st->numel == t->numel, "%s: tensor '%s' has %zu values but the model's '%s' has %zu", path, st->name,
                  st->numel, t->name, t->numel);
            st_read_real(&f, st, m->params + t->offset);
        }
        n++;
    }
    st_close(&f);
    return n;
}

/* Loading and saving Hugging Face checkpoint directories (docs/formats.md, "Hugging Face checkpoint directory").
   Loading maps each file, validates its whole header (common/safetensors.c),
   converts each tensor into the parameter arena and then drops the file pages
   it read from this process (madvise), so a BF16 checkpoint of N parameters
   peaks near the 4N bytes of the F32 arena, never two full copies. */
#include "hf/hf_checkpoint.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/check.h"
#include "common/fileio.h"
#include "hf/hf_config.h"
#include "hf/hf_loaders.h"
#include "hf/shards.h"

/* Convert st into dst in chunks of LOAD_CHUNK elements, dropping each chunk's
   file pages once converted: resident memory stays at the destination arena
   plus one chunk, even for a 400 MB embedding. */
#define LOAD_CHUNK ((size_t)8 << 20)
static void load_tensor(const StFile* f, const StTensor* st, real* dst) {
    size_t es = st_dtype_size(st->dtype);
    for (size_t off = 0; off < st->numel; off += LOAD_CHUNK) {
        StTensor part = *st; /* the same tensor, restricted to elements [off, off + n) */
        part.numel = st->numel - off < LOAD_CHUNK ? st->numel - off : LOAD_CHUNK;
        part.begin = st->begin + off * es;
        part.end = part.begin + part.numel * es;
        st_read_real(f, &part, dst + off);
        shard_release_pages(f, &part);
    }
}

/* load_tensor into a BF16 arena (a frozen base, cfg.base_bf16), one chunk at a time through tmp */
static void load_tensor_bf16(const StFile* f, const StTensor* st, uint16_t* dst, real* tmp) {
    size_t es = st_dtype_size(st->dtype);
    for (size_t off = 0; off < st->numel; off += LOAD_CHUNK) {
        StTensor part = *st;
        part.numel = st->numel - off < LOAD_CHUNK ? st->numel - off : LOAD_CHUNK;
        part.begin = st->begin + off * es;
        part.end = part.begin + part.numel * es;
        st_read_real(f, &part, tmp);
        for (size_t k = 0; k < part.numel; k++) dst[off + k] = st_f32_to_bf16((float)tmp[k]);
        shard_release_pages(f, &part);
    }
}

static int shape_matches(const StTensor* st, const TensorInfo* t) {
    if (st->ndim != t->ndim) return 0;
    for (size_t d = 0; d < t->ndim; d++)
        if (st->shape[d] != t->shape[d]) return 0;
    return 1;
}

/* "[64, 32]" */
static void format_shape(char* out, size_t len, const size_t* shape, size_t ndim) {
    size_t o = (size_t)snprintf(out, len, "[");
    for (size_t d = 0; d < ndim && o < len; d++)
        o += (size_t)snprintf(out + o, len - o, "%s%zu", d ? ", " : "", shape[d]);
    if (o < len) snprintf(out + o, len - o, "]");
}

static void append(char* list, size_t cap, const char* name) {
    size_t n = strlen(list);
    if (n + strlen(name) + 4 < cap) snprintf(list + n, cap - n, "%s%s", n ? ", " : "", name);
    else if (n + 5 < cap && !strstr(list, "...")) strcat(list, ", ...");
}

/* Match every tensor of dir's weight files to the table tt by name, checking dtype and shape from the
   safetensors headers; with params, convert each into the arena at its offset. Dies, listing them all, on
   tensors missing from the files (RePo tensors excepted: a plain checkpoint continued with RePo) or unknown
   to the model. loaded (tt->n bytes) gets 1 for every tensor found. */
static void scan_weights(const char* dir, const TensorTable* tt, real* params, uint16_t* bf16, char* loaded) {
    real* tmp = tt->n_bf16 && params ? mallocCheck(LOAD_CHUNK * sizeof(real)) : NULL;
    Shards s;
    memset(&s, 0, sizeof(s));
    cJSON* index;
    shards_list(dir, &s, &index);
    static char unexpected[4096], missing[4096];
    unexpected[0] = missing[0] = 0;
    size_t n_unexpected = 0, n_missing = 0;
    for (size_t k = 0; k < s.n; k++) {
        const StFile* f = shard_open(dir, &s, k);
        const char* path = f->path;
        for (size_t j = 0; j < f->n_tensors; j++) {
            const StTensor* st = &f->tensors[j];
            long i = tensor_table_find(tt, st->name);
            if (i < 0) {
                append(unexpected, sizeof(unexpected), st->name);
                n_unexpected++;
                continue;
            }
            const TensorInfo* t = &tt->t[i];
            CHECK(!loaded[i], "%s: tensor '%s' appears in more than one file", dir, st->name);
            CHECK(st->dtype == ST_F32 || st->dtype == ST_BF16 || st->dtype == ST_F16 || st->dtype == ST_F64,
                  "%s: tensor '%s' has dtype %s; weights must be F32, BF16, F16 or F64", path, st->name,
                  st_dtype_name(st->dtype));
            if (!shape_matches(st, t)) {
                char got[256], want[256];
                format_shape(got, sizeof(got), st->shape, st->ndim);
                format_shape(want, sizeof(want), t->shape, t->ndim);
                DIE("%s: tensor '%s' has shape %s but the model expects %s", path, st->name, got, want);
            }
            if (params && t->bf16) load_tensor_bf16(f, st, bf16 + t->offset, tmp);
            else if (params) load_tensor(f, st, params + t->offset);
            loaded[i] = 1;
        }
        shard_close(&s, k);
    }
    cJSON_Delete(index);
    free(tmp);
    for (size_t i = 0; i < tt->n; i++) {
        if (loaded[i] || tt->t[i].is_repo || tt->t[i].is_lora) continue;
        append(missing, sizeof(missing), tt->t[i].name);
        n_missing++;
    }
    if (n_missing || n_unexpected)
        DIE("%s: the checkpoint does not match the model:%s%s%s%s%s", dir, n_missing ? "\n  missing: " : "", missing,
            n_unexpected ? "\n  unexpected: " : "", unexpected,
            n_unexpected ? "\n  (a tensor the model lacks usually means the config's layer positions or tie_word_"
                           "embeddings differ from the checkpoint's)"
                         : "");
}

bool hf_has_weights(const char* dir) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/model.safetensors.index.json", dir);
    if (path_exists(path)) return true;
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    return path_exists(path);
}

void hf_check_weights(const char* dir, const ModelConfig* cfg) {
    TensorTable tt;
    tensor_table_build(&tt, cfg, NULL, 0);
    char* found = callocCheck(tt.n, 1);
    scan_weights(dir, &tt, NULL, NULL, found);
    free(found);
    tensor_table_free(&tt);
}

void hf_read_weights(Model* m, const char* dir, char* loaded) {
    scan_weights(dir, &m->tensors, m->params, m->base_bf16, loaded);
}

size_t hf_init_missing(Model* m, const char* dir, const char* loaded, const ModelInit* init, bool verbose) {
    static const ModelInit defaults = {.std = 0.02}; /* only RePo and LoRA tensors are missing: std is unused */
    if (!init) init = &defaults;
    unsigned long long init_seed = init->seed;
    const TensorTable* tt = &m->tensors;
    static char fresh[4096];
    fresh[0] = 0;
    size_t n_fresh = 0, n_lora = 0;
    for (size_t i = 0; i < tt->n; i++) {
        if (loaded[i]) continue;       /* scan_weights allows only RePo and LoRA tensors to be missing */
        model_init_tensor(m, i, init); /* a checkpoint without RePo (or LoRA) continued with them */
        if (tt->t[i].is_lora) n_lora++;
        else append(fresh, sizeof(fresh), tt->t[i].name);
        n_fresh++;
    }
    if (verbose) {
        printf("loaded %zu tensors from %s\n", tt->n - n_fresh, dir);
        if (n_fresh > n_lora)
            printf("  new RePo weights (N(0, 0.02²) truncated at ±3σ, seed %llu): %s\n", init_seed, fresh);
        if (n_lora)
            printf("  new LoRA adapters: %zu tensors (A uniform in ±1/sqrt(in), B = 0, seed %llu)\n", n_lora,
                   init_seed);
    }
    return n_fresh;
}

size_t hf_load_weights(Model* m, const char* dir, uint64_t init_seed, bool verbose) {
    char* loaded = callocCheck(m->tensors.n, 1);
    hf_read_weights(m, dir, loaded);
    size_t n_fresh = hf_init_missing(m, dir, loaded, &(ModelInit){.seed = init_seed, .std = 0.02}, verbose);
    free(loaded);
    return n_fresh;
}

/* StFill of a BF16 base tensor: its values widened */
static void fill_bf16(void* ctx, size_t first, size_t count, real* out) {
    const uint16_t* src = ctx;
    for (size_t k = 0; k < count; k++) out[k] = (real)st_bf16_to_f32(src[first + k]);
}

void hf_save(const Model* m, const char* dir, StDtype dtype) {
    CHECK(dtype == ST_F32 || dtype == ST_BF16, "hf_save: dtype must be F32 or BF16");
    mkdir_p(dir);
    const TensorTable* tt = &m->tensors;
    StWriteTensor* w = callocCheck(tt->n, sizeof(StWriteTensor));
    StFill* fills = callocCheck(tt->n, sizeof(StFill));
    size_t n = 0;
    for (size_t i = 0; i < tt->n; i++) {
        const TensorInfo* t = &tt->t[i];
        if (t->is_lora) continue; /* adapters go to the PEFT files (hf/ckpt_weights.c) */
        w[n].name = t->name;
        w[n].dtype = dtype;
        w[n].ndim = t->ndim;
        for (size_t d = 0; d < t->ndim; d++) w[n].shape[d] = t->shape[d];
        if (t->bf16) fills[n] = (StFill){fill_bf16, m->base_bf16 + t->offset};
        else w[n].data = m->params + t->offset;
        n++;
    }
    char path[4096];
    const char* keys[] = {"format", "producer"};
    const char* values[] = {"pt", "repoc"};
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    st_write_filled(path, w, fills, n, keys, values, 2);
    free(w);
    free(fills);
    hf_save_config(m, dir, dtype);
}

void hf_save_config(const Model* m, const char* dir, StDtype dtype) {
    char path[4096];
    mkdir_p(dir);
    char* cfg = hf_config_write(&m->cfg, dtype == ST_BF16 ? "bfloat16" : "float32");
    snprintf(path, sizeof(path), "%s/config.json", dir);
    file_write_atomic(path, cfg, strlen(cfg));
    free(cfg);
    static bool noted; /* once per process: every checkpoint of a run has the same layout */
    char note[512];
    if (!noted && hf_config_release_note(&m->cfg, note, sizeof(note))) {
        printf("note: the checkpoints' config.json: %s\n", note); /* path: the save's temporary directory */
        noted = true;
    }
}

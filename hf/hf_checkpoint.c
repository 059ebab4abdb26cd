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
#include "common/hash.h" /* mix64 */
#include "hf/hf_config.h"
#include "hf/peft.h"

#define MAX_SHARDS 1024

typedef struct {
    char* file[MAX_SHARDS]; /* shard file names, relative to the directory */
    StFile st[MAX_SHARDS];
    size_t n;
} Shards;

/* the weight files of dir: the index's weight_map files, or model.safetensors */
static void list_shards(const char* dir, Shards* s, cJSON** index_out) {
    char path[4096];
    size_t len;
    snprintf(path, sizeof(path), "%s/model.safetensors.index.json", dir);
    char* text = file_read_all_or_null(path, &len);
    *index_out = NULL;
    if (!text) {
        snprintf(path, sizeof(path), "%s/model.safetensors", dir);
        CHECK(path_exists(path), "%s: no weights (expected model.safetensors or model.safetensors.index.json)", dir);
        s->file[s->n++] = strdup("model.safetensors");
        return;
    }
    cJSON* index = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON* map = index ? cJSON_GetObjectItemCaseSensitive(index, "weight_map") : NULL;
    CHECK(cJSON_IsObject(map), "%s: expected a JSON object with a 'weight_map' object", path);
    const cJSON* it;
    cJSON_ArrayForEach(it, map) {
        CHECK(cJSON_IsString(it) && it->valuestring[0] && !strchr(it->valuestring, '/'),
              "%s: weight_map['%s'] must be a file name in the same directory", path, it->string);
        size_t k = 0;
        while (k < s->n && strcmp(s->file[k], it->valuestring)) k++;
        if (k == s->n) {
            CHECK(s->n < MAX_SHARDS, "%s: more than %d shard files", path, MAX_SHARDS);
            s->file[s->n++] = strdup(it->valuestring);
        }
    }
    CHECK(s->n > 0, "%s: weight_map is empty", path);
    *index_out = index;
}

/* shard k of s (dir/file[k]) opened and validated; dies naming it */
static const StFile* shard_open(const char* dir, Shards* s, size_t k) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, s->file[k]);
    st_open_or_die(&s->st[k], path);
    return &s->st[k];
}

/* shard k closed and its name freed */
static void shard_close(Shards* s, size_t k) {
    st_close(&s->st[k]);
    free(s->file[k]);
}

/* drop the whole pages of t's bytes from this process (the page cache keeps them) */
static void release_pages(const StFile* f, const StTensor* t) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t b = (uintptr_t)(f->data + t->begin), e = (uintptr_t)(f->data + t->end);
    uintptr_t b_up = (b + page - 1) / page * page, e_down = e / page * page;
    if (e_down > b_up) madvise((void*)b_up, e_down - b_up, MADV_DONTNEED);
}

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
        release_pages(f, &part);
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
        release_pages(f, &part);
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
    list_shards(dir, &s, &index);
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

size_t hf_load_weights(Model* m, const char* dir, uint64_t init_seed, bool verbose) {
    return hf_load_adapted(m, dir, dir, init_seed, verbose);
}

size_t hf_load_adapted(Model* m, const char* dir, const char* adapter_dir, uint64_t init_seed, bool verbose) {
    const TensorTable* tt = &m->tensors;
    char* loaded = callocCheck(tt->n, 1);
    scan_weights(dir, tt, m->params, m->base_bf16, loaded);
    char adapter[4096];
    snprintf(adapter, sizeof(adapter), "%s/adapter_model.safetensors", adapter_dir ? adapter_dir : "");
    if (m->cfg.lora_rank && adapter_dir && path_exists(adapter)) peft_load(m, adapter_dir, loaded);
    static char fresh[4096];
    fresh[0] = 0;
    size_t n_fresh = 0, n_lora = 0;
    for (size_t i = 0; i < tt->n; i++) {
        if (loaded[i]) continue;                  /* scan_weights allows only RePo and LoRA tensors to be missing */
        model_init_tensor(m, i, init_seed, 0.02); /* a checkpoint without RePo (or LoRA) continued with them */
        if (tt->t[i].is_lora) n_lora++;
        else append(fresh, sizeof(fresh), tt->t[i].name);
        n_fresh++;
    }
    free(loaded);
    if (verbose) {
        printf("loaded %zu tensors from %s\n", tt->n - n_fresh, dir);
        if (n_fresh > n_lora)
            printf("  new RePo weights (N(0, 0.02²) truncated at ±3σ, seed %llu): %s\n", (unsigned long long)init_seed,
                   fresh);
        if (n_lora)
            printf("  new LoRA adapters: %zu tensors (A uniform in ±1/sqrt(in), B = 0, seed %llu)\n", n_lora,
                   (unsigned long long)init_seed);
    }
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
        if (t->is_lora) continue; /* adapters go to the PEFT files */
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
    if (m->cfg.lora_rank) peft_save(m, dir, false);
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
        printf("note: %s: %s\n", path, note);
        noted = true;
    }
}

/* 64 bits of b[0..n): four independent multiply-xor lanes over 8-byte words (memory-bound, not a
   cryptographic hash), the tail and the length folded in at the end */
static uint64_t hash_bytes(const uint8_t* b, size_t n, uint64_t seed) {
    uint64_t lane[4] = {seed ^ 0x243F6A8885A308D3ull, seed ^ 0x13198A2E03707344ull, seed ^ 0xA4093822299F31D0ull,
                        seed ^ 0x082EFA98EC4E6C89ull};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, b + i + 8 * k, 8);
            lane[k] = (lane[k] ^ w) * HASH_GOLDEN;
            lane[k] ^= lane[k] >> 29;
        }
    uint64_t h = seed ^ (uint64_t)n;
    for (int k = 0; k < 4; k++) h = mix64(h ^ lane[k]);
    for (; i < n; i++) h = mix64(h ^ b[i]);
    return h;
}

uint64_t hf_weights_fingerprint(const char* dir) {
    Shards s;
    memset(&s, 0, sizeof(s));
    cJSON* index;
    list_shards(dir, &s, &index);
    uint64_t sum = 0;
    for (size_t k = 0; k < s.n; k++) {
        const StFile* f = shard_open(dir, &s, k);
        for (size_t j = 0; j < f->n_tensors; j++) {
            const StTensor* st = &f->tensors[j];
            uint64_t h = hash_bytes((const uint8_t*)st->name, strlen(st->name), 0x6e616d65ull);
            h = mix64(h ^ (uint64_t)st->dtype);
            for (size_t d = 0; d < st->ndim; d++) h = mix64(h ^ st->shape[d]);
            sum += hash_bytes(f->data + st->begin, st->end - st->begin, h); /* a sum: shard order is free */
            release_pages(f, st); /* resident memory grows by one tensor at most, as in loading */
        }
        shard_close(&s, k);
    }
    cJSON_Delete(index);
    return sum;
}

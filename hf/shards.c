/* The weight files of a checkpoint directory (hf/shards.h). */
#include "hf/shards.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/check.h"
#include "common/fileio.h"

void shards_list(const char* dir, Shards* s, cJSON** index_out) {
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

const StFile* shard_open(const char* dir, Shards* s, size_t k) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, s->file[k]);
    st_open_or_die(&s->st[k], path);
    return &s->st[k];
}

void shard_close(Shards* s, size_t k) {
    st_close(&s->st[k]);
    free(s->file[k]);
}

void shard_release_pages(const StFile* f, const StTensor* t) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t b = (uintptr_t)(f->data + t->begin), e = (uintptr_t)(f->data + t->end);
    uintptr_t b_up = (b + page - 1) / page * page, e_down = e / page * page;
    if (e_down > b_up) madvise((void*)b_up, e_down - b_up, MADV_DONTNEED);
}

/* The weight files of a Hugging Face checkpoint directory: model.safetensors, or the shards that
   model.safetensors.index.json's weight_map lists, each opened, mapped and validated on demand. */
#ifndef REPOC_HF_SHARDS_H
#define REPOC_HF_SHARDS_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "common/safetensors.h"

#define MAX_SHARDS 1024

typedef struct {
    char* file[MAX_SHARDS]; /* shard file names, relative to the directory */
    StFile st[MAX_SHARDS];
    size_t n;
} Shards;

/* the weight files of dir into s (zeroed by the caller): the index's weight_map files, or model.safetensors;
   *index_out gets the parsed index (NULL without one; the caller frees it). Dies naming the file. */
void shards_list(const char* dir, Shards* s, cJSON** index_out);
/* shard k of s (dir/file[k]) opened and validated; dies naming it */
const StFile* shard_open(const char* dir, Shards* s, size_t k);
/* shard k closed and its name freed */
void shard_close(Shards* s, size_t k);
/* drop the whole pages of t's bytes from this process (the page cache keeps them) */
void shard_release_pages(const StFile* f, const StTensor* t);

#endif

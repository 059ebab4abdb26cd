/* Writing llm.c token shards (the format data/token_files.c reads): a header
   of 256 little-endian int32 {magic, version, n_tokens, vocab_size, 0...} and
   the tokens, uint16 (magic 20240520, version 1) when every id fits, else
   uint32 (magic 20240801, version 7). header[3] is repoc's addition: the
   vocabulary size of the tokenizer that wrote the shard (0 = unknown), which
   the reader checks against the model's vocab_size. A shard holds at most
   shard_tokens tokens; the writer opens PREFIX_NNNNNN.bin files as needed and
   creates none when no token comes. */
#ifndef REPOC_SHARD_WRITE_H
#define REPOC_SHARD_WRITE_H

#include <stdint.h>
#include <stdio.h>

typedef struct {
    char prefix[4096];       /* files are <prefix>_000000.bin, ... */
    size_t vocab_size;       /* written into header[3]; > 65536 means uint32 tokens */
    size_t shard_tokens;     /* tokens per shard (the last one may hold fewer) */
    FILE* fp;                /* the open shard, NULL when none */
    char path[4096 + 32];
    size_t in_shard;         /* tokens in the open shard */
    size_t n_shards, n_tokens;
} ShardWriter;

void shard_writer_init(ShardWriter* w, const char* prefix, size_t vocab_size, size_t shard_tokens);
void shard_write(ShardWriter* w, const int32_t* ids, size_t n);
/* finish the open shard (its header gets the count) */
void shard_writer_close(ShardWriter* w);

#endif

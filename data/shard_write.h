/* Writing llm.c token shards (the format data/token_files.c reads): a header
   of 256 little-endian int32 {magic, version, n_tokens, vocab_size, 0...} and
   the tokens, uint16 (magic 20240520, version 1) when every id fits, else
   uint32 (magic 20240801, version 7). header[3] is repoc's addition: the
   vocabulary size of the tokenizer that wrote the shard (0 = unknown), which
   the reader checks against the model's vocab_size. A shard holds at most
   shard_tokens tokens; the writer opens PREFIX_NNNNNN.bin files as needed and
   creates none when no token comes.

   Nothing is replaced before the whole output is known good: each shard is
   written to PREFIX_NNNNNN.bin.tmp.<pid> (fsynced when full), and only
   shard_writer_commit renames them all into place, then removes the shards
   PREFIX_NNNNNN.bin of an earlier run that this one did not write (exactly
   that naming: at least six digits as %06zu prints them, nothing else). A
   failed run removes its temporary files (shard_writer_discard); a killed
   one leaves them, and the next run to the prefix removes those whose pid is
   gone (shard_writer_sweep), and refuses to start when a shard name of the
   prefix is not a regular file (a symbolic link, FIFO or device): the rename
   would replace it rather than write where it points. */
#ifndef REPOC_SHARD_WRITE_H
#define REPOC_SHARD_WRITE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    char prefix[4096];    /* files are <prefix>_000000.bin, ... */
    size_t vocab_size;    /* written into header[3]; > 65536 means uint32 tokens */
    size_t shard_tokens;  /* tokens per shard (the last one may hold fewer) */
    FILE* fp;             /* the open shard, NULL when none */
    char path[4096 + 64]; /* its temporary name */
    size_t in_shard;      /* tokens in the open shard */
    size_t n_shards, n_tokens;
    bool committed; /* the shards have their final names */
} ShardWriter;

void shard_writer_init(ShardWriter* w, const char* prefix, size_t vocab_size, size_t shard_tokens);
void shard_write(ShardWriter* w, const int32_t* ids, size_t n);
/* finish the open shard (its header gets the count), still under its temporary name */
void shard_writer_close(ShardWriter* w);
/* Close, rename every shard into place, then remove the earlier run's shards numbered
   n_shards and up (and any temporary shard of a process that is gone); returns how many. Dies naming the file on an error. */
size_t shard_writer_commit(ShardWriter* w);
/* A failed run: its temporary files removed (unless committed); never dies (an exit handler) */
void shard_writer_discard(ShardWriter* w);
/* Remove the temporary shards of the prefix left by processes that are gone; returns how many.
   Dies when one of the prefix's shard names is not a regular file (a link, FIFO or device). */
size_t shard_writer_sweep(const ShardWriter* w);

#endif

/* llm.c shard writer (data/shard_write.h). */
#include "data/shard_write.h"

#include <string.h>

#include "common/check.h"

#define HEADER_INTS 256

static void put_le32(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void write_header(ShardWriter* w, size_t count) {
    uint8_t h[HEADER_INTS * 4] = {0};
    int wide = w->vocab_size > 65536;
    put_le32(h, wide ? 20240801u : 20240520u);
    put_le32(h + 4, wide ? 7u : 1u);
    put_le32(h + 8, (uint32_t)count);
    put_le32(h + 12, (uint32_t)w->vocab_size);
    CHECK(fseek(w->fp, 0, SEEK_SET) == 0, "cannot seek in '%s'", w->path);
    fwriteCheck(h, 1, sizeof h, w->fp, w->path);
    CHECK(fseek(w->fp, 0, SEEK_END) == 0, "cannot seek in '%s'", w->path);
}

void shard_writer_init(ShardWriter* w, const char* prefix, size_t vocab_size, size_t shard_tokens) {
    memset(w, 0, sizeof *w);
    snprintf(w->prefix, sizeof w->prefix, "%s", prefix);
    CHECK(vocab_size <= (size_t)INT32_MAX, "vocab size %zu does not fit an int32 shard header", vocab_size);
    CHECK(shard_tokens >= 1 && shard_tokens <= (size_t)INT32_MAX,
          "shard size %zu tokens out of range [1, 2^31-1] (the header holds an int32 count)", shard_tokens);
    w->vocab_size = vocab_size;
    w->shard_tokens = shard_tokens;
}

void shard_writer_close(ShardWriter* w) {
    if (!w->fp) return;
    write_header(w, w->in_shard);
    fcloseCheck(w->fp, w->path);
    w->fp = NULL;
}

void shard_write(ShardWriter* w, const int32_t* ids, size_t n) {
    size_t tb = w->vocab_size > 65536 ? 4 : 2;
    uint8_t buf[4096 * 4];
    while (n) {
        if (!w->fp) {
            snprintf(w->path, sizeof w->path, "%s_%06zu.bin", w->prefix, w->n_shards++);
            w->fp = fopenCheck(w->path, "wb");
            w->in_shard = 0;
            write_header(w, 0);
        }
        size_t take = w->shard_tokens - w->in_shard;
        if (take > n) take = n;
        if (take > sizeof buf / tb) take = sizeof buf / tb;
        for (size_t i = 0; i < take; i++) {
            uint32_t v = (uint32_t)ids[i];
            for (size_t b = 0; b < tb; b++) buf[i * tb + b] = (uint8_t)(v >> (8 * b));
        }
        fwriteCheck(buf, tb, take, w->fp, w->path);
        w->in_shard += take, w->n_tokens += take;
        ids += take, n -= take;
        if (w->in_shard == w->shard_tokens) shard_writer_close(w);
    }
}

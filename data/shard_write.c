/* llm.c shard writer (data/shard_write.h). */
#include "data/shard_write.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h> /* kill(pid, 0): is a pid alive */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/check.h"
#include "common/fileio.h"

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
    CHECK(fseek(w->fp, 0, SEEK_SET) == 0, "writing '%s': %s", w->path, strerror(errno)); /* flushes */
    fwriteCheck(h, 1, sizeof h, w->fp, w->path);
    CHECK(fseek(w->fp, 0, SEEK_END) == 0, "writing '%s': %s", w->path, strerror(errno));
}

/* shard i's final name (pid 0) or its temporary name for process pid, into out */
static void shard_name(const ShardWriter* w, size_t i, long pid, char* out, size_t len) {
    int n = pid ? snprintf(out, len, "%s_%06zu.bin.tmp.%ld", w->prefix, i, pid)
                : snprintf(out, len, "%s_%06zu.bin", w->prefix, i);
    CHECK(n > 0 && (size_t)n < len, "shard path too long: '%s'", w->prefix);
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
    CHECK(fflush(w->fp) == 0 && fsync(fileno(w->fp)) == 0, "writing '%s': %s", w->path, strerror(errno));
    fcloseCheck(w->fp, w->path);
    w->fp = NULL;
}

/* a new temporary shard: whatever is at its name (a leftover, a link) is replaced, never written through */
static void open_shard(ShardWriter* w) {
    shard_name(w, w->n_shards++, (long)getpid(), w->path, sizeof w->path);
    unlink(w->path);
    int fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    CHECK(fd >= 0, "cannot create '%s': %s", w->path, strerror(errno));
    w->fp = fdopen(fd, "wb");
    CHECK(w->fp, "cannot open '%s': %s", w->path, strerror(errno));
    w->in_shard = 0;
    write_header(w, 0);
}

void shard_write(ShardWriter* w, const int32_t* ids, size_t n) {
    size_t tb = w->vocab_size > 65536 ? 4 : 2;
    uint8_t buf[4096 * 4];
    while (n) {
        if (!w->fp) open_shard(w);
        size_t take = w->shard_tokens - w->in_shard;
        if (take > n) take = n;
        if (take > sizeof buf / tb) take = sizeof buf / tb;
        for (size_t i = 0; i < take; i++) {
            uint32_t v = (uint32_t)ids[i];
            for (size_t b = 0; b < tb; b++) buf[i * tb + b] = (uint8_t)(v >> (8 * b));
        }
        fwriteCheck(buf, tb, take, w->fp, w->path);
        w->in_shard += take;
        w->n_tokens += take;
        ids += take;
        n -= take;
        if (w->in_shard == w->shard_tokens) shard_writer_close(w);
    }
}

/* name (a directory entry) is <base>_<i>.bin, i as %06zu prints it (returns 1), or that plus
   .tmp.<pid> (returns 2, *pid set); anything else 0 */
static int parse_shard_name(const char* name, const char* base, size_t* index, long* pid) {
    size_t bl = strlen(base);
    if (strncmp(name, base, bl) || name[bl] != '_') return 0;
    const char* d = name + bl + 1;
    size_t nd = strspn(d, "0123456789");
    if (nd < 6 || nd > 18) return 0;
    char canon[32];
    *index = (size_t)strtoull(d, NULL, 10);
    snprintf(canon, sizeof canon, "%06zu", *index);
    if (strlen(canon) != nd || strncmp(canon, d, nd)) return 0;
    const char* rest = d + nd;
    if (!strcmp(rest, ".bin")) return 1;
    if (strncmp(rest, ".bin.tmp.", 9)) return 0;
    rest += 9;
    size_t np = strspn(rest, "0123456789");
    if (np == 0 || np > 9 || rest[np] || rest[0] == '0') return 0;
    *pid = atol(rest);
    return 2;
}

/* In the prefix's directory: remove the temporary shards of processes that are gone and the
   final shards numbered stale_from and up (none for SIZE_MAX); returns how many files. At the
   start (SIZE_MAX), a final name that is not a regular file (a link, FIFO, device) is refused:
   the rename at commit would replace it, not write where it points. */
static size_t remove_shards(const ShardWriter* w, size_t stale_from) {
    char dir[4096], path[8300];
    dir_of(w->prefix, dir, sizeof dir);
    const char* slash = strrchr(w->prefix, '/');
    const char* base = slash ? slash + 1 : w->prefix;
    DIR* d = opendir(dir);
    CHECK(d, "cannot list the directory '%s' of the shards: %s", dir, strerror(errno));
    size_t removed = 0;
    for (struct dirent* e; (e = readdir(d));) {
        size_t index;
        long pid = 0;
        int kind = parse_shard_name(e->d_name, base, &index, &pid);
        bool gone = kind == 2 && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (kind == 1 && stale_from == SIZE_MAX && lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
            DIE("shard '%s' is not a regular file (a symbolic link, FIFO or device): shards are replaced by "
                "renaming a new file over them, which would replace it; remove it or write to another prefix",
                path);
        if (!(kind == 1 && index >= stale_from) && !gone) continue;
        CHECK(unlink(path) == 0 || errno == ENOENT, "cannot remove '%s': %s", path, strerror(errno));
        removed++;
    }
    closedir(d);
    return removed;
}

size_t shard_writer_sweep(const ShardWriter* w) { return remove_shards(w, SIZE_MAX); }

size_t shard_writer_commit(ShardWriter* w) {
    shard_writer_close(w);
    char tmp[4096 + 64], final[4096 + 64], dir[4096];
    for (size_t i = 0; i < w->n_shards; i++) {
        shard_name(w, i, (long)getpid(), tmp, sizeof tmp);
        shard_name(w, i, 0, final, sizeof final);
        CHECK(rename(tmp, final) == 0, "renaming '%s' to '%s': %s", tmp, final, strerror(errno));
    }
    w->committed = true;
    size_t removed = remove_shards(w, w->n_shards);
    dir_of(w->prefix, dir, sizeof dir);
    fsync_dir(dir);
    return removed;
}

void shard_writer_discard(ShardWriter* w) {
    if (w->committed) return;
    if (w->fp) fclose(w->fp);
    w->fp = NULL;
    char tmp[4096 + 64];
    for (size_t i = 0; i < w->n_shards; i++) { /* each name was made once already: shard_name cannot die here */
        shard_name(w, i, (long)getpid(), tmp, sizeof tmp);
        unlink(tmp);
    }
}

/* The input files of build/tokenize as documents (data/text_input.h): plain files mapped (a pipe read whole),
   gzip and Zstandard streams decompressed into a buffer from which whole documents are cut. */
#include "data/text_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "common/check.h"
#include "common/mapped.h"

#define IN_CHUNK ((size_t)1 << 20) /* compressed bytes per read */

struct TextInput {
    const char* path;
    size_t file;
    bool jsonl;
    TextCompression comp;
    int fd;
    size_t disk_size, disk_read; /* the file's size (0 for a pipe), the bytes read of it */
    /* the text: data[start..end) not yet cut into documents; eof once nothing more will come */
    const uint8_t* data;
    uint8_t* buf; /* data when the text is decompressed or read from a pipe (else data is the mapping) */
    size_t start, end, cap, line;
    bool eof, mapped;
    /* the compressed input: in[in_pos..in_len) not yet decompressed; in_eof once read(2) returned 0 */
    uint8_t* in;
    size_t in_pos, in_len;
    bool in_eof;
    z_stream z;
    ZSTD_DStream* zs;
    size_t zstd_left; /* ZSTD_decompressStream's last hint: 0 at a frame's end */
};

static const uint8_t GZIP_MAGIC[2] = {0x1f, 0x8b}, ZSTD_MAGIC[4] = {0x28, 0xb5, 0x2f, 0xfd};

/* where the decompressor stands in the file: the bytes read less those not yet consumed */
static size_t in_offset(const TextInput* t) { return t->disk_read - (t->in_len - t->in_pos); }

/* more compressed bytes into in (what is left moved to the front); false at the end of the file */
static bool read_in(TextInput* t) {
    if (t->in_eof) return false;
    if (t->in_pos) {
        memmove(t->in, t->in + t->in_pos, t->in_len - t->in_pos);
        t->in_len -= t->in_pos;
        t->in_pos = 0;
    }
    ssize_t got = read(t->fd, t->in + t->in_len, IN_CHUNK - t->in_len);
    CHECK(got >= 0, "cannot read input '%s' at byte offset %zu: %s", t->path, t->disk_read, strerror(errno));
    t->in_eof = got == 0;
    t->in_len += (size_t)got;
    t->disk_read += (size_t)got;
    return got > 0;
}

/* room for `more` bytes after end, the part already cut dropped from the front */
static void make_room(TextInput* t, size_t more) {
    if (t->start) {
        memmove(t->buf, t->buf + t->start, t->end - t->start);
        t->end -= t->start;
        t->start = 0;
    }
    if (t->end + more > t->cap) {
        size_t cap = t->cap ? t->cap : TEXT_INPUT_CHUNK;
        while (cap < t->end + more) cap *= 2;
        uint8_t* b = realloc(t->buf, cap);
        CHECK(b, "out of memory: %zu bytes for the text of '%s'", cap, t->path);
        t->buf = b;
        t->cap = cap;
    }
    t->data = t->buf;
}

/* gzip: up to room bytes of text at buf + end; members one after another are one text */
static size_t inflate_some(TextInput* t, size_t room) {
    t->z.next_out = t->buf + t->end;
    t->z.avail_out = (uInt)room;
    while (t->z.avail_out) {
        if (t->in_pos == t->in_len && !read_in(t))
            DIE("'%s' ends inside its gzip stream (at byte offset %zu): the file is truncated", t->path, t->disk_read);
        t->z.next_in = t->in + t->in_pos;
        t->z.avail_in = (uInt)(t->in_len - t->in_pos);
        int r = inflate(&t->z, Z_NO_FLUSH);
        t->in_pos = t->in_len - t->z.avail_in;
        CHECK(r == Z_OK || r == Z_STREAM_END || r == Z_BUF_ERROR, "'%s': corrupt gzip data at byte offset %zu: %s",
              t->path, in_offset(t), t->z.msg ? t->z.msg : zError(r));
        if (r != Z_STREAM_END) continue;
        /* a member ended: another may follow (pigz, bgzip, cat a.gz b.gz) */
        if (t->in_pos == t->in_len) read_in(t);
        if (t->in_pos == t->in_len) {
            t->eof = true;
            break;
        }
        CHECK(t->in_len - t->in_pos >= 2 && !memcmp(t->in + t->in_pos, GZIP_MAGIC, 2),
              "'%s': the bytes at byte offset %zu, after a complete gzip member, are not another gzip member", t->path,
              in_offset(t));
        inflateReset(&t->z);
    }
    return room - t->z.avail_out;
}

/* Zstandard: up to room bytes of text at buf + end; any number of frames */
static size_t unzstd_some(TextInput* t, size_t room) {
    ZSTD_outBuffer out = {t->buf + t->end, room, 0};
    while (out.pos < out.size) {
        if (t->in_pos == t->in_len && !read_in(t)) {
            CHECK(t->zstd_left == 0, "'%s' ends inside a Zstandard frame (at byte offset %zu): the file is truncated",
                  t->path, t->disk_read);
            t->eof = true;
            break;
        }
        ZSTD_inBuffer in = {t->in, t->in_len, t->in_pos};
        size_t r = ZSTD_decompressStream(t->zs, &out, &in);
        t->in_pos = in.pos;
        CHECK(!ZSTD_isError(r), "'%s': corrupt Zstandard data at byte offset %zu: %s", t->path, in_offset(t),
              ZSTD_getErrorName(r));
        t->zstd_left = r;
    }
    return out.pos;
}

/* decompressed text until want bytes wait to be cut, or the end */
static void fill(TextInput* t, size_t want) {
    while (!t->eof && t->end - t->start < want) {
        make_room(t, TEXT_INPUT_CHUNK);
        t->end += t->comp == TEXT_GZIP ? inflate_some(t, TEXT_INPUT_CHUNK) : unzstd_some(t, TEXT_INPUT_CHUNK);
    }
}

/* a pipe or device, plain: read whole, the bytes already read for the magic first */
static void read_whole(TextInput* t) {
    make_room(t, t->in_len);
    memcpy(t->buf, t->in, t->in_len);
    t->end = t->in_len;
    for (;;) {
        make_room(t, TEXT_INPUT_CHUNK);
        ssize_t got = read(t->fd, t->buf + t->end, t->cap - t->end);
        CHECK(got >= 0, "cannot read input '%s': %s", t->path, strerror(errno));
        if (!got) break;
        t->end += (size_t)got;
    }
    t->eof = true;
}

const char* text_input_os_path(const char* path) { return strcmp(path, "-") ? path : "/dev/stdin"; }

TextInput* text_input_open(const char* path, size_t file, bool jsonl) {
    TextInput* t = calloc(1, sizeof *t);
    CHECK(t, "out of memory opening '%s'", path);
    t->path = path;
    t->file = file;
    t->jsonl = jsonl;
    t->fd = open(text_input_os_path(path), O_RDONLY);
    CHECK(t->fd >= 0, "cannot open input '%s': %s", path, strerror(errno));
    struct stat st;
    CHECK(fstat(t->fd, &st) == 0, "cannot stat input '%s': %s", path, strerror(errno));
    t->in = mallocCheck(IN_CHUNK);
    while (t->in_len < 4 && read_in(t)) {} /* the first bytes say what the file is */
    if (t->in_len >= 2 && !memcmp(t->in, GZIP_MAGIC, 2)) t->comp = TEXT_GZIP;
    else if (t->in_len >= 4 && !memcmp(t->in, ZSTD_MAGIC, 4)) t->comp = TEXT_ZSTD;
    if (t->comp == TEXT_GZIP) CHECK(inflateInit2(&t->z, 16 + MAX_WBITS) == Z_OK, "zlib: cannot start inflating");
    if (t->comp == TEXT_ZSTD) CHECK((t->zs = ZSTD_createDStream()) != NULL, "libzstd: cannot start decompressing");
    if (S_ISREG(st.st_mode)) t->disk_size = (size_t)st.st_size;
    if (t->comp != TEXT_PLAIN) return t;
    if (!S_ISREG(st.st_mode)) {
        read_whole(t);
        return t;
    }
    t->end = (size_t)st.st_size; /* a regular plain file: mapped */
    t->eof = true;
    if (t->end) {
        void* m = mmap(NULL, t->end, PROT_READ, MAP_PRIVATE, t->fd, 0);
        CHECK(m != MAP_FAILED, "cannot mmap input '%s' (%zu bytes): %s", path, t->end, strerror(errno));
        madvise(m, t->end, MADV_SEQUENTIAL);
        mapped_add(m, t->end, path); /* a file that shrinks meanwhile: a named error, not a bare SIGBUS */
        t->data = m;
        t->mapped = true;
    }
    t->disk_read = t->end;
    return t;
}

/* the next document of data[start..end) into *d; false when it needs more text (or there is none) */
static bool cut_one(TextInput* t, TextDoc* d) {
    while (t->start < t->end) {
        const uint8_t* p = t->data + t->start;
        size_t n = t->end - t->start;
        const uint8_t* nl = t->jsonl ? memchr(p, '\n', n) : NULL;
        if (!nl && !t->eof) return false; /* the document goes on past what is decompressed */
        size_t len = nl ? (size_t)(nl - p) : n;
        t->start += nl ? len + 1 : len;
        t->line++;
        bool blank = t->jsonl; /* a JSONL line of only white space holds no document */
        for (size_t k = 0; k < len && blank; k++) blank = p[k] == ' ' || p[k] == '\t' || p[k] == '\r';
        if (blank) continue;
        *d = (TextDoc){p, len, t->file, t->line};
        return true;
    }
    return false;
}

size_t text_input_next(TextInput* t, TextDoc* docs, size_t max_docs, size_t max_bytes) {
    if (t->comp != TEXT_PLAIN) fill(t, t->jsonl ? max_bytes : SIZE_MAX);
    size_t n = 0, bytes = 0;
    while (n < max_docs) {
        size_t start = t->start, line = t->line;
        if (!cut_one(t, &docs[n])) break;
        if (n && bytes + docs[n].len > max_bytes) { /* the next batch's first */
            t->start = start;
            t->line = line;
            break;
        }
        bytes += docs[n++].len;
    }
    if (n || t->eof) return n;
    fill(t, t->end - t->start + TEXT_INPUT_CHUNK); /* one line longer than the buffer: read on */
    return text_input_next(t, docs, max_docs, max_bytes);
}

size_t text_input_size(const TextInput* t) { return t->disk_size; }
size_t text_input_read(const TextInput* t) { return t->comp == TEXT_PLAIN ? t->start : in_offset(t); }
TextCompression text_input_compression(const TextInput* t) { return t->comp; }

void text_input_close(TextInput* t) {
    if (!t) return;
    if (t->mapped) {
        mapped_remove(t->data);
        munmap((void*)t->data, t->end);
    }
    if (t->comp == TEXT_GZIP) inflateEnd(&t->z);
    ZSTD_freeDStream(t->zs);
    close(t->fd);
    free(t->buf);
    free(t->in);
    free(t);
}

TextCompression text_input_sniff(const char* path, bool* regular) {
    int fd = open(text_input_os_path(path), O_RDONLY);
    CHECK(fd >= 0, "cannot open input '%s': %s", path, strerror(errno));
    struct stat st;
    CHECK(fstat(fd, &st) == 0, "cannot stat input '%s': %s", path, strerror(errno));
    *regular = S_ISREG(st.st_mode);
    uint8_t head[4];
    ssize_t got = *regular ? pread(fd, head, 4, 0) : 0;
    close(fd);
    if (got >= 2 && !memcmp(head, GZIP_MAGIC, 2)) return TEXT_GZIP;
    if (got >= 4 && !memcmp(head, ZSTD_MAGIC, 4)) return TEXT_ZSTD;
    return TEXT_PLAIN;
}

size_t text_input_count(const char* path, size_t file, bool jsonl) {
    TextInput* t = text_input_open(path, file, jsonl);
    TextDoc docs[1024];
    size_t n = 0, got;
    while ((got = text_input_next(t, docs, 1024, TEXT_INPUT_CHUNK))) n += got;
    text_input_close(t);
    return n;
}

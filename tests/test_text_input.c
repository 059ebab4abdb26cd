/* data/text_input.c: a JSONL corpus of 20 MB (lines of 0 to 40000 bytes, blank lines, one line of 9 MB, longer
   than the 8 MB buffer, no newline at the end) gives the same documents, lines and bytes plain, gzip (two
   members), Zstandard (two frames) and piped, in batches of any size; a plain and a gzip text file are one
   document each; an empty file none. A truncated or corrupt stream stops naming the file and the byte
   offset. The streams are written here with zlib and libzstd, so the test needs no tool. */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "common/check.h"
#include "common/fileio.h"
#include "common/rng.h"
#include "data/text_input.h"
#include "tests/testutil.h"

static char root[] = "/tmp/repoc_text_input.XXXXXX";

static void write_file(const char* path, const void* p, size_t n) {
    FILE* f = fopenCheck(path, "wb");
    CHECK(fwrite(p, 1, n, f) == n, "writing %s", path);
    fcloseCheck(f, path);
}

/* p[0..n) as gzip members, one per half */
static size_t gzip_two(const uint8_t* p, size_t n, uint8_t* out, size_t cap) {
    size_t k = 0;
    for (int half = 0; half < 2; half++) {
        size_t a = half ? n / 2 : 0, b = half ? n : n / 2;
        z_stream z = {0};
        CHECK(deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2");
        z.next_in = (Bytef*)(p + a);
        z.avail_in = (uInt)(b - a);
        z.next_out = out + k;
        z.avail_out = (uInt)(cap - k);
        CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END, "deflate");
        k = cap - z.avail_out;
        deflateEnd(&z);
    }
    return k;
}

/* p[0..n) as Zstandard frames, one per half, each with its checksum as the zstd tool writes them */
static size_t zstd_two(const uint8_t* p, size_t n, uint8_t* out, size_t cap) {
    ZSTD_CCtx* c = ZSTD_createCCtx();
    CHECK(c && !ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1)), "ZSTD_CCtx_setParameter");
    size_t k = ZSTD_compress2(c, out, cap, p, n / 2);
    CHECK(!ZSTD_isError(k), "ZSTD_compress2");
    size_t k2 = ZSTD_compress2(c, out + k, cap - k, p + n / 2, n - n / 2);
    CHECK(!ZSTD_isError(k2), "ZSTD_compress2");
    ZSTD_freeCCtx(c);
    return k + k2;
}

/* the documents of path, batch by batch of max_bytes, as one hash of (line, length, bytes) and a count */
static uint64_t digest(const char* path, bool jsonl, size_t max_bytes, size_t* n_docs) {
    TextInput* in = text_input_open(path, 0, jsonl);
    TextDoc docs[64];
    uint64_t h = 1469598103934665603ull;
    *n_docs = 0;
    for (size_t n; (n = text_input_next(in, docs, 64, max_bytes)) != 0;) {
        for (size_t i = 0; i < n; i++) {
            h = (h ^ docs[i].line) * 1099511628211ull;
            h = (h ^ docs[i].len) * 1099511628211ull;
            for (size_t k = 0; k < docs[i].len; k++) h = (h ^ docs[i].text[k]) * 1099511628211ull;
        }
        *n_docs += n;
    }
    text_input_close(in);
    return h;
}

typedef struct {
    const char* path;
} Open;

static void read_all(void* arg) {
    size_t n;
    digest(((Open*)arg)->path, true, TEXT_INPUT_CHUNK, &n);
    printf("read %zu documents without an error\n", n);
}

int main(void) {
    CHECK(mkdtemp(root), "mkdtemp");
    size_t cap = (size_t)24 << 20, n = 0;
    uint8_t* text = mallocCheck(cap);
    Rng r;
    rng_seed(&r, 5);
    for (size_t line = 0; n < ((size_t)20 << 20); line++) {
        size_t len = line == 300 ? ((size_t)9 << 20) : rng_below(&r, 40000);
        if (line % 17 == 0) len = 0; /* a blank line */
        if (len) n += (size_t)snprintf((char*)text + n, cap - n, "{\"text\": \"");
        for (size_t k = 0; k < len; k++) text[n++] = (uint8_t)('a' + rng_below(&r, 26));
        if (len) n += (size_t)snprintf((char*)text + n, cap - n, "\"}");
        text[n++] = '\n';
    }
    n--; /* no newline after the last line */
    char plain[128], gz[128], zst[128], piped[160], path[160];
    snprintf(plain, sizeof plain, "%s/c.jsonl", root);
    snprintf(gz, sizeof gz, "%s/c.jsonl.gz", root);
    snprintf(zst, sizeof zst, "%s/c.data", root); /* the name says nothing: the first bytes do */
    write_file(plain, text, n);
    uint8_t* packed = mallocCheck(cap);
    size_t gz_len = gzip_two(text, n, packed, cap);
    write_file(gz, packed, gz_len);
    size_t zst_len = zstd_two(text, n, packed, cap);
    write_file(zst, packed, zst_len);

    size_t n_plain, n_other;
    uint64_t want = digest(plain, true, (size_t)32 << 20, &n_plain);
    EXPECT(n_plain > 500, "the plain file: %zu documents", n_plain);
    const char* files[] = {plain, gz, zst};
    const size_t batches[] = {1, 100000, (size_t)32 << 20};
    for (size_t f = 0; f < 3; f++)
        for (size_t b = 0; b < 3; b++) {
            uint64_t got = digest(files[f], true, batches[b], &n_other);
            EXPECT(got == want && n_other == n_plain, "%s, batches of %zu bytes: %zu documents, %s", files[f],
                   batches[b], n_other, got == want ? "the same lines and bytes" : "OTHER documents");
        }
    snprintf(piped, sizeof piped, "/dev/fd/%d", open(gz, O_RDONLY)); /* not a regular file: read, not mapped */
    uint64_t got = digest(piped, true, TEXT_INPUT_CHUNK, &n_other);
    EXPECT(got == want && n_other == n_plain, "gzip through a file descriptor: %zu documents", n_other);

    /* text files: one document each, empty: none */
    snprintf(path, sizeof path, "%s/t.txt.gz", root);
    write_file(path, packed, gzip_two(text, 5000, packed, cap));
    TextInput* in = text_input_open(path, 3, false);
    TextDoc d[4];
    size_t k = text_input_next(in, d, 4, 10);
    EXPECT(k == 1 && d[0].len == 5000 && !memcmp(d[0].text, text, 5000) && d[0].file == 3,
           "a gzip text file is one document of its 5000 bytes");
    EXPECT(text_input_next(in, d, 4, 10) == 0, "... and then the end");
    text_input_close(in);
    snprintf(path, sizeof path, "%s/empty.txt", root);
    write_file(path, "", 0);
    in = text_input_open(path, 0, false);
    EXPECT(text_input_next(in, d, 4, 10) == 0, "an empty file holds no document");
    text_input_close(in);

    /* truncated and corrupt streams */
    gz_len = gzip_two(text, 1 << 20, packed, cap);
    snprintf(path, sizeof path, "%s/trunc.gz", root);
    write_file(path, packed, gz_len / 3);
    char at[64];
    snprintf(at, sizeof at, "(at byte offset %zu)", gz_len / 3);
    expect_dies_with("a truncated gzip file", read_all, &(Open){path},
                     (const char* const[]){"trunc.gz' ends inside its gzip stream", at, "truncated", NULL});
    zst_len = zstd_two(text, 1 << 20, packed, cap);
    snprintf(path, sizeof path, "%s/trunc.zst", root);
    write_file(path, packed, zst_len - 10);
    snprintf(at, sizeof at, "(at byte offset %zu)", zst_len - 10);
    expect_dies_with("a truncated Zstandard file", read_all, &(Open){path},
                     (const char* const[]){"trunc.zst' ends inside a Zstandard frame", at, NULL});
    packed[zst_len / 2] ^= 0xff;
    snprintf(path, sizeof path, "%s/corrupt.zst", root);
    write_file(path, packed, zst_len);
    expect_dies_with("a corrupt Zstandard file", read_all, &(Open){path},
                     (const char* const[]){"corrupt.zst': corrupt Zstandard data at byte offset", NULL});
    gz_len = gzip_two(text, 1 << 20, packed, cap);
    memcpy(packed + gz_len, "junk", 4);
    snprintf(path, sizeof path, "%s/junk.gz", root);
    write_file(path, packed, gz_len + 4);
    snprintf(at, sizeof at, "the bytes at byte offset %zu, after a complete gzip member", gz_len);
    expect_dies_with("bytes after the last gzip member", read_all, &(Open){path}, (const char* const[]){at, NULL});

    free(text);
    free(packed);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0, "%s", cmd);
    printf("test_text_input: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures != 0;
}

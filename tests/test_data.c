/* Tests of the token files and batch rows (data/tokens.c, data/token_files.c;
   docs/formats.md, "Token files"). Writes small files of every format into a
   mkdtemp directory and checks: each format reads the same tokens, the
   sequential formula, shuffle reproducibility, the data-parallel invariant
   (rows split over calls = rows in one call), and every error message, each
   in a fork()ed child whose exit status and stderr are checked. Prints one
   OK / NOT OK line per check; exits non-zero on any failure. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h> /* waitpid: the dying children */
#include <unistd.h>   /* fork, pipe, mkdtemp's rmdir */

#include "common/check.h"
#include "tests/testutil.h"
#include "data/tokens.h"

static char dir[64];
static char written[64][128]; /* every file made, removed at the end */
static size_t n_written;

/* ---- writing the files ---- */

/* dir/name in one of four rotating buffers (a call may hold a few at once) */
static const char* path_of(const char* name) {
    static char buf[4][160];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* dir/name := a then b; remembered for the clean-up */
static void write_bytes(const char* name, const void* a, size_t na, const void* b, size_t nb) {
    const char* path = path_of(name);
    FILE* fp = fopenCheck(path, "wb");
    if (na) fwriteCheck(a, 1, na, fp, path);
    if (nb) fwriteCheck(b, 1, nb, fp, path);
    fcloseCheck(fp, path);
    snprintf(written[n_written++], sizeof written[0], "%s", path);
}

/* little-endian packing of n tokens at tb bytes each (tb = 2 or 4) */
static uint8_t* pack(const uint32_t* tok, size_t n, size_t tb) {
    uint8_t* out = mallocCheck(n * tb);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < tb; k++) out[i * tb + k] = (uint8_t)(tok[i] >> (8 * k));
    return out;
}

/* llm.c shard: int32 header[256] = {magic, version, count}, then the tokens */
static void write_llmc(const char* name, int32_t magic, int32_t version, int32_t count, const uint32_t* tok, size_t n,
                       size_t tb) {
    int32_t header[256] = {magic, version, count};
    uint8_t* data = pack(tok, n, tb);
    write_bytes(name, header, sizeof header, data, n * tb);
    free(data);
}

/* .npy as numpy writes it: magic, version, header length, the dict padded with
   spaces to `align` and ended by '\n'; major 1 = u16 length, 2 = u32 length */
static void write_npy(const char* name, int major, const char* dict, size_t align, const uint32_t* tok, size_t n,
                      size_t tb) {
    size_t pre = major == 1 ? 10 : 12, len = strlen(dict) + 1;
    while ((pre + len) % align) len++;
    uint8_t* head = mallocCheck(pre + len);
    memcpy(head, "\x93NUMPY", 6);
    head[6] = (uint8_t)major;
    head[7] = 0;
    for (size_t k = 0; k < pre - 8; k++) head[8 + k] = (uint8_t)(len >> (8 * k));
    memset(head + pre, ' ', len);
    memcpy(head + pre, dict, strlen(dict));
    head[pre + len - 1] = '\n';
    uint8_t* data = pack(tok, n, tb);
    write_bytes(name, head, pre + len, data, n * tb);
    free(head);
    free(data);
}

/* .u16 / .u32: the packed tokens and nothing else */
static void write_raw(const char* name, const uint32_t* tok, size_t n, size_t tb) {
    uint8_t* data = pack(tok, n, tb);
    write_bytes(name, data, n * tb, NULL, 0);
    free(data);
}

/* ---- running a call that must die ---- */

typedef struct { /* one token_data_open (and maybe one row) to run */
    const char* patterns[4];
    size_t n_patterns;
    const char* format;
    size_t vocab;
    size_t T; /* > 0: also ask for one row of this length */
} OpenCall;

/* the call itself; in a child it either dies (the expected case) or returns */
static void call_open(const OpenCall* c) {
    TokenData td;
    token_data_open(&td, c->patterns, c->n_patterns, c->format, c->vocab);
    if (c->T) {
        int32_t* x = mallocCheck(2 * c->T * sizeof *x);
        token_data_rows(
            &td, &(RowRequest){.order = ORDER_SEQUENTIAL, .seed = 0, .step = 0, .rows_per_step = 1, .n = 1, .T = c->T},
            x, x + c->T);
    }
}

/* Run the call in a fresh process (fork + exec of this program with
   "--open"; a plain fork would inherit a dead OpenMP thread pool and hang)
   with stderr captured; OK when it exits 1 and stderr contains `expect`. */
static void expect_death(const char* label, const OpenCall* c, const char* expect) {
    char vocab[32], T[32];
    snprintf(vocab, sizeof vocab, "%zu", c->vocab);
    snprintf(T, sizeof T, "%zu", c->T);
    char* argv[9] = {"test_data", "--open", (char*)c->format, vocab, T};
    for (size_t i = 0; i < c->n_patterns; i++) argv[5 + i] = (char*)c->patterns[i];
    char err[2048];
    int code = run_self_captured(argv, err, sizeof err);
    int exited1 = code == 1;
    char* nl = strchr(err, '\n');
    if (nl) *nl = '\0';
    report(exited1 && strstr(err, expect) != NULL, "%s: exit %d, stderr \"%s\"", label, code, err);
    if (!strstr(err, expect)) printf("       expected stderr to contain \"%s\"\n", expect);
}

/* ---- the checks ---- */

#define N_TOK 1000
static uint32_t src[N_TOK];   /* ids < 100000, some above 65535 for the uint32 formats */
static uint32_t src16[N_TOK]; /* the same, < 50000 */

/* Every format, auto-detected and named, reads back exactly the tokens written */
static void test_formats(void) {
    for (size_t i = 0; i < N_TOK; i++) {
        src[i] = (uint32_t)((i * 7919u + 13u) % 100000u);
        src16[i] = src[i] % 50000u;
    }
    char dict[128];
    write_llmc("a16.bin", 20240520, 1, N_TOK, src16, N_TOK, 2);
    write_llmc("a32.bin", 20240801, 7, N_TOK, src, N_TOK, 4);
    snprintf(dict, sizeof dict, "{'descr': '<u2', 'fortran_order': False, 'shape': (%d,), }", N_TOK);
    write_npy("a16.npy", 1, dict, 64, src16, N_TOK, 2);
    snprintf(dict, sizeof dict, "{\"descr\":\"<u4\",\"shape\":( %d , ),\"fortran_order\":True}", N_TOK);
    write_npy("a32v2.npy", 2, dict, 1, src, N_TOK, 4); /* unpadded: the data starts at an odd offset */
    write_raw("a16.u16", src16, N_TOK, 2);
    write_raw("a32.u32", src, N_TOK, 4);
    write_raw("olmo.npy", src, N_TOK, 4); /* OLMo and Dolma: a raw uint32 memmap named .npy */
    static const struct {
        const char* name;
        const char* fmt;
        int wide;
    } cases[] = {{"a16.bin", "bin", 0}, {"a32.bin", "bin", 1}, {"a16.npy", "npy", 0}, {"a32v2.npy", "npy", 1},
                 {"a16.u16", "u16", 0}, {"a32.u32", "u32", 1}, {"olmo.npy", "u32", 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int named = !strcmp(cases[c].name, "olmo.npy"); named < 2; named++) { /* olmo.npy: named only */
            const char* p = path_of(cases[c].name);
            TokenData td;
            token_data_open(&td, &p, 1, named ? cases[c].fmt : "auto", 100000);
            const uint32_t* want = cases[c].wide ? src : src16;
            size_t bad = 0;
            for (size_t i = 0; i < N_TOK && td.n_tokens == N_TOK; i++) bad += token_data_at(&td, i) != want[i];
            report(td.n_tokens == N_TOK && bad == 0 && strcmp(td.files[0].format, cases[c].fmt) == 0,
                   "format %-4s (%s) %-10s: %zu tokens, %zu mismatches", cases[c].fmt, named ? "named" : "auto ",
                   cases[c].name, td.n_tokens, bad);
            token_data_close(&td);
        }
    }
}

/* Three files given out of order and twice: one stream in byte-wise path order */
static void test_concat(TokenData* td) {
    write_raw("part_c.u16", src16 + 600, 400, 2);
    write_raw("part_a.u16", src16, 250, 2);
    write_raw("part_b.u16", src16 + 250, 350, 2);
    const char* pats[3] = {path_of("part_c.u16"), path_of("part_[ab].u16"), path_of("part_*.u16")};
    token_data_open(td, pats, 3, "auto", 50000);
    size_t bad = 0;
    for (size_t i = 0; i < N_TOK && td->n_tokens == N_TOK; i++) bad += token_data_at(td, i) != src16[i];
    report(td->n_files == 3 && td->n_tokens == N_TOK && bad == 0,
           "globs + duplicates: %zu files, %zu tokens in path order, %zu mismatches", td->n_files, td->n_tokens, bad);
}

/* Sequential rows follow start = ((s*R + r)*T) mod N, wrapping round the stream */
static void test_sequential(const TokenData* td) {
    const size_t R = 5, T = 64;
    int32_t x[5 * 64], y[5 * 64];
    size_t bad = 0, wrapped = 0;
    for (size_t s = 0; s < 12; s++) {
        token_data_rows(
            td, &(RowRequest){.order = ORDER_SEQUENTIAL, .seed = 0, .step = s, .rows_per_step = R, .n = R, .T = T}, x,
            y);
        for (size_t r = 0; r < R; r++) {
            size_t start = ((s * R + r) * T) % N_TOK;
            wrapped += start + T >= N_TOK;
            for (size_t t = 0; t < T; t++) {
                bad += x[r * T + t] != (int32_t)src16[(start + t) % N_TOK];
                bad += y[r * T + t] != (int32_t)src16[(start + t + 1) % N_TOK];
            }
        }
    }
    report(bad == 0 && wrapped > 0,
           "sequential: 12 steps x 5 rows match the formula "
           "(%zu rows cross the end of the stream), %zu mismatches",
           wrapped, bad);
}

static int same(const int32_t* a, const int32_t* b, size_t n) { return memcmp(a, b, n * sizeof *a) == 0; }

/* Shuffle: contiguous windows in range, a function of (seed, step) only */
static void test_shuffle(const TokenData* td) {
    enum { R = 8, T = 32 };
    int32_t x[R * T], y[R * T], x2[R * T], y2[R * T];
    token_data_rows(
        td, &(RowRequest){.order = ORDER_SHUFFLE, .seed = 42, .step = 7, .rows_per_step = R, .n = R, .T = T}, x, y);
    token_data_rows(
        td, &(RowRequest){.order = ORDER_SHUFFLE, .seed = 42, .step = 7, .rows_per_step = R, .n = R, .T = T}, x2, y2);
    report(same(x, x2, R * T) && same(y, y2, R * T), "shuffle: (seed 42, step 7) twice gives the same rows");
    token_data_rows(
        td, &(RowRequest){.order = ORDER_SHUFFLE, .seed = 42, .step = 8, .rows_per_step = R, .n = R, .T = T}, x2, y2);
    report(!same(x, x2, R * T), "shuffle: step 8 differs from step 7");
    token_data_rows(
        td, &(RowRequest){.order = ORDER_SHUFFLE, .seed = 43, .step = 7, .rows_per_step = R, .n = R, .T = T}, x2, y2);
    report(!same(x, x2, R * T), "shuffle: seed 43 differs from seed 42");
    size_t bad = 0, lo = N_TOK, hi = 0;
    for (size_t s = 0; s < 200; s++) {
        token_data_rows(
            td, &(RowRequest){.order = ORDER_SHUFFLE, .seed = 42, .step = s, .rows_per_step = R, .n = R, .T = T}, x, y);
        for (size_t r = 0; r < R; r++) {
            size_t start = token_data_row_start(td, ORDER_SHUFFLE, 42, s, R, r, T);
            bad += start + T > N_TOK - 1;
            if (start < lo) lo = start;
            if (start > hi) hi = start;
            for (size_t t = 0; t < T && start + T < N_TOK; t++)
                bad += x[r * T + t] != (int32_t)src16[start + t] || y[r * T + t] != (int32_t)src16[start + t + 1];
        }
    }
    report(bad == 0 && lo < 20 && hi > N_TOK - T - 20,
           "shuffle: 1600 rows are windows of the "
           "stream, starts span [%zu, %zu] of [0, %d], %zu bad",
           lo, hi, N_TOK - T - 1, bad);
}

/* The data-parallel invariant: rows [0, R) in one call = [0, k) + [k, R) */
static void test_split(const TokenData* td) {
    enum { R = 7, T = 48 };
    for (int o = 0; o < 2; o++) {
        DataOrder order = o ? ORDER_SHUFFLE : ORDER_SEQUENTIAL;
        int32_t x[R * T], y[R * T], xs[R * T], ys[R * T];
        int ok = 1;
        for (size_t s = 0; s < 30; s++) {
            token_data_rows(td, &(RowRequest){.order = order, .seed = 5, .step = s, .rows_per_step = R, .n = R, .T = T},
                            x, y);
            size_t k = s % R;
            token_data_rows(td, &(RowRequest){.order = order, .seed = 5, .step = s, .rows_per_step = R, .n = k, .T = T},
                            xs, ys);
            token_data_rows(
                td,
                &(RowRequest){.order = order, .seed = 5, .step = s, .rows_per_step = R, .row0 = k, .n = R - k, .T = T},
                xs + k * T, ys + k * T);
            ok &= same(x, xs, R * T) && same(y, ys, R * T);
        }
        report(ok, "%s: rows split over two calls (row0, n_rows) = rows in one call, 30 steps",
               o ? "shuffle" : "sequential");
    }
}

/* Every malformed input dies with a message naming the file and offset */
static void test_errors(void) {
    /* 64 small tokens, one of them (index 37) = 5000 >= the vocab of 1000 */
    uint32_t tok[64];
    for (size_t i = 0; i < 64; i++) tok[i] = (uint32_t)i;
    tok[37] = 5000;
    write_llmc("bad_tok.bin", 20240520, 1, 64, tok, 64, 2);
    write_raw("bad_tok.u32", tok, 64, 4);
    write_npy("bad_tok.npy", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (64,), }", 64, tok, 64, 2);
    tok[37] = 37;
    write_llmc("bad_magic.bin", 20240521, 1, 64, tok, 64, 2);
    write_llmc("bad_version.bin", 20240801, 1, 64, tok, 64, 4);
    write_llmc("short.bin", 20240520, 1, 100, tok, 64, 2);
    write_llmc("long.bin", 20240520, 1, 60, tok, 64, 2);
    write_bytes("short_header.bin", tok, 100, NULL, 0);
    write_npy("i4.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (64,), }", 64, tok, 64, 4);
    write_npy("be.npy", 1, "{'descr': '>u2', 'fortran_order': False, 'shape': (64,), }", 64, tok, 64, 2);
    write_npy("2d.npy", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (8, 8), }", 64, tok, 64, 2);
    write_npy("short.npy", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (65,), }", 64, tok, 64, 2);
    write_npy("garbled.npy", 1, "{'descr': '<u2', 'fortran_order': Maybe, 'shape': (64,), }", 64, tok, 64, 2);
    write_bytes("odd.u16", tok, 63, NULL, 0);
    write_bytes("empty.u16", NULL, 0, NULL, 0);
    write_bytes("mystery.dat", tok, 64, NULL, 0);
    write_llmc("zero.bin", 20240520, 1, 0, tok, 0, 2);
    write_raw("a_small.u16", tok, 64, 2); /* valid; sorts before bad_tok.u32 */

    /* each case: the file, the format asked for, T (0: open only), and the text
       stderr must contain; the offsets are worked out from the layouts above */
    static const struct {
        const char* label;
        const char* file;
        const char* fmt;
        size_t T;
        const char* expect;
    } cases[] = {
        {"token >= vocab, llm.c shard", "bad_tok.bin", "auto", 0,
         "bad_tok.bin': token id 5000 at byte offset 1098 (token index 37) >= vocab_size 1000"},
        {"token >= vocab, raw u32", "bad_tok.u32", "auto", 0,
         "bad_tok.u32': token id 5000 at byte offset 148 (token index 37) >= vocab_size 1000"},
        {"token >= vocab, npy", "bad_tok.npy", "auto", 0,
         "bad_tok.npy': token id 5000 at byte offset 202 (token index 37) >= vocab_size 1000"},
        {"missing file", "nope.bin", "auto", 0, "nope.bin': No such file or directory"},
        {"glob matching nothing", "nope_*.bin", "auto", 0, "nope_*.bin' matches no file"},
        {"bad magic", "bad_magic.bin", "auto", 0, "bad magic 20240521 at byte offset 0"},
        {"bad magic, format named", "a16.npy", "bin", 0, "a16.npy': bad magic"},
        {"bad version", "bad_version.bin", "auto", 0, "unsupported llm.c shard version 1 at byte offset 4"},
        {"truncated shard", "short.bin", "auto", 0, "short.bin': truncated: the header says 100 tokens"},
        {"shard with trailing bytes", "long.bin", "auto", 0, "8 unexpected bytes at byte offset 1144"},
        {"shard shorter than its header", "short_header.bin", "bin", 0, "truncated llm.c shard"},
        {"npy dtype int32", "i4.npy", "auto", 0, "dtype '<i4' is not supported"},
        {"npy big-endian", "be.npy", "auto", 0, "dtype '>u2' is not supported"},
        {"npy 2-D", "2d.npy", "auto", 0, "2d.npy': .npy array has 2 dimensions"},
        {"npy truncated", "short.npy", "auto", 0, "short.npy': truncated: the header says 65 tokens"},
        {"npy garbled header", "garbled.npy", "auto", 0, "bad .npy header at byte offset 44: expected True or False"},
        {"npy format named, not npy", "a16.u16", "npy", 0, "a16.u16': no NumPy header"},
        {"a headerless .npy (OLMo, Dolma): the fix named", "olmo.npy", "auto", 0,
         "olmo.npy': no NumPy header (the magic \\x93NUMPY at byte offset 0): OLMo and Dolma write their token files "
         "as raw little-endian arrays under the name .npy (a numpy memmap, no header); set data.format to \"u32\""},
        {"raw u16 of odd size", "odd.u16", "auto", 0, "a partial token at byte offset 62"},
        {"empty file", "empty.u16", "auto", 0, "empty.u16' is empty"},
        {"shard with no tokens", "zero.bin", "auto", 0, "zero.bin' holds no tokens"},
        {"unknown extension", "mystery.dat", "auto", 0, "mystery.dat': unknown format"},
        {"unknown format name", "a16.u16", "u8", 0, "unknown token data format 'u8'"},
        {"data shorter than T+1", "a16.u16", "auto", 1000, "has 1000 tokens, fewer than the T + 1 = 1001"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        OpenCall call = {{path_of(cases[c].file)}, 1, cases[c].fmt, 1000, cases[c].T};
        if (cases[c].T) call.vocab = 50000;
        expect_death(cases[c].label, &call, cases[c].expect);
    }
    OpenCall second = {{path_of("bad_tok.u32"), path_of("a_small.u16")}, 2, "auto", 1000, 0};
    expect_death("token >= vocab in the second file", &second, "bad_tok.u32': token id 5000");
    /* T + 1 = N is exactly enough: one row, the whole stream */
    const char* p = path_of("a16.u16");
    TokenData td;
    token_data_open(&td, &p, 1, "auto", 50000);
    int32_t x[N_TOK - 1], y[N_TOK - 1];
    token_data_rows(
        &td, &(RowRequest){.order = ORDER_SHUFFLE, .seed = 1, .step = 0, .rows_per_step = 1, .n = 1, .T = N_TOK - 1}, x,
        y);
    report(x[0] == (int32_t)src16[0] && y[N_TOK - 2] == (int32_t)src16[N_TOK - 1],
           "T + 1 = N tokens is enough: the one shuffle window is the whole stream");
    token_data_close(&td);
}

/* Without arguments: every test. "--open FORMAT VOCAB T PATH..." is the child
   that expect_death runs. */
int main(int argc, char** argv) {
    if (argc >= 6 && strcmp(argv[1], "--open") == 0) { /* the child of expect_death */
        OpenCall c = {{0}, 0, argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10)};
        for (int i = 5; i < argc && c.n_patterns < 4; i++) c.patterns[c.n_patterns++] = argv[i];
        call_open(&c);
        return 0;
    }
    snprintf(dir, sizeof dir, "/tmp/repoc_test_data_XXXXXX");
    CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
    test_formats();
    TokenData td;
    test_concat(&td);
    test_sequential(&td);
    test_shuffle(&td);
    test_split(&td);
    token_data_close(&td);
    test_errors();
    for (size_t i = 0; i < n_written; i++) unlink(written[i]);
    rmdir(dir);
    printf("test_data: %d passed, %d failed\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}

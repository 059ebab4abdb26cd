/* One token file (docs/formats.md, "Token files"): mmap it, recognise the format
   (llm.c shard, NumPy .npy, raw .u16/.u32), check the header against the file
   size, and check every token id against vocab_size. Every error names the
   file and, where there is one, the byte offset. Tokens are read byte by byte
   as little-endian, so an odd .npy header length cannot misalign a load. */
#include "data/tokens.h"

#include <errno.h>
#include <fcntl.h> /* open */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h> /* mmap, munmap */
#include <sys/stat.h> /* fstat */
#include <unistd.h>   /* close */

#include "common/check.h"  /* DIE, CHECK, mallocCheck */
#include "common/mapped.h" /* mapped_add: a SIGBUS names the file */

#define LLMC_HEADER_BYTES 1024  /* 256 int32 */
#define LLMC_MAGIC_U16 20240520 /* version 1, uint16 tokens */
#define LLMC_MAGIC_U32 20240801 /* version 7, uint32 tokens */

#define load_le token_le /* data/tokens.h: little-endian, any alignment */

/* ".u16" for "dir/x.u16"; "" when the file name has no dot */
static const char* extension(const char* path) {
    const char* slash = strrchr(path, '/');
    const char* dot = strrchr(slash ? slash : path, '.');
    return dot ? dot : "";
}

/* ---- llm.c shard: int32 header[256] = {magic, version, n_tokens, ...}, tokens from byte 1024 ---- */
static void parse_llmc(TokenFile* f) {
    CHECK(f->map_bytes >= LLMC_HEADER_BYTES,
          "token file '%s': truncated llm.c shard: the header needs %d bytes, the file has %zu", f->path,
          LLMC_HEADER_BYTES, f->map_bytes);
    int32_t magic = (int32_t)load_le(f->map, 4);
    int32_t version = (int32_t)load_le(f->map + 4, 4);
    int32_t count = (int32_t)load_le(f->map + 8, 4);
    if (magic == LLMC_MAGIC_U16) {
        CHECK(version == 1,
              "token file '%s': unsupported llm.c shard version %d at byte offset 4 "
              "(magic %d needs version 1)",
              f->path, version, magic);
        f->token_bytes = 2;
    } else if (magic == LLMC_MAGIC_U32) {
        CHECK(version == 7,
              "token file '%s': unsupported llm.c shard version %d at byte offset 4 "
              "(magic %d needs version 7)",
              f->path, version, magic);
        f->token_bytes = 4;
    } else {
        DIE("token file '%s': bad magic %d at byte offset 0: not an llm.c shard (expected %d for "
            "uint16 or %d for uint32 tokens)",
            f->path, magic, LLMC_MAGIC_U16, LLMC_MAGIC_U32);
    }
    CHECK(count >= 0, "token file '%s': negative token count %d at byte offset 8", f->path, count);
    f->n_tokens = (size_t)count;
    int32_t vocab = (int32_t)load_le(f->map + 12, 4); /* 0 in shards of other writers */
    f->tokenizer_vocab = vocab > 0 ? (size_t)vocab : 0;
    f->data_offset = LLMC_HEADER_BYTES;
}

/* ---- NumPy .npy: "\x93NUMPY", major, minor, header length, a Python dict literal ----
   Version 1.0 has a 2-byte header length at offset 8 (header from byte 10),
   2.0 and 3.0 a 4-byte one (header from byte 12). The header is a dict like
   {'descr': '<u2', 'fortran_order': False, 'shape': (1000,), } padded with
   spaces and a newline; the array data follows it directly. */

typedef struct { /* a cursor over the header dict */
    const TokenFile* f;
    size_t pos, end; /* byte offsets in the file */
} NpyCursor;

/* every parse error names the byte where the parser stopped */
static _Noreturn void npy_fail(const NpyCursor* c, const char* what) {
    DIE("token file '%s': bad .npy header at byte offset %zu: %s", c->f->path, c->pos, what);
}

static int is_blank(uint8_t ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; }

static int npy_peek(NpyCursor* c) { /* next non-blank byte, or -1 at the end */
    while (c->pos < c->end && is_blank(c->f->map[c->pos])) c->pos++;
    return c->pos < c->end ? c->f->map[c->pos] : -1;
}

static void npy_expect(NpyCursor* c, char ch) {
    if (npy_peek(c) != ch) {
        char msg[32];
        snprintf(msg, sizeof msg, "expected '%c'", ch);
        npy_fail(c, msg);
    }
    c->pos++;
}

/* a quoted string ('...' or "...") of at most cap-1 bytes */
static void npy_string(NpyCursor* c, char* out, size_t cap) {
    int q = npy_peek(c);
    if (q != '\'' && q != '"') npy_fail(c, "expected a quoted string");
    size_t n = 0;
    for (c->pos++; c->pos < c->end && c->f->map[c->pos] != q; c->pos++) {
        if (n + 1 >= cap) npy_fail(c, "string too long");
        out[n++] = (char)c->f->map[c->pos];
    }
    if (c->pos >= c->end) npy_fail(c, "unterminated string");
    c->pos++;
    out[n] = '\0';
}

static int npy_word(NpyCursor* c, const char* word) { /* consume `word` if it is next */
    size_t n = strlen(word);
    npy_peek(c);
    if (c->pos + n > c->end || memcmp(c->f->map + c->pos, word, n) != 0) return 0;
    c->pos += n;
    return 1;
}

/* a tuple of non-negative integers; returns the number of entries (dims) */
static size_t npy_shape(NpyCursor* c, size_t* first) {
    size_t ndim = 0;
    npy_expect(c, '(');
    while (npy_peek(c) != ')') {
        if (npy_peek(c) < '0' || npy_peek(c) > '9') npy_fail(c, "expected a dimension");
        size_t v = 0;
        while (c->pos < c->end && c->f->map[c->pos] >= '0' && c->f->map[c->pos] <= '9') {
            size_t d = (size_t)(c->f->map[c->pos++] - '0');
            if (v > (SIZE_MAX - d) / 10) npy_fail(c, "dimension overflows");
            v = v * 10 + d;
        }
        if (ndim++ == 0) *first = v;
        if (npy_peek(c) == ',') c->pos++;
        else if (npy_peek(c) != ')') npy_fail(c, "expected ',' or ')' in the shape");
    }
    c->pos++;
    return ndim;
}

/* Read the header dict key by key; any order, every key required, no other keys */
static void parse_npy(TokenFile* f) {
    CHECK(f->map_bytes >= 10 && memcmp(f->map, "\x93NUMPY", 6) == 0,
          "token file '%s': no NumPy header (the magic \\x93NUMPY at byte offset 0): OLMo and Dolma write their "
          "token files as raw little-endian arrays under the name .npy (a numpy memmap, no header); set "
          "data.format to \"u32\" (OLMo's uint32 ids) or \"u16\" (uint16), the width that wrote them, to read "
          "such files",
          f->path);
    unsigned major = f->map[6], minor = f->map[7];
    size_t len_bytes = major == 1 ? 2 : (major == 2 || major == 3) ? 4 : 0;
    CHECK(len_bytes != 0,
          "token file '%s': unsupported .npy version %u.%u at byte offset 6 "
          "(expected 1.0, 2.0 or 3.0)",
          f->path, major, minor);
    CHECK(f->map_bytes >= 8 + len_bytes, "token file '%s': truncated .npy header", f->path);
    size_t hlen = load_le(f->map + 8, len_bytes); /* the dict's length, padding included */
    NpyCursor c = {f, 8 + len_bytes, 8 + len_bytes + hlen};
    CHECK(c.end <= f->map_bytes,
          "token file '%s': truncated .npy: the header claims %zu bytes "
          "from offset %zu, the file has %zu",
          f->path, hlen, c.pos, f->map_bytes);

    char key[32], descr[32] = ""; /* longer strings are errors: no valid key or dtype is */
    int have_descr = 0, have_order = 0, have_shape = 0;
    size_t ndim = 0, n = 0;
    npy_expect(&c, '{');
    while (npy_peek(&c) != '}') {
        npy_string(&c, key, sizeof key);
        npy_expect(&c, ':');
        if (strcmp(key, "descr") == 0) {
            npy_string(&c, descr, sizeof descr);
            have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            /* either value is fine for a 1-D array: both orders are the same bytes */
            if (!npy_word(&c, "False") && !npy_word(&c, "True")) npy_fail(&c, "expected True or False");
            have_order = 1;
        } else if (strcmp(key, "shape") == 0) {
            ndim = npy_shape(&c, &n);
            have_shape = 1;
        } else {
            npy_fail(&c, "unknown key (expected descr, fortran_order, shape)");
        }
        if (npy_peek(&c) == ',') c.pos++;
        else if (npy_peek(&c) != '}') npy_fail(&c, "expected ',' or '}'");
    }
    if (!have_descr || !have_order || !have_shape) npy_fail(&c, "missing descr, fortran_order or shape");

    /* token ids are unsigned 16 or 32 bit, little-endian (what numpy writes on x86) */
    if (strcmp(descr, "<u2") == 0) f->token_bytes = 2;
    else if (strcmp(descr, "<u4") == 0) f->token_bytes = 4;
    else
        DIE("token file '%s': .npy dtype '%s' is not supported: token arrays must be "
            "little-endian uint16 ('<u2') or uint32 ('<u4')",
            f->path, descr);
    CHECK(ndim == 1,
          "token file '%s': .npy array has %zu dimensions, expected a 1-D array of "
          "token ids",
          f->path, ndim);
    f->n_tokens = n;
    f->data_offset = c.end;
}

/* ---- raw little-endian arrays, no header: the count is the size over the token width ---- */
static void parse_raw(TokenFile* f, size_t token_bytes) {
    f->token_bytes = token_bytes;
    f->data_offset = 0;
    CHECK(f->map_bytes % token_bytes == 0,
          "token file '%s': truncated: %zu bytes is not a whole "
          "number of %zu-byte tokens (a partial token at byte offset %zu)",
          f->path, f->map_bytes, token_bytes, f->map_bytes - f->map_bytes % token_bytes);
    f->n_tokens = f->map_bytes / token_bytes;
    /* uint32 ids read two bytes at a time give a zero at every odd index: refused, never read wrongly */
    size_t n = f->n_tokens < 65536 ? f->n_tokens & ~(size_t)1 : 65536, odd = 0, even = 0;
    for (size_t i = 0; token_bytes == 2 && i < n; i += 2) {
        even |= load_le(f->map + 2 * i, 2);
        odd |= load_le(f->map + 2 * i + 2, 2);
    }
    CHECK(token_bytes != 2 || n < 64 || odd || !even,
          "token file '%s': read as uint16, its first %zu ids are 0 at every odd index: these are uint32 ids "
          "(OLMo's and Dolma's token files are); set data.format to \"u32\"",
          f->path, n);
}

/* "auto": the llm.c magic, the NumPy magic, else the extension */
static const char* detect_format(const TokenFile* f) {
    if (f->map_bytes >= 4) {
        int32_t magic = (int32_t)load_le(f->map, 4);
        if (magic == LLMC_MAGIC_U16 || magic == LLMC_MAGIC_U32) return "bin";
    }
    if (f->map_bytes >= 6 && memcmp(f->map, "\x93NUMPY", 6) == 0) return "npy";
    const char* ext = extension(f->path);
    if (strcmp(ext, ".bin") == 0) return "bin"; /* then fails with "bad magic" */
    if (strcmp(ext, ".npy") == 0) return "npy";
    if (strcmp(ext, ".u16") == 0) return "u16";
    if (strcmp(ext, ".u32") == 0) return "u32";
    if (strcmp(ext, ".jsonl") == 0)
        DIE("token file '%s': a JSON Lines file: set data.format to \"jsonl\" for prompt/completion, text or "
            "input_ids records (format auto reads token files only: bin, npy, u16, u32)",
            f->path);
    DIE("token file '%s': unknown format: no llm.c or NumPy magic at byte offset 0 and the "
        "extension is not .bin/.npy/.u16/.u32 (set the data format to bin, npy, u16 or u32, or jsonl for "
        "JSON Lines records)",
        f->path);
}

/* The first token index with id >= vocab_size, or n_tokens when all are valid.
   Every token is read once; threads take slices and the minimum wins. */
static size_t first_bad_token(const TokenFile* f, size_t vocab_size) {
    if (f->token_bytes == 2 && vocab_size > UINT16_MAX) return f->n_tokens; /* nothing can fail */
    size_t first = f->n_tokens;
    const uint8_t* p = f->tokens;
    size_t tb = f->token_bytes, n = f->n_tokens;
#pragma omp parallel for schedule(static) reduction(min : first)
    for (size_t i = 0; i < n; i++) {
        if (i < first && load_le(p + i * tb, tb) >= vocab_size) first = i;
    }
    return first;
}

/* open, map, parse the header, check sizes, check every token: each step dies
   with a message naming the file, so a bad shard is found before step 0 */
void token_file_open(TokenFile* f, const char* path, const char* format, size_t vocab_size) {
    memset(f, 0, sizeof *f);
    size_t plen = strlen(path);
    f->path = mallocCheck(plen + 1);
    memcpy(f->path, path, plen + 1);

    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block before the type check */
    CHECK(fd >= 0, "cannot open token file '%s': %s", path, strerror(errno));
    struct stat st;
    CHECK(fstat(fd, &st) == 0, "cannot stat token file '%s': %s", path, strerror(errno));
    CHECK(S_ISREG(st.st_mode), "token file '%s' is not a regular file (%s)", path,
          S_ISDIR(st.st_mode)    ? "a directory"
          : S_ISFIFO(st.st_mode) ? "a FIFO"
                                 : "a device or socket");
    CHECK(st.st_size > 0, "token file '%s' is empty (0 bytes): no tokens", path);
    f->map_bytes = (size_t)st.st_size;
    CHECK(vocab_size >= 1 && vocab_size <= (size_t)INT32_MAX + 1,
          "vocab_size %zu out of range [1, 2^31] (token ids must fit int32)", vocab_size);
    /* read-only private map: pages come in on demand and are shared with the page cache */
    void* m = mmap(NULL, f->map_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    CHECK(m != MAP_FAILED, "cannot mmap token file '%s' (%zu bytes): %s", path, f->map_bytes, strerror(errno));
    close(fd); /* the mapping keeps the file alive */
    f->map = m;
    mapped_add(m, f->map_bytes, f->path); /* a file that shrinks later is named, not a silent exit 135 */

    if (strcmp(format, "auto") == 0) format = detect_format(f);
    if (strcmp(format, "bin") == 0) parse_llmc(f), f->format = "bin";
    else if (strcmp(format, "npy") == 0) parse_npy(f), f->format = "npy";
    else if (strcmp(format, "u16") == 0) parse_raw(f, 2), f->format = "u16";
    else if (strcmp(format, "u32") == 0) parse_raw(f, 4), f->format = "u32";
    else DIE("unknown token data format '%s' (expected auto, bin, npy, u16 or u32)", format);

    CHECK(f->tokenizer_vocab <= vocab_size,
          "token file '%s' was written with a tokenizer of %zu tokens "
          "(header int 3), more than the model's vocab_size %zu: give the model a vocab_size of at least %zu",
          path, f->tokenizer_vocab, vocab_size, f->tokenizer_vocab);
    /* the header's count against the bytes that follow it */
    size_t have = f->map_bytes - f->data_offset;
    CHECK(f->n_tokens <= have / f->token_bytes,
          "token file '%s': truncated: the header says %zu "
          "tokens of %zu bytes from byte offset %zu, but the file has %zu bytes (%zu whole tokens)",
          path, f->n_tokens, f->token_bytes, f->data_offset, f->map_bytes, have / f->token_bytes);
    CHECK(have == f->n_tokens * f->token_bytes,
          "token file '%s': %zu unexpected bytes at byte "
          "offset %zu, after the %zu tokens the header announces",
          path, have - f->n_tokens * f->token_bytes, f->data_offset + f->n_tokens * f->token_bytes, f->n_tokens);
    CHECK(f->n_tokens > 0, "token file '%s' holds no tokens", path);
    f->tokens = f->map + f->data_offset;

    /* every id must index the embedding: a bad one would read out of bounds later */
    size_t bad = first_bad_token(f, vocab_size);
    CHECK(bad == f->n_tokens,
          "token file '%s': token id %u at byte offset %zu (token index %zu) "
          ">= vocab_size %zu",
          path, load_le(f->tokens + bad * f->token_bytes, f->token_bytes), f->data_offset + bad * f->token_bytes, bad,
          vocab_size);
}

void token_file_close(TokenFile* f) {
    if (f->map) {
        mapped_remove(f->map);
        munmap((void*)f->map, f->map_bytes);
    }
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* build/tokenize: text files to llm.c token shards with a Hugging Face
   tokenizer.json (tokenizer/tokenizer.h), and token shards back to text.
   A plain text file is one document; a JSONL file has one document per line
   (the string field --field); either may be compressed with gzip or Zstandard
   (data/text_input.h: recognised by its first bytes, streamed). Each document gets the tokenizer's prefix (BOS,
   when its post-processor adds one) before it and the end of text token after
   it, and goes whole to train or to val by a hash of its index (the same
   split on every run; a small corpus gets a minimum of whole val documents). Documents are tokenized in batches, in parallel over
   documents, and written in input order, so the output does not depend on the
   thread count. The shards of PREFIX are written under a lock (PREFIX.lock)
   to temporary names and renamed into place only when the whole run has
   succeeded; then the shards of an earlier run to PREFIX that this one did
   not write are removed (data/shard_write.h), so PREFIX_train_*.bin is
   exactly this run's output. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/check.h"
#include "common/clock.h"
#include "common/fileio.h"
#include "common/hash.h"
#include "common/threads.h"
#include "data/jsonl.h"
#include "data/shard_write.h"
#include "data/text_input.h"
#include "data/tokens.h"
#include "tokenizer/tokenizer.h"
#include "programs/cli.h"
#include "programs/show_records.h"

#ifdef OMP
#include <omp.h>
#endif

#define BATCH_BYTES ((size_t)32 << 20) /* input bytes per parallel batch */
#define BATCH_DOCS 65536

typedef struct {
    const char* tokenizer;
    int jsonl;
    const char* field;
    double val;
    size_t shard_tokens;
    int no_eos, print_ids, show;
    size_t seq_len; /* --show-records */
    CliShared sh;   /* --threads */
    const char* out;
    const char* decode;
    const char* eos;
    char** files;
    size_t n_files;
} Options;

static void usage(FILE* fp) {
    fprintf(fp, "usage: build/tokenize --tokenizer DIR|tokenizer.json [options] --out PREFIX FILES...\n"
                "       build/tokenize --tokenizer DIR|tokenizer.json --decode SHARD\n"
                "       build/tokenize --tokenizer DIR|tokenizer.json --show-records FILE.jsonl...\n"
                "  FILES               text or JSONL files, plain, gzip or Zstandard; - is standard input\n"
                "  --tokenizer P       a Hugging Face tokenizer.json or the directory holding it (its\n"
                "                      tokenizer_config.json, when present, names the end of text token)\n"
                "  --out PREFIX        write PREFIX_train_000000.bin ... and PREFIX_val_000000.bin ...\n"
                "  --jsonl             each line of each file is a JSON object holding one document\n"
                "  --field NAME        the JSONL field with the text (default text)\n"
                "  --val F             fraction of documents for validation, by a hash of the document's\n"
                "                      index (default 0.005; 0 = none); at least 8 whole documents (at most\n"
                "                      a tenth of them), with a warning when the split is small\n"
                "  --shard-tokens N    tokens per shard (default 100000000)\n"
                "  --no-eos            no end of text token after each document (a template's own suffix stays)\n"
                "  --eos TOKEN         the end of text token's text (default: tokenizer_config.json's eos_token,\n"
                "                      else <|endoftext|>, <|end_of_text|>, </s> or <eos> among the added tokens)\n"
                "  --print-ids         print each document's ids as one line instead of writing shards\n"
                "  --decode SHARD      print the text of a token file\n"
                "  --show-records      print each record of the JSONL FILES as training sees it (data.format jsonl:\n"
                "                      a chat template's rendering, the BOS and EOS around text), with the tokens\n"
                "                      that carry loss in [[ ]] (underlined in green on a terminal)\n"
                "  --seq-len N         --show-records: records longer than N tokens are left out (default 8192)\n"
                "  --threads N         OpenMP threads (default: all cores)\n"
                "  --help              this text\n");
}

static void parse_args(Options* o, int argc, char** argv) {
    memset(o, 0, sizeof *o);
    o->field = "text";
    o->val = 0.005;
    o->shard_tokens = 100000000;
    o->files = mallocCheck((size_t)argc * sizeof(char*));
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        }
        if (a[0] != '-' || !strcmp(a, "-")) {
            o->files[o->n_files++] = argv[i];
            continue;
        }
        if (!strcmp(a, "--jsonl")) {
            o->jsonl = 1;
            continue;
        }
        if (!strcmp(a, "--no-eos")) {
            o->no_eos = 1;
            continue;
        }
        if (!strcmp(a, "--print-ids") || !strcmp(a, "--show-records")) {
            if (a[2] == 'p') o->print_ids = 1;
            else o->show = 1;
            continue;
        }
        if (cli_shared_option(&o->sh, CLI_THREADS, a, v)) {
            i++;
            continue;
        }
        static const char* const valued[] = {"--tokenizer", "--field",  "--val", "--shard-tokens",
                                             "--out",       "--decode", "--eos", "--seq-len"};
        static int seen[sizeof(valued) / sizeof(valued[0])];
        CLI_VALUED_OPTION(a, v, valued, seen);
        if (!strcmp(a, "--tokenizer")) o->tokenizer = v;
        else if (!strcmp(a, "--field")) o->field = v;
        else if (!strcmp(a, "--val")) {
            o->val = cli_parse_double(a, v);
            if (!(o->val >= 0 && o->val <= 1)) cli_bad_option("--val: expected a fraction in [0, 1], got '%s'", v);
        } else if (!strcmp(a, "--shard-tokens")) o->shard_tokens = cli_parse_size(a, v, 1, INT32_MAX);
        else if (!strcmp(a, "--out")) o->out = v;
        else if (!strcmp(a, "--decode")) o->decode = v;
        else if (!strcmp(a, "--seq-len")) o->seq_len = cli_parse_size(a, v, 2, (size_t)1 << 24);
        else o->eos = v; /* --eos */
        i++;
    }
    if (!o->tokenizer) cli_bad_option("no --tokenizer given");
    if (o->decode) {
        if (o->n_files || o->out) cli_bad_option("--decode takes one shard and no other files or --out");
        return;
    }
    if (!o->n_files) cli_bad_option("no input FILES given");
    if (o->show && (o->out || o->print_ids || o->eos || o->jsonl))
        cli_bad_option("--show-records reads JSONL records as training does: no --out, --print-ids, --eos or --jsonl");
    if (o->show) return;
    if (o->seq_len) cli_bad_option("--seq-len goes with --show-records");
    if (!o->out && !o->print_ids) cli_bad_option("no --out PREFIX given");
}

/* ---- input: documents of the files (data/text_input.h) ---- */
typedef struct {
    int32_t* ids;
    size_t n;
    size_t invalid_utf8;
    size_t text_bytes; /* the document's text (a JSONL field after unescaping) */
    char err[512];     /* a JSONL error, reported in input order */
} DocOut;

/* one document (or JSONL line) into out through e; errors go to out->err */
typedef struct {
    const int32_t *prefix, *suffix;
    size_t n_prefix, n_suffix;
    int32_t eos; /* -1: none (--no-eos, or the suffix ends with it) */
} Around;

static void encode_doc(TokEncoder* e, const TextDoc* d, const Options* o, const char* path, DocOut* out,
                       const Around* ar) {
    e->n_ids = 0;
    size_t invalid0 = e->invalid_utf8;
    tok_push_ids(e, ar->prefix, ar->n_prefix);
    char key[128];
    if (o->jsonl && jsonl_nul_string((const char*)d->text, d->len, key, sizeof key)) {
        snprintf(out->err, sizeof out->err,
                 "'%s' line %zu: the string of \"%s\" holds \\u0000 (a NUL character), "
                 "which would cut the text there: remove it",
                 path, d->line, key);
    } else if (o->jsonl) {
        cJSON* j = cJSON_ParseWithLength((const char*)d->text, d->len);
        const cJSON* f = cJSON_GetObjectItemCaseSensitive(j, o->field);
        if (!j) snprintf(out->err, sizeof out->err, "'%s' line %zu: not valid JSON", path, d->line);
        else if (!cJSON_IsString(f))
            snprintf(out->err, sizeof out->err, "'%s' line %zu: no string field \"%s\"", path, d->line, o->field);
        else {
            char source[4200]; /* a tokenizer error names the document (tokenizer.h) */
            snprintf(source, sizeof source, "the string of \"%s\" on line %zu of '%s'", o->field, d->line, path);
            e->source = source;
            out->text_bytes = strlen(f->valuestring);
            tok_encode(e, (const uint8_t*)f->valuestring, out->text_bytes);
            e->source = NULL;
        }
        cJSON_Delete(j);
    } else {
        char source[4200];
        snprintf(source, sizeof source, "'%s'", path);
        e->source = source;
        out->text_bytes = d->len;
        tok_encode(e, d->text, d->len);
        e->source = NULL;
    }
    tok_push_ids(e, ar->suffix, ar->n_suffix);
    if (ar->eos >= 0) tok_push_ids(e, &ar->eos, 1);
    out->invalid_utf8 = e->invalid_utf8 - invalid0;
    out->n = e->n_ids;
    out->ids = mallocCheck((e->n_ids ? e->n_ids : 1) * sizeof(int32_t));
    if (e->n_ids) memcpy(out->ids, e->ids, e->n_ids * sizeof(int32_t)); /* an empty document may have no ids array */
}

/* drawn for val: a hash of document index i against the fraction */
static int is_val(size_t i, double val) { return (double)(mix64((uint64_t)i) >> 11) * 0x1.0p-53 < val; }

/* The validation split takes whole documents, at least VAL_MIN_DOCS of the n (never more than a tenth):
   when the hash draws fewer (0.5% of 200 documents is one), every (n/forced)-th document goes to val too,
   forced of them, so that a small corpus still leaves a run rows to evaluate. A run reads rows of
   data.seq_len + 1 tokens; a split below VAL_WARN_TOKENS is warned about. */
#define VAL_MIN_DOCS 8
#define VAL_WARN_TOKENS 4097
typedef struct {
    double val;
    size_t n, drawn, forced;
} ValSplit;

static ValSplit val_split(double val, size_t n) {
    ValSplit s = {val, n, 0, 0};
    if (val <= 0) return s;
    for (size_t i = 0; i < n; i++) s.drawn += is_val(i, val);
    size_t k = n / 10 < VAL_MIN_DOCS ? n / 10 : VAL_MIN_DOCS;
    if (s.drawn < k) s.forced = k;
    return s;
}

static int in_val(const ValSplit* s, size_t i) {
    if (is_val(i, s->val)) return 1;
    return s->forced && (i + 1) * s->forced / s->n > i * s->forced / s->n; /* forced indices, evenly spaced */
}

/* the documents of every file, as the main loop will cut them */
static size_t count_docs(const Options* o) {
    size_t total = 0;
    for (size_t f = 0; f < o->n_files; f++) total += text_input_count(o->files[f], f, o->jsonl);
    return total;
}

/* what the split holds, when it is small */
static void val_report(const ValSplit* s, size_t val_docs, size_t val_tokens) {
    if (s->val <= 0) return;
    if (s->forced)
        fprintf(stderr,
                "tokenize: --val %g drew %zu of %zu documents: the validation split takes at least %zu whole "
                "documents (every %zu-th as well), %zu in all\n",
                s->val, s->drawn, s->n, s->forced, s->n / s->forced, val_docs);
    if (val_tokens < VAL_WARN_TOKENS)
        fprintf(stderr,
                "tokenize: warning: the validation split holds %zu tokens in %zu documents; a run reads "
                "rows of data.seq_len + 1 tokens from it (%d at seq_len %d) and stops at start when it holds fewer: "
                "give more text or a larger --val, or set data.seq_len below %zu\n",
                val_tokens, val_docs, VAL_WARN_TOKENS, VAL_WARN_TOKENS - 1, val_tokens);
}

/* One live line on a terminal, rewritten in place every 0.5 s; a log file gets only the summary at the end */
static double progress_every(void) { return isatty(2) ? 0.5 : INFINITY; }

static void progress(double t0, size_t done, size_t total, size_t tokens, int last) {
    if (total < done) total = done; /* a pipe's size is not known before it ends */
    double dt = now_s() - t0, mb = (double)done / 1e6;
    double rate = dt > 0 ? mb / dt : 0, eta = rate > 0 ? ((double)(total - done) / 1e6) / rate : 0;
    bool tty = isatty(2);
    fprintf(stderr, "%s%9.1f / %.1f MB  %7.2f MB/s  %6.2fM tok/s  %zu tokens  ETA %dm%02ds%s", tty ? "\r" : "", mb,
            (double)total / 1e6, rate, dt > 0 ? (double)tokens / dt / 1e6 : 0.0, tokens, (int)eta / 60, (int)eta % 60,
            last || !tty ? "\n" : "");
}

static void decode_shard(const Tokenizer* t, const char* path) {
    TokenFile f;
    size_t V = tok_vocab_size(t);
    token_file_open(&f, path, "auto", (size_t)INT32_MAX + 1); /* any id: the tokenizer is checked below */
    CHECK(!f.tokenizer_vocab || f.tokenizer_vocab == V,
          "token file '%s' was written with a tokenizer of %zu tokens "
          "(header int 3), but '%s' has %zu: decode with the tokenizer that wrote it",
          path, f.tokenizer_vocab, tok_name(t), V);
    uint8_t* out = NULL;
    size_t len = 0, cap = 0;
    for (size_t i = 0; i < f.n_tokens; i += 65536) {
        size_t n = f.n_tokens - i < 65536 ? f.n_tokens - i : 65536;
        int32_t ids[65536];
        for (size_t k = 0; k < n; k++) ids[k] = (int32_t)token_le(f.tokens + (i + k) * f.token_bytes, f.token_bytes);
        len = 0;
        size_t ok = tok_decode_from(t, ids, n, i == 0, &out, &len, &cap);
        CHECK(ok == n,
              "token file '%s': token index %zu (id %d) has no token in tokenizer '%s' (of %zu ids): decode "
              "with the tokenizer that wrote it",
              path, i + ok, ids[ok], tok_name(t), V);
        fwrite(out, 1, len, stdout);
    }
    free(out);
    token_file_close(&f);
}

/* ---- output: the shards of PREFIX, under PREFIX.lock, replaced only when the run succeeds ---- */
static ShardWriter* out_writers; /* train, val: their temporary shards are removed at a failed exit */

static void discard_shards(void) {
    if (!out_writers) return;
    shard_writer_discard(&out_writers[0]);
    shard_writer_discard(&out_writers[1]);
}

/* PREFIX.lock taken (held to exit: a second tokenize to PREFIX stops naming the first), the
   temporary shards of killed runs removed, and a failed exit set to remove this run's own */
static char lock_path[4096 + 8]; /* PREFIX.lock, held from shards_begin, removed when the run succeeds */
static int lock_fd = -1;

static void shards_begin(const char* prefix, ShardWriter w[2]) {
    char* lock = lock_path;
    char holder[32];
    snprintf(lock, sizeof lock_path, "%s.lock", prefix);
    int fd = lock_fd = file_lock(lock, holder, sizeof holder);
    if (fd < 0 && errno == EWOULDBLOCK)
        DIE("tokenize: --out '%s' is being written by another tokenize (pid %s holds '%s'): wait for it, or give "
            "another --out",
            prefix, holder, lock);
    if (fd < 0) DIE("tokenize: cannot lock '%s': %s", lock, strerror(errno));
    size_t swept = shard_writer_sweep(&w[0]) + shard_writer_sweep(&w[1]);
    if (swept) fprintf(stderr, "tokenize: removed %zu temporary shard(s) that killed runs to %s left\n", swept, prefix);
    out_writers = w;
    atexit(discard_shards);
}

/* every shard renamed into place, then the earlier run's shards of PREFIX this one did not write removed */
static void shards_commit(const char* prefix, ShardWriter w[2]) {
    size_t stale = shard_writer_commit(&w[0]);
    stale += shard_writer_commit(&w[1]);
    file_unlock(lock_path, lock_fd); /* a finished run leaves no lock file */
    lock_fd = -1;
    if (stale)
        fprintf(stderr, "tokenize: removed %zu shard(s) of an earlier run to %s that this run did not write\n", stale,
                prefix);
}

/* One pass over the input files: documents in batches, encoded in parallel, written in input order */
typedef struct {
    const Options* o;
    const Around* ar;
    TokEncoder* enc; /* one per thread */
    TextDoc* docs;   /* (BATCH_DOCS) */
    DocOut* outs;    /* (BATCH_DOCS) */
    ShardWriter* w;  /* train, val */
    ValSplit split;
    size_t total; /* the files' bytes on disk, for the progress line */
    /* what the pass did */
    size_t doc_index, n_val_docs, invalid, text_bytes;
    double t0;
} Pass;

/* the batch docs[0..n) of file f: encoded in parallel, then printed or written in order */
static void pass_batch(Pass* ps, size_t f, size_t n) {
    const Options* o = ps->o;
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t i = 0; i < n; i++) {
        int k = 0;
#ifdef OMP
        k = omp_get_thread_num();
#endif
        ps->outs[i].err[0] = 0;
        ps->outs[i].text_bytes = 0;
        encode_doc(&ps->enc[k], &ps->docs[i], o, o->files[f], &ps->outs[i], ps->ar);
    }
    for (size_t i = 0; i < n; i++, ps->doc_index++) {
        DocOut* d = &ps->outs[i];
        CHECK(!d->err[0], "%s", d->err);
        ps->invalid += d->invalid_utf8;
        ps->text_bytes += d->text_bytes;
        if (o->print_ids) {
            for (size_t k = 0; k < d->n; k++) printf(k ? " %d" : "%d", d->ids[k]);
            putchar('\n');
        } else {
            int v = in_val(&ps->split, ps->doc_index);
            ps->n_val_docs += v;
            shard_write(&ps->w[v], d->ids, d->n);
        }
        free(d->ids);
    }
}

static void tokenize_pass(Pass* ps) {
    const Options* o = ps->o;
    ps->doc_index = ps->n_val_docs = ps->invalid = ps->text_bytes = 0;
    ps->t0 = now_s();
    size_t done_bytes = 0;
    double last_print = 0;
    for (size_t f = 0; f < o->n_files; f++) {
        TextInput* in = text_input_open(o->files[f], f, o->jsonl);
        for (size_t n; (n = text_input_next(in, ps->docs, BATCH_DOCS, BATCH_BYTES)) != 0;) {
            pass_batch(ps, f, n);
            if (!o->print_ids && now_s() - last_print > progress_every()) {
                progress(ps->t0, done_bytes + text_input_read(in), ps->total, ps->w[0].n_tokens + ps->w[1].n_tokens, 0);
                last_print = now_s();
            }
        }
        done_bytes += text_input_read(in);
        text_input_close(in);
    }
}

int main(int argc, char** argv) {
    cli_init("tokenize");
    Options o;
    parse_args(&o, argc, argv);
    threads_init(o.sh.threads);
    Tokenizer* t = tok_load(o.tokenizer);
    if (o.eos && !tok_set_eos(t, o.eos)) cli_bad_option("--eos: no token is \"%s\"", o.eos);
    if (o.show) {
        tok_free(t);
        show_records(o.tokenizer, (const char* const*)o.files, o.n_files, o.seq_len ? o.seq_len : 8192);
        free(o.files);
        return 0;
    }
    if (o.decode) {
        decode_shard(t, o.decode);
        tok_free(t);
        free(o.files);
        return 0;
    }
    int32_t eos = tok_eos(t);
    CHECK(o.no_eos || eos >= 0, "tokenizer '%s' names no end of text token: give --eos TOKEN or --no-eos", o.tokenizer);
    Around ar;
    ar.prefix = tok_prefix(t, &ar.n_prefix);
    ar.suffix = tok_suffix(t, &ar.n_suffix);
    int suffix_eos = ar.n_suffix && ar.suffix[ar.n_suffix - 1] == eos; /* the template appends it already */
    ar.eos = o.no_eos || suffix_eos ? -1 : eos;
    size_t V = tok_vocab_size(t);

    /* the files' sizes on disk, for the progress line (a pipe counts 0) */
    size_t total = 0;
    for (size_t f = 0; f < o.n_files; f++) {
        struct stat st;
        CHECK(stat(text_input_os_path(o.files[f]), &st) == 0, "cannot open input '%s': %s", o.files[f],
              strerror(errno));
        if (S_ISREG(st.st_mode)) total += (size_t)st.st_size;
    }

    char prefix_path[4096 + 8];
    if (o.out) { /* the directory of PREFIX, made when missing */
        dir_of(o.out, prefix_path, sizeof prefix_path);
        mkdir_p(prefix_path);
    }
    ShardWriter w[2]; /* train, val */
    snprintf(prefix_path, sizeof prefix_path, "%s_train", o.out ? o.out : "");
    shard_writer_init(&w[0], prefix_path, V, o.shard_tokens);
    snprintf(prefix_path, sizeof prefix_path, "%s_val", o.out ? o.out : "");
    shard_writer_init(&w[1], prefix_path, V, o.shard_tokens);
    if (!o.print_ids) shards_begin(o.out, w);
    if (!o.print_ids)
        fprintf(stderr,
                "tokenize: %zu files, %.1f MB, vocab %zu (%s tokens), eos %d%s, %zu prefix and %zu suffix "
                "token(s)\n",
                o.n_files, (double)total / 1e6, V, V > 65536 ? "uint32" : "uint16", o.no_eos ? -1 : eos,
                suffix_eos ? " (the template's)" : "", ar.n_prefix, ar.n_suffix);

    int n_threads = 1;
#ifdef OMP
    n_threads = omp_get_max_threads();
#endif
    TokEncoder* enc = mallocCheck((size_t)n_threads * sizeof(TokEncoder));
    for (int k = 0; k < n_threads; k++) tok_encoder_init(&enc[k], t);

    Pass ps = {.o = &o, .ar = &ar, .enc = enc, .w = w, .total = total};
    ps.docs = mallocCheck(BATCH_DOCS * sizeof(TextDoc));
    ps.outs = mallocCheck(BATCH_DOCS * sizeof(DocOut));
    double val = o.print_ids ? 0 : o.val;
    /* The split needs the count of documents: counted first where that is cheap (plain files, mapped); a
       compressed file would be decompressed twice and a pipe read twice, so there the pass assumes the hash
       alone draws the split, which holds unless the corpus is small, and a small one is tokenized again. */
    bool streamed = false, pipe = false;
    for (size_t f = 0; f < o.n_files && val > 0; f++) {
        bool regular;
        streamed |= text_input_sniff(o.files[f], &regular) != TEXT_PLAIN || !regular;
        pipe |= !regular;
    }
    ps.split = val_split(val, val > 0 && !streamed ? count_docs(&o) : 0);
    tokenize_pass(&ps);
    if (val > 0 && streamed) {
        ValSplit exact = val_split(val, ps.doc_index);
        CHECK(!exact.forced || !pipe,
              "tokenize: --val %g draws %zu of the %zu documents, fewer than the %zu a small corpus puts into val, "
              "and an input is a pipe, which cannot be read again: give the files, or --val 0",
              val, exact.drawn, ps.doc_index, exact.forced);
        if (exact.forced) {
            fprintf(stderr, "tokenize: a small corpus (%zu documents): a second pass puts %zu more into val\n",
                    ps.doc_index, exact.forced);
            for (int k = 0; k < 2; k++) {
                char prefix[sizeof w[k].prefix];
                memcpy(prefix, w[k].prefix, sizeof prefix);
                shard_writer_discard(&w[k]);
                shard_writer_init(&w[k], prefix, V, o.shard_tokens);
            }
            ps.split = exact;
            tokenize_pass(&ps);
        }
        ps.split = exact;
    }
    ValSplit split = ps.split;
    size_t doc_index = ps.doc_index, n_val_docs = ps.n_val_docs, invalid = ps.invalid, text_bytes = ps.text_bytes;
    double t0 = ps.t0;
    if (!o.print_ids) shards_commit(o.out, w);
    double secs = now_s() - t0;
    if (!o.print_ids) {
        progress(t0, total, total, w[0].n_tokens + w[1].n_tokens, 1);
        fprintf(stderr,
                "tokenize: %zu documents: train %zu tokens in %zu shard(s) %s_train_*.bin, val %zu "
                "documents, %zu tokens in %zu shard(s)%s\n",
                doc_index, w[0].n_tokens, w[0].n_shards, o.out, n_val_docs, w[1].n_tokens, w[1].n_shards,
                o.val > 0 && !n_val_docs ? " (no document drew val)" : "");
        fprintf(stderr, "tokenize: %.3f MB of text in %.3f s: %.2f MB/s with %d thread(s)\n", (double)text_bytes / 1e6,
                secs, secs > 0 ? (double)text_bytes / 1e6 / secs : 0.0, n_threads);
        val_report(&split, n_val_docs, w[1].n_tokens);
    }
    if (invalid)
        fprintf(stderr, "tokenize: warning: %zu bytes were not valid UTF-8; they were tokenized as single bytes\n",
                invalid);
    for (int k = 0; k < n_threads; k++) tok_encoder_free(&enc[k]);
    free(enc);
    free(ps.outs);
    free(ps.docs);
    free(o.files);
    tok_free(t);
    return 0;
}

/* JSONL instruction data (data/jsonl.h): targets are next-token labels with
   the prompt ignored, documents stay whole in a row when they fit and a longer
   one is split, document ids restart per row, rows are a pure function of
   (seed, step, row), a prompt that fills seq_len is skipped and counted, and
   bad lines die naming file and line. */
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "data/jsonl.h"
#include "tests/testutil.h"
#include "tokenizer/tokenizer.h"

static char dir[] = "/tmp/test_jsonl_XXXXXX";

static const char* write_file(const char* name, const char* text) {
    static char path[8][256];
    static int k;
    char* p = path[k++ % 8];
    snprintf(p, 256, "%s/%s", dir, name);
    FILE* f = fopen(p, "w");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "write %s", p);
    return p;
}

typedef struct {
    const char* file;
    const char* tok;
} OpenArg;
static void open_child(void* a) {
    OpenArg* o = a;
    PackedRows p;
    packed_open(&p, &o->file, 1, o->tok, 1024, 8, false);
}

static void auto_child(void* pattern) {
    TokenData td;
    const char* files[1] = {pattern};
    token_data_open(&td, files, 1, "auto", 1024);
}

int main(void) {
    CHECK(mkdtemp(dir), "mkdtemp");
    /* pre-tokenized: T = 8. doc A (5 ids, labels hide the first two), doc B (3), doc C (4, no labels),
       doc D (11 > T: split) */
    const char* f =
        write_file("pre.jsonl", "{\"input_ids\": [10, 11, 12, 13, 14], \"labels\": [-100, -100, 12, 13, 14]}\n"
                                "\n"
                                "{\"input_ids\": [20, 21, 22], \"labels\": [-100, 21, -1]}\n"
                                "{\"input_ids\": [30, 31, 32, 33]}\n"
                                "{\"input_ids\": [40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50]}\n");
    PackedRows p;
    packed_open(&p, &f, 1, NULL, 1024, 8, false);
    /* row 0: A(5) B(3); row 1: C(4) D(first 4); row 2: D(7 more) pad(1) */
    int32_t want_tok[24] = {10, 11, 12, 13, 14, 20, 21, 22, 30, 31, 32, 33,
                            40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 0};
    int32_t want_tgt[24] = {-1, 12, 13, 14, -1, 21, -1, -1, 31, 32, 33, -1,
                            41, 42, 43, 44, 45, 46, 47, 48, 49, 50, -1, -1};
    int32_t want_doc[24] = {0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1};
    EXPECT(p.n_rows == 3 && p.n_records == 4 && p.n_pretokenized == 4 && p.n_split == 1,
           "4 records -> 3 rows, one document split (got %zu rows, %zu records, %zu split)", p.n_rows, p.n_records,
           p.n_split);
    EXPECT(!memcmp(p.tokens, want_tok, sizeof(want_tok)), "tokens: documents whole where they fit, D split");
    EXPECT(!memcmp(p.targets, want_tgt, sizeof(want_tgt)), "targets: labels of the next token, -100/-1 ignored, "
                                                           "none across documents or on padding");
    EXPECT(!memcmp(p.doc_ids, want_doc, sizeof(want_doc)), "document ids: per row, a split document is doc 0, "
                                                           "padding its own");
    EXPECT(p.n_loss_tokens == 17, "loss tokens counted: %zu of 24", p.n_loss_tokens);

    /* rows are a pure function of (seed, step, row); any split of a step's rows agrees */
    int32_t a[5 * 8], b[5 * 8], c[5 * 8], d[5 * 8];
    packed_rows(&p, &(RowRequest){.order = ORDER_SHUFFLE, .seed = 7, .step = 3, .rows_per_step = 5, .n = 5, .T = p.T},
                a, b, NULL);
    packed_rows(&p, &(RowRequest){.order = ORDER_SHUFFLE, .seed = 7, .step = 3, .rows_per_step = 5, .n = 2, .T = p.T},
                c, d, NULL);
    packed_rows(
        &p,
        &(RowRequest){.order = ORDER_SHUFFLE, .seed = 7, .step = 3, .rows_per_step = 5, .row0 = 2, .n = 3, .T = p.T},
        c + 16, d + 16, NULL);
    EXPECT(!memcmp(a, c, sizeof(a)) && !memcmp(b, d, sizeof(b)), "shuffle: rows 0-1 + 2-4 = rows 0-4");
    packed_rows(&p,
                &(RowRequest){.order = ORDER_SEQUENTIAL, .seed = 7, .step = 1, .rows_per_step = 2, .n = 2, .T = p.T}, a,
                b, c);
    EXPECT(!memcmp(a, want_tok + 16, 8 * sizeof(int32_t)) && !memcmp(a + 8, want_tok, 8 * sizeof(int32_t)) &&
               !memcmp(c, want_doc + 16, 8 * sizeof(int32_t)),
           "sequential: step 1 of 2 rows reads packed rows 2, 0 (wraps)");
    packed_close(&p);
    packed_open(&p, &f, 1, NULL, 1024, 8, true);
    EXPECT(p.n_rows == 3 && p.n_too_long == 1 && p.tokens[8] == 20 && p.targets[7] == -1 && p.tokens[16] == 30,
           "one document per row (evaluation): A, B, C padded, D (11 > 8) left out and counted");
    packed_close(&p);

    /* prompt/completion through a tokenizer: only the completion and EOS carry loss */
    const char* tokpath = "tests/fixtures/tokenizer/gpt2.json";
    Tokenizer* tok = tok_load(tokpath);
    TokEncoder e;
    tok_encoder_init(&e, tok);
    tok_encode(&e, (const uint8_t*)"Q: hi", 5);
    size_t n_prompt = e.n_ids;
    tok_encode(&e, (const uint8_t*)" yes", 4);
    size_t n_all = e.n_ids;
    int32_t eos = tok_eos(tok);
    f = write_file("pc.jsonl", "{\"prompt\": \"Q: hi\", \"completion\": \" yes\"}\n"
                               "{\"prompt\": \"a b c d e f g h i j k l m n o p\", \"completion\": \" x\"}\n");
    PackedRows q;
    packed_open(&q, &f, 1, tokpath, 1024, 8, false);
    bool ok = q.n_rows == 1 && q.n_skipped_prompt == 1 && q.n_records == 2;
    for (size_t i = 0; ok && i < n_all; i++) ok = q.tokens[i] == e.ids[i];
    ok = ok && q.tokens[n_all] == eos;
    for (size_t i = 0; ok && i + 1 < n_prompt; i++) ok = q.targets[i] == -1;
    for (size_t i = n_prompt - 1; ok && i + 1 < n_all; i++) ok = q.targets[i] == e.ids[i + 1];
    ok = ok && q.targets[n_all - 1] == eos && q.targets[n_all] == -1;
    EXPECT(ok, "prompt/completion: prompt targets -1, completion and EOS targets kept; the 16-token prompt "
               "(seq_len 8) skipped and counted");
    packed_close(&q);
    tok_encoder_free(&e);
    tok_free(tok);

    printf("errors\n");
    OpenArg o = {write_file("bad1.jsonl", "{\"text\": \"a\"}\n[1, 2]\n"), tokpath};
    const char* not_obj[] = {"bad1.jsonl:2:", "expected a JSON object", NULL};
    expect_dies_with("a line that is not an object: file and line", open_child, &o, not_obj);
    o.file = write_file("bad2.jsonl", "{\"text\": \"a\"}\n\n{\"prompt\": \"a\"}\n");
    const char* fields[] = {"bad2.jsonl:3:", "\"prompt\" and \"completion\"", NULL};
    expect_dies_with("a record without the fields: file and line", open_child, &o, fields);
    o.file = write_file("bad3.jsonl", "{\"input_ids\": [1, 2000]}\n");
    const char* vocab[] = {"bad3.jsonl:1:", "input_ids\"[1]", "[0, 1024)", NULL};
    expect_dies_with("an id outside the vocabulary", open_child, &o, vocab);
    o.file = write_file("bad4.jsonl", "{\"text\": \"a\"}\n");
    o.tok = NULL;
    const char* notok[] = {"bad4.jsonl:1:", "data.tokenizer", NULL};
    expect_dies_with("text without a tokenizer", open_child, &o, notok);

    /* lines that are not exactly one record: {file name, its text, what the message names, and what else} */
    static const char* bad_lines[][5] = {
        {"two objects on a line: file, line and byte column", "two.jsonl",
         "{\"text\": \"a\"}\n {\"text\": \"b\"} {\"text\": \"c\"}\n",
         "two.jsonl:2:", "byte column 16: more after the JSON object"},
        {"trailing garbage after the object", "trail.jsonl", "{\"text\": \"a\"}x\n",
         "trail.jsonl:1:", "byte column 14"},
        {"a syntax error: its byte column", "syntax.jsonl", "{\"text\": \"a\", }\n",
         "syntax.jsonl:1:", "not valid JSON (byte column 16)"},
        {"text and prompt/completion: ambiguous", "both.jsonl",
         "{\"text\": \"a\", \"prompt\": \"q\", \"completion\": \"c\"}\n",
         "both.jsonl:1:", "ambiguous record: it has \"text\" and \"prompt\"/\"completion\""},
        {"text and input_ids: ambiguous", "both2.jsonl", "{\"text\": \"a\", \"input_ids\": [1, 2]}\n",
         "both2.jsonl:1:", "ambiguous record: it has \"text\" and \"input_ids\""},
        {"label -5: refused", "lab.jsonl", "{\"input_ids\": [1, 2, 3], \"labels\": [-100, -5, 3]}\n",
         "lab.jsonl:1:", "\"labels\"[1] must be an integer id in [0, 1024), or -100 or -1"},
    };
    o.tok = tokpath;
    for (size_t k = 0; k < sizeof bad_lines / sizeof bad_lines[0]; k++) {
        o.file = write_file(bad_lines[k][1], bad_lines[k][2]);
        const char* want[] = {bad_lines[k][3], bad_lines[k][4], NULL};
        expect_dies_with(bad_lines[k][0], open_child, &o, want);
    }

    /* a glob expands (in byte-wise order) as for token files; the patterns keep their order */
    write_file("g2.jsonl", "{\"input_ids\": [5, 6, 7]}\n");
    const char* g1 = write_file("g1.jsonl", "{\"input_ids\": [1, 2, 3]}\n{\"input_ids\": [2, 3, 4]}\n");
    char pattern[300];
    snprintf(pattern, sizeof pattern, "%s/g*.jsonl", dir);
    const char* globbed[2] = {write_file("h0.jsonl", "{\"input_ids\": [9, 9, 9]}\n"), pattern};
    packed_open(&p, globbed, 2, NULL, 1024, 4, true);
    EXPECT(p.n_records == 4 && p.n_rows == 4 && p.tokens[0] == 9 && p.tokens[4] == 1 && p.tokens[8] == 2 &&
               p.tokens[12] == 5,
           "data.train [h0.jsonl, g*.jsonl]: h0, then g1 and g2 (%zu records)", p.n_records);
    packed_close(&p);
    snprintf(pattern, sizeof pattern, "%s/none*.jsonl", dir);
    o.file = pattern;
    const char* nomatch[] = {"none*.jsonl' matches no file", NULL};
    expect_dies_with("a glob that matches no JSONL file", open_child, &o, nomatch);
    const char* auto_args[] = {"token file", "g1.jsonl': a JSON Lines file: set data.format to \"jsonl\"", NULL};
    expect_dies_with("a .jsonl file read as token data (format auto)", auto_child, (void*)g1, auto_args);

    /* a tokenizer without an end of text token: refused as build/tokenize does (it trained without EOS) */
    size_t len;
    char* json = file_read_all(tokpath, &len);
    for (char* at = json; (at = strstr(at, "<|endoftext|>")); at += 13) memcpy(at, "<|nothing__|>", 13);
    const char* noeos = write_file("noeos.json", json);
    free(json);
    o.tok = noeos;
    o.file = write_file("sft.jsonl", "{\"prompt\": \"q\", \"completion\": \"a\"}\n");
    const char* eos_msg[] = {"sft.jsonl:1:", "noeos.json' names no end of text token", NULL};
    expect_dies_with("a tokenizer without an end of text token", open_child, &o, eos_msg);

    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd)) return 1;
    printf("test_jsonl: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}

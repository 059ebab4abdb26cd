/* data.synthetic.filler_file (data/synthetic.h, data/source.c): the filler of
   training rows and eval items is real text, one window of the token file per
   item, and the marks and symbols stay above it. A file of the ids 0 .. 96 in
   a cycle makes every window checkable: a text token directly followed by a
   text token is always its successor in the file, because the needles and the
   query go in between windows' tokens, never in place of one. Also: the same
   item twice is the same; the file is opened once per path; a file with an id
   at or above first_id is refused, naming the file. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* mkstemps, unlink */

#include "common/check.h"
#include "data/source.h"
#include "data/synthetic.h"
#include "data/tokens.h"
#include "tests/testutil.h"

enum { CYCLE = 97, FIRST = 100, V = 164, PL = 200 };

/* a .u16 file of n tokens: i mod CYCLE, or one token `bad` at position n / 2 */
static void write_tokens(char* path, size_t n, int bad) {
    int fd = mkstemps(path, 4);
    CHECK(fd >= 0, "mkstemps %s", path);
    FILE* f = fdopen(fd, "wb");
    for (size_t i = 0; i < n; i++) {
        unsigned v = bad >= 0 && i == n / 2 ? (unsigned)bad : (unsigned)(i % CYCLE);
        unsigned char b[2] = {(unsigned char)(v & 255), (unsigned char)(v >> 8)};
        fwrite(b, 1, 2, f);
    }
    fclose(f);
}

static int config(SyntheticConfig* cfg, const char* path, char* err, size_t len) {
    char json[512];
    snprintf(json, sizeof json, "{\"first_id\": %d, \"filler_file\": \"%s\", \"table_rows\": 3}", FIRST, path);
    cJSON* o = cJSON_Parse(json);
    int rc = synthetic_from_json(cfg, o, err, len);
    cJSON_Delete(o);
    return rc;
}

/* text tokens of x (n) and how many text-text neighbours are not successors in the file */
static void count(const int32_t* x, size_t n, size_t* text, size_t* broken, size_t* above) {
    for (size_t i = 0; i < n; i++) {
        *text += x[i] < FIRST;
        *above += x[i] < 0 || x[i] >= V;
        if (i + 1 < n && x[i] < FIRST && x[i + 1] < FIRST && x[i + 1] != (x[i] + 1) % CYCLE) ++*broken;
    }
}

int main(int argc, char** argv) {
    if (argc == 3) { /* the child of the refusal case: argv[2] holds an id >= first_id */
        SyntheticConfig cfg;
        char err[256];
        return config(&cfg, argv[2], err, sizeof err);
    }
    char path[] = "/tmp/repoc_filler_XXXXXX.u16", bad[] = "/tmp/repoc_filler_bad_XXXXXX.u16";
    write_tokens(path, 5000, -1);
    SyntheticConfig cfg;
    char err[256] = "";
    report(config(&cfg, path, err, sizeof err) == 0 && cfg.filler_text, "parsed, the file opened (%s)", err);
    synthetic_validate(&cfg, V);
    synthetic_print(&cfg, stdout);

    SyntheticConfig again;
    config(&again, path, err, sizeof err);
    report(again.filler_text == cfg.filler_text, "a second config of the same file shares its tokens");

    int32_t prompt[PL], answer[SYN_MAX_ANSWER], prompt2[PL], answer2[SYN_MAX_ANSWER];
    size_t text = 0, broken = 0, above = 0, differ = 0;
    for (int f = 0; f < SYN_N_FAMILIES; f++)
        for (size_t i = 0; i < 20; i++) {
            synthetic_item(&cfg, (SynFamily)f, 7, i, PL - 8, -1, prompt, answer);
            synthetic_item(&cfg, (SynFamily)f, 7, i, PL - 8, -1, prompt2, answer2);
            differ += memcmp(prompt, prompt2, (PL - 8) * sizeof *prompt) != 0;
            count(prompt, PL - 8, &text, &broken, &above);
        }
    report(text > 15000 && broken == 0 && above == 0 && differ == 0,
           "eval items: %zu text tokens, every text neighbour its file successor (%zu not), ids in range (%zu not), "
           "the same item twice (%zu differ)",
           text, broken, above, differ);

    enum { R = 8, T = 128 };
    static int32_t tok[R * T], tgt[R * T];
    text = broken = above = 0;
    synthetic_rows(&cfg, &(RowRequest){.seed = 3, .step = 0, .rows_per_step = R, .n = R, .T = T}, tok, tgt, NULL);
    for (size_t r = 0; r < R; r++) count(tok + r * T, T, &text, &broken, &above);
    report(text > R * T / 2 && broken == 0, "training rows: %zu text tokens, %zu not successors", text, broken);

    write_tokens(bad, 4000, FIRST);
    char* args[] = {argv[0], "--bad", bad, NULL};
    char out[2048];
    int code = run_self_captured(args, out, sizeof out);
    unlink(bad);
    report(code == 1 && strstr(out, "repoc_filler_bad_") && strstr(out, "100"),
           "an id >= first_id in the file: refused, naming the file (exit %d: %.200s)", code, out);
    unlink(path);
    printf("test_filler_file: %d passed, %d failed\n", test_passes, test_failures);
    return test_failures ? 1 : 0;
}

/* RULER's generators, scoring and evaluation loop (eval/ruler.h), on the small BPE tokenizers of
   tests/fixtures/tokenizer:
   - every task's prompt fits (prompt + tokens_to_generate <= length) and one more haystack unit
     does not, so it lies within one unit's tokens of the target (printed; a unit is at most 100 tokens,
     a UUID needle in the 1000-token test vocabulary taking 84);
   - each needle is in the prompt exactly once, at its depth: noise and needle haystacks by the
     count of haystack lines before it, the essay by the count of words before it against the
     sentence the depth names;
   - the answers follow from the prompt alone: the niah values sit in the asked keys' needles,
     vt's chains resolve to the references, cwe's references are the 10 most numerous list
     words, fwe's the 3 most frequent coded words after "...";
   - an item is a function of (task, length, seed, id), and a longer length asks the same keys;
   - string_match_all / string_match_part on hand-made predictions;
   - bad input refused with a message; ruler_eval_task on a random model, its JSON and prompt files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/fileio.h"
#include "eval/ruler_internal.h"
#include "model/model.h"
#include "tests/testutil.h"

static RulerSources S;

static size_t count_of(const char* hay, const char* needle) {
    size_t n = 0, len = strlen(needle);
    for (const char* p = strstr(hay, needle); p; p = strstr(p + len, needle)) n++;
    return n;
}

/* the prompt fits, haystack + 1 does not, within one unit of the target */
static void check_size(TokEncoder* enc, const RulerItem* it, const char* label) {
    size_t ttg = ruler_tokens_to_generate(it->task);
    RulerItem more = {0};
    ruler_item_with_haystack(&more, &S, enc, it, it->haystack + 1);
    size_t used = it->n_tokens + ttg, gap = it->length - (used <= it->length ? used : it->length);
    size_t unit = more.n_tokens > it->n_tokens ? more.n_tokens - it->n_tokens : 0;
    EXPECT(used <= it->length && more.n_tokens + ttg > it->length && gap < unit && unit <= 100,
           "%s: %zu prompt + %zu generated = %zu of %zu (%zu short; one more unit adds %zu tokens), haystack %zu",
           label, it->n_tokens, ttg, used, it->length, gap, unit, it->haystack);
    ruler_item_free(&more);
}

/* haystack lines (noise or distractor needles) before line `at` of the context */
static size_t lines_before(const char* context, const char* at, const RulerItem* it) {
    size_t n = 0;
    const char* p = context;
    while (p < at) {
        const char* nl = strchr(p, '\n');
        bool needle = false;
        for (size_t j = 0; j < it->n_needles; j++)
            needle |= !strncmp(p, it->needles[j], strlen(it->needles[j])) && p[strlen(it->needles[j])] == '\n';
        n += !needle;
        p = nl + 1;
    }
    return n;
}

/* words of the essay context before needle j, the needles' own words not counted */
static size_t essay_words_before(const RulerItem* it, const char* at) {
    const char* p = strchr(it->text, '\n') + 1;
    size_t words = 0;
    bool in_word = false;
    for (; p < at; p++) {
        bool needle_start = false;
        for (size_t j = 0; j < it->n_needles && !in_word; j++)
            if (!strncmp(p, it->needles[j], strlen(it->needles[j]))) {
                p += strlen(it->needles[j]) - 1;
                needle_start = true;
            }
        if (needle_start) continue;
        bool space = *p == ' ' || *p == '\n';
        words += !space && !in_word;
        in_word = !space;
    }
    return words;
}

/* the first line of the context: after the template's first line, for vt after the one-shot example */
static const char* context_start(const RulerItem* it) {
    if (it->task != RULER_VT) return strchr(it->text, '\n') + 1;
    const char* open = "in the following text.\n\n";
    const char* last = NULL;
    for (const char* p = strstr(it->text, open); p; p = strstr(p + 1, open)) last = p;
    CHECK(last, "vt item %zu: no template in its prompt", it->id);
    return last + strlen(open);
}

static void check_needles(const RulerItem* it, const char* label) {
    bool once = true, depth_ok = true;
    size_t essay_sents = 0, *ends = NULL;
    bool essay = it->task == RULER_NIAH_SINGLE_2 || it->task == RULER_NIAH_SINGLE_3 ||
                 it->task == RULER_NIAH_MULTIKEY_1 || it->task == RULER_NIAH_MULTIVALUE ||
                 it->task == RULER_NIAH_MULTIQUERY;
    if (essay) {
        ends = mallocCheck(it->haystack * sizeof(size_t));
        essay_sents = ruler_essay_sentence_ends(&S, it->haystack, ends);
    }
    for (size_t j = 0; j < it->n_needles; j++) {
        once &= count_of(it->text, it->needles[j]) == 1;
        const char* at = strstr(it->text, it->needles[j]);
        if (!at) continue;
        if (essay) { /* before sentence floor(sentences x depth): the words of the sentences before it */
            size_t p = (size_t)((double)essay_sents * it->depth[j]);
            depth_ok &= essay_words_before(it, at) == (p ? ends[p - 1] : 0);
        } else {
            double want = it->depth[j] * (double)it->haystack;
            depth_ok &= (double)lines_before(context_start(it), at, it) == want;
        }
    }
    free(ends);
    EXPECT(once && depth_ok, "%s: %zu needles each exactly once (%s), at their depths (%s), first at %.3f", label,
           it->n_needles, once ? "yes" : "NO", depth_ok ? "yes" : "NO", it->n_needles ? it->depth[0] : 0.0);
}

/* niah: every reference is the value of a needle whose key the question asks */
static void check_niah_answers(const RulerItem* it, const char* label) {
    const char* question = strstr(it->text, "\nWhat ");
    bool ok = question != NULL;
    for (size_t r = 0; r < it->n_refs && ok; r++) {
        bool found = false;
        for (size_t j = 0; j < it->n_needles; j++) {
            const char* v = strstr(it->needles[j], " is: ");
            char key[RULER_REF_LEN];
            const char* k = strstr(it->needles[j], " for ") + 5;
            snprintf(key, sizeof(key), "%.*s", (int)(v - k), k);
            if (!strncmp(v + 5, it->refs[r], strlen(it->refs[r])) && strstr(question, key)) found = true;
        }
        ok &= found && count_of(it->text, it->refs[r]) == 1;
    }
    EXPECT(ok, "%s: the %zu references are the asked keys' values, each once in the prompt", label, it->n_refs);
}

/* vt: resolve every "VAR X = value" and "VAR X = VAR Y" of the prompt (example included); the
   variables holding the asked value are the references */
static void check_vt_answers(const RulerItem* it, const char* label) {
    char vars[64][8], src[64][8];
    size_t n = 0;
    for (const char* p = strstr(it->text, "VAR "); p && n < 64; p = strstr(p + 4, "VAR ")) {
        if (p >= it->text + 2 && p[-2] == '=') continue; /* the right side of "VAR B = VAR A" */
        if (sscanf(p, "VAR %7[A-Z] = %7s", vars[n], src[n]) != 2) continue;
        if (!strcmp(src[n], "VAR")) sscanf(p, "VAR %*s = VAR %7[A-Z]", src[n]);
        n++;
    }
    char value[16];
    const char* q = strstr(context_start(it), "assigned the value ");
    sscanf(q + strlen("assigned the value "), "%15[0-9]", value);
    size_t holding = 0, matched = 0;
    for (size_t i = 0; i < n; i++) {
        const char* v = src[i];
        for (size_t hops = 0; hops < 64 && v[0] >= 'A' && v[0] <= 'Z'; hops++)
            for (size_t j = 0; j < n; j++)
                if (!strcmp(vars[j], v)) {
                    v = src[j];
                    break;
                }
        if (strcmp(v, value)) continue;
        holding++;
        for (size_t r = 0; r < it->n_refs; r++) matched += !strcmp(vars[i], it->refs[r]);
    }
    EXPECT(n == 10 && holding == it->n_refs && matched == it->n_refs,
           "%s: %zu assignments in the prompt; %zu variables resolve to %s, the %zu references", label, n, holding,
           value, it->n_refs);
}

/* cwe: the numbered entries "k. word" of the whole prompt counted; the references are the 10
   most numerous, each more than any other word */
static void check_cwe_answers(const RulerItem* it, const char* label) {
    const char* words[20000];
    size_t count[20000], n = 0;
    for (const char* p = it->text; (p = strstr(p, ". ")) != NULL; p += 2) {
        if (p == it->text || p[-1] < '0' || p[-1] > '9') continue;
        char w[32];
        if (sscanf(p + 2, "%31[a-z]", w) != 1) continue;
        size_t i = 0;
        while (i < n && strcmp(words[i], w)) i++;
        if (i == n && n < 20000) {
            words[n] = strdup(w);
            count[n++] = 0;
        }
        count[i]++;
    }
    size_t min_ref = SIZE_MAX, max_other = 0;
    for (size_t i = 0; i < n; i++) {
        bool ref = false;
        for (size_t r = 0; r < it->n_refs; r++) ref |= !strcmp(words[i], it->refs[r]);
        if (ref) min_ref = count[i] < min_ref ? count[i] : min_ref;
        else max_other = count[i] > max_other ? count[i] : max_other;
        free((void*)words[i]);
    }
    EXPECT(it->n_refs == 10 && min_ref != SIZE_MAX && min_ref > max_other,
           "%s: %zu distinct words; the 10 references appear >= %zu times, every other word <= %zu", label, n, min_ref,
           max_other);
}

/* fwe: the coded text's words counted; "..." first, then the references in order, then the rest */
static void check_fwe_answers(const RulerItem* it, const char* label) {
    const char* a = strstr(it->text, "coded words. ") + strlen("coded words. ");
    const char* b = strstr(a, "\nQuestion:");
    char words[4096][8];
    size_t count[4096] = {0}, n = 0;
    for (const char* p = a; p < b;) {
        size_t len = strcspn(p, " \n");
        size_t i = 0;
        while (i < n && (strlen(words[i]) != len || strncmp(words[i], p, len))) i++;
        if (i == n && n < 4096) snprintf(words[n++], 8, "%.*s", (int)len, p);
        count[i]++;
        p += len + 1;
    }
    size_t c_dots = 0, c_ref[3] = {0}, max_other = 0;
    for (size_t i = 0; i < n; i++) {
        int r = -1;
        for (int k = 0; k < 3; k++)
            if (!strcmp(words[i], it->refs[k])) r = k;
        if (!strcmp(words[i], "...")) c_dots = count[i];
        else if (r >= 0) c_ref[r] = count[i];
        else if (count[i] > max_other) max_other = count[i];
    }
    EXPECT(c_dots > c_ref[0] && c_ref[0] > c_ref[1] && c_ref[1] > c_ref[2] && c_ref[2] > max_other,
           "%s: '...' %zu times, then the references %zu > %zu > %zu, every other word <= %zu", label, c_dots, c_ref[0],
           c_ref[1], c_ref[2], max_other);
}

static void check_task(TokEncoder* enc, RulerTask t, size_t length, const char* tok_name) {
    char label[128];
    snprintf(label, sizeof(label), "%s %s L=%zu", tok_name, ruler_task_name(t), length);
    RulerItem it = {0}, again = {0}, other = {0};
    ruler_item_build(&it, &S, enc, t, length, 7, 3, "--lengths");
    check_size(enc, &it, label);
    if (t <= RULER_VT) check_needles(&it, label);
    if (t <= RULER_NIAH_MULTIQUERY) check_niah_answers(&it, label);
    else if (t == RULER_VT) check_vt_answers(&it, label);
    else if (t == RULER_CWE) check_cwe_answers(&it, label);
    else check_fwe_answers(&it, label);
    ruler_item_build(&again, &S, enc, t, length, 7, 3, "--lengths");
    ruler_item_build(&other, &S, enc, t, length, 8, 3, "--lengths");
    EXPECT(again.n_tokens == it.n_tokens && !memcmp(again.tokens, it.tokens, it.n_tokens * sizeof(int32_t)) &&
               !strcmp(again.text, it.text) && strcmp(other.text, it.text),
           "%s: the same (seed, id) gives the same %zu bytes, another seed another prompt", label, it.text_len);
    ruler_item_free(&it);
    ruler_item_free(&again);
    ruler_item_free(&other);
}

/* a longer length keeps the item's keys, values and references: the same questions */
static void check_sweep(TokEncoder* enc) {
    bool same = true;
    for (int t = 0; t <= RULER_VT; t++) {
        RulerItem a = {0}, b = {0};
        ruler_item_build(&a, &S, enc, (RulerTask)t, 2048, 1, 0, "--lengths");
        ruler_item_build(&b, &S, enc, (RulerTask)t, 4096, 1, 0, "--lengths");
        same &= a.n_refs == b.n_refs && !memcmp(a.refs, b.refs, sizeof(a.refs)) && b.haystack > a.haystack;
        ruler_item_free(&a);
        ruler_item_free(&b);
    }
    EXPECT(same, "niah and vt at 2048 and 4096 tokens: the same references, a larger haystack");
}

static void check_scoring(void) {
    const char* refs[] = {"1234567", "apple-tree", "9f1c"};
    EXPECT(ruler_score_all("1234567, apple-tree and 9f1c", refs, 3) == 1.0, "all three references: 1");
    EXPECT(ruler_score_all("The answer is 1234567 and APPLE-Tree.", refs, 3) == 2.0 / 3,
           "two of three, one in other case: 2/3");
    EXPECT(ruler_score_all("nothing here 123456", refs, 3) == 0.0, "none (a prefix of one is not it): 0");
    EXPECT(ruler_score_all("", refs, 3) == 0.0, "an empty prediction: 0");
    const char* upper[] = {"9F1C"};
    EXPECT(ruler_score_all("xx9f1cxx", upper, 1) == 1.0, "the reference lowercased too, found inside a word: 1");
    const char* kelvin[] = {"kw"};
    EXPECT(ruler_score_all("\xE2\x84\xAAW", kelvin, 1) == 1.0, "KELVIN SIGN lowercases to k as in Python: 1");
    EXPECT(ruler_score_part("only apple-tree", refs, 3) == 1.0 && ruler_score_part("none", refs, 3) == 0.0,
           "string_match_part: 1 for any reference, 0 for none");
}

static void child_too_short(void* arg) {
    TokEncoder enc;
    tok_encoder_init(&enc, arg);
    RulerItem it = {0};
    ruler_item_build(&it, &S, &enc, RULER_VT, 400, 1, 0, "--lengths");
}
static void child_too_long(void* arg) {
    bool on[RULER_N_TASKS] = {[RULER_NIAH_SINGLE_1] = true};
    size_t lengths[] = {2048, 9000};
    ruler_check_lengths(&S, arg, on, lengths, 2, 8192, 1, "--lengths");
}
static void child_missing_words(void* arg) {
    RulerSources s;
    ruler_sources_load(&s, "/nonexistent/words", NULL);
}

static void check_refusals(const Tokenizer* tok) {
    bool on[RULER_N_TASKS];
    char err[512] = "";
    EXPECT(ruler_parse_tasks("niah_single_1,nope", on, err, sizeof(err)) == 1 && strstr(err, "'nope'") &&
               strstr(err, "niah_multiquery"),
           "an unknown task is refused: %s", err);
    EXPECT(ruler_parse_tasks("vt,cwe", on, err, sizeof(err)) == 0 && on[RULER_VT] && on[RULER_CWE] && !on[RULER_FWE],
           "vt,cwe: those two");
    EXPECT(ruler_parse_tasks("all", on, err, sizeof(err)) == 0 && on[RULER_NIAH_SINGLE_1] && on[RULER_FWE], "all");
    const char* short_msg[] = {"--lengths: length 400 is too short for task 'vt'", NULL};
    expect_dies_with("a length below vt's fixed text", child_too_short, (void*)tok, short_msg);
    const char* long_msg[] = {"--lengths: length 9000 is above what the model can address: 8192", NULL};
    expect_dies_with("a length past the model's positions", child_too_long, (void*)tok, long_msg);
    const char* words_msg[] = {"/nonexistent/words", "wamerican", NULL};
    expect_dies_with("a missing word list names the file and the package", child_missing_words, NULL, words_msg);
    ModelConfig cfg;
    model_config_default(&cfg);
    cfg.max_position_embeddings = 2048;
    cfg.yarn_factor = 4;
    cfg.yarn_orig_max = 2048;
    EXPECT(ruler_max_length(&cfg) == 8192, "YaRN factor 4 on 2048 positions addresses 8192");
}

/* two niah_single_1 items through a random model: generation, scores, JSON and prompt files */
static void check_eval(const Tokenizer* tok) {
    ModelConfig cfg;
    model_config_default(&cfg);
    test_model_sizes(&cfg, tok_vocab_size(tok), 32, 2, 4, 2, 64);
    Model m;
    model_build(&m, &cfg, 1, 1, NULL, 0, false);
    model_init_weights(&m, &(ModelInit){.seed = 5, .std = 0.1});
    Generator g;
    gen_build(&g, &m, 1024, 256);
    char dir[] = "/tmp/test_ruler_XXXXXX";
    CHECK(mkdtemp(dir), "mkdtemp");
    RulerResult r;
    ruler_eval_task(&r, &g, tok, &S, RULER_NIAH_SINGLE_1, 1024, 2, 3, dir);
    bool ok = r.n == 2 && !r.stopped;
    double mean = 0;
    for (size_t i = 0; i < r.n; i++) {
        const RulerItemResult* ir = &r.items[i];
        const char* refs[RULER_MAX_REFS];
        for (size_t k = 0; k < ir->n_refs; k++) refs[k] = ir->refs[k];
        ok &= ir->id == i && ir->prompt_tokens + 128 <= 1024 && ir->n_refs == 1 &&
              ir->score == ruler_score_all(ir->prediction, refs, ir->n_refs);
        mean += ir->score / 2;
    }
    EXPECT(ok && r.score == mean && r.ci_lo <= r.score && r.score <= r.ci_hi,
           "ruler_eval_task: 2 items, prompts <= 896 tokens, score %.2f in [%.2f, %.2f], prediction '%.40s'", r.score,
           r.ci_lo, r.ci_hi, r.n ? r.items[0].prediction : "");
    cJSON* root = cJSON_CreateObject();
    ruler_result_json(root, &r);
    cJSON* cell = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "ruler"), "niah_single_1"), "1024");
    cJSON* items = cJSON_GetObjectItem(cell, "items");
    cJSON* first = cJSON_GetArrayItem(items, 0);
    const cJSON* note = cJSON_GetObjectItem(root, "ruler_note");
    EXPECT(cell && cJSON_GetArraySize(items) == 2 && cJSON_GetArraySize(cJSON_GetObjectItem(cell, "ci")) == 2 &&
               cJSON_GetObjectItem(cell, "n")->valuedouble == 2 && cJSON_GetObjectItem(first, "prediction") &&
               cJSON_GetArraySize(cJSON_GetObjectItem(first, "references")) == 1 && cJSON_IsString(note) &&
               strstr(note->valuestring, "not comparable number for number"),
           "JSON: ruler.niah_single_1.1024 with n, score, ci, 2 items; ruler_note says it is RULER-generated");
    cJSON_Delete(root);
    TokEncoder enc;
    tok_encoder_init(&enc, tok);
    RulerItem it = {0};
    ruler_item_build(&it, &S, &enc, RULER_NIAH_SINGLE_1, 1024, 3, 1, "--lengths");
    char path[256];
    snprintf(path, sizeof(path), "%s/niah_single_1_1024_1.txt", dir);
    size_t len;
    char* dumped = file_read_all(path, &len);
    EXPECT(len == it.text_len && !memcmp(dumped, it.text, len), "--dump-prompts: %s holds item 1's prompt", path);
    free(dumped);
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/niah_single_1_1024_%zu.txt", dir, i);
        remove(path);
    }
    rmdir(dir);
    ruler_item_free(&it);
    tok_encoder_free(&enc);
    ruler_result_free(&r);
    gen_free(&g);
    model_free(&m);
}

int main(void) {
    ruler_sources_load(&S, NULL, NULL);
    printf("sources: %zu words, essay of %zu words\n", S.n_words, S.n_essay_words);
    const char* names[] = {"smol", "gpt2"};
    Tokenizer* smol = NULL;
    for (size_t k = 0; k < 2; k++) {
        char path[128];
        snprintf(path, sizeof(path), "tests/fixtures/tokenizer/%s.json", names[k]);
        Tokenizer* tok = tok_load(path);
        TokEncoder enc;
        tok_encoder_init(&enc, tok);
        printf("%s tokenizer\n", names[k]);
        for (int t = 0; t < RULER_N_TASKS; t++) check_task(&enc, (RulerTask)t, 2048, names[k]);
        if (k == 0) {
            /* RULER's repeats from 4096 tokens on (30 and 3): the example alone takes 2700 tokens of this
               small vocabulary, so 8192 */
            check_task(&enc, RULER_CWE, 8192, names[k]);
            check_task(&enc, RULER_NIAH_MULTIKEY_3, 4096, names[k]);
            check_sweep(&enc);
        }
        tok_encoder_free(&enc);
        if (k == 0) smol = tok;
        else tok_free(tok);
    }
    printf("scoring\n");
    check_scoring();
    printf("refusals\n");
    check_refusals(smol);
    printf("evaluation\n");
    check_eval(smol);
    tok_free(smol);
    ruler_sources_free(&S);
    printf("%d passed, %d failed\n", test_passes, test_failures);
    return test_failures != 0;
}

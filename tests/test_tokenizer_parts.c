/* The pre-tokenizers and normalizers on hand-made tokenizer.json snippets,
   with the pre-tokens and texts worked out by hand (the Split, Punctuation,
   Whitespace and Metaspace cases are the Hugging Face library's own unit
   tests, tokenizers/src/pre_tokenizers/ split.rs, metaspace.rs, punctuation.rs, whitespace.rs):
   - Split with each behavior, with invert and with a String pattern,
     Punctuation, Whitespace, WhitespaceSplit, Metaspace (prepend_scheme
     always, first and never; split on and off);
   - NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, Replace (string and
     regex), Sequence, and an invalid UTF-8 byte passing through.
   tests/test_tokenizer_model.c covers the model, added tokens, decoders and
   malformed files. */
#include "tests/tok_snippets.h"

static const char* HOW[] = {"How",  "are",  "you",    "doing", "How ", "are ",       "you ",
                            " are", " you", "doing?", "Hey,",  "man!", "Hey friend", "     How are you",
                            "Hey",  "man",  "Good?",  "man,"};

static void split_behaviors(void) {
    static const char* names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
    static const char* want[5][8] = {
        {"How", "are", "you", "doing", "?"},
        {"How", " ", "are", " ", "you", " ", "doing", "?"},
        {"How ", "are ", "you ", "doing", "?"},
        {"How", " are", " you", " doing", "?"},
        {"How", " ", "are", " ", "you", " ", "doing?"},
    };
    static const size_t n_want[5] = {5, 8, 5, 5, 7};
    const char* extra[N(HOW) + 1];
    memcpy(extra, HOW, sizeof HOW);
    extra[N(HOW)] = " doing";
    for (int b = 0; b < 5; b++) {
        char json[1024], label[96], err[512];
        snprintf(
            json, sizeof json,
            BYTE_LEVEL_JSON("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\w+|[^\\\\w\\\\s]+\"},\"behavior\":\"%s\","
                            "\"invert\":true}"),
            names[b]);
        Tokenizer* t = load(json, extra, N(extra), err, sizeof err);
        CHECK(t, "%s", err);
        snprintf(label, sizeof label, "Split \\w+|[^\\w\\s]+ %s, invert", names[b]);
        expect_pieces(t, label, "How are you doing?", want[b], n_want[b], extra, N(extra));
        tok_free(t);
    }
}

static void other_splits(void) {
    static const struct {
        const char* label;
        const char* pre;
        const char* text;
        const char* want[8];
        size_t n;
    } cases[] = {
        {"Split String \" \" Removed",
         "{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"Removed\"}",
         "Hey, man!",
         {"Hey,", "man!"},
         2},
        {"Split Regex \\s+ Removed",
         "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\s+\"},\"behavior\":\"Removed\"}",
         "Hey, man!",
         {"Hey,", "man!"},
         2},
        {"Punctuation",
         "{\"type\":\"Punctuation\"}",
         "Hey friend!     How are you?!?",
         {"Hey friend", "!", "     How are you", "?", "!", "?"},
         6},
        {"Whitespace", "{\"type\":\"Whitespace\"}", "Hey man!", {"Hey", "man", "!"}, 3},
        {"Whitespace", "{\"type\":\"Whitespace\"}", "How are you doing?", {"How", "are", "you", "doing", "?"}, 5},
        {"WhitespaceSplit", "{\"type\":\"WhitespaceSplit\"}", "Hey, man, Good?", {"Hey,", "man,", "Good?"}, 3},
    };
    for (size_t k = 0; k < N(cases); k++) {
        char json[1024], err[512];
        snprintf(json, sizeof json, BYTE_LEVEL_JSON("%s"), cases[k].pre);
        Tokenizer* t = load(json, HOW, N(HOW), err, sizeof err);
        CHECK(t, "%s", err);
        expect_pieces(t, cases[k].label, cases[k].text, cases[k].want, cases[k].n, HOW, N(HOW));
        tok_free(t);
    }
}

static void metaspace(void) {
    static const char* extra[] = {"\xE2\x96\x81Hey",
                                  "\xE2\x96\x81"
                                  "friend!",
                                  "\xE2\x96\x81",
                                  "Hey",
                                  "\xE2\x96\x81Hey\xE2\x96\x81"
                                  "friend!",
                                  "<s>",
                                  "\xE2\x96\x81"
                                  "a",
                                  "\xE2\x96\x81"
                                  "b"};
    static const struct {
        const char* scheme;
        const char* split;
        const char* text;
        const char* want[6];
        size_t n;
    } cases[] = {
        {"always",
         "true",
         "Hey friend!",
         {"\xE2\x96\x81Hey", "\xE2\x96\x81"
                             "friend!"},
         2},
        {"always",
         "true",
         "Hey   friend!",
         {"\xE2\x96\x81Hey", "\xE2\x96\x81", "\xE2\x96\x81",
          "\xE2\x96\x81"
          "friend!"},
         4},
        {"never",
         "true",
         "Hey friend!",
         {"Hey", "\xE2\x96\x81"
                 "friend!"},
         2},
        {"always",
         "false",
         "Hey friend!",
         {"\xE2\x96\x81Hey\xE2\x96\x81"
          "friend!"},
         1},
        {"always",
         "true",
         "a<s>b",
         {"\xE2\x96\x81"
          "a",
          "<s>",
          "\xE2\x96\x81"
          "b"},
         3},
        {"first",
         "true",
         "a<s>b",
         {"\xE2\x96\x81"
          "a",
          "<s>", "b"},
         3},
    };
    for (size_t k = 0; k < N(cases); k++) {
        char json[1024], label[96], err[512];
        snprintf(json, sizeof json,
                 "{\"model\":{\"type\":\"BPE\",\"vocab\":@VOCAB,\"merges\":[],\"ignore_merges\":true},"
                 "\"added_tokens\":[{\"id\":261,\"content\":\"<s>\",\"special\":true}],"
                 "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Metaspace\",\"replacement\":"
                 "\"\\u2581\",\"prepend_scheme\":\"%s\",\"split\":%s},{\"type\":\"ByteLevel\",\"use_regex\":false}]},"
                 "\"decoder\":{\"type\":\"ByteLevel\"}}",
                 cases[k].scheme, cases[k].split);
        Tokenizer* t = load(json, extra, N(extra), err, sizeof err);
        CHECK(t, "%s", err);
        snprintf(label, sizeof label, "Metaspace %s, split %s", cases[k].scheme, cases[k].split);
        expect_pieces(t, label, cases[k].text, cases[k].want, cases[k].n, extra, N(extra));
        tok_free(t);
    }
}

/* ---- normalizers, through tok_normalize ---- */
static void expect_normalized(const char* normalizer, const char* in, size_t in_len, const char* want) {
    char json[1024], err[512];
    snprintf(json, sizeof json, BYTE_LEVEL_JSON("{\"type\":\"Digits\"}"));
    cJSON* root = parse_with_vocab(json);
    cJSON_AddItemToObject(root, "normalizer", cJSON_Parse(normalizer));
    char* txt = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    Tokenizer* t = load(txt, NULL, 0, err, sizeof err);
    free(txt);
    CHECK(t, "%s", err);
    uint8_t* out;
    size_t n;
    void* region = NULL;
    if (!tok_normalize(t, &region, (const uint8_t*)in, in_len, &out, &n)) { /* no step: the text as it is */
        out = mallocCheck(in_len + 1);
        memcpy(out, in, in_len), n = in_len;
    }
    EXPECT(n == strlen(want) && !memcmp(out, want, n), "normalizer %s: \"%.*s\" -> \"%.*s\"", normalizer, (int)in_len,
           in, (int)n, (const char*)out);
    free(out);
    tok_regex_region_free(region);
    tok_free(t);
}

static void normalizers(void) {
    static const struct {
        const char *norm, *in, *want;
    } cases[] = {
        {"{\"type\":\"NFC\"}", "e\xCC\x81t\xC3\xA9", "\xC3\xA9t\xC3\xA9"},
        {"{\"type\":\"NFD\"}", "\xC3\xA9", "e\xCC\x81"},
        {"{\"type\":\"NFKC\"}", "\xEF\xAC\x81x\xE2\x91\xA0", "fix1"},
        {"{\"type\":\"NFKD\"}", "\xC3\xA9\xEF\xAC\x81",
         "e\xCC\x81"
         "fi"},
        {"{\"type\":\"Lowercase\"}", "ABC \xC4\xB0\xC3\x89\xCE\xA3", "abc i\xCC\x87\xC3\xA9\xCF\x83"},
        {"{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":false}", " \t a b \n", "a b \n"},
        {"{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":true}", "\xE3\x80\x80 a b \n", "a b"},
        {"{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"}", "ab",
         "\xE2\x96\x81"
         "ab"},
        {"{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"}", "", ""},
        {"{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\\u2581\"}", "a b  c",
         "a\xE2\x96\x81"
         "b\xE2\x96\x81\xE2\x96\x81"
         "c"},
        {"{\"type\":\"Replace\",\"pattern\":{\"Regex\":\" {2,}\"},\"content\":\" \"}", "a  b   c d", "a b c d"},
        {"{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFKC\"},{\"type\":\"Lowercase\"}]}", "\xEF\xAC\x81X",
         "fix"},
        {"{\"type\":\"Sequence\",\"normalizers\":[]}", "As Is", "As Is"},
    };
    for (size_t k = 0; k < N(cases); k++)
        expect_normalized(cases[k].norm, cases[k].in, strlen(cases[k].in), cases[k].want);
    expect_normalized("{\"type\":\"NFC\"}",
                      "e\xCC\x81\xFF"
                      "e\xCC\x81",
                      7, "\xC3\xA9\xFF\xC3\xA9"); /* invalid byte kept */
}

int main(void) {
    uc_init();
    split_behaviors();
    other_splits();
    metaspace();
    normalizers();
    printf("test_tokenizer_parts: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}

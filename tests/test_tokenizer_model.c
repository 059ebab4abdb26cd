/* The BPE model, added tokens and decoders on hand-made tokenizer.json
   snippets, with ids and texts worked out by hand, and malformed snippets:
   - a Llama-2-style model (Prepend + Replace normalizer, no pre-tokenizer, a
     vocabulary of UTF-8 strings): merges, byte_fallback (<0xHH>), unk_token
     with and without fuse_unk, and its decoder (Replace, ByteFallback, Fuse,
     Strip) back to the text, in one call and in pieces (tok_decode_from);
   - continuing_subword_prefix and end_of_word_suffix;
   - the Metaspace decoder; ByteFallback keeps bytes that are not UTF-8;
   - added tokens: lstrip, rstrip, single_word, normalized (matched in the
     normalized text), and 5000 of them;
   - malformed: a bad regex (in a Split and in a Replace normalizer), a bad
     behavior, prepend_scheme or replacement, an unknown pre-tokenizer,
     normalizer or decoder, a decoder that does not fit the model, an
     unk_token outside the vocab: each refused with its JSON path. */
#include "tests/tok_snippets.h"

/* the Llama-2 shape: ids 0 <unk>, 1 <s>, 3 ▁, 4 a, 5 b, 6 ▁a, 7 ab, 8 ▁ab, 9 <0xC3>, 10 <0xA9> */
#define LLAMA_JSON(fuse) \
    "{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"}," \
    "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\\u2581\"}]},\"pre_tokenizer\":null," \
    "\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"byte_fallback\":true,\"fuse_unk\":" fuse "," \
    "\"vocab\":{\"<unk>\":0,\"<s>\":1,\"</s>\":2,\"\\u2581\":3,\"a\":4,\"b\":5,\"\\u2581a\":6,\"ab\":7," \
    "\"\\u2581ab\":8,\"<0xC3>\":9,\"<0xA9>\":10},\"merges\":[\"\\u2581 a\",\"a b\",\"\\u2581a b\"]}," \
    "\"added_tokens\":[{\"id\":1,\"content\":\"<s>\",\"special\":true}]," \
    "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":\"\\u2581\"}," \
    "\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},{\"type\":\"Strip\",\"content\":\" \"," \
    "\"start\":1,\"stop\":0}]}}"

static void expect_decoded(const Tokenizer* t, const char* label, const int32_t* ids, size_t n, const char* want) {
    uint8_t* out = NULL;
    size_t len = 0, cap = 0;
    size_t ok = tok_decode(t, ids, n, &out, &len, &cap);
    EXPECT(ok == n && len == strlen(want) && !memcmp(out, want, len), "%s: decoded \"%.*s\"", label, (int)len,
           (const char*)out);
    for (size_t cut = 1; cut < n; cut++) { /* in two pieces: the same bytes */
        size_t len2 = 0;
        tok_decode_from(t, ids, cut, true, &out, &len2, &cap);
        tok_decode_from(t, ids + cut, n - cut, false, &out, &len2, &cap);
        if (len2 != strlen(want) || memcmp(out, want, len2)) {
            EXPECT(0, "%s: decoded in pieces %zu + %zu: \"%.*s\"", label, cut, n - cut, (int)len2, (const char*)out);
            break;
        }
    }
    free(out);
}

static void bpe_model(void) {
    char err[512];
    Tokenizer* t = load(LLAMA_JSON("true"), NULL, 0, err, sizeof err);
    CHECK(t, "%s", err);
    expect_ids(t, "Llama-2 shape: merges", "ab ab", (int32_t[]){8, 8}, 2);
    expect_ids(t, "byte_fallback", "\xC3\xA9", (int32_t[]){3, 9, 10}, 3);
    expect_ids(t, "unk, fuse_unk", "dd", (int32_t[]){3, 0}, 2);
    expect_ids(t, "unk waits behind byte_fallback tokens (as the library has it)", "d\xC3\xA9",
               (int32_t[]){3, 9, 10, 0}, 4);
    expect_ids(t, "added <s>: Prepend again after it", "a<s>b", (int32_t[]){6, 1, 3, 5}, 4);
    expect_decoded(t, "Llama-2 decoder", (int32_t[]){8, 8, 3, 9, 10}, 5, "ab ab \xC3\xA9");
    expect_decoded(t, "Llama-2 decoder: <s> is its content", (int32_t[]){1, 8}, 2, "<s> ab");
    expect_decoded(t, "ByteFallback keeps bytes that are not UTF-8", (int32_t[]){6, 9, 9, 5}, 4,
                   "a\xC3\xC3"
                   "b");
    tok_free(t);
    t = load(LLAMA_JSON("false"), NULL, 0, err, sizeof err);
    CHECK(t, "%s", err);
    expect_ids(t, "unk without fuse_unk", "dd", (int32_t[]){3, 0, 0}, 3);
    tok_free(t);

    /* "a" + "##b</w>" merges into "ab</w>", then "a" "##b" "##b</w>" into "ab", "abb</w>" */
    t = load("{\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},\"decoder\":{\"type\":\"Fuse\"},"
             "\"model\":{\"type\":\"BPE\",\"continuing_subword_prefix\":\"##\",\"end_of_word_suffix\":\"</w>\","
             "\"vocab\":{\"a\":0,\"##b\":1,\"##b</w>\":2,\"ab</w>\":3,\"ab\":4,\"abb</w>\":5,\"a</w>\":6},"
             "\"merges\":[\"a ##b</w>\",\"a ##b\",\"ab ##b</w>\"]}}",
             NULL, 0, err, sizeof err);
    CHECK(t, "%s", err);
    expect_ids(t, "continuing_subword_prefix and end_of_word_suffix", "ab abb a", (int32_t[]){3, 5, 6}, 3);
    tok_free(t);

    t = load(
        "{\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"always\"},"
        "\"decoder\":{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"always\"},"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{\"\\u2581Hey\":0,\"\\u2581friend\":1,\"\\u2581\":2},\"merges\":[]}}",
        NULL, 0, err, sizeof err);
    CHECK(t, "%s", err);
    expect_decoded(t, "Metaspace decoder", (int32_t[]){0, 1, 2}, 3, "Hey friend ");
    tok_free(t);
}

static void added_tokens(void) {
    static const char* extra[] = {"[L]", "[R]", "[W]", "XY", "ZZ"};
    char err[512];
    Tokenizer* t =
        load("{\"normalizer\":{\"type\":\"Lowercase\"},\"model\":{\"type\":\"BPE\",\"vocab\":@VOCAB,"
             "\"merges\":[],\"ignore_merges\":true},"
             "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"use_regex\":false},"
             "\"decoder\":{\"type\":\"ByteLevel\"},\"added_tokens\":["
             "{\"id\":256,\"content\":\"[L]\",\"lstrip\":true},{\"id\":257,\"content\":\"[R]\",\"rstrip\":true},"
             "{\"id\":258,\"content\":\"[W]\",\"single_word\":true},"
             "{\"id\":259,\"content\":\"XY\",\"normalized\":true},{\"id\":260,\"content\":\"ZZ\"}]}",
             extra, N(extra), err, sizeof err);
    CHECK(t, "%s", err);
    /* the text between added tokens is one pre-token: "a  " would be the ids of a, space, space */
    expect_ids(t, "lstrip takes the spaces before", "a  [L]b", (int32_t[]){'a', 256, 'b'}, 3);
    expect_ids(t, "rstrip takes the spaces after", "a[R]  b", (int32_t[]){'a', 257, 'b'}, 3);
    expect_ids(t, "single_word: not inside a word", "a[W]", (int32_t[]){'a', '[', 'w', ']'}, 4);
    expect_ids(t, "single_word: between spaces", "a [W] b", (int32_t[]){'a', ' ', 258, ' ', 'b'}, 5);
    expect_ids(t, "normalized: matched in the lowercased text", "aXYb", (int32_t[]){'a', 259, 'b'}, 3);
    expect_ids(t, "normalized false: matched in the raw text", "AZZB", (int32_t[]){'a', 260, 'b'}, 3);
    expect_ids(t, "ZZ lowercased is not ZZ", "zz", (int32_t[]){'z', 'z'}, 2);
    tok_free(t);

    /* 5000 added tokens <t0> .. <t4999>: each found, the longest at a position */
    cJSON* root = parse_with_vocab(BYTE_LEVEL_JSON("{\"type\":\"Digits\"}"));
    cJSON* added = cJSON_AddArrayToObject(root, "added_tokens");
    for (int k = 0; k < 5000; k++) {
        char s[16];
        snprintf(s, sizeof s, "<t%d>", k);
        cJSON* a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "id", 256 + k);
        cJSON_AddStringToObject(a, "content", s);
        cJSON_AddItemToArray(added, a);
    }
    char* json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    t = load(json, NULL, 0, err, sizeof err);
    free(json);
    CHECK(t, "%s", err);
    expect_ids(t, "5000 added tokens", "x<t4999><t12>y<t5000>",
               (int32_t[]){'x', 256 + 4999, 256 + 12, 'y', '<', 't', '5', '0', '0', '0', '>'}, 11);
    tok_free(t);
}

static void expect_refused(const char* label, const char* json, const char* phrase) {
    char err[1024] = "";
    Tokenizer* t = load(json, NULL, 0, err, sizeof err);
    EXPECT(!t && strstr(err, phrase), "%s: %s", label, t ? "loaded" : err);
    tok_free(t);
}

static void malformed(void) {
    expect_refused("a bad Split regex",
                   BYTE_LEVEL_JSON("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(a\"},\"behavior\":\"Isolated\"}"),
                   "pre_tokenizer.pretokenizers[0].pattern.Regex: bad regex \"(a\": end pattern with unmatched "
                   "parenthesis (Oniguruma)");
    expect_refused("a bad Replace regex",
                   "{\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Replace\",\"pattern\":"
                   "{\"Regex\":\"[a\"},\"content\":\"b\"}]}}",
                   "normalizer.normalizers[0].pattern.Regex: bad regex \"[a\"");
    expect_refused("a bad behavior",
                   BYTE_LEVEL_JSON("{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"Merged\"}"),
                   "pre_tokenizer.pretokenizers[0].behavior: expected \"Isolated\"");
    expect_refused("a bad prepend_scheme",
                   "{\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"_\",\"prepend_scheme\":\"often\"}}",
                   "pre_tokenizer.prepend_scheme: expected \"always\", \"first\" or \"never\"");
    expect_refused("a replacement of two characters",
                   "{\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"ab\"}}",
                   "pre_tokenizer.replacement: expected one character, got \"ab\"");
    expect_refused("an unknown pre-tokenizer", "{\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"}}",
                   "pre_tokenizer.type: pre-tokenizer \"BertPreTokenizer\" is not supported");
    expect_refused("an unknown normalizer", "{\"normalizer\":{\"type\":\"Precompiled\"}}",
                   "normalizer.type: normalizer \"Precompiled\" is not supported");
    expect_refused(
        "ByteLevel decoder on a model that is not byte-level",
        "{\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
        "decoder.type: decoder \"ByteLevel\" is not supported with a model that is not byte-level");
    expect_refused(
        "an unknown decoder",
        "{\"decoder\":{\"type\":\"WordPiece\"},\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
        "decoder.type: decoder \"WordPiece\" is not supported");
    expect_refused("no decoder", "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
                   "decoder.type: \"(none)\" is not supported");
    expect_refused("a regex Replace decoder",
                   "{\"decoder\":{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"a\"},\"content\":\"b\"},"
                   "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
                   "decoder.pattern: expected {\"String\": a non-empty string}");
    expect_refused("unk_token outside the vocab",
                   "{\"decoder\":{\"type\":\"Fuse\"},\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\","
                   "\"vocab\":{\"a\":0},\"merges\":[]}}",
                   "model.unk_token: \"<unk>\" is not a token of model.vocab");
}

int main(void) {
    uc_init();
    bpe_model();
    added_tokens();
    malformed();
    printf("test_tokenizer_model: %s\n", test_failures ? "FAILED" : "all OK");
    return test_failures ? 1 : 0;
}

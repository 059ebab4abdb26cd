/* The chat template engine (data/chat_template.h) on cases written by hand, each with what Python's jinja2 3.1
   (transformers' settings, tools/chat_reference.py) renders, or, where repoc cannot render it as jinja2
   does, the phrase of its refusal. Every case runs in a child process, so a crash is one failing case with
   its signal, not the end of the test; under make test-ubsan a signed overflow is one too. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "data/chat_template.h"
#include "tests/testutil.h"

typedef struct {
    const char* tmpl;
    const char* context; /* a JSON object; NULL: {} */
    const char* want;    /* the rendering, or NULL when refused */
    const char* refusal; /* a phrase of the refusal */
} Case;

/* render c in this process: prints "OUT:" and the text, or "ERR:" and the message */
static void render_case(void* arg) {
    const Case* c = arg;
    char err[512] = "";
    ChatTemplate* t = chat_template_parse(c->tmpl, err, sizeof(err));
    if (!t) {
        printf("ERR:%s", err);
        return;
    }
    const char* ctx_text = c->context ? c->context : "{}";
    cJSON* ctx = cJSON_Parse(ctx_text);
    chat_json_keep_numbers(ctx, ctx_text);
    size_t len;
    char* out = chat_template_render(t, ctx, &len, err, sizeof(err));
    if (out) printf("OUT:%s", out);
    else printf("ERR:%s", err);
    free(out);
    cJSON_Delete(ctx);
    chat_template_free(t);
}

static void check(const Case* c) {
    static char out[1 << 16];
    int st = capture_child(render_case, (void*)c, out, sizeof(out));
    char label[96];
    snprintf(label, sizeof(label), "%.80s%s", c->tmpl, strlen(c->tmpl) > 80 ? "..." : "");
    if (c->want) {
        EXPECT(st == 0 && !strncmp(out, "OUT:", 4) && !strcmp(out + 4, c->want), "%s -> '%.100s' (exit %d: %.200s)",
               label, c->want, st, out);
    } else {
        EXPECT(st == 0 && !strncmp(out, "ERR:", 4) && strstr(out, c->refusal), "%s refused: '%s' (exit %d: %.200s)",
               label, c->refusal, st, out);
    }
}

/* s repeated n times (malloc'd) */
static char* repeat(const char* s, size_t n) {
    size_t k = strlen(s);
    char* r = malloc(n * k + 1);
    for (size_t i = 0; i < n; i++) memcpy(r + i * k, s, k);
    r[n * k] = 0;
    return r;
}

/* a template of n nested pairs open ... close around 1, between {{ and }} */
static char* nested(const char* open, const char* close, size_t n) {
    char* a = repeat(open, n);
    char* b = repeat(close, n);
    size_t len = strlen(a) + strlen(b) + 16;
    char* t = malloc(len);
    snprintf(t, len, "{{ %s1%s }}", a, b);
    free(a);
    free(b);
    return t;
}

#define RENDERS(tmpl, context, want) \
    { tmpl, context, want, NULL }
#define REFUSED(tmpl, context, phrase) \
    { tmpl, context, NULL, phrase }

static const Case CRASHES[] = {
    /* a namespace that contains itself prints as jinja2's repr does, and compares by identity */
    RENDERS("{% set ns = namespace(a=1) %}{% set ns.me = ns %}{{ ns }}", NULL,
            "<Namespace {'a': 1, 'me': <Namespace {...}>}>"),
    RENDERS("{% set ns = namespace(a=1) %}{% set ns.l = [ns] %}{{ ns.l }}", NULL, "[<Namespace {'a': 1, 'l': [...]}>]"),
    RENDERS("{% set ns = namespace(a=1) %}{% set ns.me = ns %}{{ ns == ns }}", NULL, "True"),
    RENDERS("{% set a = namespace(x=1) %}{% set b = namespace(x=1) %}{{ a == b }} {{ [a] == [a] }}", NULL,
            "False True"),
    REFUSED("{% set ns = namespace(a=1) %}{% set ns.me = ns %}{{ ns | tojson }}", NULL, "tojson of a namespace"),
    /* 64-bit integers: Python's have no bound, so a result beyond 64 bits is refused, never wrapped */
    REFUSED("{{ (-9223372036854775807 - 1) // -1 }}", NULL, "beyond 64 bits"),
    RENDERS("{{ (-9223372036854775807 - 1) % -1 }}", NULL, "0"),
    RENDERS("{{ 7 // -1 }} {{ -7 % -1 }} {{ -7 // 2 }} {{ -7 % 2 }}", NULL, "-7 0 -4 1"),
    REFUSED("{{ 9223372036854775807 + 1 }}", NULL, "beyond 64 bits"),
    REFUSED("{{ -9223372036854775807 - 2 }}", NULL, "beyond 64 bits"),
    REFUSED("{{ 4294967296 * 4294967296 }}", NULL, "beyond 64 bits"),
    REFUSED("{{ n + 1 }}", "{\"n\": 9223372036854775807}", "beyond 64 bits"),
    REFUSED("{{ -(-9223372036854775807 - 1) }}", NULL, "beyond 64 bits"),
    REFUSED("{{ (-9223372036854775807 - 1) | abs }}", NULL, "beyond 64 bits"),
    REFUSED("{{ 99999999999999999999 }}", NULL, "beyond 64 bits"),
    RENDERS("{{ 'abc'[1::9223372036854775807] }}|{{ 'abc'[::-9223372036854775807] }}", NULL, "b|c"),
    RENDERS("{% for i in range(9223372036854775800, 9223372036854775807, 5) %}{{ i }} {% endfor %}", NULL,
            "9223372036854775800 9223372036854775805 "),
    RENDERS("{% for i in range(-9223372036854775800, -9223372036854775807 - 1, -5) %}{{ i }} {% endfor %}", NULL,
            "-9223372036854775800 -9223372036854775805 "),
    REFUSED("{{ 1e300 | int }}", NULL, "beyond 64 bits"),
    RENDERS("{{ 'nan' | float | int }}", NULL, "0"),
};

int main(void) {
    printf("crashes: each refused with a message or rendered as jinja2 does\n");
    for (size_t i = 0; i < sizeof(CRASHES) / sizeof(CRASHES[0]); i++) check(&CRASHES[i]);
    /* nesting: jinja2 itself fails near 70 levels (Python's recursion limit); repoc refuses beyond 64 */
    static const char* const pairs[][2] = {{"(", ")"}, {"[", "]"},      {"not ", ""},
                                           {"- ", ""}, {"{'a': ", "}"}, {"1 if 1 else ", ""}};
    for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
        char* deep = nested(pairs[k][0], pairs[k][1], 10000);
        check(&(Case)REFUSED(deep, NULL, "nested more than 64 deep"));
        free(deep);
    }
    /* chains build their tree in a loop: jinja2 renders 200 chained + and fails near 400 */
    static const char* const chains[] = {" + 1", ".a", "|trim", " ~ 1", " and 1", " == 1"};
    for (size_t k = 0; k < sizeof(chains) / sizeof(chains[0]); k++) {
        char* tail = repeat(chains[k], 10000);
        char* t = malloc(strlen(tail) + 16);
        sprintf(t, "{{ 1%s }}", tail);
        check(&(Case)REFUSED(t, NULL, "an expression more than 256 operations deep"));
        free(tail);
        free(t);
    }
    char* sum = repeat(" + 1", 200);
    char* t200 = malloc(strlen(sum) + 16);
    sprintf(t200, "{{ 1%s }}", sum);
    check(&(Case)RENDERS(t200, NULL, "201"));
    free(sum);
    free(t200);
    char* ok = nested("(", ")", 60);
    check(&(Case)RENDERS(ok, NULL, "1"));
    free(ok);
    /* a value nested deeper than the printer walks, built in a loop */
    const char* deep_list = "{% set ns = namespace(x=1) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}"
                            "{% endfor %}";
    char t[512];
    snprintf(t, sizeof(t), "%s{{ ns.x }}", deep_list);
    check(&(Case)REFUSED(t, NULL, "a value nested more than 500 deep"));
    snprintf(t, sizeof(t), "%s{{ ns.x | tojson }}", deep_list);
    check(&(Case)REFUSED(t, NULL, "a value nested more than 500 deep"));
    snprintf(t, sizeof(t), "%s{{ ns.x == ns.x }}", deep_list); /* Python compares an item with itself by identity */
    check(&(Case)RENDERS(t, NULL, "True"));
    snprintf(t, sizeof(t), "%s%s", deep_list, "{% set ns.y = [ns.x] %}{{ ns.y == [ns.x] }}");
    check(&(Case)RENDERS(t, NULL, "True"));
    return test_failures ? 1 : 0;
}

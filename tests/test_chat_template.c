/* The chat template engine (template/chat_template.h) on cases written by hand, each with what Python's jinja2 3.1
   (transformers' settings, tools/chat_reference.py) renders, or, where repoc cannot render it as jinja2
   does, the phrase of its refusal. Every case runs in a child process, so a crash is one failing case with
   its signal, not the end of the test; under make test-ubsan a signed overflow is one too. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "template/chat_template.h"
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
    static char out[1 << 20];
    int st = capture_child(render_case, (void*)c, out, sizeof(out));
    char label[96];
    snprintf(label, sizeof(label), "%.80s%s", c->tmpl, strlen(c->tmpl) > 80 ? "..." : "");
    for (char* p = label; *p; p++)
        if ((unsigned char)*p < 0x20) *p = ' '; /* one line per case */
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

/* the template's text, literals, filters and methods as jinja2 reads them: newlines, code points, keyword
   arguments taken or refused, never ignored */
static const Case JINJA[] = {
    RENDERS("a\r\nb\r\n", NULL, "a\nb"),
    RENDERS("a\rb\n\n", NULL, "a\nb\n"),
    RENDERS("{{ 'x\r\ny' }}\r\n", NULL, "x\ny"),
    RENDERS("{% if true %}\r\nA{% endif %}\r\n", NULL, "A"),
    RENDERS("{{ 'é日x'[1] }}{{ 'é日x'[-1] }}{{ s[0] }}{{ s[-2] }}", "{\"s\": \"🙂ab\"}", "日x🙂a"),
    RENDERS(
        "{{ 'a'|int(base=16) }} {{ '0x1f'|int(0, 16) }} {{ ' 1_000 '|int }} {{ '12abc'|int }} {{ '1.9'|int }} {{ 'nan'|int }} {{ '1e3'|int }} {{ 'x'|int(7) }} {{ '-0b11'|int(base=0) }} {{ '1__0'|int }}",
        NULL, "10 31 1000 0 1 0 1000 7 -3 0"),
    RENDERS(
        "{{ none|int }} {{ [1]|int }} {{ true|int }} {{ none|float }} {{ '1'|int(base=1) }} {{ '0_7'|int }} {{ '07'|int }} {{ '0x_1f'|int(base=16) }} {{ '+ 5'|int }} {{ '1e400'|float }} {{ {}|int }} {{ '1.5'|float|int }} {{ ' -0x10 '|int(base=0) }} {{ '010'|int(base=0) }} {{ '0_0'|int(base=0) }} {{ 'z'|int(base=36) }}",
        NULL, "0 0 1 0.0 1 7 7 31 0 inf 0 1 -16 10 0 35"),
    RENDERS(
        "{{ '1.'|float }} {{ '.5'|float }} {{ '1.e2'|float }} {{ '_1'|float }} {{ '1_'|float }} {{ 'InFiNiTy'|float }} {{ '-nan'|float }} {{ '1e'|float }} {{ '+.5e-1_0'|float }} {{ 'infinit'|float }} {{ ' 1.5 '|float }} {{ '0x1p3'|float }} {{ 'x'|float(2) }}",
        NULL, "1.0 0.5 100.0 0.0 0.0 inf nan 0.0 5e-11 0.0 1.5 0.0 2"),
    RENDERS("{{ '-9223372036854775808'|int }} {{ '9223372036854775807'|int }} {{ '7fffffffffffffff'|int(base=16) }}",
            NULL, "-9223372036854775808 9223372036854775807 9223372036854775807"),
    REFUSED("{{ ('9' * 30) | int }}", NULL, "beyond 64 bits"),             /* jinja2: 999999999999999999999999999999 */
    REFUSED("{{ '-9223372036854775809' | int }}", NULL, "beyond 64 bits"), /* jinja2: -9223372036854775809 */
    REFUSED("{{ '٣' | int }}", NULL, "non-ASCII"),                         /* jinja2: 3 */
    REFUSED("{{ 'inf' | int }}", NULL, "beyond 64 bits"),                  /* jinja2: OverflowError */
    RENDERS(
        "{{ d | tojson(sort_keys=true) }}|{{ d | tojson(true) }}|{{ d | tojson(indent=2, separators=[',', '=']) }}|{{ d | tojson(false, 1) }}|{{ d|tojson(indent='\t') }}|{{ [] | tojson(indent=2) }}",
        "{\"d\": {\"b\": 1, \"a\": [1, \"é😀\x7f"
        "\\u0001\"], \"c\": {}}}",
        "{\"a\": [1, \"é😀\x7f"
        "\\u0001\"], \"b\": 1, \"c\": {}}|{\"b\": 1, \"a\": [1, \"\\u00e9\\ud83d\\ude00\\u007f\\u0001\"], \"c\": {}}|{\n  \"b\"=1,\n  \"a\"=[\n    1,\n    \"é😀\x7f"
        "\\u0001\"\n  ],\n  \"c\"={}\n}|{\n \"b\": 1,\n \"a\": [\n  1,\n  \"é😀\x7f"
        "\\u0001\"\n ],\n \"c\": {}\n}|{\n\t\"b\": 1,\n\t\"a\": [\n\t\t1,\n\t\t\"é😀\x7f"
        "\\u0001\"\n\t],\n\t\"c\": {}\n}|[]"),
    RENDERS(
        "{{ [{'n': 'a'}, {'n': 'b'}] | join(',', attribute='n') }}|{{ [{'a': {'b': 1}}, {'a': {'b': 2}}] | join('-', attribute='a.b') }}|{{ [[1, 2], [3, 4]] | join(',', attribute='1') }}|{{ [{'a': 1}, {}] | join(',', attribute='a') }}|{{ 'xy' | join(d='-') }}",
        NULL, "a,b|1-2|2,4|1,|x-y"),
    RENDERS(
        "{{ 'abc' | trim(chars='a') }}{{ -3 | abs }} {{ -2.5 | abs }} {{ true | abs }}{{ 'x' | default('a', true) }}{{ '' | d('a', boolean=true) }}",
        NULL, "bc3 2.5 1xa"),
    REFUSED("{{ 'x' | upper(1) }}", NULL, "takes 0 arguments"),                 /* jinja2: TypeError */
    REFUSED("{{ [1] | join(foo=1) }}", NULL, "has no argument 'foo'"),          /* jinja2: TypeError */
    REFUSED("{{ 'a' | replace('a') }}", NULL, "needs its argument 'new'"),      /* jinja2: TypeError */
    REFUSED("{{ 'x' | default('a', true, 3) }}", NULL, "takes 2 arguments"),    /* jinja2: TypeError */
    REFUSED("{{ 'a' | abs }}", NULL, "abs of a str"),                           /* jinja2: TypeError */
    REFUSED("{{ 'a'.strip(chars='a') }}", NULL, "takes no keyword arguments"),  /* jinja2: TypeError */
    REFUSED("{{ {'a': 1}.get(key='a') }}", NULL, "takes no keyword arguments"), /* jinja2: TypeError */
    RENDERS("{{ 'a b'.split(sep=' ') }}{{ 'a,b,c'.split(',', maxsplit=1) }}", NULL, "['a', 'b']['a', 'b,c']"),
    REFUSED("{{ [1] | tojson(indent=1, foo=2) }}", NULL, "has no argument 'foo'"),       /* jinja2: TypeError */
    REFUSED("{{ 'x' | tojson(ensure_ascii=false, ensure_ascii=true) }}", NULL, "twice"), /* jinja2: \"x\" */
    RENDERS("{{ 1_000 }} {{ 1e3 }} {{ 1_0.5_0 }} {{ 2E-3 }} {{ 1.5e+2 }} {{ 00 }}", NULL,
            "1000 1000.0 10.5 0.002 150.0 0"),
    REFUSED("{{ 012 }}", NULL, "leading zero"),                    /* jinja2: TemplateSyntaxError */
    REFUSED("{{ 0x1F }}", NULL, "hex, octal and binary literals"), /* jinja2: 31 */
    /* a message shows the whole character, never half of its UTF-8 bytes */
    REFUSED("{{ 1 \u00e9 2 }}", NULL, "unexpected character '\u00e9'"),
    REFUSED("{{ 'a\\\u00e9' }}", NULL, "the escape \\\u00e9 in"),
};

/* loops, case mapping, ranges, tuples, iterators and reprs as jinja2 has them (or refused where jinja2 prints an
   object's address) */
static const Case SEMANTICS[] = {
    RENDERS(
        "{% set ns = namespace() %}{{ missing is iterable }} {{ missing is sequence }} {{ ns is mapping }} {{ ns is iterable }} {{ {'a': 1}.items() is sequence }} {{ [1] | reverse is sequence }} {{ true is odd }} {{ 1.5 is even }} {{ -0.0 is divisibleby 3 }} {{ 2.0 is even }}",
        NULL, "True True False False False False True False True True"),
    REFUSED("{{ '<a>' | safe + '<b>' }}", NULL, "the filter 'safe' is not supported"), /* jinja2: <a>&lt;b&gt; */
    RENDERS(
        "{% for x in [1, 2, 3] %}{{ x }}{% if x == 2 %}{% break %}{% endif %}{% else %}E{% endfor %}|{% for x in [] %}{{ x }}{% else %}E{% endfor %}|{% for x in [1, 2] if x > 5 %}{{ x }}{% else %}E{% endfor %}",
        NULL, "12|E|E"),
    RENDERS("{% for x in [1, 2] %}{% for y in [3] %}{{ loop.depth }}{{ loop.depth0 }}{% endfor %}{% endfor %}", NULL,
            "1010"),
    RENDERS(
        "{{ 'hello wORLD' | title }} {{ \"it's o'neil d-x\" | title }} {{ 'a1b c_d' | title }} {{ t | title }}|{{ \"it's o'neil\".title() }}",
        "{\"t\": \"a(b [c{d<e\\tf\\u001cg\"}",
        "Hello World It's O'neil D-X A1b C_d A(B [C{D<E\tF\x1c"
        "G|It'S O'Neil"),
    RENDERS(
        "{{ range(3) }} {{ range(1, 10, 3) }} {{ range(10)[2:5] }} {{ range(10)[::-1] }} {{ range(0, 10, 3)[1:] }} {{ range(3) | list }} {{ range(3) == [0, 1, 2] }} {{ range(3) | length }} {{ range(3)[1] }}",
        NULL, "range(0, 3) range(1, 10, 3) range(2, 5) range(9, -1, -1) range(3, 12, 3) [0, 1, 2] False 3 1"),
    RENDERS("{{ range(3) | reverse | list }}{% for i in range(3) | reverse %}{{ i }}{% endfor %}", NULL,
            "[2, 1, 0]210"),
    REFUSED("{{ range(3) | reverse }}", NULL, "printing an iterator"),              /* jinja2: <range_iterator object */
    REFUSED("{{ {'a': 1}.items() }}", NULL, "printing an iterator or a dict view"), /* jinja2: dict_items([('a', 1)]) */
    REFUSED("{{ range(3) | tojson }}", NULL, "tojson of a range()"),                /* jinja2: TypeError */
    RENDERS(
        "{{ {'a': 1}.items() | list }} {{ {'a': 1} | items | list }} {{ {'a': 1}.keys() | list }} {{ {'a': 1}.values() | list }} {{ ({'a': 1}.items() | list)[0] == ['a', 1] }} {{ {'a': 1} | items | list | tojson }}",
        NULL, "[('a', 1)] [('a', 1)] ['a'] [1] False [[\"a\", 1]]"),
    RENDERS(
        "{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}{% for k, v in {'a': 1} | items %}{{ k }}{{ v }}{% endfor %}",
        NULL, "a=1;b=2;a1"),
    RENDERS(
        "{{ m }}",
        "{\"m\": [\" \", \" \", \"​\", \"é\", \"😀\", \"\x7f"
        "\", \"󠀁\", \"\", \"it's\", \"say \\\"hi\\\"\", \"both ' \\\"\"]}",
        "['\\xa0', '\\u2028', '\\u200b', 'é', '😀', '\\x7f', '\\U000e0001', '\\ue000', \"it's\", 'say \"hi\"', 'both \\' \"']"),
    RENDERS("{{ [1, 'a', none, true, 1.5, {'k': [2]}] }} {{ 1e16 }} {{ 1.5e-7 }} {{ 0.1 + 0.2 }} {{ 1e22 }} {{ -0.0 }}",
            NULL, "[1, 'a', None, True, 1.5, {'k': [2]}] 1e+16 1.5e-07 0.30000000000000004 1e+22 -0.0"),
    REFUSED("{{ [1] + range(2) }}", NULL, "'+' of these two sequences"), /* jinja2: TypeError */
};

/* memory and time: jinja2 needs megabytes for each of these; repoc builds strings in one piece, slices them in
   one pass, reads the source once, and refuses (never exhausts memory on) what passes its documented limit */
static void memory_and_time(void) {
    check(&(Case)RENDERS("{{ ('ab' * 100000) | length }}", NULL, "200000"));
    check(&(Case)REFUSED("{{ ('ab' * 1000000000) | length }}", NULL, "more than 256 MiB"));
    char* x = repeat("x", 200000);
    char* ctx = malloc(2 * 200000 + 64);
    sprintf(ctx, "{\"m\": \"%sabc\"}", x);
    check(&(Case)RENDERS("{{ m[1:] | length }} {{ m[::-1] | length }} {{ m[-3:] }} {{ m[::100000] }}", ctx,
                         "200002 200003 abc xxa"));
    char* e = repeat("\u00e9", 100000); /* é, as JSON escapes */
    sprintf(ctx, "{\"m\": \"%s\u65e5\u672c\"}", e);
    check(&(Case)RENDERS("{{ m[1:] | length }} {{ m[::-1][:2] }} {{ m[-2] }} {{ m | length }}", ctx,
                         "100001 \u672c\u65e5 \u65e5 100002"));
    free(x);
    free(e);
    free(ctx);
    /* every step of a string grown in a loop stays in the pool: 15000 steps fit, 100000 are refused */
    check(&(Case)RENDERS("{% set ns = namespace(s='') %}{% for i in range(15000) %}{% set ns.s = ns.s ~ 'x' %}"
                         "{% endfor %}{{ ns.s | length }}",
                         NULL, "15000"));
    check(&(Case)REFUSED("{% set ns = namespace(s='') %}{% for i in range(100000) %}{% set ns.s = ns.s ~ 'x' %}"
                         "{% endfor %}{{ ns.s | length }}",
                         NULL, "more than 256 MiB of text and values"));
    check(&(Case)REFUSED("{% for i in range(30000) %}{{ 'x' * 10000 }}{% endfor %}", NULL, "more than 256 MiB"));
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    EXPECT(ru.ru_maxrss < 384 * 1024,
           "the largest rendering so far peaked at %ld MiB (under 384: 256 MiB of text and values together, and the "
           "test's own)",
           ru.ru_maxrss >> 10);
    /* 200000 tags on as many lines: the source is read once (the old parser counted lines from the start at every
       tag: seconds per 100000) */
    char* many = repeat("{{ 1 }}\n", 200000);
    char* ones = repeat("1\n", 200000);
    ones[2 * 200000 - 1] = 0; /* the source's last newline is dropped */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    check(&(Case)RENDERS(many, NULL, ones));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    EXPECT(s < 5, "200000 tags parsed and rendered in %.2f s (under 5; jinja2 took 9 s here)", s);
    free(many);
    free(ones);
}

int main(void) {
    printf("jinja2's reading of text, literals, filters and methods\n");
    for (size_t i = 0; i < sizeof(JINJA) / sizeof(JINJA[0]); i++) check(&JINJA[i]);
    printf("loops, case mapping, ranges, tuples, iterators and reprs\n");
    for (size_t i = 0; i < sizeof(SEMANTICS) / sizeof(SEMANTICS[0]); i++) check(&SEMANTICS[i]);
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
    printf("memory and time\n");
    memory_and_time();
    return test_failures ? 1 : 0;
}

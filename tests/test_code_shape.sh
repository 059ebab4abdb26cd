#!/usr/bin/env bash
# The shape rules of docs/contributing.md ("Size"), checked by tests/tools/code_shape.sh: first on a planted tree,
# to show each rule finds its break (and lets a listed long function pass), then on this tree:
#   long-functions  model/, train/, hf/
#   many-params     every tracked .c and .h file, of every folder
#   family-names    model/block.c
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" code_shape

SHAPE="$PWD/tests/tools/code_shape.sh"
P="$T/planted"
mkdir -p "$P/model" "$P/docs"
{
    printf 'static int short_one(int a) {\n    return a;\n}\n'
    printf 'int long_one(void) {\n    int s = 0;\n'
    for i in $(seq 60); do printf '    s += %d;\n' "$i"; done
    printf '    return s;\n}\n'
    printf 'int listed_one(void) {\n    int s = 0;\n'
    for i in $(seq 60); do printf '    s += %d;\n' "$i"; done
    printf '    return s;\n}\n'
    printf 'int wide(int a, int b, int c, int d, int e, int f, int g, int h, int i, int j,\n'
    printf '         int (*k)(int, int)) {\n'
    printf '    return a + b + c + d + e + f + g + h + i + j + k(1, 2);\n}\n'
    printf 'int ten(int a, int b, int c, int d, int e, int f, int g, int h, int i, int j) { return a + j; }\n'
} >"$P/model/m.c"
{
    printf 'int proto(int a, int b, int c, int d, int e, int f, int g, int h, int i, int j, int k);\n'
    printf 'static inline int wide_inline(int a, int b, int c, int d, int e, int f, int g, int h, int i, int j,\n'
    printf '                              int k) {\n    return a + k;\n}\n'
} >"$P/model/m.h"
printf 'static int step(const Cfg* c) {\n    /* OLMo-2 writes first */\n    return c->qwen3_norm ? 1 : 0;\n}\n' \
    >"$P/model/block.c"
printf '# Contributing\n\n#### Functions over 60 lines\n\n- `listed_one` (model/m.c): a planted flat list\n\n' \
    >"$P/docs/contributing.md"
printf '## Next\n' >>"$P/docs/contributing.md"

out=$(cd "$P" && CODE_SHAPE_ROOT="$P" "$SHAPE" long-functions model); rc=$?
[ $rc -ne 0 ] && grep -qF 'model/m.c:4: long_one: 64 lines (over 60' <<<"$out" && [ "$(grep -c . <<<"$out")" -eq 1 ] &&
    ok "planted: $out (listed_one, listed in the docs, passes)" || bad "planted long-functions: rc $rc: $out"
out=$(cd "$P" && CODE_SHAPE_ROOT="$P" "$SHAPE" many-params model); rc=$?
[ $rc -ne 0 ] && grep -qF 'model/m.c:132: wide: 11 parameters' <<<"$out" &&
    grep -qF 'model/m.h:2: wide_inline: 11 parameters' <<<"$out" && [ "$(grep -c . <<<"$out")" -eq 2 ] &&
    ok "planted: $(tr '\n' ' ' <<<"$out")(ten, with 10, and a prototype pass)" || bad "planted many-params: rc $rc: $out"
out=$(cd "$P" && CODE_SHAPE_ROOT="$P" "$SHAPE" family-names); rc=$?
[ $rc -ne 0 ] && grep -qF 'model/block.c:3: qwen3_norm: a family tested in the block' <<<"$out" &&
    [ "$(grep -c . <<<"$out")" -eq 1 ] && ok "planted: $out (a comment naming OLMo-2 passes)" ||
    bad "planted family-names: rc $rc: $out"

# the tree
check() { # LABEL RULE PATH...
    local label=$1
    shift
    out=$("$SHAPE" "$@"); rc=$?
    if [ $rc -eq 0 ]; then ok "$label"
    else while IFS= read -r l; do bad "$l"; done <<<"$out"; fi
}
check "no function over 60 lines in model/, train/, hf/ (but those listed in docs/contributing.md)" long-functions \
    model train hf
check "no family name tested in model/block.c" family-names
check "no function over 10 parameters in any .c or .h file" many-params

echo "test_code_shape: $([ "$failures" -eq 0 ] && echo "all OK" || echo "$failures FAILED")"
[ "$failures" -eq 0 ]

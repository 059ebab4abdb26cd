#!/usr/bin/env bash
# The library folders form a strict stack, each built only on those to its left:
#   common <- tokenizer <- template <- data <- model <- hf <- optim, eval <- train <- programs
# (optim and eval side by side: neither includes the other; tests/ and tools/
# may include anything). Every #include "..." line of the folders' .c and .h
# files is read and checked against two rules:
#  1. up the stack: a file includes only its own folder and folders to its left;
#  2. no circle: a unit is a source X.c with its header X.h; unit A depends on B
#     when a file of A includes B.h, directly or through headers that have no
#     source of their own (those are part of whoever includes them); the
#     dependencies between units must form no circle;
#  3. calls too keep the stack, when the float objects are built (build/obj32):
#     a symbol an object of a folder uses and another library object defines is
#     defined in its own folder or one to its left (a header of common/ whose
#     function model/ defines breaks this one alone).
# Each break is printed with the file, the line (or symbol) and the rule. First
# the checker is run on a small planted tree, to show it finds every kind of break.
. "$(dirname "$0")/testlib.sh" include_stack

STACK="common tokenizer template data model hf optim,eval train programs"

# check_stack ROOT: prints one line per break, "file:line: ..."; exit status 1 when there is any
check_stack() {
    local root=$1
    (
        cd "$root" || exit 2
        for d in $(echo "$STACK" | tr ', ' '  '); do
            [ -d "$d" ] || continue
            for f in "$d"/*.c "$d"/*.h; do
                [ -f "$f" ] || continue
                echo "F	$f"
                grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
                    sed -E 's/^([0-9]+):[^"]*"([^"]*)".*/I	'"${f//\//\\/}"'	\1	\2/'
            done
        done
    ) | awk -F'\t' -v stack="$STACK" -v shown="$(sed 's/ / <- /g; s/,/, /g' <<<"$STACK")" '
    BEGIN {   # rank of each folder, and the folders to its left
        n = split(stack, level, " ")
        for (i = 1; i <= n; i++) {
            m = split(level[i], same, ",")
            for (j = 1; j <= m; j++) { rank[same[j]] = i; allowed[same[j]] = left }
            shown_level = level[i]
            gsub(",", ", ", shown_level)
            left = left (left == "" ? "" : ", ") shown_level
        }
    }
    function folder(p) { return index(p, "/") ? substr(p, 1, index(p, "/") - 1) : "" }
    function stem(p) { sub(/\.[ch]$/, "", p); return p }
    $1 == "F" { exists[$2] = 1; next }
    {
        f = $2; line = $3; inc = $4
        if (!index(inc, "/")) inc = folder(f) "/" inc
        nin[f]++; tgt[f, nin[f]] = inc; at[f, nin[f]] = line
        a = folder(f); b = folder(inc)
        if (a != b && !(b in rank && rank[b] < rank[a])) {
            printf "%s:%s: includes \"%s\": up the stack (%s may include only itself%s%s; stack: %s)\n", \
                f, line, inc, a, allowed[a] == "" ? "" : " and ", allowed[a], shown
            broken = 1
        }
    }
    # the units a file of unit u depends on, through headers without a source of their own
    function reach(u, f, first, seen,    k, h, v) {
        if ((f, "") in seen) return
        seen[f, ""] = 1
        for (k = 1; k <= nin[f]; k++) {
            h = tgt[f, k]; v = stem(h)
            if (!(h in exists)) continue
            if ((v ".c") in exists) {
                if (v != u && !((u, v) in dep)) {
                    dep[u, v] = first == "" ? f ":" at[f, k] " includes " h : first
                    ndep[u]++; deps[u, ndep[u]] = v
                }
            } else reach(u, h, first == "" ? f ":" at[f, k] " includes " h : first, seen)
        }
    }
    function visit(u,    k, v, i, msg) {
        color[u] = 1; path[++depth] = u
        for (k = 1; k <= ndep[u]; k++) {
            v = deps[u, k]
            if (color[v] == 1) {
                msg = ""
                for (i = depth; path[i] != v; i--) ;
                for (; i <= depth; i++) msg = msg (msg == "" ? "" : ", ") dep[path[i], i < depth ? path[i + 1] : v]
                printf "%s: a circle between units: %s\n", substr(msg, 1, index(msg, " ") - 1), msg
                broken = 1
            } else if (color[v] == 0) visit(v)
        }
        color[u] = 2; depth--
    }
    END {
        for (f in exists) {
            u = stem(f)
            if (!((u ".c") in exists) || (u in done)) continue
            done[u] = 1
            split("", seen)
            reach(u, u ".c", "", seen)
            if ((u ".h") in exists) reach(u, u ".h", "", seen)
        }
        for (f in exists) { u = stem(f); if ((u ".c") in exists && !(u in color)) visit(u) }
        exit broken
    }'
}

# check_calls ROOT OBJDIR: one line per object that uses a symbol defined higher up the stack
check_calls() {
    local root=$1 objs=$2
    (
        cd "$root" || exit 2
        for d in $(echo "$STACK" | tr ', ' '  '); do
            for c in "$d"/*.c; do   # the objects of today's sources (an old object of a moved file is not read)
                [ -f "$objs/${c%.c}.o" ] && nm -A -P "$objs/${c%.c}.o"
            done
        done
    ) | awk -v stack="$STACK" -v objs="$objs/" '
    BEGIN {
        n = split(stack, level, " ")
        for (i = 1; i <= n; i++) { m = split(level[i], same, ","); for (j = 1; j <= m; j++) rank[same[j]] = i }
    }
    { f = $1; sub(/:$/, "", f); sub("^" objs, "", f); sub(/\.o$/, ".c", f); d = substr(f, 1, index(f, "/") - 1) }
    $3 == "U" { nu++; uf[nu] = f; ud[nu] = d; us[nu] = $2; next }
    $3 ~ /^[TDRBCGVW]$/ { def[$2] = f; deff[$2] = d }
    END {
        for (k = 1; k <= nu; k++) {
            s = us[k]
            if (!(s in def) || deff[s] == ud[k] || rank[deff[s]] < rank[ud[k]]) continue
            printf "%s: uses %s, defined in %s: up the stack (%s may use only itself and folders to its left)\n", \
                uf[k], s, def[s], ud[k]
            broken = 1
        }
        exit broken
    }'
}

# check_stack on another tree (e.g. an older commit's, from git archive): its breaks, and nothing else
if [ $# -gt 0 ]; then
    check_stack "$1"; rc=$?
    [ -d "$1/build/obj32" ] && { check_calls "$1" build/obj32 || rc=1; }
    exit $rc
fi

# the checker on a planted tree: an include up the stack, one across optim/eval, and a circle
P="$T/planted"
mkdir -p "$P/common" "$P/model" "$P/optim" "$P/eval" "$P/train"
printf '#include "model/m.h"\n' >"$P/common/c.c"
printf '\n#include "eval/e.h"\n' >"$P/optim/o.c"
: >"$P/common/c.h"; : >"$P/model/m.h"; : >"$P/model/m.c"; : >"$P/eval/e.h"; : >"$P/eval/e.c"; : >"$P/optim/o.h"
printf '#include "train/a.h"\n#include "train/b.h"\n' >"$P/train/a.c"
printf '#include "train/a_private.h"\n' >"$P/train/b.c"
printf '#include "train/a.h"\n' >"$P/train/a_private.h"   # a header without a source: b depends on a through it
printf '#include "common/c.h"\n' >"$P/train/a.h"; : >"$P/train/b.h"
out=$(check_stack "$P"); rc=$?
[ $rc -ne 0 ] && ok "the planted tree fails" || bad "the planted tree passes"
for want in 'common/c.c:1: includes "model/m.h": up the stack (common may include only itself;' \
            'optim/o.c:2: includes "eval/e.h": up the stack (optim may include only itself and common, tokenizer,' \
            'a circle between units: ' 'train/a.c:2 includes train/b.h' 'train/b.c:1 includes train/a_private.h'; do
    grep -qF -- "$want" <<<"$out" && ok "planted: $want" || bad "planted: no line with '$want' in: $out"
done
[ "$(grep -c . <<<"$out")" -eq 3 ] && ok "planted: three breaks, the header-only include counted once" \
    || bad "planted: expected 3 lines, got: $out"

# a planted call up the stack: common/ uses a function that model/ defines
if command -v nm >/dev/null && command -v cc >/dev/null; then
    mkdir -p "$P/obj/common" "$P/obj/model"
    printf 'int up(void);\nint low(void) { return up(); }\n' >"$P/common/low.c"
    printf 'int up(void) { return 1; }\n' >"$P/model/up.c"
    cc -c "$P/common/low.c" -o "$P/obj/common/low.o" && cc -c "$P/model/up.c" -o "$P/obj/model/up.o"
    out=$(check_calls "$P" obj); rc=$?
    [ $rc -ne 0 ] && grep -qF 'common/low.c: uses up, defined in model/up.c: up the stack' <<<"$out" &&
        ok "planted: $out" || bad "planted call: rc $rc, got: $out"
fi

# the tree itself
out=$(check_stack .); rc=$?
if [ $rc -eq 0 ] && [ -z "$out" ]; then
    ok "every #include of the library folders keeps the stack $(sed 's/ / <- /g; s/,/, /g' <<<"$STACK"), no circle"
else
    while IFS= read -r l; do bad "$l"; done <<<"$out"
fi

if [ -d build/obj32/common ]; then
    out=$(check_calls . build/obj32); rc=$?
    if [ $rc -eq 0 ] && [ -z "$out" ]; then ok "every symbol a library object of build/obj32 uses comes from its folder or one to its left"
    else while IFS= read -r l; do bad "$l"; done <<<"$out"; fi
else
    echo "  (no build/obj32: the calls are not checked; make builds it)"
fi

echo "test_include_stack: $([ "$failures" -eq 0 ] && echo "all OK" || echo "$failures FAILED")"
[ "$failures" -eq 0 ]

#!/usr/bin/env bash
# The library folders form a strict stack, each built only on those to its left:
#   common <- tokenizer <- template <- data <- model <- hf <- optim, eval <- train <- programs
# (optim and eval side by side: neither includes the other; tests/ and tools/
# may include anything). Every #include "..." line of the folders' .c and .h
# files is read and checked against these rules:
#  1. up the stack: a file includes only its own folder and folders to its left;
#  2. no circle between files: source A depends on source B when A uses a name (a
#     function or a variable) that B defines, declared by a header A includes,
#     directly or through other headers. A header may front several sources (it
#     declares what each of them defines), so this sees circles inside a folder
#     too; the dependencies between sources must form no circle. Comments and
#     string literals are not read, nor a member name after . or ->;
#  3. calls too keep the stack, when the float objects are built (build/obj32):
#     a symbol an object of a folder uses and another library object defines is
#     defined in its own folder or one to its left (a header of common/ whose
#     function model/ defines breaks this one alone).
# Each break is printed with the file, the line (or symbol) and the rule. First
# the checker is run on a small planted tree, to show it finds every kind of break.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" include_stack

STACK="common tokenizer template data model hf optim,eval train programs"

# check_stack ROOT: prints one line per break, "file:line: ..."; exit status 1 when there is any
check_stack() (
    root=$1 files=()
    cd "$root" || exit 2
    for d in $(echo "$STACK" | tr ', ' '  '); do
        for f in "$d"/*.c "$d"/*.h; do [ -f "$f" ] && files+=("$f"); done
    done
    [ ${#files[@]} -gt 0 ] || exit 0
    awk -v stack="$STACK" -v shown="$(sed 's/ / <- /g; s/,/, /g' <<<"$STACK")" '
    BEGIN {   # rank of each folder, and the folders to its left
        n = split(stack, level, " ")
        for (i = 1; i <= n; i++) {
            m = split(level[i], same, ",")
            for (j = 1; j <= m; j++) { rank[same[j]] = i; allowed[same[j]] = left }
            shown_level = level[i]
            gsub(",", ", ", shown_level)
            left = left (left == "" ? "" : ", ") shown_level
        }
        for (i = 1; i < ARGC; i++) exists[ARGV[i]] = 1   # an empty file has no line to announce it
    }
    function folder(p) { return index(p, "/") ? substr(p, 1, index(p, "/") - 1) : "" }
    function stem(p) { sub(/\.[ch]$/, "", p); return p }
    # the line without its comments, and with each string or character literal reduced to 0
    function strip(s,    out, j, c, q) {
        out = ""
        while (s != "") {
            if (incom) {
                j = index(s, "*/")
                if (!j) return out
                s = substr(s, j + 2); incom = 0; out = out " "
                continue
            }
            if (!match(s, /[\/"\047]/)) return out s
            out = out substr(s, 1, RSTART - 1); c = substr(s, RSTART, 1); s = substr(s, RSTART + 1)
            if (c == "/" && substr(s, 1, 1) == "*") { incom = 1; s = substr(s, 2) }
            else if (c == "/" && substr(s, 1, 1) == "/") return out
            else if (c == "/") out = out c
            else {
                q = c
                while (s != "" && substr(s, 1, 1) != q) s = substr(s, (substr(s, 1, 1) == "\\") ? 3 : 2)
                s = substr(s, 2); out = out " 0 "
            }
        }
        return out
    }
    function last_name(s) {
        sub(/[ \t*]+$/, "", s)
        return match(s, /[A-Za-z_][A-Za-z_0-9]*$/) ? substr(s, RSTART, RLENGTH) : ""
    }
    FNR == 1 { f = FILENAME; exists[f] = 1; incom = 0; depth = 0; pend = "" }
    {
        raw = $0
        if (raw ~ /^[ \t]*#[ \t]*include[ \t]*"/) {
            inc = raw; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
            if (!index(inc, "/")) inc = folder(f) "/" inc
            nin[f]++; tgt[f, nin[f]] = inc; at[f, nin[f]] = FNR
            a = folder(f); b = folder(inc)
            if (a != b && !(b in rank && rank[b] < rank[a])) {
                printf "%s:%s: includes \"%s\": up the stack (%s may include only itself%s%s; stack: %s)\n", \
                    f, FNR, inc, a, allowed[a] == "" ? "" : " and ", allowed[a], shown
                broken = 1
            }
            next
        }
        s = strip(raw)
        # an external definition of a source: a function or a variable at column 0 outside any braces
        if (f ~ /\.c$/ && depth == 0) {
            if (pend == "" && raw ~ /^[A-Za-z_]/ && raw !~ /^(static|typedef|extern)[ \t]/ &&
                s !~ /^(struct|enum|union)([ \t]+[A-Za-z_0-9]+)?[ \t]*\{/) {
                p = index(s, "("); e = index(s, "=")
                if (p && !(e && e < p)) pend = last_name(substr(s, 1, p - 1))
                else if (match(s, /[[=;]/)) { n = last_name(substr(s, 1, RSTART - 1)); if (n != "") definer[n] = f }
            }
            if (pend != "") {
                b = index(s, "{"); e = index(s, ";")
                if (b && (!e || b < e)) { if (pend != "main") definer[pend] = f; pend = "" }
                else if (e) pend = ""
            }
        }
        t = s; depth += gsub(/\{/, "{", t) - gsub(/\}/, "}", t)
        # the names the file mentions (not as a member after . or ->), each with its first line
        while (match(s, /[A-Za-z_][A-Za-z_0-9]*/)) {
            w = substr(s, RSTART, RLENGTH); before = substr(s, 1, RSTART - 1); s = substr(s, RSTART + RLENGTH)
            if (before ~ /(\.|->)[ \t]*$/ || before ~ /[0-9]$/) continue
            if (!((f, w) in used)) used[f, w] = FNR
        }
    }
    function add_dep(u, v, why) { dep[u, v] = why; ndep[u]++; deps[u, ndep[u]] = v }
    # every header f brings in, through any number of includes
    function visible(f, vis,    k, h) {
        for (k = 1; k <= nin[f]; k++) {
            h = tgt[f, k]
            if (!(h in exists) || (h in vis)) continue
            vis[h] = 1
            visible(h, vis)
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
                printf "%s: a circle between files: %s\n", substr(msg, 1, index(msg, " ") - 1), msg
                broken = 1
            } else if (color[v] == 0) visit(v)
        }
        color[u] = 2; depth--
    }
    END {
        # what a header declares: the names it mentions that a source defines; it fronts each such source
        for (k in used) {
            split(k, kk, SUBSEP)
            if (kk[1] !~ /\.h$/ || !(kk[2] in definer)) continue
            nh[kk[1]]++; hname[kk[1], nh[kk[1]]] = kk[2]
        }
        # a source depends on every other source whose name it uses, declared by a header it sees
        for (f in exists) {
            if (f !~ /\.c$/) continue
            split("", vis)
            visible(f, vis)
            for (h in vis)
                for (i = 1; i <= nh[h]; i++) {
                    n = hname[h, i]; w = definer[n]
                    if (w == f || ((f, w) in dep) || !((f, n) in used)) continue
                    add_dep(f, w, f ":" used[f, n] " uses " n " (" h ", defined in " w ")")
                }
        }
        depth = 0
        for (f in exists) if (f ~ /\.c$/ && !(f in color)) visit(f)
        exit broken
    }' "${files[@]}"
)

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

# the checker on a planted tree: an include up the stack, one across optim/eval, and two circles
P="$T/planted"
mkdir -p "$P/common" "$P/model" "$P/optim" "$P/eval" "$P/train"
printf '#include "model/m.h"\n' >"$P/common/c.c"
printf '\n#include "eval/e.h"\n' >"$P/optim/o.c"
: >"$P/common/c.h"; : >"$P/model/m.h"; : >"$P/model/m.c"; : >"$P/eval/e.h"; : >"$P/eval/e.c"; : >"$P/optim/o.h"
# a and b, each with its own header, use each other; b sees a's function through a header without a source
printf '#include "train/a.h"\n#include "train/b.h"\nint a1(void) {\n    return b1(); /* a1( */\n}\n' >"$P/train/a.c"
printf '#include "train/a_private.h"\nint b1(void) { return a1(); }\n' >"$P/train/b.c"
printf '#include "train/a.h"\n' >"$P/train/a_private.h"
printf '#include "common/c.h"\nint a1(void);\n' >"$P/train/a.h"; printf 'int b1(void);\n' >"$P/train/b.h"
# one header fronting two sources that use each other: no unit s.c/s.h, yet a circle between two files
printf 'int s1(void);\nint s2(int);\n' >"$P/train/s.h"
printf '#include "train/s.h"\nint s1(void) { return s2(1); }\n' >"$P/train/s1.c"
printf '#include "train/s.h"\nint s2(int x) {\n    if (x) return "s1(" [0];\n    return s1();\n}\n' >"$P/train/s2.c"
out=$(check_stack "$P"); rc=$?
[ $rc -ne 0 ] && ok "the planted tree fails" || bad "the planted tree passes"
for want in 'common/c.c:1: includes "model/m.h": up the stack (common may include only itself;' \
            'optim/o.c:2: includes "eval/e.h": up the stack (optim may include only itself and common, tokenizer,' \
            'a circle between files: ' 'train/a.c:4 uses b1 (train/b.h, defined in train/b.c)' \
            'train/b.c:2 uses a1 (train/a.h, defined in train/a.c)' \
            'train/s1.c:2 uses s2 (train/s.h, defined in train/s2.c)' \
            'train/s2.c:4 uses s1 (train/s.h, defined in train/s1.c)'; do
    grep -qF -- "$want" <<<"$out" && ok "planted: $want" || bad "planted: no line with '$want' in: $out"
done
[ "$(grep -c . <<<"$out")" -eq 4 ] && ok "planted: four breaks, a name in a comment or a string not counted as a use" \
    || bad "planted: expected 4 lines, got: $out"

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
    ok "every #include of the library folders keeps the stack $(sed 's/ / <- /g; s/,/, /g' <<<"$STACK"), no circle between files"
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

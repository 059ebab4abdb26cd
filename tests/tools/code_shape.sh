#!/usr/bin/env bash
# tests/tools/code_shape.sh RULE [PATH...]: the shape rules of docs/contributing.md ("Size"), one line per offender
# ("file:line: name: ..."), exit 1 when there is one. PATHs are folders or .c files, relative to ROOT.
#   long-functions   no function over 60 lines (its signature to its closing brace), except those that
#                    docs/contributing.md lists under "Functions over 60 lines" with a reason;
#                    default paths model train hf
#   many-params      no function over 10 parameters (a header's inline ones too); default every tracked .c
#                    and .h file
#   family-names     no family name (olmo, llama, qwen, gemma, any case) in the code, comments aside, of
#                    model/block.c (the default path): the block tests traits, never a family
# A folder stands for its .c files (and .h files for many-params).
# ROOT is the repository root, or $CODE_SHAPE_ROOT (tests/test_code_shape.sh plants a tree there).
# A function is a definition that starts at column 0 and ends at the first "}" at column 0 after it, as
# .clang-format lays them out.
set -uo pipefail
root=${CODE_SHAPE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 2
rule=${1:-}
shift || true
case "$rule" in
long-functions) defaults=(model train hf) ;;
many-params) defaults=(.) ;;
family-names) defaults=(model/block.c) ;;
*)
    echo "usage: tests/tools/code_shape.sh long-functions|many-params|family-names [PATH...]" >&2
    exit 2
    ;;
esac
[ $# -gt 0 ] || set -- "${defaults[@]}"
ext='\.c$'
[ "$rule" = many-params ] && ext='\.[ch]$'
files=()
for p in "$@"; do
    if [ -f "$p" ]; then files+=("$p")
    elif [ -d "$p" ]; then
        if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
            mapfile -t -O ${#files[@]} files < <(git ls-files -co --exclude-standard -- "$p" | grep "$ext")
        else
            mapfile -t -O ${#files[@]} files < <(find "$p" -name '*.[ch]' | grep "$ext" | sed 's|^\./||' | sort)
        fi
    else
        echo "code_shape: no such file or folder: $p" >&2
        exit 2
    fi
done
[ ${#files[@]} -gt 0 ] || exit 0

# the awk function code(line): the line without its comments (incom carries a /* ... */ across lines; an
# awk program that uses it sets incom = 0 at each file's first line)
CODE='
    function code(line,    rest) {
        if (incom) {
            if (!index(line, "*/")) return ""
            line = substr(line, index(line, "*/") + 2)
            incom = 0
        }
        while (match(line, /\/\*/)) {
            rest = substr(line, RSTART + 2)
            if (index(rest, "*/")) line = substr(line, 1, RSTART - 1) " " substr(rest, index(rest, "*/") + 2)
            else { line = substr(line, 1, RSTART - 1); incom = 1 }
        }
        sub(/\/\/.*/, "", line)
        return line
    }'

if [ "$rule" = family-names ]; then
    awk "$CODE"'
    FNR == 1 { incom = 0 }
    {
        line = code($0)
        found = ""
        while (match(line, /[A-Za-z_][A-Za-z_0-9]*/)) {
            w = substr(line, RSTART, RLENGTH); line = substr(line, RSTART + RLENGTH)
            if (tolower(w) ~ /olmo|llama|qwen|gemma/) found = found (found == "" ? "" : ", ") w
        }
        if (found != "") {
            printf "%s:%d: %s: a family tested in the block (test a trait instead)\n", FILENAME, FNR, found
            bad = 1
        }
    }
    END { exit bad }' "${files[@]}"
    exit $?
fi

# one line per function definition: FILE LINE NAME LINES PARAMS (tab-separated)
list_functions() {
    awk "$CODE"'
    function count_params(sig,    p, i, c, d, n, inner) {
        p = index(sig, "("); inner = ""; d = 0
        for (i = p; i <= length(sig); i++) {
            c = substr(sig, i, 1)
            if (c == "(") { d++; if (d == 1) continue }
            if (c == ")") { d--; if (d == 0) break }
            inner = inner c
        }
        gsub(/^[ \t]+|[ \t]+$/, "", inner)
        if (inner == "" || inner == "void") return 0
        n = 1; d = 0
        for (i = 1; i <= length(inner); i++) {
            c = substr(inner, i, 1)
            if (c == "(" || c == "[") d++
            else if (c == ")" || c == "]") d--
            else if (c == "," && d == 0) n++
        }
        return n
    }
    FNR == 1 { insig = 0; infn = 0; incom = 0 }
    {
        line = code($0)
        if (infn) {
            if (line ~ /^}/) { printf "%s\t%d\t%s\t%d\t%d\n", FILENAME, start, name, FNR - start + 1, params; infn = 0 }
            next
        }
        if (!insig && line ~ /^[A-Za-z_]/ && line !~ /^(typedef|enum|union|extern)[ \t]/ &&
            line !~ /^struct[ \t]+[A-Za-z_0-9]*[ \t]*\{/ && index(line, "(") &&
            !(index(line, "=") && index(line, "=") < index(line, "("))) {
            insig = 1; sig = ""; start = FNR
        }
        if (!insig) next
        sig = sig " " line
        if (index(line, ";") && !index(line, "{")) { insig = 0; next } # a prototype
        if (!index(line, "{")) next
        insig = 0
        s = sig; sub(/\(.*/, "", s); sub(/[ \t*]+$/, "", s)
        name = s; sub(/.*[^A-Za-z_0-9]/, "", name)
        params = count_params(sig)
        if (line ~ /}[ \t;]*$/) printf "%s\t%d\t%s\t%d\t%d\n", FILENAME, start, name, FNR - start + 1, params
        else infn = 1
    }' "${files[@]}"
}

if [ "$rule" = many-params ]; then
    list_functions | awk -F'\t' '
        $5 > 10 {
            printf "%s:%s: %s: %d parameters (at most 10: pass the ones that travel together as a struct)\n", $1, $2, $3, $5
            bad = 1
        }
        END { exit bad }'
    exit $?
fi

# long-functions: the listed exceptions are the lines "- `name` (file): reason" under the heading
# "Functions over 60 lines" of docs/contributing.md, up to the next heading
listed=$(awk '/^#+ Functions over 60 lines/ { on = 1; next } /^#/ { on = 0 }
              on && match($0, /^- `[A-Za-z_0-9]+` \([^)]+\): ./) {
                  s = $0; sub(/^- `/, "", s); n = s; sub(/`.*/, "", n)
                  f = s; sub(/^[^(]*\(/, "", f); sub(/\).*/, "", f)
                  print f "\t" n
              }' docs/contributing.md 2>/dev/null)
list_functions | awk -F'\t' -v listed="$listed" '
    BEGIN { n = split(listed, l, "\n"); for (i = 1; i <= n; i++) if (l[i] != "") ok[l[i]] = 1 }
    $4 > 60 && !(($1 "\t" $3) in ok) {
        printf "%s:%s: %s: %d lines (over 60, and not listed with a reason in docs/contributing.md)\n", $1, $2, $3, $4
        bad = 1
    }
    END { exit bad }'

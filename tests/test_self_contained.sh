#!/usr/bin/env bash
# The repository stands alone: no file in it (code, comments, docs, configs)
# points at a document that is not in it (the old design and style notes, a
# folder of shared notes next to the checkout) or at an issue tracker by number.
# The facts live in docs/design.md and docs/contributing.md; say them there or
# in place. Searched: every tracked file (every file outside build/ and .git
# when there is no git); binary files are skipped.
#   bash tests/test_self_contained.sh [DIR]   DIR defaults to the repository
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" self_contained
root=${1:-.}

# the patterns are spelled in pieces so that this file does not match itself
patterns=("DESIGN""\.md" "STYLE""\.md" "shared""/" "[Ii]ssue"" #[0-9]")

files() {
    if [ "$root" = . ] && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files -z
    else
        (cd "$root" && find . \( -path ./build -o -path ./.git \) -prune -o -type f -print0)
    fi
}

for p in "${patterns[@]}"; do
    hits=$(cd "$root" && files | xargs -0 grep -InE -- "$p" 2>/dev/null | head -20)
    if [ -z "$hits" ]; then
        ok "no file refers to /$p/"
    else
        bad "files refer to /$p/ (state the fact or point at docs/ instead):"
        echo "$hits" | sed 's/^/            /'
    fi
done

echo "test_self_contained: $([ "$failures" -eq 0 ] && echo "all OK" || echo "$failures FAILED")"
[ "$failures" -eq 0 ]

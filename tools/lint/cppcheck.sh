#!/usr/bin/env bash
# tools/lint/cppcheck.sh (`make lint`): cppcheck over every tracked .c file, as the float build
# compiles it (OpenMP on, GNU extensions), then tests/gradcheck*.c as the double build compiles it
# (-DREPOC_F64). Checks: warning, portability, performance (style is left out: it is taste, and
# the conventions are in docs/contributing.md). Findings that are not bugs are suppressed in
# tools/lint/cppcheck-suppressions.txt, each with its reason. Exit 1 on any finding.
#   tools/lint/cppcheck.sh [FILES.c ...]     FILES default to every tracked .c file
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
command -v cppcheck >/dev/null || { echo "lint: no cppcheck (apt-get install cppcheck)" >&2; exit 1; }
if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(git ls-files '*.c'); fi
# _Noreturn as GCC's attribute: cppcheck 2.10 then knows die_at (common/check.h) does not return,
# so the code after a CHECK runs only when the check held
# shellcheck disable=SC2054 # the commas are cppcheck's list of checks, one word
common=(--std=c11 --language=c --enable=warning,portability,performance --inline-suppr --error-exitcode=1
        --suppressions-list=tools/lint/cppcheck-suppressions.txt -q -j"${LINT_JOBS:-2}" -I.
        -D__GNUC__ -D_GNU_SOURCE -DOMP '-D_Noreturn=__attribute__((noreturn))')
rc=0
cppcheck "${common[@]}" "${files[@]}" || rc=1
mapfile -t gc < <(printf '%s\n' "${files[@]}" | grep '^tests/gradcheck.*\.c$')
[ ${#gc[@]} -eq 0 ] || cppcheck "${common[@]}" -DREPOC_F64 "${gc[@]}" || rc=1
[ $rc -eq 0 ] && echo "lint: cppcheck clean (${#files[@]} files)"
exit $rc

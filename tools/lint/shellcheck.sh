#!/usr/bin/env bash
# tools/lint/shellcheck.sh (`make lint`): shellcheck at severity warning over every tracked shell script
# (tests/, tools/, .ci/run), following the libraries they source (.shellcheckrc). What a script means on
# purpose is marked where it stands, with a `# shellcheck disable=` line and its reason. Exit 1 on any finding.
#   tools/lint/shellcheck.sh [FILES ...]     FILES default to every tracked *.sh and .ci/run
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
command -v shellcheck >/dev/null || { echo "lint: no shellcheck (apt-get install shellcheck)" >&2; exit 1; }
if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(git ls-files '*.sh' .ci/run); fi
shellcheck -S warning -f gcc "${files[@]}" || exit 1
echo "lint: shellcheck clean (${#files[@]} scripts)"

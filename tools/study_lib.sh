# shellcheck shell=bash
# tools/study_lib.sh: what tools/study.sh and tools/study_report.sh both read from build/eval's JSON (sourced).

# accuracy FILE FAMILY LENGTH: a family's exact match in a build/eval --json file
accuracy() {
    tr -d ' \t\n' < "$1" | grep -oE "\{\"family\":\"$2\",\"length\":$3,[^[]*" | grep -oE '"accuracy":[0-9.e+-]+' |
        cut -d: -f2 | head -n 1
}

#!/usr/bin/env bash
# No message sends a user to an option the program refuses:
#  1. every option a program's own source names in a string (its messages and hints) is one its --help lists;
#  2. every option a library message names (common/, data/, model/, hf/, eval/, train/, tokenizer/,
#     template/, programs/cli.c) is one that some program lists;
#  3. the busy-cores note of common/threads.c ("set run.threads or --threads") is printed by build/train,
#     build/eval and build/analyze: each takes --threads (build/train once did not);
#  4. the commands in README.md and docs/ name only options their program takes.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" hints

options_in() {  # the --options named in the C string literals of the files
    grep -ohE '"([^"\\]|\\.)*"' "$@" | grep -oE -- '--[a-z][a-z0-9-]+' | sort -u
}
all_help=""
for f in $(grep -l '^int main' programs/*.c); do
    p=$(basename "$f" .c)
    help=$(build/"$p" --help 2>&1)
    all_help="$all_help $help"
    missing=""
    for o in $(options_in "$f"); do
        [ "$o" = --help ] && continue
        grep -qE -- "$o([^a-z0-9-]|$)" <<<"$help" || missing="$missing $o"
    done
    [ -z "$missing" ] && ok "build/$p: every option its messages name is in its --help" ||
        bad "build/$p names options its --help does not list:$missing"
done
lib=$(ls common/*.c data/*.c model/*.c hf/*.c optim/*.c eval/*.c train/*.c tokenizer/*.c programs/cli.c \
    template/*.c 2>/dev/null)
missing=""
n=0
for o in $(options_in $lib); do
    n=$((n + 1))
    grep -qE -- "$o([^a-z0-9-]|$)" <<<"$all_help" || missing="$missing $o"
done
[ -z "$missing" ] && ok "the library's messages name $n options, each one some program takes" ||
    bad "library messages name options no program takes:$missing"
grep -q -- "--threads" common/threads.c || bad "common/threads.c no longer names --threads: update this test"
for p in train eval analyze; do
    build/"$p" --help 2>&1 | grep -q -- "--threads" && ok "build/$p takes --threads (the busy-cores note names it)" ||
        bad "build/$p: the busy-cores note names --threads, which it does not take"
done

# 4. the commands of README.md and docs/: every option after build/PROGRAM on a line is one it lists
python3 - <<'PY' && ok "README.md and docs/: every option of every build/PROGRAM command is one the program takes" || bad "docs name options a program refuses"
import glob, re, subprocess, sys
progs = "analyze|eval|generate|merge|plot|sft_eval|tokenize|train|gradcheck"
helps = {p: subprocess.run(["build/" + p, "--help"], capture_output=True, text=True).stdout for p in progs.split("|")}
bad, n = [], 0
for f in ["README.md"] + sorted(glob.glob("docs/*.md")):
    for ln, line in enumerate(open(f, encoding="utf-8"), 1):
        for m in re.finditer(r"build/(%s)\b([^`|;&\n]*)" % progs, line):
            for o in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", m.group(2)):
                n += 1
                if o != "--help" and not re.search(re.escape(o) + r"([^a-z0-9-]|$)", helps[m.group(1)]):
                    bad.append("%s:%d: build/%s %s" % (f, ln, m.group(1), o))
print("%d options checked" % n, *bad, sep="\n")
sys.exit(1 if bad or n < 50 else 0)
PY
echo "hints: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]

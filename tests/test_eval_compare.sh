#!/usr/bin/env bash
# build/eval --compare on hand-made eval JSON files whose differences are known:
#   mc/toy        40 shared items: A right on 10, B on those 10 and 20 more (B also has 5 items A lacks,
#                 and lists its items in another order): diff +0.5, n01 = 20, n10 = 0, McNemar p = 2/2^20,
#                 verdict "better" (and "worse" with the files swapped);
#   single@128    20 items, A right on 0-4, B on 5-9: diff 0, n01 = n10 = 5, p = 1, "no difference at this n";
#   ruler/vt/4096 fractional scores, all 0.5 in both: diff 0, interval [0, 0], p null.
# Then the refusals: a missing file, a file that is not JSON, no shared item, no task in common,
# the same id twice, a label that differs between the files, synthetic items of other seeds.
# shellcheck source=testlib.sh
. "$(dirname "$0")/testlib.sh" eval_compare
PROG=build/eval
# shellcheck source=cli_expect.sh
. tests/cli_expect.sh

# mc item: id, label 0, log-likelihoods that make choice 0 win (right) or lose (wrong)
mc_item() { # id right
    if [ "$2" = 1 ]; then ll="-1.5, -2.5"; else ll="-2.5, -1.5"; fi
    printf '{"id": "q%s", "label": 0, "loglikelihoods": [%s], "is_greedy": [false, false], "choice_chars": [3, 3], "context_tokens": 5}' "$1" "$ll"
}
scored() { printf '{"id": %s, "score": %s}' "$1" "$2"; }
join() { local IFS=,; echo "$*"; }

# file: which  ->  A: mc right on 0-9; synthetic right on 0-4.  B: mc right on 0-29, items in reverse order plus 40-44
write_file() { # path A|B seed
    local mc=() syn=() rl=()
    if [ "$2" = A ]; then
        for i in $(seq 0 39); do mc+=("$(mc_item "$i" "$([ "$i" -lt 10 ] && echo 1 || echo 0)")"); done
        for i in $(seq 0 19); do syn+=("$(scored "$i" "$([ "$i" -lt 5 ] && echo 1 || echo 0)")"); done
    else
        for i in $(seq 44 -1 0); do mc+=("$(mc_item "$i" "$([ "$i" -lt 30 ] && echo 1 || echo 0)")"); done
        for i in $(seq 19 -1 0); do syn+=("$(scored "$i" "$([ "$i" -ge 5 ] && [ "$i" -lt 10 ] && echo 1 || echo 0)")"); done
    fi
    for i in $(seq 0 9); do rl+=("$(scored $i 0.5)"); done
    cat >"$1" <<EOF
{"format": "repoc-eval", "version": 1, "seed": $3, "depth": null,
 "tasks": [{"family": "single", "length": 128, "items": 20, "per_item": [$(join "${syn[@]}")]}],
 "mc": {"toy": {"n": 40, "items": [$(join "${mc[@]}")]}},
 "ruler": {"vt": {"4096": {"n": 10, "items": [$(join "${rl[@]}")]}}}}
EOF
}
write_file "$T/a.json" A 1
write_file "$T/b.json" B 1

echo "known differences"
expect_ok "B against A" "mc/toy" "single@128" "ruler/vt/4096" "better" "no difference at this n" \
    "wrote $T/c.json" -- --compare "$T/a.json" "$T/b.json" --json "$T/c.json"
field() { # file key field -> the value as written (build/eval writes one field per line)
    awk -v k="\"$2\":" -v f="\"$3\":" '$1 == k { on = 1; next } on && $1 == f { sub(/^[^:]*:[ \t]*/, ""); sub(/,$/, "");
        print; exit } on && /^[ \t]*}/ { exit }' "$1"
}
check() { # name got expected
    if [ "$2" = "$3" ]; then ok "$1: $2"; else bad "$1: got '$2', expected '$3'"; fi
}
check "mc/toy n (40 shared of 40 and 45)" "$(field "$T/c.json" mc/toy n)" 40
check "mc/toy a" "$(field "$T/c.json" mc/toy a)" 0.25
check "mc/toy b" "$(field "$T/c.json" mc/toy b)" 0.75
check "mc/toy diff" "$(field "$T/c.json" mc/toy diff)" 0.5
check "mc/toy McNemar p = 2/2^20" "$(field "$T/c.json" mc/toy p_mcnemar)" 1.9073486328125e-06
check "mc/toy verdict" "$(field "$T/c.json" mc/toy verdict)" '"better"'
lo=$(field "$T/c.json" mc/toy ci | tr -d '[' | cut -d, -f1)
awk -v lo="$lo" 'BEGIN { exit !(lo > 0.3 && lo < 0.5) }' && ok "mc/toy interval starts above 0 ($lo)" \
    || bad "mc/toy interval lower end $lo"
check "mc/toy/acc_norm (equal lengths: the same as acc)" "$(field "$T/c.json" mc/toy/acc_norm diff)" 0.5
check "single@128 diff" "$(field "$T/c.json" single@128 diff)" 0
check "single@128 McNemar p (5 against 5)" "$(field "$T/c.json" single@128 p_mcnemar)" 1
check "single@128 verdict" "$(field "$T/c.json" single@128 verdict)" '"no difference at this n"'
check "ruler/vt/4096 interval (constant scores)" "$(field "$T/c.json" ruler/vt/4096 ci)" '[0, 0]'
check "ruler/vt/4096 McNemar p (scores not 0/1)" "$(field "$T/c.json" ruler/vt/4096 p_mcnemar)" null
expect_ok "A against B" "worse" -- --compare "$T/b.json" "$T/a.json" --json "$T/d.json"
check "swapped: mc/toy verdict" "$(field "$T/d.json" mc/toy verdict)" '"worse"'
check "swapped: mc/toy diff" "$(field "$T/d.json" mc/toy diff)" -0.5

echo "runs of several seeds, and a pool"
expect_ok "two seeds per side" "two-level bootstrap" "per seed: +0.5000 +0.5000" "wrote $T/s.json" -- \
    --compare "$T/a.json,$T/a.json" "$T/b.json,$T/b.json" --json "$T/s.json"
check "two seeds: mc/toy diff" "$(field "$T/s.json" mc/toy diff)" 0.5
check "two seeds: mc/toy seeds" "$(field "$T/s.json" mc/toy seeds)" 2
check "two seeds: McNemar p (pairs of two seeds are not independent)" "$(field "$T/s.json" mc/toy p_mcnemar)" null
check "two seeds: mc/toy verdict" "$(field "$T/s.json" mc/toy verdict)" '"better"'
expect_ok "a pool of mc/toy and single@128" "pool" -- --compare "$T/a.json" "$T/b.json" --pool mc/toy,single@128 \
    --json "$T/p.json"
check "pool n (40 + 20 items)" "$(field "$T/p.json" pool n)" 60
check "pool a ((10 + 5) / 60)" "$(field "$T/p.json" pool a)" 0.25
check "pool diff ((30 + 5) / 60 - 0.25)" "$(awk -v d="$(field "$T/p.json" pool diff)" 'BEGIN { printf "%.6f", d }')" \
    0.333333
# one run's evaluations in two files: a "noisy" family beside the others
for w in a b; do
    printf '{"format": "repoc-eval", "seed": 1, "depth": null, "tasks": [{"family": "noisy", "length": 128, "per_item": [%s, %s]}]}\n' \
        "$(scored 0 0)" "$(scored 1 "$([ "$w" = b ] && echo 1 || echo 0)")" >"$T/noisy_$w.json"
done
expect_ok "files joined by +" "noisy@128" -- --compare "$T/a.json+$T/noisy_a.json" "$T/b.json+$T/noisy_b.json" \
    --pool mc/toy,noisy@128 --json "$T/j.json"
check "joined: noisy@128 diff" "$(field "$T/j.json" noisy@128 diff)" 0.5
check "joined: pool n (40 + 2)" "$(field "$T/j.json" pool n)" 42
expect_fail "a task in two joined files" "task mc/toy is in two of its files" \
    --compare "$T/a.json+$T/b.json" "$T/b.json"
expect_fail "two files against one" "--compare: 2 files for A and 1 for B" --compare "$T/a.json,$T/a.json" "$T/b.json"
expect_fail "a pool naming no task of the files" "--pool names 'mc/none', which not every file holds" \
    --compare "$T/a.json" "$T/b.json" --pool mc/none
expect_fail "--pool without --compare" "--pool needs --compare" tests/fixtures/olmo2_mix/ckpt --pool mc/toy

echo "refusals"
expect_fail "missing file" "cannot read '$T/none.json'" --compare "$T/a.json" "$T/none.json"
echo '{"mc": ' >"$T/broken.json"
expect_fail "not JSON" "$T/broken.json is not a JSON object" --compare "$T/broken.json" "$T/b.json"
echo '{"format": "repoc-eval", "ppl": []}' >"$T/empty.json"
expect_fail "no per-item scores" "$T/empty.json holds no per-item scores" --compare "$T/a.json" "$T/empty.json"
printf '{"mc": {"toy": {"items": [%s]}}}\n' "$(mc_item 100 1)" >"$T/other_ids.json"
expect_fail "no shared item" "mc/toy: no item id is in both $T/a.json (40 items) and $T/other_ids.json (1 items)" \
    --compare "$T/a.json" "$T/other_ids.json"
printf '{"mc": {"arc": {"items": [%s]}}}\n' "$(mc_item 1 1)" >"$T/other_task.json"
expect_fail "no task in common" "no task in both files: $T/a.json has mc/toy, mc/toy/acc_norm, ruler/vt/4096, single@128; $T/other_task.json has mc/arc, mc/arc/acc_norm" \
    --compare "$T/a.json" "$T/other_task.json"
printf '{"mc": {"toy": {"items": [%s, %s]}}}\n' "$(mc_item 1 1)" "$(mc_item 1 0)" >"$T/dup.json"
expect_fail "an id twice" "$T/dup.json: mc/toy: id \"q1\" occurs twice" --compare "$T/a.json" "$T/dup.json"
printf '{"mc": {"toy": {"items": [%s]}}}\n' "$(mc_item 3 1 | sed 's/"label": 0/"label": 1/')" >"$T/label.json"
expect_fail "another label for the same id" "mc/toy: item \"q3\" has label 0 in $T/a.json and 1 in $T/label.json" \
    --compare "$T/a.json" "$T/label.json"
printf '{"mc": {"toy": {"items": [%s]}}}\n' "$(mc_item 3 1 | sed 's/"id": "q3", //')" >"$T/noid.json"
expect_fail "an item without an id" "$T/noid.json: mc/toy item 0 has no \"id\"" \
    --compare "$T/a.json" "$T/noid.json"
write_file "$T/seed2.json" B 2
expect_fail "synthetic items of another seed" "\"seed\" is 1 in $T/a.json and 2 in $T/seed2.json" \
    --compare "$T/a.json" "$T/seed2.json"
expect_fail "--compare with a checkpoint" "--compare takes two JSON files" \
    tests/fixtures/olmo2_mix/ckpt --compare "$T/a.json" "$T/b.json"
expect_fail "--compare with one file" "--compare: expected a value" --compare "$T/a.json"

echo "test_eval_compare: $([ $failures -eq 0 ] && echo all OK || echo FAILED)"
[ $failures -eq 0 ]

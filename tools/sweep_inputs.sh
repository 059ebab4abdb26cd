#!/usr/bin/env bash
# A sweep of bad inputs and odd output paths across the programs (issue: "nothing lost, nothing silently
# wrong"): each case must exit with the status it names (1 or 2 for a refusal, 0 where the input is valid),
# never by a signal, print a line naming what is wrong (a pattern per case), and, for output paths, leave the
# path what it was (a link stays a link, a device a device) with no temporary file next to it.
# Prints each case and ends with "N cases, N handled cleanly". Not part of make test (about a minute).
# Usage: tools/sweep_inputs.sh [-v]   (-v: the output of every failing case)
set -u
cd "$(dirname "$0")/.." || exit 1
T=$(mktemp -d /tmp/repoc_sweep.XXXXXX)
trap 'rm -rf "$T"' EXIT
verbose=${1:-}
n=0 clean=0
# case LABEL RC PATTERN CMD...: the command's exit status must be RC and its output must contain PATTERN
case_() {
    local label=$1 want=$2 pat=$3
    shift 3
    n=$((n + 1))
    timeout 60 "$@" >"$T/out" 2>&1 </dev/null
    local rc=$?
    if [ "$rc" = "$want" ] && grep -qF -- "$pat" "$T/out"; then clean=$((clean + 1)); echo "  ok    $label"
    else echo "  FAIL  $label: exit $rc (want $want), $(grep -m1 -iE 'error|refus|warn|:' "$T/out" | cut -c1-160)"
         [ "$verbose" = -v ] && sed 's/^/        | /' "$T/out" | head -8; fi
}
# post LABEL CONDITION: a check after a case, counted as a case of its own
post() {
    n=$((n + 1))
    if eval "$2"; then clean=$((clean + 1)); echo "  ok    $1"; else echo "  FAIL  $1"; fi
}
F=tests/fixtures/tokenizer
CK=tests/fixtures/olmo2_mix/ckpt
build/tokenize --tokenizer $F/gpt2.json --val 0 --out "$T/d" $F/sample.txt $F/sample.txt $F/sample.txt >/dev/null 2>&1
cat >"$T/base.json" <<JSON
{"run": {"out_dir": "$T/base", "threads": 1}, "model": {"vocab_size": 1024, "d_model": 32, "n_layers": 2, "n_heads": 4,
 "d_ff": 64}, "data": {"train": ["$T/d_train_000000.bin"], "seq_len": 32}, "optim": {"warmup_steps": 0},
 "train": {"batch_size": 2, "steps": 2, "eval_every": 0}}
JSON
build/train "$T/base.json" >/dev/null 2>&1 || { echo "sweep: base training failed"; exit 1; }
B=$T/base/$(cat "$T/base/latest")
cp $F/gpt2.json "$B/tokenizer.json"
cat >"$T/lora.json" <<JSON
{"run": {"out_dir": "$T/lora", "threads": 1}, "model": {"init_from": "$B", "lora": {"rank": 2, "alpha": 4,
 "targets": ["q_proj", "v_proj"]}}, "data": {"train": ["$T/d_train_000000.bin"], "seq_len": 32},
 "optim": {"warmup_steps": 0}, "train": {"batch_size": 2, "steps": 2, "eval_every": 0}}
JSON
build/train "$T/lora.json" >/dev/null 2>&1 || { echo "sweep: LoRA training failed"; exit 1; }
L=$T/lora/$(cat "$T/lora/latest")

echo "output paths"
mkdir -p "$T/outdir" "$T/linkdir"; mkfifo "$T/fifo"
ln -s "$T/nowhere/x.json" "$T/dangling"; ln -s "$T/outdir" "$T/link_to_dir"; touch "$T/target.json"
ln -s "$T/target.json" "$T/link.json"
ev=(build/eval "$CK" --items 1 --lengths 64 --tasks single --threads 1)
case_ "eval --json a directory" 1 "$T/outdir" "${ev[@]}" --json "$T/outdir"
case_ "eval --json in a missing directory" 1 "$T/nowhere" "${ev[@]}" --json "$T/nowhere/x.json"
case_ "eval --json a dangling link" 1 "$T/dangling" "${ev[@]}" --json "$T/dangling"
case_ "eval --json a link to a directory" 1 "$T/link_to_dir" "${ev[@]}" --json "$T/link_to_dir"
case_ "eval --json a path too long" 1 "over the system's limit" "${ev[@]}" --json "$T/$(printf 'x%.0s' $(seq 5000))"
case_ "eval --json a link to a file" 0 "" "${ev[@]}" --json "$T/link.json"
post "  the link stays a link, its target holds the JSON" '[ -L "$T/link.json" ] && grep -q "{" "$T/target.json"'
(cat "$T/fifo" >"$T/fifo.out" &) ; sleep 0.2
case_ "eval --json a FIFO" 0 "" "${ev[@]}" --json "$T/fifo"
sleep 0.3
post "  the FIFO stays a FIFO and its reader got the JSON" '[ -p "$T/fifo" ] && grep -q "{" "$T/fifo.out"'
case_ "eval --json /dev/full" 1 "No space left" "${ev[@]}" --json /dev/full
post "  /dev/full is still a device" '[ -c /dev/full ]'
case_ "eval > /dev/full" 1 "writing standard output failed" sh -c "build/eval $CK --items 1 --lengths 64 --tasks single --threads 1 >/dev/full"
mkdir -p "$T/dir.svg"; ln -s "$T/nowhere/x.svg" "$T/dangling.svg"; ln -s /dev/full "$T/full.svg"
case_ "plot --out a directory" 1 "$T/dir.svg" build/plot "$T/base" --out "$T/dir.svg"
case_ "plot --out a link to /dev/full" 1 "No space left" build/plot "$T/base" --out "$T/full.svg"
post "  the link to /dev/full stays, /dev/full a device" '[ -L "$T/full.svg" ] && [ -c /dev/full ]'
case_ "plot --out a dangling link" 1 "$T/dangling.svg" build/plot "$T/base" --out "$T/dangling.svg"
case_ "analyze --out a file" 1 "$T/target.json" build/analyze "$CK" --positions --out "$T/target.json" --threads 1
case_ "generate > /dev/full" 1 "writing standard output failed" sh -c "build/generate $B --prompt x --max-new-tokens 3 --threads 1 >/dev/full"
case_ "sft_eval > /dev/full" 1 "writing standard output failed" sh -c "printf '{\"prompt\": \"a\", \"completion\": \"b\"}\n' >$T/one.jsonl; build/sft_eval $B $T/one.jsonl --tokenizer $F/gpt2.json >/dev/full"
case_ "tokenize --out into a missing directory (made)" 0 "$T/nowhere/p_train" build/tokenize --tokenizer $F/gpt2.json --out "$T/nowhere/p" $F/sample.txt
post "  its shard is there, no temporary file" '[ -s "$T/nowhere/p_train_000000.bin" ] && ! ls "$T/nowhere" | grep -q tmp'
touch "$T/afile"
case_ "tokenize --out under a file" 1 "$T/afile" build/tokenize --tokenizer $F/gpt2.json --out "$T/afile/p" $F/sample.txt
ln -s "$T/elsewhere.bin" "$T/lnk_train_000000.bin"
case_ "tokenize onto a shard name that is a link" 1 "lnk_train_000000.bin" build/tokenize --tokenizer $F/gpt2.json --val 0 --out "$T/lnk" $F/sample.txt
post "  the link is still a link" '[ -L "$T/lnk_train_000000.bin" ]'
case_ "merge OUT = /dev/null" 1 "/dev/null" build/merge "$B" "$L" /dev/null
case_ "merge OUT a file" 1 "$T/target.json" build/merge "$B" "$L" "$T/target.json"
case_ "merge OUT inside the base" 0 "" build/merge "$B" "$L" "$B/merged"
post "  the base's files unchanged" '[ ! -e "$B/adapter_config.json" ] && [ -e "$B/merged/model.safetensors" ]'
case_ "merge OUT = the base named by the checkpoint" 1 "BASE" build/merge "$L" "$L" "$B"

echo "adapter_config.json keys"
adapter() {   # NAME JQ-LIKE-PYTHON: a copy of L with adapter_config.json changed by the python expression on c
    rm -rf "$T/a_$1"; cp -r "$L" "$T/a_$1"
    /usr/bin/python3 -c "import json,sys; p='$T/a_$1/adapter_config.json'; c=json.load(open(p)); $2; json.dump(c, open(p,'w'))" 2>/dev/null ||
        python3 -c "import json,sys; p='$T/a_$1/adapter_config.json'; c=json.load(open(p)); $2; json.dump(c, open(p,'w'))"
}
acase() {   # NAME PYTHON PATTERN: merge of the changed adapter refused naming PATTERN
    adapter "$1" "$2"
    case_ "adapter $1" 1 "$3" build/merge "$B" "$T/a_$1" "$T/o_$1"
    post "  nothing written for $1" '[ ! -e "$T/o_$1/model.safetensors" ]'
}
acase r_string "c['r']='2'" "'r'"
acase r_negative "c['r']=-2" "'r'"
acase r_huge "c['r']=10**12" "r"
acase r_fraction "c['r']=2.5" "'r'"
acase alpha_string "c['lora_alpha']='4'" "lora_alpha"
acase alpha_zero "c['lora_alpha']=0" "lora_alpha"
acase alpha_negative "c['lora_alpha']=-4" "lora_alpha"
acase targets_empty "c['target_modules']=[]" "target_modules"
acase targets_unknown "c['target_modules']=['q_proj','w_gate']" "w_gate"
acase targets_string "c['target_modules']='all-linear'" "target_modules"
acase targets_other "c['target_modules']=['q_proj','k_proj']" "v_proj"
acase peft_type_other "c['peft_type']='IA3'" "peft_type"
acase peft_type_missing "del c['peft_type']" "peft_type"
acase dropout_one "c['lora_dropout']=1.0" "lora_dropout"
acase bias_lora_only "c['bias']='lora_only'" "bias"
acase use_dora "c['use_dora']=True" "use_dora"
acase rank_pattern "c['rank_pattern']={'q_proj': 4}" "rank_pattern"
acase alpha_pattern "c['alpha_pattern']={'q_proj': 4}" "alpha_pattern"
acase fan_in_fan_out "c['fan_in_fan_out']=True" "fan_in_fan_out"
acase layers_to_transform "c['layers_to_transform']=[0]" "layers_to_transform"
acase init_pissa "c['init_lora_weights']='pissa'" "init_lora_weights"
acase unknown_key "c['my_option']=1" "my_option"
acase modules_to_save_str "c['modules_to_save']='gate_map'" "modules_to_save"
rm -rf "$T/a_empty"; cp -r "$L" "$T/a_empty"; : >"$T/a_empty/adapter_config.json"
case_ "adapter_config.json empty" 1 "adapter_config.json" build/merge "$B" "$T/a_empty" "$T/o_empty"
rm -rf "$T/a_arr"; cp -r "$L" "$T/a_arr"; echo '[1, 2]' >"$T/a_arr/adapter_config.json"
case_ "adapter_config.json an array" 1 "adapter_config.json" build/merge "$B" "$T/a_arr" "$T/o_arr"
rm -rf "$T/a_fifo"; cp -r "$L" "$T/a_fifo"; rm "$T/a_fifo/adapter_config.json"; mkfifo "$T/a_fifo/adapter_config.json"
case_ "adapter_config.json a FIFO" 1 "adapter_config.json" build/merge "$B" "$T/a_fifo" "$T/o_fifo"
rm -rf "$T/a_trunc"; cp -r "$L" "$T/a_trunc"; truncate -s 200 "$T/a_trunc/adapter_model.safetensors"
case_ "adapter_model.safetensors truncated" 1 "adapter_model.safetensors" build/merge "$B" "$T/a_trunc" "$T/o_trunc"
case_ "eval of a checkpoint with a truncated adapter" 1 "adapter_model.safetensors" build/eval "$T/a_trunc" --items 1 --lengths 64 --tasks single

echo "JSON edge cases"
jcase() {   # NAME CONTENT PATTERN: a JSONL training file refused (exit 1) naming PATTERN
    printf '%b' "$2" >"$T/j_$1.jsonl"
    case_ "jsonl $1" 1 "$3" build/train "$T/base.json" --set run.out_dir=\""$T/jr_$1"\" --set data.format=\"jsonl\" \
        --set data.tokenizer=\""$F/gpt2.json"\" --set data.train=[\""$T/j_$1.jsonl"\"]
}
jcase text_number '{"text": 5}\n' '"text" must be a string'
jcase prompt_object '{"prompt": {"a": 1}, "completion": "b"}\n' '"prompt"'
jcase empty_object '{}\n' "a record needs"
jcase array_line '[1, 2]\n' "JSON object"
jcase text_null '{"text": null}\n' '"text"'
jcase two_objects '{"text": "a"} {"text": "b"}\n' "more after the JSON object"
jcase trailing_garbage '{"text": "a"} x\n' "more after the JSON object"
jcase cut_line '{"text": "a\n' "not valid JSON"
jcase nul '{"text": "a\\u0000b"}\n' "u0000"
jcase ids_float '{"input_ids": [1, 2.5]}\n' "input_ids"
jcase ids_negative '{"input_ids": [1, -3]}\n' "input_ids"
jcase ids_huge '{"input_ids": [1, 1e400]}\n' "input_ids"
jcase ids_vocab '{"input_ids": [1, 5000]}\n' "input_ids"
jcase labels_minus5 '{"input_ids": [1, 2], "labels": [1, -5]}\n' "labels"
jcase labels_short '{"input_ids": [1, 2, 3], "labels": [1, 2]}\n' "labels"
jcase text_and_prompt '{"text": "a", "prompt": "b", "completion": "c"}\n' "ambiguous"
jcase messages_not_list '{"messages": "hi"}\n' "messages"
jcase messages_no_template '{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}\n' "tokenizer_config.json"
jcase only_blank '\n\n  \n' "no documents"
jcase empty_file '' "no documents"
printf '\xef\xbb\xbf{"text": "bom"}\n' >"$T/j_bom.jsonl"
case_ "jsonl with a UTF-8 BOM (skipped, valid)" 0 "1 text" build/train "$T/base.json" --set run.out_dir=\""$T/jr_bom"\" --set data.format=\"jsonl\" \
    --set data.tokenizer=\""$F/gpt2.json"\" --set data.train=[\""$T/j_bom.jsonl"\"] --set data.seq_len=4
printf '{"text": "crlf one"}\r\n{"text": "crlf two"}\r\n' >"$T/j_crlf.jsonl"
case_ "jsonl with CRLF lines (valid)" 0 "2 records" build/train "$T/base.json" --set run.out_dir=\""$T/jr_crlf"\" \
    --set data.format=\"jsonl\" --set data.tokenizer=\""$F/gpt2.json"\" --set data.train=[\""$T/j_crlf.jsonl"\"] --set data.seq_len=8
ccase() {   # NAME CONFIG-TEXT PATTERN: a run config refused naming PATTERN
    printf '%s' "$2" >"$T/c_$1.json"
    case_ "config $1" 1 "$3" build/train "$T/c_$1.json"
}
ccase trailing_comma '{"run": {"out_dir": "x",}}' "c_trailing_comma.json"
ccase comment '{"run": {"out_dir": "x"} /* c */}' "c_comment.json"
ccase duplicate_key '{"run": {"out_dir": "x", "out_dir": "y"}}' "out_dir"
ccase nan_literal '{"optim": {"lr": NaN}}' "c_nan_literal.json"
ccase huge_number '{"optim": {"lr": 1e999}}' "optim.lr"
ccase deep "$(printf '{"a":%.0s' $(seq 2000))1$(printf '}%.0s' $(seq 2000))" "c_deep.json"
ccase lr_string '{"optim": {"lr": "3e-4"}}' "optim.lr"
ccase steps_negative '{"train": {"steps": -1}}' "train.steps"
ccase steps_fraction '{"train": {"steps": 2.5}}' "train.steps"
ccase unknown_section '{"trian": {"steps": 2}}' "trian"
ccase mixture_weights_inf '{"data": {"train": [{"files": ["a"], "weight": 1e999}]}}' "weight"
echo "tokenizer.json"
tcase() {   # NAME PYTHON PATTERN: tokenize with a changed copy of the fixture tokenizer refused naming PATTERN
    python3 -c "import json; c=json.load(open('$F/gpt2.json')); $2; json.dump(c, open('$T/t_$1.json','w'))"
    case_ "tokenizer $1" 1 "$3" build/tokenize --tokenizer "$T/t_$1.json" --out "$T/tp_$1" $F/sample.txt
}
tcase vocab_not_object "c['model']['vocab']=[1]" "vocab"
tcase merges_bad "c['model']['merges']=[5]" "merges"
tcase id_negative "c['model']['vocab']['Ġthe']=-1" "-1"
tcase added_id_string "c['added_tokens'][0]['id']='7'" "id"
tcase model_type "c['model']['type']='Unigram'" "Unigram"
tcase pre_tokenizer "c['pre_tokenizer']={'type': 'Metaspace'}" "Metaspace"
echo "$n cases, $clean handled cleanly"

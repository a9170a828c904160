# shellcheck shell=bash
# Shared by the data-prep scripts (sourced after SHELL_LIB is set, not run):
# the settings of a run, resumable steps, and line-parallel runs of the
# mass_tools commands. Needs OUT and JOBS. A script's records go to
# OUT/.done/SCRIPT (SCRIPT: the script's name): its settings, one file per
# finished step listing the step's outputs as they were then, and "finished"
# once the whole script has run.
SCRIPT=$(basename "$0" .sh)
DONE=$OUT/.done/$SCRIPT
REDO="delete $DONE"     # check_settings' advice: what to delete to redo a finished run
source "$SHELL_LIB/same_settings.sh"
source "$(dirname "${BASH_SOURCE[0]}")/steps.sh"

# check_settings KEY=VALUE...: stop if a finished run of this script in OUT had
# other settings (the outputs of two sets of knobs are never mixed); a run
# that did not finish is started over with these: its steps are done again.
check_settings() {
    mkdir -p "$DONE"
    if [ -f "$DONE/finished" ]; then
        other_settings_error "$OUT was prepared by $SCRIPT.sh" "$DONE/settings" \
            "Use another OUT, or redo it: $REDO." "$@"
    elif [ -f "$DONE/settings" ] && settings_differ "$DONE/settings" "$@" > /dev/null; then
        echo "== other settings than the unfinished run in $OUT: starting over"
        settings_differ "$DONE/settings" "$@"
        rm -f "$DONE"/*
    fi
    printf '%s\n' "$@" > "$DONE/settings"
}

# made_with DIR: the settings lines that name the dictionary and subword
# model of a news_crawl.sh output DIR, by size and MD5: a script that encodes
# with them is redone (or refused) when news_crawl.sh made new ones.
made_with() {
    local model sums
    model=$(subword_model "$1") || exit 1
    mapfile -t sums < <(md5sum "$1/data-bin/dict.txt" "$model")
    echo "dictionary=$(wc -l < "$1/data-bin/dict.txt") symbols, md5 ${sums[0]%% *}"
    echo "subwords=${model##*/}, md5 ${sums[1]%% *}"
}

# Run "COMMAND ARGS --input PART --output PART.out" over line-parts of INPUT,
# JOBS at once, and join the outputs into OUTPUT. The parts done by an
# interrupted run of the same INPUT are kept.
#   in_parallel LABEL INPUT OUTPUT COMMAND [ARGS...]
in_parallel() {
    local label=$1 input=$2 output=$3 parts="$3.parts" part out finished=0 running=()
    local count source
    shift 3
    source="$(stat -c '%s %Y' "$input") $*"
    mkdir -p "$parts"
    if [ ! -f "$parts/.split" ] || [ "$(cat "$parts/.split")" != "$source" ]; then
        rm -f "$parts"/in.* "$parts"/out.* "$parts/.split"
        count=$JOBS  # more parts than jobs on big files: progress to report
        if [ "$(wc -l < "$input")" -gt 1000000 ]; then count=$((JOBS * 4)); fi
        split -n "l/$count" -d -a 3 "$input" "$parts/in."
        printf '%s' "$source" > "$parts/.split"
    fi
    local inputs=("$parts"/in.*)
    for part in "${inputs[@]}"; do
        out="$parts/out.${part##*.}"
        if [ -f "$out" ]; then
            finished=$((finished + 1))
            continue
        fi
        "$@" --input "$part" --output "$out" &
        running+=($!)
        if [ "${#running[@]}" -ge "$JOBS" ]; then
            wait "${running[0]}"
            running=("${running[@]:1}")
            finished=$((finished + 1))
            echo "  $label: $finished of ${#inputs[@]} parts"
        fi
    done
    for part in "${running[@]}"; do
        wait "$part"
        finished=$((finished + 1))
        echo "  $label: $finished of ${#inputs[@]} parts"
    done
    cat "$parts"/out.* > "$output.tmp"
    mv "$output.tmp" "$output"
    rm -rf "$parts"
}

# The subword model of a news_crawl.sh output folder: DIR/bpe.codes (Moses
# tokens, then subword-nmt) or DIR/spm.model (sentencepiece on raw text).
#   subword_model DIR
subword_model() {
    if [ -f "$1/bpe.codes" ]; then
        echo "$1/bpe.codes"
    elif [ -f "$1/spm.model" ]; then
        echo "$1/spm.model"
    else
        echo "error: $1 has no bpe.codes or spm.model: run data-prep/news_crawl.sh first" >&2
        return 1
    fi
}

# Steps NAME.tokenize and NAME.subwords: INPUT, Moses-tokenized into
# WORK/tok/FILE where the model is BPE codes (sentencepiece takes the text
# as it is), then split into subwords in WORK/sub/FILE.
#   subword_steps NAME MODEL LANG INPUT WORK FILE
subword_steps() {
    local name=$1 model=$2 lang=$3 input=$4 work=$5 file=$6
    mkdir -p "$work/tok" "$work/sub"
    if [ "${model##*.}" = codes ]; then
        step "$name.tokenize" "$work/tok/$file" -- in_parallel "tokenizing $file" "$input" \
            "$work/tok/$file" python -m mass_tools.tokenize_moses --lang "$lang"
        input="$work/tok/$file"
    fi
    step "$name.subwords" "$work/sub/$file" -- in_parallel "subwords of $file" "$input" \
        "$work/sub/$file" python -m mass_tools.apply_subwords --model "$model"
}

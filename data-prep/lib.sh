# shellcheck shell=bash
# Shared by the data-prep scripts (sourced, not run): resumable steps and
# line-parallel runs of the mass_tools commands. Needs OUT and JOBS; the
# markers of a script go to OUT/.done/SCRIPT (SCRIPT: the script's name).
SCRIPT=$(basename "$0" .sh)

# Stop unless this script prepared OUT with these settings (or never): the
# outputs of one set of knobs are never mixed with those of another.
#   check_settings "KNOB=VALUE ..."
check_settings() {
    local file="$OUT/.done/$SCRIPT/settings"
    mkdir -p "$OUT/.done/$SCRIPT"
    if [ -f "$file" ] && [ "$(cat "$file")" != "$1" ]; then
        echo "error: $OUT was prepared by $SCRIPT.sh with other settings:" >&2
        echo "  before: $(cat "$file")" >&2
        echo "  now:    $1" >&2
        echo "Use another OUT, or redo it: delete $OUT/.done/$SCRIPT and the .done" \
             "folders of the scripts run after it in $OUT (they use its output)." >&2
        exit 1
    fi
    printf '%s' "$1" > "$file"
}

# Run a command as a named step, unless it has finished before (its marker).
# Its outputs are written whole or not at all, so a step that was
# interrupted is simply run again.
#   step NAME COMMAND [ARGS...]
step() {
    local name=$1 marker="$OUT/.done/$SCRIPT/$1"
    shift
    if [ -f "$marker" ]; then
        echo "== $name: done already"
        return 0
    fi
    echo "== $name"
    "$@"
    touch "$marker"
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
        step "$name.tokenize" in_parallel "tokenizing $file" "$input" "$work/tok/$file" \
            python -m mass_tools.tokenize_moses --lang "$lang"
        input="$work/tok/$file"
    fi
    step "$name.subwords" in_parallel "subwords of $file" "$input" "$work/sub/$file" \
        python -m mass_tools.apply_subwords --model "$model"
}

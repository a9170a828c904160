# Shared by the recipes of examples/ and projects/ (sourced, not run; its
# folder is what `python -m mass_tools.shell` prints).
# DRY_RUN, run_cmd, run_to: from this file's folder (no dirname: a PATH may lack it)
if [[ ${BASH_SOURCE[0]} == */* ]]; then
    source "${BASH_SOURCE[0]%/*}/dry_run.sh"
else
    source dry_run.sh
fi

# The plugin directory for --user-dir, wherever the package is installed:
# what `python -m mass_plugin` prints, found without importing the package
# (which imports fairseq: seconds in every script that sources this file).
USER_DIR=${USER_DIR:-$(python -c 'import importlib.util, os, sys
spec = importlib.util.find_spec("mass_plugin")
if spec is None:
    sys.exit("error: mass_plugin is not installed in this Python: pip install -e . "
             "from the repository root")
print(os.path.dirname(spec.origin))')}

# GPUs on this machine (0 on a CPU-only machine) unless NUM_GPUS is set.
NUM_GPUS=${NUM_GPUS:-$(python -c "import torch; print(torch.cuda.device_count())")}

# fairseq-train arguments for the device, and the --update-freq that keeps
# TOKENS_PER_UPDATE tokens per update whatever the number of GPUs.
device_args() {
    local workers=$(( NUM_GPUS > 0 ? NUM_GPUS : 1 ))
    local per_step=$(( MAX_TOKENS * workers ))
    local update_freq=$(( (TOKENS_PER_UPDATE + per_step - 1) / per_step ))
    if [ "$NUM_GPUS" -eq 0 ]; then
        echo "--cpu --update-freq $update_freq"
    else
        echo "--fp16 --distributed-world-size $NUM_GPUS --update-freq $update_freq"
    fi
}

# fairseq-generate's device argument: --cpu on a CPU-only machine.
decode_device_args() {
    if [ "$NUM_GPUS" -eq 0 ]; then echo "--cpu"; fi
}

# translate_ct2.py's --device: cuda where there is a GPU.
ct2_device() {
    if [ "$NUM_GPUS" -eq 0 ]; then echo cpu; else echo cuda; fi
}

# Decode with fairseq-generate, DATA_BIN and the options after it being its
# arguments (--user-dir, --required-batch-size-multiple 1 and the device are
# added), write the detokenized hypotheses in the order of the source to
# OUTPUT and fairseq's output to OUTPUT.log, stop unless every line of
# REFERENCE got a hypothesis, and print the scores: sacreBLEU and chrF
# (METRIC bleu) or ROUGE (METRIC rouge).
#   decode_and_score LABEL METRIC REFERENCE OUTPUT DATA_BIN [fairseq-generate options]
decode_and_score() {
    local label=$1 metric=$2 reference=$3 output=$4 expected got
    shift 4
    # --required-batch-size-multiple 1: fairseq 0.12 otherwise drops the last batch
    # shellcheck disable=SC2046
    fairseq-generate "$@" --user-dir "$USER_DIR" --required-batch-size-multiple 1 \
        $(decode_device_args) > "$output.log" || return
    # detokenized hypotheses (D- lines); a shortfall is reported just below
    grep -P '^D-[0-9]+\t' "$output.log" | sed 's/^D-//' | sort -n -k1,1 | cut -f3 \
        > "$output" || true
    expected=$(wc -l < "$reference") || return
    got=$(wc -l < "$output")
    if [ "$got" -ne "$expected" ]; then
        echo "error: $got hypotheses for $expected reference lines (see $output.log)" >&2
        return 1
    fi
    echo "== $label: $got sentences, hypotheses in $output"
    if [ "$metric" = rouge ]; then
        python -m mass_tools.score_rouge --reference "$reference" --hypothesis "$output"
    else
        sacrebleu "$reference" -i "$output" -m bleu chrf -w 2 -f text
    fi
}

# BLEU <tab> chrF, read from sacreBLEU's text output (decode_and_score's) on stdin.
bleu_chrf() {
    local scores bleu chrf
    scores=$(cat)
    bleu=$(grep -oP '^\s*BLEU\|\S+ = \K[\d.]+' <<< "$scores") || true
    chrf=$(grep -oP '^chrF2\|\S+ = \K[\d.]+' <<< "$scores") || true
    if [ -z "$bleu" ] || [ -z "$chrf" ]; then
        echo "error: no BLEU and chrF score in: $scores" >&2
        return 1
    fi
    printf '%s\t%s\n' "$bleu" "$chrf"
}

# print_table FILE: a tab-separated file as aligned columns (awk: util-linux's
# `column` is missing on some machines, GPU images among them)
print_table() {
    awk -F'\t' 'NR == FNR { for (i = 1; i <= NF; i++) if (length($i) > w[i]) w[i] = length($i); next }
        { line = ""; for (i = 1; i < NF; i++) line = line sprintf("%-" (w[i] + 2) "s", $i)
          print line $NF }' "$1" "$1"
}

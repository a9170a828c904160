#!/usr/bin/env bash
# Stage 1: raw text -> one joint subword model -> binarized data, one dictionary.
# Inputs in RAW_DIR: mono.LANG and mono.valid.LANG for each language, and the
# pairs train/valid/test.SRC and .TGT where there are any (mass-fetch-wmt
# writes no train pair). Output: DATA_BIN (for masked_s2s and translation)
# and SPM_MODEL. Override any variable from the environment.
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help

RAW_DIR=${RAW_DIR:-examples/data}
WORK_DIR=${WORK_DIR:-work/demo}
LANGS=${LANGS:-en,fr}
PAIR=${PAIR:-en-fr}
VOCAB_SIZE=${VOCAB_SIZE:-8000}
DATA_BIN=${DATA_BIN:-$WORK_DIR/data-bin}
SPM_MODEL=${SPM_MODEL:-$WORK_DIR/spm.model}

source "$SHELL_LIB/common.sh"
mkdir -p "$WORK_DIR/spm"
IFS=, read -r -a langs <<< "$LANGS"

echo "== learning one sentencepiece model ($VOCAB_SIZE pieces) over: ${langs[*]}"
python -m mass_tools.learn_subwords --method sentencepiece --vocab-size "$VOCAB_SIZE" \
    --output "${SPM_MODEL%.model}" "${langs[@]/#/$RAW_DIR/mono.}"

echo "== splitting text into subwords"
for lang in "${langs[@]}"; do
    for name in mono mono.valid train valid test; do
        if [ -f "$RAW_DIR/$name.$lang" ]; then
            python -m mass_tools.apply_subwords --model "$SPM_MODEL" \
                --input "$RAW_DIR/$name.$lang" --output "$WORK_DIR/spm/$name.$lang"
        fi
    done
done

echo "== binarizing into $DATA_BIN"
pair_args=()
if [ -n "$PAIR" ]; then
    # each of train, valid, test is binarized where RAW_DIR has it: monolingual
    # data (mass-fetch-wmt's) has no train.* pair, only valid/test sets or none
    for split in train valid test; do
        if [ -f "$WORK_DIR/spm/$split.${PAIR%-*}" ]; then
            pair_args+=("--$split" "$WORK_DIR/spm/$split")
        fi
    done
    if [ "${#pair_args[@]}" -gt 0 ]; then
        pair_args=(--pair "$PAIR" "${pair_args[@]}")
    else
        echo "== no train, valid or test pair of $PAIR in $RAW_DIR: monolingual data only"
    fi
fi
python -m mass_tools.binarize --destdir "$DATA_BIN" --langs "$LANGS" \
    --mono-train "$WORK_DIR/spm/mono.{lang}" --mono-valid "$WORK_DIR/spm/mono.valid.{lang}" \
    "${pair_args[@]}"

#!/usr/bin/env bash
# The paper's low-resource claim at small scale: fine-tune one model on
# N_PAIRS sentence pairs starting (a) from a MASS checkpoint and (b) from
# random initialisation, with the same budget, in both directions, and score
# each on the test set with sacreBLEU. Finished runs are not redone.
# Results: $WORK_DIR/results.tsv (direction, init, BLEU, chrF, minutes).
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help

PARA_DIR=${PARA_DIR:?set PARA_DIR to a directory with train.en, train.fr, valid.*, test.*}
SPM_MODEL=${SPM_MODEL:?set SPM_MODEL to the pre-training sentencepiece model}
PRETRAIN_DICT=${PRETRAIN_DICT:?set PRETRAIN_DICT to the pre-training dict.txt}
PRETRAINED=${PRETRAINED:?set PRETRAINED to the MASS checkpoint}
WORK_DIR=${WORK_DIR:-work/low-resource}
N_PAIRS=${N_PAIRS:-10000}
MAX_UPDATE=${MAX_UPDATE:-500}              # the same budget for every run
MAX_TOKENS=${MAX_TOKENS:-4096}
LR=${LR:-0.0005}
WARMUP=${WARMUP:-100}
MODEL_ARGS=${MODEL_ARGS:-}                 # must match the pre-trained model

source "$SHELL_LIB/common.sh"
here=$(dirname "$0")
mkdir -p "$WORK_DIR/spm"
results=$WORK_DIR/results.tsv

if [ ! -f "$WORK_DIR/data-bin/dict.txt" ]; then
    for lang in en fr; do
        head -n "$N_PAIRS" "$PARA_DIR/train.$lang" > "$WORK_DIR/train.$lang"
        for split in train valid test; do
            source_file=$PARA_DIR/$split.$lang
            [ "$split" = train ] && source_file=$WORK_DIR/train.$lang
            python -m mass_tools.apply_subwords --model "$SPM_MODEL" \
                --input "$source_file" --output "$WORK_DIR/spm/$split.$lang"
        done
    done
    python -m mass_tools.binarize --destdir "$WORK_DIR/data-bin" --dict "$PRETRAIN_DICT" \
        --langs en,fr --pair en-fr --train "$WORK_DIR/spm/train" \
        --valid "$WORK_DIR/spm/valid" --test "$WORK_DIR/spm/test"
fi

[ -f "$results" ] || printf 'direction\tinit\tBLEU\tchrF\tminutes\n' > "$results"
for direction in en-fr fr-en; do
    src=${direction%-*} tgt=${direction#*-}
    for init in mass random; do
        if grep -q "^$direction	$init	" "$results"; then
            echo "== $direction from $init: done, skipping"
            continue
        fi
        save=$WORK_DIR/checkpoints/$direction-$init
        pretrained=""
        [ "$init" = mass ] && pretrained=$PRETRAINED
        echo "== fine-tuning $direction from $init initialisation"
        start=$SECONDS
        rm -rf "$save"  # an interrupted run starts again from its beginning
        DATA_BIN=$WORK_DIR/data-bin PRETRAINED=$pretrained SAVE_DIR=$save SRC=$src TGT=$tgt \
            MAX_TOKENS=$MAX_TOKENS TOKENS_PER_UPDATE=$MAX_TOKENS LR=$LR WARMUP=$WARMUP \
            MAX_UPDATE=$MAX_UPDATE PATIENCE=1000 EXTRA_ARGS="$MODEL_ARGS" \
            bash "$here/finetune_nmt.sh"
        minutes=$(( (SECONDS - start + 30) / 60 ))
        scores=$(DATA_BIN=$WORK_DIR/data-bin CHECKPOINT=$save/checkpoint_best.pt SRC=$src \
            TGT=$tgt REFERENCE=$PARA_DIR/test.$tgt bash "$here/generate.sh")
        echo "$scores" >&2
        row=$(bleu_chrf <<< "$scores")
        printf '%s\t%s\t%s\t%s\n' "$direction" "$init" "$row" "$minutes" >> "$results"
    done
done
print_table "$results"

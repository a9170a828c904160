#!/usr/bin/env bash
# Fine-tune a MASS checkpoint for abstractive summarization (article ->
# summary) on the bundled XSum sample, with the pre-training subword model
# and dictionary. Decode and score with:
#   METRIC=rouge SRC=document TGT=summary DATA_BIN=$XSUM_BIN MAX_LEN_A=0 MAX_LEN_B=60 \
#   REFERENCE=examples/data/xsum/test.summary CHECKPOINT=$SAVE_DIR/checkpoint_best.pt \
#   EXTRA_ARGS="--truncate-source --max-source-positions 512 --no-repeat-ngram-size 3" \
#   bash examples/generate.sh
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help

RAW_DIR=${RAW_DIR:-examples/data/xsum}
WORK_DIR=${WORK_DIR:-work/xsum}
SPM_MODEL=${SPM_MODEL:-work/demo/spm.model}          # from prepare_data.sh
PRETRAIN_DICT=${PRETRAIN_DICT:-work/demo/data-bin/dict.txt}
XSUM_BIN=${XSUM_BIN:-$WORK_DIR/data-bin}
PRETRAINED=${PRETRAINED-checkpoints/pretrain/checkpoint_best.pt}
SAVE_DIR=${SAVE_DIR:-checkpoints/ft-xsum}
ARCH=${ARCH:-transformer_mass}
MAX_SOURCE=${MAX_SOURCE:-512}                        # articles are cut to this
MAX_TOKENS=${MAX_TOKENS:-4096}
TOKENS_PER_UPDATE=${TOKENS_PER_UPDATE:-32768}
LR=${LR:-0.0005}
WARMUP=${WARMUP:-1000}
MAX_UPDATE=${MAX_UPDATE:-20000}
PATIENCE=${PATIENCE:-10}
LANG_PAIR=${LANG_PAIR:-en-en}    # language embeddings of a cross-lingual checkpoint
EXTRA_ARGS=${EXTRA_ARGS:-}

source "$SHELL_LIB/common.sh"
mkdir -p "$WORK_DIR/spm"

if [ ! -f "$XSUM_BIN/dict.txt" ]; then
    echo "== splitting the XSum sample into subwords with $SPM_MODEL"
    for split in train valid test; do
        for side in document summary; do
            python -m mass_tools.apply_subwords --model "$SPM_MODEL" \
                --input "$RAW_DIR/$split.$side" --output "$WORK_DIR/spm/$split.$side"
        done
    done
    echo "== binarizing with the pre-training dictionary into $XSUM_BIN"
    python -m mass_tools.binarize --destdir "$XSUM_BIN" --dict "$PRETRAIN_DICT" \
        --langs document,summary --pair document-summary --train "$WORK_DIR/spm/train" \
        --valid "$WORK_DIR/spm/valid" --test "$WORK_DIR/spm/test"
fi

init_args=()
if [ -n "$PRETRAINED" ]; then
    init_args=(--finetune-from-model "$PRETRAINED")
fi

# shellcheck disable=SC2046,SC2086
fairseq-train "$XSUM_BIN" --user-dir "$USER_DIR" \
    --task translation -s document -t summary --arch "$ARCH" "${init_args[@]}" \
    --embedding-lang-pair "$LANG_PAIR" \
    --truncate-source --max-source-positions "$MAX_SOURCE" \
    --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
    --optimizer adam --adam-betas '(0.9, 0.98)' --clip-norm 1.0 \
    --lr "$LR" --lr-scheduler inverse_sqrt --warmup-updates "$WARMUP" \
    --max-tokens "$MAX_TOKENS" --max-update "$MAX_UPDATE" --patience "$PATIENCE" \
    --required-batch-size-multiple 1 \
    --save-dir "$SAVE_DIR" --no-epoch-checkpoints --log-format simple --log-interval 20 \
    $(device_args) $EXTRA_ARGS

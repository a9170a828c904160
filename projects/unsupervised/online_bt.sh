#!/usr/bin/env bash
# Unsupervised NMT with online back-translation: one fairseq-train run of the
# task unsupervised_translation over the monolingual text of L1 and L2 (no
# parallel training data). Every update sums the MASS loss, the denoising
# auto-encoding loss and the online back-translation loss (weights
# LAMBDA_MASS / LAMBDA_DAE / LAMBDA_BT, numbers or schedules; denoising is off
# unless LAMBDA_DAE is set). Starts from PRETRAINED, a cross-lingual MASS checkpoint
# (masked_s2s --langs L1,L2), or from random initialisation if it is empty.
# Validation translates the parallel valid set both ways and keeps the best
# checkpoint by mean BLEU; the test set is then translated both ways and
# scored with sacreBLEU into $WORK_DIR/results.tsv.
# Interrupted? Run the same command again: training resumes from
# checkpoint_last.pt, and scored directions are kept.
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help

DATA_BIN=${DATA_BIN:?set DATA_BIN to binarize.py output: dict.txt, train.L1/train.L2 and the valid/test pairs}
REFERENCE_PREFIX=${REFERENCE_PREFIX:?set REFERENCE_PREFIX: REFERENCE_PREFIX.L1 and .L2 are the raw test text}
PRETRAINED=${PRETRAINED-}                  # empty: random initialisation
L1=${L1:-en}
L2=${L2:-fr}
WORK_DIR=${WORK_DIR:-work/unsup-online}
ARCH=${ARCH:-transformer_mass}
LAMBDA_MASS=${LAMBDA_MASS:-1}
LAMBDA_BT=${LAMBDA_BT:-1}
LAMBDA_DAE=${LAMBDA_DAE:-0}
BT_BEAM=${BT_BEAM:-1}
BT_SAMPLING_TOPK=${BT_SAMPLING_TOPK:-0}     # k > 0 or -1: sample back-translations
MASK_RATIO=${MASK_RATIO:-0.5}
MAX_TOKENS=${MAX_TOKENS:-4096}
TOKENS_PER_UPDATE=${TOKENS_PER_UPDATE:-$MAX_TOKENS}
LR=${LR:-0.0001}
WARMUP=${WARMUP:-1000}
MAX_UPDATE=${MAX_UPDATE:-50000}
VALIDATE_EVERY=${VALIDATE_EVERY:-2000}     # updates
TEST_SUBSET=${TEST_SUBSET:-test}
BEAM=${BEAM:-5}
POST_PROCESS=${POST_PROCESS:-sentencepiece}  # subword marker to remove before scoring
MODEL_ARGS=${MODEL_ARGS:-}                 # must match PRETRAINED's model
LOG_INTERVAL=${LOG_INTERVAL:-50}           # updates between progress lines

source "$SHELL_LIB/common.sh"
[ -f "$DATA_BIN/dict.txt" ] || { echo "error: $DATA_BIN/dict.txt: no such file" >&2; exit 1; }
for lang in "$L1" "$L2"; do
    [ -s "$REFERENCE_PREFIX.$lang" ] || { echo "error: $REFERENCE_PREFIX.$lang is missing or empty" >&2; exit 1; }
done
if [ -n "$PRETRAINED" ] && [ ! -f "$PRETRAINED" ]; then
    echo "error: PRETRAINED=$PRETRAINED: no such file (leave it empty to start from random)" >&2
    exit 1
fi
mkdir -p "$WORK_DIR"
results=$WORK_DIR/results.tsv
[ -f "$results" ] || printf 'direction\tBLEU\tchrF\n' > "$results"
save_dir=$WORK_DIR/checkpoints

init_args=()
[ -n "$PRETRAINED" ] && init_args=(--finetune-from-model "$PRETRAINED")
if [ ! -f "$save_dir/done" ]; then
    echo "== training: MASS (x $LAMBDA_MASS) + denoising (x $LAMBDA_DAE)" \
         "+ online back-translation (x $LAMBDA_BT)," \
         "$MAX_UPDATE updates, from ${PRETRAINED:-random initialisation}"
    # shellcheck disable=SC2046,SC2086
    fairseq-train "$DATA_BIN" --user-dir "$USER_DIR" --task unsupervised_translation \
        --langs "$L1,$L2" --arch "$ARCH" "${init_args[@]}" --criterion masked_s2s_loss \
        --mask-ratio "$MASK_RATIO" --lambda-mass "$LAMBDA_MASS" --lambda-bt "$LAMBDA_BT" \
        --lambda-dae "$LAMBDA_DAE" --bt-beam "$BT_BEAM" --bt-sampling-topk "$BT_SAMPLING_TOPK" \
        --eval-bleu --eval-bleu-remove-bpe "$POST_PROCESS" \
        --best-checkpoint-metric bleu --maximize-best-checkpoint-metric \
        --optimizer adam --adam-betas '(0.9, 0.98)' --clip-norm 1.0 \
        --lr "$LR" --lr-scheduler inverse_sqrt --warmup-updates "$WARMUP" \
        --max-tokens "$MAX_TOKENS" --max-update "$MAX_UPDATE" \
        --validate-interval-updates "$VALIDATE_EVERY" --save-interval-updates "$VALIDATE_EVERY" \
        --keep-interval-updates 1 --no-epoch-checkpoints --skip-invalid-size-inputs-valid-test \
        --save-dir "$save_dir" --log-format simple --log-interval "$LOG_INTERVAL" \
        $(device_args) $MODEL_ARGS
    touch "$save_dir/done"
fi

for direction in "$L1-$L2" "$L2-$L1"; do
    src=${direction%-*} tgt=${direction#*-}
    if grep -q "^$direction	" "$results"; then
        echo "== $direction: scored already, skipping"
        continue
    fi
    out=$WORK_DIR/$TEST_SUBSET.$direction.txt
    scores=$(decode_and_score "$direction $TEST_SUBSET" bleu "$REFERENCE_PREFIX.$tgt" "$out" \
        "$DATA_BIN" --task unsupervised_translation --langs "$L1,$L2" -s "$src" -t "$tgt" \
        --gen-subset "$TEST_SUBSET" --path "$save_dir/checkpoint_best.pt" --beam "$BEAM" \
        --max-len-a 1.5 --max-len-b 10 --batch-size 64 --post-process "$POST_PROCESS")
    echo "$scores"
    row=$(bleu_chrf <<< "$scores")
    printf '%s\t%s\n' "$direction" "$row" >> "$results"
done
print_table "$results"

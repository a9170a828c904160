#!/usr/bin/env bash
# The paper's unsupervised NMT fine-tuning (section 4.2): from the
# cross-lingual MASS checkpoint, online back-translation alone (no denoising
# auto-encoder, no MASS loss: MASS-unsupNMT's README command has only
# --bt_steps 'L1-L2-L1,L2-L1-L2'), greedy back-translations, Adam at 1e-4,
# 16,000 tokens per update, 30 of the original's epochs (187,500 updates).
# One fairseq-train run of the task unsupervised_translation, which keeps the
# checkpoint with the best validation BLEU (the valid pairs, both ways); then
# the test set translated both ways, detokenized (Moses, as data-prep/
# tokenizes) and scored with sacreBLEU against the raw references:
# WORK_DIR/results.detok.tsv. SCALE=small or tiny shrinks everything; at
# tiny a validation scores only the first VALID_PAIRS pairs (the shortest).
# Interrupted? Run the same command again: training resumes from its
# checkpoint_last.pt, and scored directions are kept; other settings than
# those of the finished work stop the recipe (WORK_DIR/.settings).
set -euo pipefail
SHELL_LIB=$(python -m mass_tools.shell)  # usage.sh, common.sh
source "$SHELL_LIB/usage.sh"  # --help
source "$(dirname "$0")/settings.sh"  # SCALE, by_scale, the models, run_cmd, ...

DATA_BIN=${DATA_BIN:?set DATA_BIN to mass-binarize output: dict.txt, train.L1/train.L2 and the valid/test pairs}
REFERENCE_PREFIX=${REFERENCE_PREFIX:?set REFERENCE_PREFIX: REFERENCE_PREFIX.L1 and .L2 are the raw test text}
PRETRAINED=${PRETRAINED:?set PRETRAINED to the checkpoint of examples/paper/pretrain.sh}
L1=${L1:-en}
L2=${L2:-fr}
WORK_DIR=${WORK_DIR:-work/paper-online-$SCALE}
MODEL_ARGS=${MODEL_ARGS:-$(by_scale "$PAPER_MODEL" "$SMALL_MODEL" "$TINY_MODEL")}
LAMBDA_MASS=${LAMBDA_MASS:-0}            # [paper 4.2] back-translation alone
LAMBDA_BT=${LAMBDA_BT:-1}                # [unsup] --lambda_bt default
BT_BEAM=${BT_BEAM:-1}                    # [unsup] greedy back-translation
MASK_RATIO=${MASK_RATIO:-0.5}            # for LAMBDA_MASS > 0 ([unsup] --word_mass 0.5)
# [unsup] --tokens_per_batch 2000 per GPU, 8 GPUs: 16,000 tokens per update
MAX_TOKENS=${MAX_TOKENS:-$(by_scale 2000 4096 256)}
TOKENS_PER_UPDATE=${TOKENS_PER_UPDATE:-$(by_scale 16000 32768 256)}
LR=${LR:-$(by_scale 0.0001 0.0001 0.001)}   # [unsup] lr=0.0001
WARMUP=${WARMUP:-$(by_scale 4000 1000 2)}   # [unsup] XLM's 4000
# [unsup] --max_epoch 30 epochs of 6,250 updates: 187,500; validation each epoch
MAX_UPDATE=${MAX_UPDATE:-$(by_scale 187500 20000 6)}
VALIDATE_EVERY=${VALIDATE_EVERY:-$(by_scale 6250 1000 3)}
VALID_PAIRS=${VALID_PAIRS:-$(by_scale 0 0 16)}  # 0: the whole valid set; N: its N shortest
BEAM=${BEAM:-1}                          # [unsup] translate.py's --beam default
POST_PROCESS=${POST_PROCESS:-subword_nmt}  # the subword marker of DATA_BIN's text
DETOK=${DETOK:---tokenizer moses}        # fairseq-generate's detokenizer
LAUNCHER=${LAUNCHER:-}                   # e.g. "torchrun --nproc_per_node 8"
LOG_INTERVAL=${LOG_INTERVAL:-$(by_scale 100 100 2)}

need "$DATA_BIN/dict.txt" DATA_BIN "binarize the text with mass-binarize (data-prep/)"
for lang in "$L1" "$L2"; do
    need "$DATA_BIN/train.$lang.bin" DATA_BIN "mass-binarize --mono-train writes train.$lang"
    need "$REFERENCE_PREFIX.$lang" REFERENCE_PREFIX "give the prefix of the raw test text"
done
need "$DATA_BIN/valid.$L1-$L2.$L1.bin" DATA_BIN "mass-binarize --pair $L1-$L2 --valid PREFIX"
need "$PRETRAINED" PRETRAINED "pre-train with examples/paper/pretrain.sh first"
same_dictionary "train.$L1" "train.$L2" valid test
make_dir "$WORK_DIR"
same_settings "run by unsup_online_bt.sh" "Use another WORK_DIR, or delete $WORK_DIR to start\
 over."
save=$WORK_DIR/checkpoints results=$WORK_DIR/results.detok.tsv
[ "$DRY_RUN" = 1 ] || [ -f "$results" ] || printf 'direction\tBLEU\tchrF\n' > "$results"

valid=()  # the first batch of the valid set alone: its VALID_PAIRS shortest pairs
[ "$VALID_PAIRS" = 0 ] || valid=(--batch-size-valid "$VALID_PAIRS" --max-valid-steps 0)
if ! is_done train; then
    progress "online back-translation from $PRETRAINED, SCALE=$SCALE: $MAX_UPDATE updates of" \
        "$TOKENS_PER_UPDATE tokens, weights MASS $LAMBDA_MASS / back-translation $LAMBDA_BT"
    # shellcheck disable=SC2046,SC2086
    train_cmd "$DATA_BIN" --user-dir "$USER_DIR" --task unsupervised_translation \
        --langs "$L1,$L2" $MODEL_ARGS --finetune-from-model "$PRETRAINED" \
        --criterion masked_s2s_loss --mask-ratio "$MASK_RATIO" --lambda-mass "$LAMBDA_MASS" \
        --lambda-bt "$LAMBDA_BT" --lambda-dae 0 --bt-beam "$BT_BEAM" \
        --eval-bleu --eval-bleu-remove-bpe "$POST_PROCESS" --best-checkpoint-metric bleu \
        --maximize-best-checkpoint-metric $PAPER_OPTIM --lr "$LR" --warmup-updates "$WARMUP" \
        --max-tokens "$MAX_TOKENS" --max-update "$MAX_UPDATE" "${valid[@]}" \
        --validate-interval-updates "$VALIDATE_EVERY" --save-interval-updates "$VALIDATE_EVERY" \
        --keep-interval-updates 1 --no-epoch-checkpoints --skip-invalid-size-inputs-valid-test \
        --save-dir "$save" --log-format simple --log-interval "$LOG_INTERVAL" \
        $(valid_args) $(launch_device_args)
    done_mark train
fi

# the test set both ways, detokenized, against the raw references
for direction in "$L1-$L2" "$L2-$L1"; do
    src=${direction%-*} tgt=${direction#*-} output=$WORK_DIR/test.$direction.detok.txt
    # shellcheck disable=SC2086
    decode=("$DATA_BIN" --task unsupervised_translation --langs "$L1,$L2" -s "$src" -t "$tgt"
            --gen-subset test --path "$save/checkpoint_best.pt" --beam "$BEAM" --max-len-a 1.5
            --max-len-b 10 --batch-size 64 --post-process "$POST_PROCESS" $DETOK)
    if [ "$DRY_RUN" = 1 ]; then
        run_to "$output.log" fairseq-generate "${decode[@]}" --user-dir "$USER_DIR"
    elif ! grep -q "^$direction	" "$results"; then
        scores=$(decode_and_score "$direction test" bleu "$REFERENCE_PREFIX.$tgt" "$output" \
            "${decode[@]}")
        echo "$scores"
        printf '%s\t%s\n' "$direction" "$(bleu_chrf <<< "$scores")" >> "$results"
    fi
done
[ "$DRY_RUN" = 1 ] || print_table "$results"
finished "finished: $results"

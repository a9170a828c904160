#!/usr/bin/env bash
# The paper's unsupervised NMT fine-tuning (section 4.2): from the
# cross-lingual MASS checkpoint, online back-translation alone (no denoising
# auto-encoder, no MASS loss: MASS-unsupNMT's README command has only
# --bt_steps 'L1-L2-L1,L2-L1-L2'), greedy back-translations, Adam at 1e-4,
# 16,000 tokens per update, 30 of the original's epochs (187,500 updates).
# It runs projects/unsupervised/online_bt.sh (task unsupervised_translation)
# with these settings, which trains and translates the test set both ways,
# then scores that output detokenized (sacremoses, for text tokenized with
# Moses as data-prep/ does) with sacreBLEU against the raw references:
# WORK_DIR/results.detok.tsv (online_bt.sh's own WORK_DIR/results.tsv scores
# it with the subwords joined but not detokenized). SCALE=small or tiny
# shrinks everything.
# Interrupted? Run the same command again: training resumes from its
# checkpoint_last.pt, and translated directions are kept.
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
# [unsup] --tokens_per_batch 2000 per GPU, 8 GPUs: 16,000 tokens per update
MAX_TOKENS=${MAX_TOKENS:-$(by_scale 2000 4096 256)}
TOKENS_PER_UPDATE=${TOKENS_PER_UPDATE:-$(by_scale 16000 32768 256)}
LR=${LR:-$(by_scale 0.0001 0.0001 0.001)}   # [unsup] lr=0.0001
WARMUP=${WARMUP:-$(by_scale 4000 1000 2)}   # [unsup] XLM's 4000
# [unsup] --max_epoch 30 epochs of 6,250 updates: 187,500; validation each epoch
MAX_UPDATE=${MAX_UPDATE:-$(by_scale 187500 20000 6)}
VALIDATE_EVERY=${VALIDATE_EVERY:-$(by_scale 6250 1000 3)}
BEAM=${BEAM:-1}                          # [unsup] translate.py's --beam default
POST_PROCESS=${POST_PROCESS:-subword_nmt}  # the subword marker of DATA_BIN's text
LOG_INTERVAL=${LOG_INTERVAL:-$(by_scale 100 100 2)}

need "$DATA_BIN/dict.txt" DATA_BIN "binarize the text with mass-binarize (data-prep/)"
for lang in "$L1" "$L2"; do
    need "$REFERENCE_PREFIX.$lang" REFERENCE_PREFIX "give the prefix of the raw test text"
done
need "$PRETRAINED" PRETRAINED "pre-train with examples/paper/pretrain.sh first"
make_dir "$WORK_DIR"

progress "online back-translation from $PRETRAINED, SCALE=$SCALE: $MAX_UPDATE updates of" \
    "$TOKENS_PER_UPDATE tokens, weights MASS $LAMBDA_MASS / back-translation $LAMBDA_BT"
run_cmd env DATA_BIN="$DATA_BIN" REFERENCE_PREFIX="$REFERENCE_PREFIX" PRETRAINED="$PRETRAINED" \
    L1="$L1" L2="$L2" WORK_DIR="$WORK_DIR" LAMBDA_MASS="$LAMBDA_MASS" LAMBDA_BT="$LAMBDA_BT" \
    LAMBDA_DAE=0 BT_BEAM="$BT_BEAM" MAX_TOKENS="$MAX_TOKENS" \
    TOKENS_PER_UPDATE="$TOKENS_PER_UPDATE" LR="$LR" WARMUP="$WARMUP" \
    MAX_UPDATE="$MAX_UPDATE" VALIDATE_EVERY="$VALIDATE_EVERY" BEAM="$BEAM" \
    POST_PROCESS="$POST_PROCESS" LOG_INTERVAL="$LOG_INTERVAL" \
    MODEL_ARGS="$(flat "$MODEL_ARGS" "$PAPER_OPTIM")" \
    bash "$REPO_DIR/projects/unsupervised/online_bt.sh"

# online_bt.sh's translations of the test set (subwords joined), detokenized
# (sacremoses, as fairseq-generate --tokenizer moses), against the raw references
results=$WORK_DIR/results.detok.tsv
if [ "$DRY_RUN" != 1 ]; then
    printf 'direction\tBLEU\tchrF\n' > "$results"
    for direction in "$L1-$L2" "$L2-$L1"; do
        tgt=${direction#*-} output=$WORK_DIR/test.$direction
        sacremoses -q -l "$tgt" -j 1 detokenize < "$output.txt" > "$output.detok.txt"
        scores=$(sacrebleu "$REFERENCE_PREFIX.$tgt" -i "$output.detok.txt" -m bleu chrf -w 2 \
            -f text)
        echo "== $direction, detokenized: $output.detok.txt"
        echo "$scores"
        printf '%s\t%s\n' "$direction" "$(bleu_chrf <<< "$scores")" >> "$results"
    done
    print_table "$results"
fi
finished "finished: $results"
